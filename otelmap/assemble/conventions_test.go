package assemble_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/tracedata"
)

// readCapture reads a live corpus capture as `green assess` reads a file:
// the spans of its one trace.
func readCapture(t *testing.T, path string) (trace.TraceID, []otelmap.Span) {
	t.Helper()
	batches, err := otlpdecode.ReadOTLPJSONFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spans []otelmap.Span
	for _, b := range batches {
		s, _ := otlpdecode.SpansFromTraces(b, otelmap.SourceOTLP)
		spans = append(spans, s...)
	}
	if len(spans) == 0 {
		t.Fatalf("%s holds no span", path)
	}
	for _, sp := range spans {
		if sp.TraceID != spans[0].TraceID {
			t.Fatalf("%s holds more than one trace", path)
		}
	}
	return spans[0].TraceID, spans
}

// TestConventionsVoltAgent: VoltAgent writes only its own namespaces
// (entity.*, subagent.*, span.type, llm.*). The built-in voltagent family
// (families/voltagent) reads them now, so the test turns that family
// off (assemble.WithoutFamily) to stand for a framework no built-in family
// knows: run for real (testdata/live/voltagent), its captures then come
// out with no agent and warnings naming the namespaces; with the
// dozen-line map of testdata/conventions/voltagent.yaml, every run comes
// out exactly as the program's truth says, all of it read by the map.
func TestConventionsVoltAgent(t *testing.T) {
	const mapFile = "testdata/conventions/voltagent.yaml"
	raw, err := os.ReadFile(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for l := range strings.Lines(string(raw)) {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			lines++
		}
	}
	if lines > 14 {
		t.Errorf("the map has %d lines; the point is that a dozen do", lines)
	}
	conv, err := assemble.LoadConventions(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Agents       []string `json:"agents"`
		Interactions []struct {
			From, To string
			Count    int
		} `json:"interactions"`
	}
	tb, err := os.ReadFile("testdata/live/voltagent/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tb, &truth); err != nil {
		t.Fatal(err)
	}
	wantEdges := map[string]int{}
	for _, in := range truth.Interactions {
		wantEdges[in.From+" -> "+in.To] += in.Count
	}
	runs, _ := filepath.Glob("testdata/live/voltagent/captures/*.otlp.json")
	if len(runs) < 3 {
		t.Fatalf("%d voltagent captures, want at least 3", len(runs))
	}
	for _, run := range runs {
		t.Run(filepath.Base(run), func(t *testing.T) {
			id, spans := readCapture(t, run)

			unknown := assemble.WithoutFamily(assemble.Options{}, "voltagent")
			without := assemble.TraceWith(id, spans, unknown)
			// The sub-agents' runs and the model calls are named as unread
			// (entity.* alone says nothing of agents by its keys: its
			// spans are counted by their other namespaces).
			unread := without.Coverage.UnreadNamespaces
			if len(without.Interactions) != 0 || !without.Coverage.NoEvidence || unread["subagent.*"] != 5 || unread["llm.*"] != 3 ||
				!hasWarning(without, "5 spans carry `subagent.*` attributes no rule reads") {
				t.Errorf("without the map: agents %s, edges %v, coverage %+v", describeAgents(without), edges(without), without.Coverage)
			}

			withMap := unknown
			withMap.Conventions = conv
			td := assemble.TraceWith(id, spans, withMap)
			var agents []string
			for _, a := range td.Agents {
				if a.Virtual {
					continue
				}
				agents = append(agents, a.Name)
				if a.IdentifiedBy != tracedata.IdentityConventions {
					t.Errorf("agent %s identified by %s, want conventions", a.Name, a.IdentifiedBy)
				}
			}
			got := map[string]int{}
			for _, in := range td.Interactions {
				if in.From != tracedata.UserAgent {
					got[in.From+" -> "+in.To] += in.Count
				}
				if in.Errors != 0 {
					t.Errorf("%s -> %s: %d errors, the run has none", in.From, in.To, in.Errors)
				}
			}
			if !slices.Equal(agents, slices.Sorted(slices.Values(truth.Agents))) || !maps.Equal(got, wantEdges) {
				t.Errorf("with the map: agents %v, edges %v; want %v, %v", agents, got, truth.Agents, wantEdges)
			}
			c := td.Coverage
			if c.Complete != 1 || c.NoEvidence || len(c.UnreadNamespaces) != 0 || len(c.Warnings) != 0 || c.Recognized["conventions"] != len(spans) || c.Recognized["voltagent"] != 0 {
				t.Errorf("with the map: coverage %+v", c)
			}
		})
	}
}

