package llamaindex_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"github.com/coordbench/coordbench/tracedata"
)

var truth = []string{"ResearchAgent->WriteAgent", "WriteAgent->ReviewAgent"}

func sortedEdges(td *tracedata.TraceData) []string {
	e := assembletest.Edges(td)
	slices.Sort(e)
	return e
}

// TestLlamaIndexAgentWorkflow: OpenInference and OpenLLMetry record an
// AgentWorkflow as sibling steps and no agent span, the agents named only
// in the steps' events (a Python repr, a JSON object); the family reads
// each agent's run from them and the handoffs from the handoff tool's
// arguments, on every run of both live programs, whatever order the spans
// come in. The ResearchAgent's turns before and after its search_web
// result are one run.
func TestLlamaIndexAgentWorkflow(t *testing.T) {
	for _, prog := range []string{"llamaindex-agentworkflow-py", "llamaindex-agentworkflow-openllmetry-py"} {
		for run := 1; run <= 3; run++ {
			id, spans := assembletest.LoadLive(t, prog, fmt.Sprintf("captures/run-%d.otlp.json", run))
			td := assemble.Trace(id, spans)
			if got := sortedEdges(td); !slices.Equal(got, truth) || td.Coverage.Complete != 1 || td.Coverage.UnwiredAgents != 0 {
				t.Errorf("%s run %d: edges %v coverage %+v", prog, run, got, td.Coverage)
			}
			agentSteps, tools := 0, 0
			for _, st := range td.Steps {
				switch {
				case st.Agent == "ResearchAgent" && st.CallType == tracedata.CallAgent:
					agentSteps++
				case st.Agent == "ResearchAgent":
					tools++
				}
			}
			// Two model calls and two tool calls (search_web, handoff) at
			// least, whichever instrumentation.
			if agentSteps != 1 || tools < 4 {
				t.Errorf("%s run %d: ResearchAgent has %d agent steps (want 1: one run) and %d others (want its 2 model and 2 tool calls)", prog, run, agentSteps, tools)
			}
			if run == 1 {
				assembletest.AssertPermutationStable(t, id, spans, 5)
			}
		}
	}
}

// TestLlamaIndexAgentWorkflowCaptureEdits edits the live capture.
func TestLlamaIndexAgentWorkflowCaptureEdits(t *testing.T) {
	id, spans := assembletest.LoadLive(t, "llamaindex-agentworkflow-py", "captures/run-1.otlp.json")
	// The WriteAgent's setup_agent step: the one whose output names it.
	writeSetup := func(sp *otelmap.Span) bool {
		if sp.Name != "AgentWorkflow.setup_agent" {
			return false
		}
		for _, kv := range sp.Attrs {
			if kv.Key == "output.value" && strings.HasSuffix(kv.Value.AsString(), "current_agent_name='WriteAgent')") {
				return true
			}
		}
		return false
	}
	t.Run("the name from the output when the input is gone", func(t *testing.T) {
		td := assemble.Trace(id, assembletest.EditAttrs(spans, writeSetup, assembletest.Without("input.value")))
		if got := sortedEdges(td); !slices.Equal(got, truth) {
			t.Errorf("edges %v, want %v", got, truth)
		}
	})
	t.Run("neither repr whole: an unnamed agent, no guess", func(t *testing.T) {
		// Every event that names the WriteAgent cut short, as
		// OpenInference cuts a long one: its setup_agent step names
		// nobody.
		names := func(sp *otelmap.Span) bool {
			for _, kv := range sp.Attrs {
				if (kv.Key == "input.value" || kv.Key == "output.value") && strings.Contains(kv.Value.AsString(), "current_agent_name='WriteAgent'") {
					return true
				}
			}
			return false
		}
		cut := func(kv []attribute.KeyValue) []attribute.KeyValue {
			kv = slices.Clone(kv)
			for i := range kv {
				if s := kv[i].Value.AsString(); (kv[i].Key == "input.value" || kv[i].Key == "output.value") && strings.Contains(s, "current_agent_name='WriteAgent'") {
					kv[i] = attribute.String(string(kv[i].Key), s[:strings.Index(s, "current_agent_name='WriteAgent'")]+"...")
				}
			}
			return kv
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, names, cut))
		if slices.Contains(assembletest.AgentNames(td), "WriteAgent") || td.Coverage.UnreadAgentSpans == 0 {
			t.Errorf("agents %v coverage %+v: the unnamed run must be counted, not named", assembletest.AgentNames(td), td.Coverage)
		}
		if slices.Contains(assembletest.Edges(td), "ResearchAgent->ReviewAgent") {
			t.Errorf("a call guessed across the unnamed run: %v", assembletest.Edges(td))
		}
	})
	t.Run("no handoff argument: the agents unwired, not chained by order", func(t *testing.T) {
		td := assemble.Trace(id, assembletest.EditAttrs(spans, assembletest.AttrIs("tool.name", "handoff"), assembletest.Without("input.value")))
		if e := assembletest.Edges(td); len(e) > 0 || td.Coverage.UnwiredAgents != 3 {
			t.Errorf("edges %v coverage %+v", e, td.Coverage)
		}
	})
}

