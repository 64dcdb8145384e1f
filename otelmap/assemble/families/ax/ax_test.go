package ax_test

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

// TestAxFunctions: the ax-functions program's AxGen coordinator calls its
// AxAgent children as native functions; the family names each child by
// the Tool span its AxAgent run is the direct child of, on every run.
func TestAxFunctions(t *testing.T) {
	for run := 1; run <= 3; run++ {
		id, spans := assembletest.LoadLive(t, "ax-functions", fmt.Sprintf("captures/run-%d.otlp.json", run))
		td := assemble.Trace(id, spans)
		got := assembletest.Edges(td)
		slices.Sort(got)
		if want := []string{"ax-functions-team->researcher", "ax-functions-team->writer", "user->ax-functions-team"}; !slices.Equal(got, want) {
			t.Errorf("run %d: edges %v, want %v", run, got, want)
		}
		for _, name := range []string{"researcher", "writer"} {
			if a := td.Agent(name); a == nil || a.IdentifiedBy != tracedata.IdentityAx {
				t.Errorf("run %d: %s = %+v, want identified by %s", run, name, a, tracedata.IdentityAx)
			}
		}
		if td.Coverage.UnreadAgentSpans != 0 || td.Coverage.Recognized["ax"] == 0 {
			t.Errorf("run %d: coverage %+v", run, td.Coverage)
		}
		if run == 1 {
			assembletest.AssertPermutationStable(t, id, spans, 5)
		}
	}
}

// TestAxUnnamedRuns: an AxAgent run no native tool call names (the ax and
// ax-globals programs: children called from the coordinator's JavaScript
// runtime, each its own trace) is an agent no attribute names: counted
// unread, never named by its ax.program.id path.
func TestAxUnnamedRuns(t *testing.T) {
	for _, prog := range []string{"ax", "ax-globals"} {
		_, spans := assembletest.LoadLive(t, prog, "captures/run-1.otlp.json")
		byTrace := map[trace.TraceID][]otelmap.Span{}
		for _, sp := range spans {
			byTrace[sp.TraceID] = append(byTrace[sp.TraceID], sp)
		}
		unread := 0
		for id, ss := range byTrace {
			td := assemble.Trace(id, ss)
			unread += td.Coverage.UnreadAgentSpans
			for _, name := range assembletest.AgentNames(td) {
				if name == "root" || name == "root.researcher" || name == "AxAgent" {
					t.Errorf("%s: agent %q named by a program path or span name", prog, name)
				}
			}
		}
		if unread == 0 {
			t.Errorf("%s: no AxAgent run counted unread", prog)
		}
	}
}

// span builds one span of a made-up Ax trace: n under parent (0: a root).
func span(proc *otelmap.Resource, n, parent byte, name string, attrs ...attribute.KeyValue) otelmap.Span {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xe3}, SpanID: trace.SpanID{0xe3, n}, Name: name, Kind: trace.SpanKindInternal,
		Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Second - time.Duration(n)*time.Millisecond),
		Attrs: attrs, Resource: proc}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xe3, parent}
	}
	return sp
}

var axAgent = []attribute.KeyValue{attribute.String("ax.program.type", "AxAgent"), attribute.String("ax.program.id", "root")}

func nativeTool(name string) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("tool.name", name), attribute.String("tool.mode", "native"), attribute.String("function.id", "f")}
}

// TestAxAttacks: what names an AxAgent run is exactly Ax's native tool
// span around it, in its process: a tool span of another library, one
// whose name is not its function's, one of another process, one a span
// away, and an unknown program type name nothing.
func TestAxAttacks(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "app"}
	peer := &otelmap.Resource{ServiceName: "participant"}
	chat := []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("chat"), attribute.String("gen_ai.request.model", "m")}
	// The coordinator: an agent the trace names, whose tool runs the child.
	base := func(tool otelmap.Span, child ...otelmap.Span) []otelmap.Span {
		return append([]otelmap.Span{
			span(app, 1, 0, "invoke_agent boss", otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String("boss")),
			span(app, 2, 1, "chat m", chat...),
			tool,
		}, child...)
	}
	named := func(spans []otelmap.Span) bool {
		td := assemble.Trace(spans[0].TraceID, spans)
		return slices.Contains(assembletest.AgentNames(td), "researcher")
	}
	ok := base(span(app, 3, 1, "Tool: researcher", nativeTool("researcher")...), span(app, 4, 3, "AxAgent", axAgent...))
	if td := assemble.Trace(ok[0].TraceID, ok); !slices.Equal(assembletest.Edges(td), []string{"boss->researcher"}) {
		t.Fatalf("the shape itself is not read: edges %v", assembletest.Edges(td))
	}
	cases := []struct {
		name  string
		spans []otelmap.Span
	}{
		{"a tool span that is not native", base(span(app, 3, 1, "Tool: researcher",
			attribute.String("tool.name", "researcher"), attribute.String("tool.mode", "mcp")), span(app, 4, 3, "AxAgent", axAgent...))},
		{"a tool span whose name is not its function's", base(span(app, 3, 1, "Tool: Researcher", nativeTool("researcher")...),
			span(app, 4, 3, "AxAgent", axAgent...))},
		{"an AxAgent of another process under the tool", base(span(app, 3, 1, "Tool: researcher", nativeTool("researcher")...),
			span(peer, 4, 3, "AxAgent", axAgent...))},
		{"a span between the tool and the AxAgent", base(span(app, 3, 1, "Tool: researcher", nativeTool("researcher")...),
			span(app, 4, 3, "step"), span(app, 5, 4, "AxAgent", axAgent...))},
		{"an unknown program type", base(span(app, 3, 1, "Tool: researcher", nativeTool("researcher")...),
			span(app, 4, 3, "AxAgent", attribute.String("ax.program.type", "AxPlanner"), attribute.String("ax.program.id", "root")))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if named(c.spans) {
				td := assemble.Trace(c.spans[0].TraceID, c.spans)
				t.Errorf("the AxAgent run named researcher: agents %v edges %v", assembletest.AgentNames(td), assembletest.Edges(td))
			}
		})
	}
}