// TestConventionsErrors: a map is validated whole at load, and every
// error names its line and column.
func TestConventionsErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"not yaml", "name: [x\n", []string{"m.yaml: yaml: line 1"}},
		{"empty", "", []string{"m.yaml:1:1: convention map is empty"}},
		{"no name, unknown key", "rules:\n  - match: {span_name: x}\n    is: tool\nversion: 2\n",
			[]string{"m.yaml:1:1: convention map: name is missing", `m.yaml:4:1: convention map: unknown key "version"`}},
		{"misspelt kind", "name: x\nrules:\n  - match: {span_name: '^run$'}\n    is: agnet\n",
			[]string{`m.yaml:4:9: rules[0].is: "agnet" is not one of agent, llm, tool, handoff, workflow, none`}},
		{"bad regex", "name: x\nrules:\n  - match:\n      span_name: '(unclosed'\n    is: tool\n",
			[]string{"m.yaml:4:18: rules[0].match.span_name: error parsing regexp: missing closing ): `(unclosed`"}},
		{"agent without name", "name: x\nrules:\n  - match: {attribute: fw.agent}\n    is: agent\n",
			[]string{"m.yaml:4:9: rules[0]: an agent rule needs agent: where the agent's name is"}},
		{"empty match", "name: x\nrules:\n  - match: {}\n    is: tool\n",
			[]string{"m.yaml:3:12: rules[0].match has no condition: it would match every span"}},
		{"value without attribute", "name: x\nrules:\n  - match: {value: a}\n    is: tool\n",
			[]string{"m.yaml:3:20: rules[0].match.value needs match.attribute"}},
		{"span_name group", "name: x\nrules:\n  - match: {span_name: a}\n    is: agent\n    agent: {span_name: 'run (.+) (.+)'}\n",
			[]string{"m.yaml:5:24: rules[0].agent.span_name must have exactly one group, the name (it has 2)"}},
		{"target on a tool", "name: x\nrules:\n  - match: {span_name: a}\n    is: tool\n    target: {attribute: to}\n",
			[]string{"m.yaml:5:13: rules[0].target is read only on a handoff rule (is: handoff)"}},
		{"control flow unknown key", "name: x\ncontrol_flow:\n  - status: Command\n",
			[]string{`m.yaml:3:5: control_flow[0]: unknown key "status"`, "m.yaml:3:5: control_flow[0]: give status_message or exception_type"}},
		{"reads nothing", "name: x\n", []string{"m.yaml:1:1: convention map: neither rules nor control_flow given"}},
		{"second rule wrong, first fine", "name: x\nrules:\n  - match: {span_name: a}\n    is: tool\n  - match: {kind: sideways}\n    is: tool\n",
			[]string{`m.yaml:5:19: rules[1].match.kind: "sideways" is not one of client, server, internal, producer, consumer`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conv, err := assemble.ParseConventions([]byte(c.yaml), "m.yaml")
			if err == nil {
				t.Fatalf("no error; map %v", conv)
			}
			got := err.Error()
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("error\n%s\nwant it to contain\n%s", got, w)
				}
			}
			if n := strings.Count(got, "\n") + 1; n != len(c.want) {
				t.Errorf("%d errors, want %d:\n%s", n, len(c.want), got)
			}
		})
	}
}