// A made-up OpenInference LlamaIndex trace: span n under parent (0: a
// root), n milliseconds from the start.
func span(proc *otelmap.Resource, n, parent byte, name string, attrs ...attribute.KeyValue) otelmap.Span {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xe2}, SpanID: trace.SpanID{0xe2, n}, Name: name, Kind: trace.SpanKindInternal,
		Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Duration(n)*time.Millisecond + 500*time.Microsecond),
		Attrs: attrs, Resource: proc}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xe2, parent}
		sp.End = sp.Start.Add(time.Millisecond / 2)
	} else {
		sp.End = sp.Start.Add(time.Second)
	}
	return sp
}

// runInput is the start of an AgentWorkflow run's input: its initial
// state, whose config lists the steps.
const runInput = `{"init_state": {"is_running": false, "config": {"steps": {"setup_agent": {}, "run_agent_step": {}, "call_tool": {}}}}}`

func chain(in string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("openinference.span.kind", "CHAIN"), attribute.String("input.value", in)}
}

// setup is a setup_agent step taking an AgentInput for agent (with the
// message text given).
func setup(agent, text string) []attribute.KeyValue {
	// Python's repr of the text: single quotes unless it holds one.
	quoted := "'" + text + "'"
	if strings.Contains(text, "'") {
		quoted = `"` + text + `"`
	}
	ev := fmt.Sprintf("AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>, blocks=[TextBlock(text=%s)])], current_agent_name='%s')", quoted, agent)
	in, err := json.Marshal(map[string]string{"ctx": "<Context>", "ev": ev})
	if err != nil {
		panic(err)
	}
	return chain(string(in))
}

func llm() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("openinference.span.kind", "LLM"), attribute.String("llm.model_name", "gpt-4o-mini")}
}

func handoff(to string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("openinference.span.kind", "TOOL"), attribute.String("tool.name", "handoff"),
		attribute.String("input.value", fmt.Sprintf(`{"kwargs": {"to_agent": %q, "reason": "r"}}`, to))}
}

// team is a workflow A -> B by a handoff, its steps built by the caller's
// edits (proc: the process of each span, by number).
func team(app *otelmap.Resource, aText string, toolName string) []otelmap.Span {
	tool := handoff("B")
	if toolName != "" {
		tool = append(handoff("B")[:1:1], attribute.String("tool.name", toolName), handoff("B")[2])
	}
	return []otelmap.Span{
		span(app, 1, 0, "AgentWorkflow.run", chain(runInput)...),
		span(app, 2, 1, "AgentWorkflow.setup_agent", setup("A", aText)...),
		span(app, 3, 1, "AgentWorkflow.run_agent_step", chain("{}")...),
		span(app, 4, 3, "OpenAI.astream_chat", llm()...),
		span(app, 5, 1, "AgentWorkflow.call_tool", chain("{}")...),
		span(app, 6, 5, "FunctionTool.acall", tool...),
		span(app, 7, 1, "AgentWorkflow.setup_agent", setup("B", "go on")...),
		span(app, 8, 1, "AgentWorkflow.run_agent_step", chain("{}")...),
		span(app, 9, 8, "OpenAI.astream_chat", llm()...),
	}
}

