package openllmetry_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"
	"github.com/coordbench/coordbench/tracedata"
)

// TestOpenLLMetryAgentsAsTools: OpenLLMetry's OpenAI Agents SDK processor
// records each agent an as_tool tool runs under the workflow root, beside
// its caller; the family reads the tool span that held it as its runner,
// on every run of the live program.
func TestOpenLLMetryAgentsAsTools(t *testing.T) {
	for run := 1; run <= 3; run++ {
		id, spans := assembletest.LoadLive(t, "openai-agents-astool-openllmetry-py", fmt.Sprintf("captures/run-%d.otlp.json", run))
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"orchestrator->researcher", "orchestrator->writer"}) ||
			td.Coverage.Complete != 1 || td.Coverage.UnwiredAgents != 0 {
			t.Errorf("run %d: edges %v coverage %+v", run, got, td.Coverage)
		}
		if run == 1 {
			assembletest.AssertPermutationStable(t, id, spans, 5)
		}
	}
}

// span builds one span of a made-up OpenLLMetry openai-agents trace: n
// under parent (0: a root), from..to milliseconds.
func span(proc *otelmap.Resource, n, parent byte, name string, from, to int, attrs ...attribute.KeyValue) otelmap.Span {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xe0}, SpanID: trace.SpanID{0xe0, n}, Name: name, Kind: trace.SpanKindInternal,
		Start: t0.Add(time.Duration(from) * time.Millisecond), End: t0.Add(time.Duration(to) * time.Millisecond),
		Attrs: attrs, Resource: proc}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xe0, parent}
	}
	return sp
}

func agent(name string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("traceloop.span.kind", "agent"), otelmap.AttrGenAIAgentName.String(name),
		otelmap.AttrGenAIOperationName.String("invoke_agent")}
}

func tool(name, result string) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("traceloop.span.kind", "tool"), otelmap.AttrGenAIToolName.String(name),
		otelmap.AttrGenAIOperationName.String("execute_tool")}
	if result != "" {
		kv = append(kv, attribute.String("gen_ai.tool.call.result", result))
	}
	return kv
}

func chat(answer string) []attribute.KeyValue {
	kv := []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("chat")}
	if answer != "" {
		kv = append(kv, attribute.String("gen_ai.output.messages",
			fmt.Sprintf(`[{"role": "assistant", "parts": [{"type": "text", "content": %q}], "finish_reason": "stop"}]`, answer)))
	}
	return kv
}

// TestOpenLLMetryRunByAttacks: what the live program does not show. Two
// callers whose tools both hold the agent's time (tools of two agents run
// in parallel): the one whose result is the agent's answer ran it, and
// with no text to tell, or text that fits both, no call is made and the
// evidence says the wiring is missing. A single holder whose result
// contradicts the agent's answer runs nothing; without content capture a
// single holder still does (its time holds the agent's whole run). An
// agent that starts before the tool, a tool of another process, and a
// tool of the agent's own run never run it.
func TestOpenLLMetryRunByAttacks(t *testing.T) {
	proc := &otelmap.Resource{ServiceName: "agents"}
	other := &otelmap.Resource{ServiceName: "elsewhere"}
	workflow := []attribute.KeyValue{attribute.String("traceloop.span.kind", "workflow")}
	// base: a and c each call a tool at once; b runs from 20 to 40 ms.
	base := func(resA, resC, answer string, tcProc *otelmap.Resource) []otelmap.Span {
		return []otelmap.Span{
			span(proc, 1, 0, "Agent Workflow", 0, 100, workflow...),
			span(proc, 2, 1, "a.agent", 1, 90, agent("a")...),
			span(proc, 3, 2, "ask.tool", 10, 50, tool("ask", resA)...),
			span(proc, 4, 1, "c.agent", 2, 90, agent("c")...),
			span(tcProc, 5, 4, "check.tool", 11, 51, tool("check", resC)...),
			span(proc, 6, 1, "b.agent", 20, 40, agent("b")...),
			span(proc, 7, 6, "openai.response", 30, 39, chat(answer)...),
		}
	}
	read := func(spans []otelmap.Span) *tracedata.TraceData {
		return assemble.Trace(spans[0].TraceID, spans)
	}
	callsB := func(td *tracedata.TraceData) []string {
		var out []string
		for _, in := range td.Interactions {
			if in.To == "b" {
				out = append(out, in.From)
			}
		}
		return out
	}
	cases := []struct {
		name  string
		spans []otelmap.Span
		want  []string // callers of b
	}{
		{"two holders, one result is b's answer", base("42", "no", "42", proc), []string{"a"}},
		{"two holders, the other result is b's answer", base("no", "42", "42", proc), []string{"c"}},
		{"two holders, both results fit", base("42", "42", "42", proc), nil},
		{"two holders, no text", base("", "", "", proc), nil},
		{"one holder whose result contradicts b's answer", base("no", "", "42", other), nil},
		{"one holder, no text", base("", "", "", other), []string{"a"}},
		{"one holder whose result is b's answer", base("42", "", "42", other), []string{"a"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			td := read(c.spans)
			if got := callsB(td); !slices.Equal(got, c.want) {
				t.Errorf("b called by %v, want %v (edges %v)", got, c.want, assembletest.Edges(td))
			}
			if c.want == nil && td.Coverage.UnwiredAgents == 0 {
				t.Errorf("no caller found, yet no unwired agent reported: coverage %+v", td.Coverage)
			}
		})
	}

	t.Run("an agent that starts before the tool", func(t *testing.T) {
		spans := base("", "", "", other)
		spans[5].Start = spans[2].Start.Add(-time.Millisecond)
		if got := callsB(read(spans)); got != nil {
			t.Errorf("b called by %v", got)
		}
	})
	t.Run("a tool of the agent's own run", func(t *testing.T) {
		spans := base("", "", "", other)
		spans = append(spans, span(proc, 8, 6, "own.tool", 21, 39, tool("own", "")...))
		spans[2].Start = spans[5].Start.Add(time.Millisecond) // a's tool no longer holds b
		if got := callsB(read(spans)); got != nil {
			t.Errorf("b called by %v", got)
		}
	})
}

// TestOpenLLMetryParentCycles: families read the trace before its parent
// cycles are cut, so the walk from a tool span up to the agent it runs in
// must end on a cycle: a tool span and a span above it each the other's
// parent, beside an agent run under the workflow, would otherwise hold the
// assembly (and green serve's task) forever.
func TestOpenLLMetryParentCycles(t *testing.T) {
	proc := &otelmap.Resource{ServiceName: "agents"}
	spans := []otelmap.Span{
		span(proc, 1, 0, "Agent Workflow", 0, 100, attribute.String("traceloop.span.kind", "workflow")),
		span(proc, 2, 1, "b.agent", 20, 40, agent("b")...),
		span(proc, 3, 4, "ask.tool", 10, 50, tool("ask", "")...),
		span(proc, 4, 3, "step", 10, 50),
	}
	td := assemble.Trace(spans[0].TraceID, spans)
	if !assembletest.HasWarning(td, "parent links form a cycle") {
		t.Errorf("no parent cycle warning: %q (edges %v)", td.Coverage.Warnings, assembletest.Edges(td))
	}
}