// TestConventionsHandoffAndControlFlow: a map names a framework's agents
// from span names, reads a handoff's target from a JSON argument, and
// says which error status is control flow; a span the map matches is the
// map's whatever the built-in families say of it.
func TestConventionsHandoffAndControlFlow(t *testing.T) {
	const m = `
name: relay
rules:
  - match: {span_name: '^relay\.agent '}
    is: agent
    agent: {span_name: '^relay\.agent (\S+)$'}
  - match: {span_name: '^relay\.pass$'}
    is: handoff
    target: {attribute: relay.args, json: [agentId, agent_name]}
  - match: {attribute: relay.kind, value: '^(orchestrator)$'}
    is: workflow
control_flow:
  - status_message: '^Handoff:'
`
	conv, err := assemble.ParseConventions([]byte(m), "relay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	id := trace.TraceID{0xc0}
	res := &otelmap.Resource{ServiceName: "relay-app"}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	span := func(n, parent byte, name string, attrs ...attribute.KeyValue) otelmap.Span {
		sp := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xc0, n}, Name: name, Kind: trace.SpanKindInternal,
			Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Duration(n)*time.Millisecond + 500*time.Microsecond), Attrs: attrs, Resource: res}
		if parent != 0 {
			sp.ParentSpanID = trace.SpanID{0xc0, parent}
		}
		return sp
	}
	// The orchestrator carries gen_ai.operation.name=invoke_agent and a
	// name: without the map it would be an agent.
	orch := span(1, 0, "relay.run", attribute.String("relay.kind", "orchestrator"),
		otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String("relay"))
	pass := span(3, 2, "relay.pass", attribute.String("relay.args", `{"agentId":"billing"}`))
	pass.StatusError, pass.StatusMessage = true, "Handoff: to billing"
	spans := []otelmap.Span{
		orch,
		span(2, 1, "relay.agent triage", attribute.String("relay.agent.id", "t")),
		pass,
		span(4, 1, "relay.agent billing", attribute.String("relay.agent.id", "b")),
	}
	td := assemble.TraceWith(id, spans, assemble.Options{Conventions: conv})
	if got := describeAgents(td); got != "billing(conventions) triage(conventions)" {
		t.Errorf("agents = %s", got)
	}
	if len(td.Interactions) != 1 || td.Interactions[0].From != "triage" || td.Interactions[0].To != "billing" || td.Interactions[0].Errors != 0 {
		t.Errorf("interactions = %+v", td.Interactions)
	}
	for _, st := range td.Steps {
		if st.Error != "" {
			t.Errorf("step %s errored (%s): its status is control flow", st.Name, st.Error)
		}
	}
	if c := td.Coverage; len(c.UnreadNamespaces) != 0 || c.Complete != 1 {
		t.Errorf("coverage = %+v", c)
	}

	// The same status without the control_flow entry is a failure of the
	// handoff's step.
	noFlow, err := assemble.ParseConventions(bytes.ReplaceAll([]byte(m), []byte("control_flow:\n  - status_message: '^Handoff:'\n"), nil), "relay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	td = assemble.TraceWith(id, spans, assemble.Options{Conventions: noFlow})
	if !slices.ContainsFunc(td.Steps, func(st tracedata.Step) bool { return st.Name == "relay.pass" && st.Error == "Handoff: to billing" }) {
		t.Errorf("without control_flow: steps = %+v, want relay.pass errored", td.Steps)
	}
	// Without any map, the relay.* spans are unread.
	td = assemble.Trace(id, spans)
	if td.Coverage.UnreadNamespaces["relay.*"] == 0 {
		t.Errorf("without the map: coverage %+v", td.Coverage)
	}
}

// TestBuiltinControlFlow: LangGraph's control-flow exceptions are no
// failure however a tracer records them (exception.type in Python, a dotted
// path, only the JS stack in the message), and an error merely mentioning
// the name, or of another type, still fails.
func TestBuiltinControlFlow(t *testing.T) {
	id := trace.TraceID{0xb0}
	res := &otelmap.Resource{ServiceName: "lg"}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, status string
		event        []attribute.KeyValue
		failed       bool
	}{
		{"python exception.type", "", []attribute.KeyValue{attribute.String("exception.type", "ParentCommand")}, false},
		{"dotted type", "langgraph.errors.GraphInterrupt: paused", nil, false},
		{"js stack only", "\n\nParentCommand\n    at RunnableCallable._controlBranch (state.js:775:47)", nil, false},
		{"another error", "ValueError: bad input", []attribute.KeyValue{attribute.String("exception.type", "ValueError")}, true},
		{"mentions the name", "tool failed after ParentCommand was raised", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xb0, 1}, Name: "execute_tool transfer_to_b", Kind: trace.SpanKindInternal,
				Start: t0, End: t0.Add(time.Millisecond), Resource: res, StatusError: true, StatusMessage: c.status,
				Attrs: []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("execute_tool")}}
			if c.event != nil {
				sp.Detail = &otelmap.SpanDetail{Events: []otelmap.Event{{Name: "exception", Time: t0, Attrs: c.event}}}
			}
			td := assemble.Trace(id, []otelmap.Span{sp})
			if len(td.Steps) != 1 || (td.Steps[0].Error != "") != c.failed {
				t.Errorf("steps = %+v, want failed %v", td.Steps, c.failed)
			}
		})
	}
}

// TestUnwiredAgents: a Strands TS Graph recorded without message content
// (the real capture, its events dropped, as a tracer with content capture
// off exports it) shows three agents under invoke_graph and nothing of
// who passed control to whom: no longer an "isolated" team with complete
// evidence, but no evidence, with a warning naming the orchestration.
func TestUnwiredAgents(t *testing.T) {
	id, spans := readCapture(t, "testdata/live/strands-graph/captures/run-1.otlp.json")
	withContent := assemble.Trace(id, spans)
	if withContent.Coverage.UnwiredAgents != 0 || len(withContent.Interactions) != 2 {
		t.Fatalf("with content: edges %v, coverage %+v", edges(withContent), withContent.Coverage)
	}
	for i := range spans {
		spans[i].Detail = nil
	}
	td := assemble.Trace(id, spans)
	c := td.Coverage
	if len(td.Interactions) != 0 || c.UnwiredAgents != 3 || !c.NoEvidence || c.Complete != 0 ||
		!hasWarning(td, `3 agents (coordinator, researcher, writer) ran under the orchestration span`) || !hasWarning(td, `"invoke_graph graph" and no span says who passed control to whom`) {
		t.Errorf("without content: edges %v, coverage %+v", edges(td), c)
	}
}