// TestLlamaIndexAgentWorkflowAttacks: what the live program does not show.
func TestLlamaIndexAgentWorkflowAttacks(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "app"}
	peer := &otelmap.Resource{ServiceName: "participant"}
	read := func(spans []otelmap.Span) *tracedata.TraceData { return assemble.Trace(spans[0].TraceID, spans) }
	t.Run("a handoff", func(t *testing.T) {
		if got := sortedEdges(read(team(app, "hi", ""))); !slices.Equal(got, []string{"A->B"}) {
			t.Errorf("edges %v", got)
		}
	})
	t.Run("a message spelling the field names no agent", func(t *testing.T) {
		// The user's text ends like the repr's field; only the field that
		// ends the repr names the agent.
		td := read(team(app, "ignore this, current_agent_name='Mallory')", ""))
		if slices.Contains(assembletest.AgentNames(td), "Mallory") || !slices.Equal(sortedEdges(td), []string{"A->B"}) {
			t.Errorf("agents %v edges %v", assembletest.AgentNames(td), sortedEdges(td))
		}
	})
	t.Run("a tool named handoff that is no FunctionTool", func(t *testing.T) {
		spans := team(app, "hi", "")
		spans[5].Name = "my_handoff_function"
		td := read(spans)
		if slices.Contains(assembletest.Edges(td), "A->B") {
			t.Errorf("edges %v: a tool of another framework read as LlamaIndex's handoff", assembletest.Edges(td))
		}
	})
	t.Run("a step of another process names no agent", func(t *testing.T) {
		spans := append(team(app, "hi", ""),
			span(peer, 10, 1, "AgentWorkflow.setup_agent", setup("Mallory", "x")...),
			span(peer, 11, 1, "AgentWorkflow.run_agent_step", chain("{}")...),
			span(peer, 12, 11, "OpenAI.astream_chat", llm()...))
		// The handoff to Mallory, if read, would need Mallory's run.
		spans[5].Attrs = handoff("Mallory")
		td := read(spans)
		if slices.Contains(assembletest.AgentNames(td), "Mallory") {
			t.Errorf("agents %v edges %v", assembletest.AgentNames(td), assembletest.Edges(td))
		}
	})
	t.Run("steps outside a workflow run name no agent", func(t *testing.T) {
		spans := team(app, "hi", "")
		for i := range spans[1:] {
			if spans[i+1].ParentSpanID == spans[0].SpanID {
				spans[i+1].ParentSpanID = trace.SpanID{}
			}
		}
		td := read(spans[1:])
		if names := assembletest.AgentNames(td); slices.Contains(names, "A") || slices.Contains(names, "B") {
			t.Errorf("agents %v edges %v: steps with no workflow run above them", names, assembletest.Edges(td))
		}
	})
	t.Run("a step of another workflow class under the run", func(t *testing.T) {
		spans := team(app, "hi", "")
		spans[1].Name = "OtherFlow.setup_agent"
		if names := assembletest.AgentNames(read(spans)); slices.Contains(names, "A") {
			t.Errorf("agents %v", names)
		}
	})
	t.Run("a setup_agent event of another type names no agent", func(t *testing.T) {
		spans := team(app, "hi", "")
		spans[6].Attrs = chain(`{"ev": "StopEvent(result=None, current_agent_name='B')"}`)
		td := read(spans)
		if slices.Contains(assembletest.AgentNames(td), "B") {
			t.Errorf("agents %v", assembletest.AgentNames(td))
		}
	})
}

// An OpenLLMetry AgentWorkflow trace: the workflow span, its task steps.
func tlSpan(proc *otelmap.Resource, n, parent byte, name, kind string, attrs ...attribute.KeyValue) otelmap.Span {
	return span(proc, n, parent, name, append([]attribute.KeyValue{attribute.String("traceloop.span.kind", kind),
		attribute.String("traceloop.entity.name", name)}, attrs...)...)
}

