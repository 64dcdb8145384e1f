package voltagent_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// TestVoltAgent attacks the voltagent family (voltagent.go)
// with what its live programs (voltagent, voltagent-deep, voltagent-solo)
// do not show, on their real captures edited: a sub-agent whose name is
// not recorded (a naive reader would take entity.name, the root), a span
// type the family does not know, another library's entity.* keys, a
// VoltAgent workflow, the user's map over the built-in family, and the
// order spans arrive in.
func TestVoltAgent(t *testing.T) {
	isResearcher := assembletest.AttrIs("subagent.name", "researcher")

	t.Run("sub-agent named only by subagent.id", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "voltagent", "captures/run-1.otlp.json")
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isResearcher, assembletest.Without("subagent.name")))
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"researcher", "supervisor", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"supervisor->researcher", "supervisor->writer"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("sub-agent with no name recorded is not the root", func(t *testing.T) {
		// VoltAgent always writes subagent.id; without it and
		// subagent.name, entity.name (supervisor) is still on the span, and
		// taking it would make the researcher's run the supervisor's own
		// work, silently. It must be an agent no rule can name, warned
		// about, and the evidence not complete.
		id, spans := assembletest.LoadLive(t, "voltagent", "captures/run-1.otlp.json")
		edit := func(a []attribute.KeyValue) []attribute.KeyValue {
			return assembletest.Without("subagent.id")(assembletest.Without("subagent.name")(a))
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isResearcher, edit))
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"supervisor", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"supervisor->writer"}) {
			t.Errorf("edges %v", got)
		}
		c := td.Coverage
		// (UnreadAgentSpans makes the graph evaluator's evidence partial:
		// evals/evidence.go.)
		if c.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "a VoltAgent sub-agent run without subagent.name") {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("span type nobody knows", func(t *testing.T) {
		// A root agent's child span of a type this version does not
		// write carries only entity.*, span.* and generic keys: still
		// counted as unread, by VoltAgent's namespaces.
		id, spans := assembletest.LoadLive(t, "voltagent-solo", "captures/run-1.otlp.json")
		isTool := assembletest.AttrIs("span.type", "tool")
		edit := func(a []attribute.KeyValue) []attribute.KeyValue {
			a = slices.DeleteFunc(a, func(kv attribute.KeyValue) bool { return strings.HasPrefix(string(kv.Key), "tool.") })
			for i := range a {
				if a[i].Key == "span.type" {
					a[i] = attribute.String("span.type", "planner")
				}
			}
			return a
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isTool, edit))
		c := td.Coverage
		if c.UnreadNamespaces["entity.*"] != 1 || c.UnreadNamespaces["span.*"] != 1 || c.Complete == 1 ||
			!assembletest.HasWarning(td, "1 span carries `span.*` attributes no rule reads") {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("another library's entity.type", func(t *testing.T) {
		// entity.* is a generic name: with a value VoltAgent does not
		// write, the family claims nothing, and entity.* is not counted
		// as an agent namespace (agent.*, which VoltAgent's run still
		// carries, is).
		id, spans := assembletest.LoadLive(t, "voltagent-solo", "captures/run-1.otlp.json")
		edit := func(a []attribute.KeyValue) []attribute.KeyValue {
			for i := range a {
				if a[i].Key == "entity.type" {
					a[i] = attribute.String("entity.type", "table")
				}
			}
			return a
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, func(*otelmap.Span) bool { return true }, edit))
		c := td.Coverage
		if c.Recognized["voltagent"] != 0 || c.UnreadNamespaces["entity.*"] != 0 || c.UnreadNamespaces["agent.*"] != 1 {
			t.Errorf("coverage %+v", c)
		}
	})

	t.Run("workflow is no agent", func(t *testing.T) {
		// A VoltAgent workflow (WorkflowTraceContext: entity.type=workflow,
		// its steps span.type=workflow-step) running an agent in a step:
		// the agent is no sub-agent (entity.name names it), the workflow
		// an orchestration.
		id, span := assembletest.NSSpans("voltagent")
		internal, client := trace.SpanKindInternal, trace.SpanKindClient
		wf := []attribute.KeyValue{attribute.String("entity.type", "workflow"), attribute.String("entity.id", "pipeline"),
			attribute.String("entity.name", "pipeline"), attribute.String("workflow.execution.id", "x1")}
		ag := []attribute.KeyValue{attribute.String("entity.type", "agent"), attribute.String("entity.id", "writer"),
			attribute.String("entity.name", "writer"), attribute.String("operation.id", "o1")}
		spans := []otelmap.Span{
			span(1, 0, "pipeline", internal, wf...),
			span(2, 1, "workflow.step.draft", internal, append(slices.Clone(wf), attribute.String("span.type", "workflow-step"))...),
			span(3, 2, "writer", internal, append(slices.Clone(ag), attribute.String("agent.state", "completed"))...),
			span(4, 3, "llm:generateText", client, append(slices.Clone(ag), attribute.String("span.type", "llm"), attribute.String("llm.model", "gpt-4o-mini"))...),
			span(5, 3, "memory.read", internal, append(slices.Clone(ag), attribute.String("span.type", "memory"))...),
		}
		td := assemble.Trace(id, spans)
		if got := assembletest.AgentNames(td); !slices.Equal(got, []string{"writer"}) {
			t.Errorf("agents %v", got)
		}
		c := td.Coverage
		if c.Recognized["voltagent"] != 5 || len(c.UnreadNamespaces) != 0 || c.UnreadAgentSpans != 0 || c.Complete != 1 {
			t.Errorf("coverage %+v", c)
		}
		var llm *tracedata.Step
		for i := range td.Steps {
			if td.Steps[i].StepType == "llm_call" {
				llm = &td.Steps[i]
			}
		}
		if llm == nil || llm.Model != "gpt-4o-mini" || llm.Agent != "writer" {
			t.Errorf("llm step %+v", llm)
		}
	})

	t.Run("the user's map comes first", func(t *testing.T) {
		conv, err := assemble.LoadConventions(filepath.Join(assembletest.LiveDir(), "..", "conventions", "voltagent.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		id, spans := assembletest.LoadLive(t, "voltagent-deep", "captures/run-1.otlp.json")
		td := assemble.TraceWith(id, spans, assemble.Options{Conventions: conv})
		for _, a := range td.Agents {
			if !a.Virtual && a.IdentifiedBy != tracedata.IdentityConventions {
				t.Errorf("agent %s identified by %s, want the map's conventions", a.Name, a.IdentifiedBy)
			}
		}
		byName := map[string]string{}
		for _, a := range assemble.Trace(id, spans).Agents {
			byName[a.Name] = a.IdentifiedBy
		}
		want := map[string]string{"supervisor": tracedata.IdentityVoltAgent, "lead": tracedata.IdentityVoltAgentSubagent,
			"researcher": tracedata.IdentityVoltAgentSubagent, "writer": tracedata.IdentityVoltAgentSubagent}
		if !maps.Equal(byName, want) {
			t.Errorf("without the map, identified by %v, want %v", byName, want)
		}
	})

	t.Run("order of arrival", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "voltagent-deep", "captures/run-1.otlp.json")
		assembletest.AssertPermutationStable(t, id, spans, 8)
	})
}
