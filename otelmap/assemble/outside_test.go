package assemble_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// TestServiceCaller attacks the outside-call rule (outside.go: an agent run
// from a tool call that its trace root's own model chose, outside any agent
// span, is called by the root's service) and the ax family with what the
// ax-functions captures do not show, on edited copies of them and on
// traces built here.
func TestServiceCaller(t *testing.T) {
	const svc = "ax-functions-team"
	load := func(t *testing.T) (trace.TraceID, []otelmap.Span) {
		return loadLive(t, "ax-functions", "captures/run-1.otlp.json")
	}
	rootOf := func(t *testing.T, spans []otelmap.Span) int {
		t.Helper()
		for i := range spans {
			if !spans[i].ParentSpanID.IsValid() {
				return i
			}
		}
		t.Fatal("no root")
		return -1
	}
	// realEdges leaves out the virtual user's calls.
	realEdges := func(td *tracedata.TraceData) []string {
		var out []string
		for _, e := range edges(td) {
			if !strings.HasPrefix(e, tracedata.UserAgent+"->") {
				out = append(out, e)
			}
		}
		return out
	}
	setAttr := func(sp *otelmap.Span, key, val string) {
		sp.Attrs = slices.Clone(sp.Attrs)
		for i := range sp.Attrs {
			if string(sp.Attrs[i].Key) == key {
				sp.Attrs[i] = attribute.String(key, val)
				return
			}
		}
		sp.Attrs = append(sp.Attrs, attribute.String(key, val))
	}

	t.Run("the capture as it came", func(t *testing.T) {
		id, spans := load(t)
		td := assemble.Trace(id, spans)
		if got := agentNames(td); !slices.Equal(got, []string{svc, "researcher", "writer"}) {
			t.Errorf("agents %v", got)
		}
		if got := realEdges(td); !slices.Equal(got, []string{svc + "->researcher", svc + "->writer"}) {
			t.Errorf("edges %v", got)
		}
		for _, a := range td.Agents {
			want := map[string]string{svc: tracedata.IdentityServiceName, "researcher": tracedata.IdentityAx, "writer": tracedata.IdentityAx}[a.Name]
			if want != "" && a.IdentifiedBy != want {
				t.Errorf("agent %s identified by %q, want %q", a.Name, a.IdentifiedBy, want)
			}
		}
		if td.Coverage.NoEvidence || td.Coverage.UnreadAgentSpans != 0 {
			t.Errorf("coverage %+v", td.Coverage)
		}
		assertPermutationStable(t, id, spans, 10)
	})

	t.Run("no model call at the root: no agent invented", func(t *testing.T) {
		// The root's code calls the tools itself: the application, not an
		// agent, made the calls; the service must not stand for one.
		id, spans := load(t)
		r := spans[rootOf(t, spans)].SpanID
		spans = slices.DeleteFunc(spans, func(sp otelmap.Span) bool {
			return sp.ParentSpanID == r && sp.Name == "AI Chat Request"
		})
		td := assemble.Trace(id, spans)
		if got := realEdges(td); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
		if slices.Contains(agentNames(td), svc) && findInteraction(td, svc, "researcher") != nil {
			t.Errorf("the service stood in for an agent that made no model call")
		}
	})

	t.Run("the model call after the tool call", func(t *testing.T) {
		id, spans := load(t)
		r := spans[rootOf(t, spans)].SpanID
		late := spans[rootOf(t, spans)].End.Add(time.Second)
		for i := range spans {
			if spans[i].ParentSpanID == r && spans[i].Name == "AI Chat Request" {
				spans[i].Start, spans[i].End = late, late.Add(time.Millisecond)
			}
		}
		if got := realEdges(assemble.Trace(id, spans)); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
	})

	t.Run("a root whose parent is missing: a fragment", func(t *testing.T) {
		// The AxGen's parent was not exported: whoever ran it may be an
		// agent span that is not here. No caller is made up.
		id, spans := load(t)
		spans[rootOf(t, spans)].ParentSpanID = trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}
		td := assemble.Trace(id, spans)
		// (unknown -> researcher is the entry rule's: a server span whose
		// parent is missing is called by "unknown".)
		for _, e := range realEdges(td) {
			if strings.HasPrefix(e, svc+"->") {
				t.Errorf("edges %v: the service stood in for a caller not in the trace", realEdges(td))
			}
		}
	})

	t.Run("the tool call is the root of its fragment", func(t *testing.T) {
		// Only the researcher's tool span and what is under it: the tool
		// call is a root, no model call of its caller is in the trace.
		id, spans := load(t)
		var tool trace.SpanID
		for _, sp := range spans {
			if sp.Name == "Tool: researcher" {
				tool = sp.SpanID
			}
		}
		keep := map[trace.SpanID]bool{tool: true}
		for changed := true; changed; {
			changed = false
			for _, sp := range spans {
				if keep[sp.ParentSpanID] && !keep[sp.SpanID] {
					keep[sp.SpanID], changed = true, true
				}
			}
		}
		spans = slices.DeleteFunc(spans, func(sp otelmap.Span) bool { return !keep[sp.SpanID] })
		for i := range spans {
			if spans[i].SpanID == tool {
				spans[i].ParentSpanID = trace.SpanID{}
			}
		}
		td := assemble.Trace(id, spans)
		if got := realEdges(td); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
		if slices.Contains(agentNames(td), svc) {
			t.Errorf("agents %v: the service stood in for a caller not in the trace", agentNames(td))
		}
	})

	t.Run("a tool whose body is no agent", func(t *testing.T) {
		id, spans := load(t)
		for i := range spans {
			if spans[i].Name == "AxAgent" {
				spans[i].Attrs = slices.DeleteFunc(slices.Clone(spans[i].Attrs), func(kv attribute.KeyValue) bool {
					return strings.HasPrefix(string(kv.Key), "ax.")
				})
			}
		}
		td := assemble.Trace(id, spans)
		if got := realEdges(td); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
		if td.Coverage.Complete == 1 {
			t.Errorf("complete with no agent named: %+v", td.Coverage)
		}
	})

	t.Run("an unknown ax.program.type", func(t *testing.T) {
		id, spans := load(t)
		for i := range spans {
			if spans[i].Name == "AxAgent" {
				setAttr(&spans[i], "ax.program.type", "AxPlanner")
			}
		}
		td := assemble.Trace(id, spans)
		if got := realEdges(td); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
		if td.Coverage.Complete == 1 {
			t.Errorf("complete with the children unread: %+v", td.Coverage)
		}
	})

	t.Run("the callee in another process", func(t *testing.T) {
		// The writer's spans exported by another service, its AxAgent
		// directly under the caller's tool span (no client span): the
		// family names only a run in the tool's own process, and the rule
		// reaches no other process.
		id, spans := load(t)
		other := &otelmap.Resource{ServiceName: "writer-host"}
		var writerTool trace.SpanID
		for _, sp := range spans {
			if sp.Name == "Tool: writer" {
				writerTool = sp.SpanID
			}
		}
		moved := map[trace.SpanID]bool{}
		for changed := true; changed; {
			changed = false
			for _, sp := range spans {
				if (sp.ParentSpanID == writerTool || moved[sp.ParentSpanID]) && !moved[sp.SpanID] {
					moved[sp.SpanID], changed = true, true
				}
			}
		}
		for i := range spans {
			if moved[spans[i].SpanID] {
				spans[i].Resource = other
			}
		}
		td := assemble.Trace(id, spans)
		for _, e := range realEdges(td) {
			if e == svc+"->writer" {
				t.Errorf("edges %v: a call into another process read by the outside-call rule", realEdges(td))
			}
		}
		if got := realEdges(td); !slices.Contains(got, svc+"->researcher") {
			t.Errorf("edges %v: the researcher's call, in process, is lost", got)
		}
	})

	t.Run("two services, each an unnamed coordinator", func(t *testing.T) {
		// Two copies of the run in one trace, each root exported by a
		// service of its own: each service calls its own children.
		id, spans := load(t)
		b := copyRun(spans, 0x40, &otelmap.Resource{ServiceName: "second-team"})
		spans = append(spans, b...)
		td := assemble.Trace(id, spans)
		want := []string{"second-team->researcher", "second-team->writer", svc + "->researcher", svc + "->writer"}
		got := realEdges(td)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("edges %v, want %v", got, want)
		}
	})

	t.Run("two roots in one service: not one agent", func(t *testing.T) {
		// Two coordinator runs of one service in one trace could be two
		// programs: the service does not stand for both.
		id, spans := load(t)
		spans = append(spans, copyRun(spans, 0x40, nil)...)
		if got := realEdges(assemble.Trace(id, spans)); len(got) != 0 {
			t.Errorf("edges %v, want none", got)
		}
	})

	t.Run("nesting two deep", func(t *testing.T) {
		// The researcher's own work calls a checker through a native tool
		// call: researcher -> checker by nesting, the service calls only
		// the researcher.
		id, spans := load(t)
		var parent otelmap.Span
		for _, sp := range spans {
			if sp.Name == "AxAgent" && parent.Name == "" {
				for _, c := range spans {
					if c.ParentSpanID == sp.SpanID {
						parent = c // the researcher's AxFlow
					}
				}
			}
		}
		tool := parent
		tool.SpanID = trace.SpanID{0x77, 1}
		tool.ParentSpanID = parent.SpanID
		tool.Name = "Tool: checker"
		tool.Attrs = []attribute.KeyValue{attribute.String("tool.name", "checker"), attribute.String("tool.mode", "native")}
		run := tool
		run.SpanID = trace.SpanID{0x77, 2}
		run.ParentSpanID = tool.SpanID
		run.Name = "AxAgent"
		run.Attrs = []attribute.KeyValue{attribute.String("ax.program.type", "AxAgent"), attribute.String("ax.program.id", "root")}
		spans = append(spans, tool, run)
		got := realEdges(assemble.Trace(id, spans))
		want := []string{"researcher->checker", svc + "->researcher", svc + "->writer"}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("edges %v, want %v", got, want)
		}
	})
}

// copyRun copies spans with new span ids (the first byte set to mark),
// under resource res (nil: the same resources).
func copyRun(spans []otelmap.Span, mark byte, res *otelmap.Resource) []otelmap.Span {
	re := func(id trace.SpanID) trace.SpanID {
		if id.IsValid() {
			id[0] = mark
		}
		return id
	}
	out := make([]otelmap.Span, len(spans))
	for i, sp := range spans {
		sp.SpanID, sp.ParentSpanID = re(sp.SpanID), re(sp.ParentSpanID)
		if res != nil {
			sp.Resource = res
		}
		out[i] = sp
	}
	return out
}