func tlOut(v string) attribute.KeyValue { return attribute.String("traceloop.entity.output", v) }

func tlHandoff(to string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("tool.name", "handoff"),
		attribute.String("tool.arguments", fmt.Sprintf(`{"to_agent": %q, "reason": "r"}`, to))}
}

// tlTeam is A -> B by a handoff as OpenLLMetry records it; outA is the
// output of A's first step.
func tlTeam(app *otelmap.Resource, outA string) []otelmap.Span {
	return []otelmap.Span{
		tlSpan(app, 1, 0, "AgentWorkflow.workflow", "workflow"),
		tlSpan(app, 2, 1, "AgentWorkflow.task", "task", tlOut(outA)),
		tlSpan(app, 3, 1, "AgentWorkflow.task", "task"),
		span(app, 4, 3, "openai.chat", otelmap.AttrGenAIOperationName.String("chat"), attribute.String("gen_ai.request.model", "m")),
		tlSpan(app, 5, 1, "AgentWorkflow.task", "task", tlHandoff("B")...),
		tlSpan(app, 6, 1, "AgentWorkflow.task", "task", tlOut(`{"input": [], "current_agent_name": "B"}`)),
		tlSpan(app, 7, 1, "AgentWorkflow.task", "task"),
		span(app, 8, 7, "openai.chat", otelmap.AttrGenAIOperationName.String("chat"), attribute.String("gen_ai.request.model", "m")),
	}
}

// TestLlamaIndexOpenLLMetryAttacks: OpenLLMetry's events are JSON; only
// the event's own current_agent_name names an agent.
func TestLlamaIndexOpenLLMetryAttacks(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "app"}
	read := func(spans []otelmap.Span) *tracedata.TraceData { return assemble.Trace(spans[0].TraceID, spans) }
	t.Run("a handoff", func(t *testing.T) {
		if got := sortedEdges(read(tlTeam(app, `{"input": [], "current_agent_name": "A"}`))); !slices.Equal(got, []string{"A->B"}) {
			t.Errorf("edges %v", got)
		}
	})
	t.Run("current_agent_name nested in a member names nobody", func(t *testing.T) {
		td := read(tlTeam(app, `{"input": [{"role": "user", "current_agent_name": "Mallory"}], "result": {"current_agent_name": "Mallory"}}`))
		if slices.Contains(assembletest.AgentNames(td), "Mallory") || slices.Contains(assembletest.AgentNames(td), "A") {
			t.Errorf("agents %v", assembletest.AgentNames(td))
		}
	})
	t.Run("a current_agent_name that is no string names nobody", func(t *testing.T) {
		td := read(tlTeam(app, `{"input": [], "current_agent_name": 7}`))
		if slices.Contains(assembletest.AgentNames(td), "7") {
			t.Errorf("agents %v", assembletest.AgentNames(td))
		}
	})
	t.Run("a run whose steps name no agent: unnamed, counted", func(t *testing.T) {
		spans := tlTeam(app, `{"input": []}`)
		spans[5].Attrs = spans[5].Attrs[:2]
		td := read(spans)
		if len(assembletest.Edges(td)) > 0 || td.Coverage.UnreadAgentSpans == 0 {
			t.Errorf("edges %v coverage %+v", assembletest.Edges(td), td.Coverage)
		}
	})
	t.Run("a handoff task with no to_agent", func(t *testing.T) {
		spans := tlTeam(app, `{"input": [], "current_agent_name": "A"}`)
		spans[4].Attrs = append(spans[4].Attrs[:3:3], attribute.String("tool.arguments", `{"agent": "B"}`))
		td := read(spans)
		if slices.Contains(assembletest.Edges(td), "A->B") || td.Coverage.UnwiredAgents == 0 {
			t.Errorf("edges %v coverage %+v: no handoff named, the agents must be unwired", assembletest.Edges(td), td.Coverage)
		}
	})
}
