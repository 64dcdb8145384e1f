package langgraph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/families"
	"github.com/coordbench/coordbench/otelmap/assemble/families/langgraph"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// truth is the part of a live program's truth.json these tests compare.
type truth struct {
	Agents       []string `json:"agents"`
	Interactions []struct {
		From, To string
		Count    int
	} `json:"interactions"`
}

func loadTruth(t *testing.T, program string) truth {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(assembletest.LiveDir(), program, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr truth
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// reading is what an assembly says of the team: its agents, its calls
// between agents with their counts (calls from the virtual user left out),
// the errors, and whether the graph evaluator's evidence is complete.
func reading(td *tracedata.TraceData) (agents, edges []string, errs int, complete bool) {
	agents = assembletest.AgentNames(td)
	for _, in := range td.Interactions {
		if in.From == tracedata.UserAgent {
			continue
		}
		edges = append(edges, fmt.Sprintf("%s->%s:%d", in.From, in.To, in.Count))
		errs += in.Errors
	}
	for _, a := range td.Agents {
		errs += a.Errors
	}
	res, err := evals.EvaluateGraph(context.Background(), td, evals.Inputs{})
	return agents, edges, errs, err == nil && res.Evidence != nil && res.Evidence.Level == evals.EvidenceComplete
}

func (tr truth) edges() []string {
	var out []string
	for _, in := range tr.Interactions {
		out = append(out, fmt.Sprintf("%s->%s:%d", in.From, in.To, in.Count))
	}
	slices.Sort(out)
	return out
}

// TestLangGraph: the same LangGraph teams read exactly whichever exporter
// recorded their runs' metadata, every run of every route: OpenInference's
// metadata JSON (Python and JS), LangSmith's langsmith.metadata.*
// attributes, Langfuse's langfuse.observation.metadata.* (its Python SDK
// JSON-encodes the values, its JS SDK does not).
func TestLangGraph(t *testing.T) {
	routes := []struct{ program, captures string }{
		{"langgraph-supervisor-py", "captures"},
		{"langgraph-supervisor-py", "captures-langfuse"},
		{"langgraph-swarm-langsmith-py", "captures"},
		{"langgraph-supervisor-js", "captures"},
		{"langgraph-supervisor-js", "captures-langfuse"},
		{"langgraph-swarm-js", "captures"},
		{"langgraph-swarm-js", "captures-langfuse"},
	}
	for _, r := range routes {
		tr := loadTruth(t, r.program)
		want := slices.Sorted(slices.Values(tr.Agents))
		for run := 1; run <= 3; run++ {
			file := fmt.Sprintf("%s/run-%d.otlp.json", r.captures, run)
			t.Run(r.program+"/"+file, func(t *testing.T) {
				id, spans := assembletest.LoadLive(t, r.program, file)
				td := assemble.Trace(id, spans)
				agents, edges, errs, complete := reading(td)
				if !slices.Equal(agents, want) || !slices.Equal(edges, tr.edges()) || errs != 0 || !complete {
					t.Errorf("agents %v edges %v errors %d complete %v; want %v %v, no error, complete (warnings %q)",
						agents, edges, errs, complete, want, tr.edges(), td.Coverage.Warnings)
				}
				if run == 1 {
					assembletest.AssertPermutationStable(t, id, spans, 5)
				}
			})
		}
	}
}

// TestLangGraphWithoutTheFamily shows what the routes read as when nothing
// reads LangChain's run metadata: Langfuse's Python CallbackHandler types
// the runs named "agent" and "call_agent" as agents, so the supervisor
// reads as a wrong team with complete evidence (the silent class of issue
// 30); the other routes read no team.
func TestLangGraphWithoutTheFamily(t *testing.T) {
	id, spans := assembletest.LoadLive(t, "langgraph-supervisor-py", "captures-langfuse/run-1.otlp.json")
	off, err := families.Default().Without("langgraph")
	if err != nil {
		t.Fatal(err)
	}
	td := assemble.TraceWith(id, spans, assemble.Options{Families: off})
	agents, _, _, complete := reading(td)
	if !slices.Contains(agents, "call_agent") || !complete {
		t.Errorf("without the family: agents %v complete %v; the capture no longer shows why the family reads Langfuse's agent type", agents, complete)
	}
}

// TestLangGraphAttacks attacks the family with what the live programs do
// not show, on edited copies of their captures.
func TestLangGraphAttacks(t *testing.T) {
	const oi, lf = "langgraph-supervisor-py", "langgraph-supervisor-py"
	load := func(t *testing.T, file string) (trace.TraceID, []otelmap.Span) {
		return assembletest.LoadLive(t, oi, file)
	}
	// editJSON rewrites OpenInference's metadata JSON of the spans keep
	// selects.
	editJSON := func(spans []otelmap.Span, keep func(*otelmap.Span) bool, from, to string) []otelmap.Span {
		return assembletest.EditAttrs(spans, keep, func(attrs []attribute.KeyValue) []attribute.KeyValue {
			for k := range attrs {
				if attrs[k].Key == "metadata" {
					attrs[k] = attribute.String("metadata", strings.ReplaceAll(attrs[k].Value.AsString(), from, to))
				}
			}
			return attrs
		})
	}
	add := func(kv attribute.KeyValue) func([]attribute.KeyValue) []attribute.KeyValue {
		return func(attrs []attribute.KeyValue) []attribute.KeyValue { return append(attrs, kv) }
	}
	nodeIs := func(node string) func(*otelmap.Span) bool {
		return func(sp *otelmap.Span) bool {
			v, _, _ := sp.StringAttr("metadata")
			return sp.Name == node && strings.Contains(v, `"langgraph_node": "`+node+`"`)
		}
	}

	t.Run("a node that runs no graph is no agent, whatever its name", func(t *testing.T) {
		// research_expert's inner runs edited into another namespace: the
		// node and its same-name run under call_agent remain, but no graph
		// ran under them (a function node calling a runnable of its own
		// name). No agent research_expert; the handoff to it is unmet, and
		// the evidence says so rather than complete.
		id, spans := load(t, "captures/run-1.otlp.json")
		spans = editJSON(spans, func(sp *otelmap.Span) bool {
			v, _, _ := sp.StringAttr("metadata")
			return strings.Contains(v, `"langgraph_checkpoint_ns": "research_expert:`) && strings.Contains(v, "|")
		}, `"langgraph_checkpoint_ns": "research_expert:`, `"langgraph_checkpoint_ns": "elsewhere:`)
		td := assemble.Trace(id, spans)
		agents, _, _, complete := reading(td)
		if slices.Contains(agents, "research_expert") || complete {
			t.Errorf("agents %v complete %v: a node that ran no graph read as an agent, or the team as complete", agents, complete)
		}
	})

	t.Run("a run of another node between the node's run and the graph's breaks the pair", func(t *testing.T) {
		id, spans := load(t, "captures/run-1.otlp.json")
		spans = editJSON(spans, func(sp *otelmap.Span) bool {
			v, _, _ := sp.StringAttr("metadata")
			return sp.Name == "call_agent" && strings.Contains(v, `"langgraph_node": "math_expert"`)
		}, `"langgraph_node": "math_expert"`, `"langgraph_node": "router"`)
		td := assemble.Trace(id, spans)
		if agents, _, _, complete := reading(td); slices.Contains(agents, "math_expert") || complete {
			t.Errorf("agents %v complete %v", agents, complete)
		}
	})

	t.Run("exporters that agree are one reading", func(t *testing.T) {
		// LangSmith's flat copy of the same metadata beside OpenInference's
		// JSON (two exporters on one run): the same team.
		id, spans := load(t, "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, nodeIs("research_expert"), add(attribute.String("langsmith.metadata.langgraph_node", "research_expert")))
		td := assemble.Trace(id, spans)
		if agents, edges, _, complete := reading(td); !slices.Contains(agents, "research_expert") || len(edges) != 2 || !complete {
			t.Errorf("agents %v edges %v complete %v", agents, edges, complete)
		}
	})

	t.Run("exporters that disagree are believed in neither", func(t *testing.T) {
		// LangSmith's copy on research_expert's runs names another node:
		// the node is read from neither, research_expert is no agent, a
		// warning names the key, and the evidence is not complete.
		id, spans := load(t, "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, nodeIs("research_expert"), add(attribute.String("langsmith.metadata.langgraph_node", "intruder")))
		td := assemble.Trace(id, spans)
		agents, _, _, complete := reading(td)
		if slices.Contains(agents, "research_expert") || slices.Contains(agents, "intruder") || complete ||
			!assembletest.HasWarning(td, "langgraph_node") {
			t.Errorf("agents %v complete %v warnings %q", agents, complete, td.Coverage.Warnings)
		}
	})

	t.Run("a Langfuse agent type on a plain node names nothing", func(t *testing.T) {
		// Langfuse's CallbackHandler types a run "agent" for "agent" in its
		// name: the react agent's model node and call_agent are so typed in
		// the capture. A node named billing_agent that runs no graph is no
		// agent either, and, outside every agent, it is counted unread.
		id, spans := assembletest.LoadLive(t, lf, "captures-langfuse/run-1.otlp.json")
		var root otelmap.Span
		for _, sp := range spans {
			if sp.ParentSpanID == (trace.SpanID{}) {
				root = sp
			}
		}
		extra := root
		extra.SpanID = trace.SpanID{0xfe, 1}
		extra.ParentSpanID = root.SpanID
		extra.Name = "billing_agent"
		extra.Attrs = []attribute.KeyValue{
			attribute.String("langfuse.observation.type", "agent"),
			attribute.String("langfuse.observation.metadata.langgraph_node", `"billing_agent"`),
			attribute.String("langfuse.observation.metadata.langgraph_checkpoint_ns", `"billing_agent:1"`),
		}
		td := assemble.Trace(id, append(spans, extra))
		agents, _, _, complete := reading(td)
		if slices.Contains(agents, "billing_agent") || td.Coverage.UnreadAgentSpans != 1 || complete {
			t.Errorf("agents %v unread %d complete %v", agents, td.Coverage.UnreadAgentSpans, complete)
		}
	})

	t.Run("a JSON-encoded value and a raw one are the same name", func(t *testing.T) {
		// The Python capture's quoted values unquoted by hand, as the JS
		// SDK writes them: the same team.
		id, spans := assembletest.LoadLive(t, lf, "captures-langfuse/run-1.otlp.json")
		for i := range spans {
			spans[i].Attrs = slices.Clone(spans[i].Attrs)
			for k, kv := range spans[i].Attrs {
				if v := kv.Value.String(); strings.HasPrefix(string(kv.Key), "langfuse.observation.metadata.") && strings.HasPrefix(v, `"`) {
					var s string
					if json.Unmarshal([]byte(v), &s) == nil {
						spans[i].Attrs[k] = attribute.String(string(kv.Key), s)
					}
				}
			}
		}
		td := assemble.Trace(id, spans)
		if agents, edges, _, complete := reading(td); len(agents) != 3 || len(edges) != 2 || !complete {
			t.Errorf("agents %v edges %v complete %v", agents, edges, complete)
		}
	})
}

// TestLangGraphControlFlow: LangSmith records a handoff's ParentCommand
// as an Exception whose message is its repr; that is control flow inside
// a graph (the capture's seven such spans fail nothing: TestLangGraph),
// but a failure on the graph's outermost run (it escaped to the caller),
// and an Exception that merely mentions one, or another type whose message
// starts like one, is a failure.
func TestLangGraphControlFlow(t *testing.T) {
	cf, ok := langgraph.Family.(recognize.ControlFlower)
	if !ok {
		t.Fatal("the family knows no control flow")
	}
	repr := "ParentCommand(Command(graph='__parent__', goto='writer'))"
	cases := []struct {
		name     string
		span     string // the span edited: a node's run, or the outermost graph run "LangGraph"
		typ, msg string
		control  bool
	}{
		{"the repr inside a graph", "writer", "Exception", repr, true},
		{"the type inside a graph", "writer", "ParentCommand", "Command(graph='__parent__')", true},
		{"the repr on the graph's outermost run", "LangGraph", "Exception", repr, false},
		{"the type on the graph's outermost run", "LangGraph", "ParentCommand", "Command(graph='__parent__')", false},
		{"an Exception that mentions one", "writer", "Exception", "routing failed after " + repr, false},
		{"another type whose message starts like one", "writer", "ValueError", repr, false},
		{"an interrupt's repr inside a graph", "writer", "Exception", "GraphInterrupt((Interrupt(value='ok?'),))", true},
	}
	_, spans := assembletest.LoadLive(t, "langgraph-swarm-langsmith-py", "captures/run-1.otlp.json")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := slices.IndexFunc(spans, func(sp otelmap.Span) bool { return sp.Name == c.span })
			if i < 0 {
				t.Fatalf("no span %s", c.span)
			}
			sp := spans[i]
			sp.StatusError, sp.StatusMessage = true, ""
			sp.Detail = &otelmap.SpanDetail{Events: []otelmap.Event{{Name: "exception", Time: sp.Start,
				Attrs: []attribute.KeyValue{attribute.String("exception.type", c.typ), attribute.String("exception.message", c.msg)}}}}
			if got := cf.ControlFlow(&sp, recognize.ErrorTypes(&sp)); got != c.control {
				t.Errorf("control flow %v, want %v", got, c.control)
			}
		})
	}
}
