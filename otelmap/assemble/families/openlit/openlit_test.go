package openlit_test

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

// teamTrace loads run n of the live agno-team-openlit-py program and keeps
// the trace of the team's run (the two create_agent traces aside).
func teamTrace(t *testing.T, run int) (trace.TraceID, []otelmap.Span) {
	t.Helper()
	_, spans := assembletest.LoadLive(t, "agno-team-openlit-py", fmt.Sprintf("captures/run-%d.otlp.json", run))
	i := slices.IndexFunc(spans, func(sp otelmap.Span) bool { return sp.Name == "invoke_workflow report_team" })
	if i < 0 {
		t.Fatalf("run %d: no invoke_workflow report_team span", run)
	}
	id := spans[i].TraceID
	return id, slices.DeleteFunc(spans, func(sp otelmap.Span) bool { return sp.TraceID != id })
}

// TestOpenLITAgnoTeam: OpenLIT records an Agno Team's run as
// invoke_workflow with the leader's own model and tool calls under it; the
// family reads it as the leader, who calls each member once, on every run
// of the live program, whatever order the spans come in.
func TestOpenLITAgnoTeam(t *testing.T) {
	for run := 1; run <= 3; run++ {
		id, spans := teamTrace(t, run)
		td := assemble.Trace(id, spans)
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"report_team->researcher", "report_team->writer"}) ||
			td.Coverage.Complete != 1 || td.Coverage.UnwiredAgents != 0 {
			t.Errorf("run %d: edges %v coverage %+v", run, got, td.Coverage)
		}
		if run == 1 {
			assembletest.AssertPermutationStable(t, id, spans, 5)
		}
	}
}

// TestOpenLITAgnoTeamAttacks edits the live capture: what makes the team
// span a leader is OpenLIT's own marks on it, in its own process.
func TestOpenLITAgnoTeamAttacks(t *testing.T) {
	id, spans := teamTrace(t, 1)
	team := assembletest.AttrIs("gen_ai.workflow.name", "report_team")
	for _, c := range []struct {
		name string
		edit func([]otelmap.Span) []otelmap.Span
	}{
		// An Agno Workflow (OpenLIT writes no member list on it) whose
		// step calls a model is a pipeline, not a leader.
		{"no member list: an Agno Workflow", func(s []otelmap.Span) []otelmap.Span {
			return assembletest.EditAttrs(s, team, assembletest.Without("gen_ai.agno.team.agents"))
		}},
		// Not OpenLIT's span: another instrumentation's workflow is not
		// read by this family.
		{"not OpenLIT", func(s []otelmap.Span) []otelmap.Span {
			return assembletest.EditAttrs(s, team, assembletest.Without("telemetry.sdk.name"))
		}},
		// The leader named like a member that ran under it would call
		// itself (or take the member's calls).
		{"named like its member", func(s []otelmap.Span) []otelmap.Span {
			return assembletest.EditAttrs(s, team, func(kv []attribute.KeyValue) []attribute.KeyValue {
				kv = slices.Clone(kv)
				for i := range kv {
					if kv[i].Key == "gen_ai.workflow.name" {
						kv[i] = attribute.String("gen_ai.workflow.name", "researcher")
					}
				}
				return kv
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			td := assemble.Trace(id, c.edit(spans))
			for _, e := range assembletest.Edges(td) {
				if e == "researcher->researcher" || e == "report_team->researcher" || e == "report_team->writer" {
					t.Errorf("edge %s read from a team span that is no leader (edges %v)", e, assembletest.Edges(td))
				}
			}
			if slices.Contains(assembletest.AgentNames(td), "report_team") {
				t.Errorf("report_team read as an agent: %v", assembletest.AgentNames(td))
			}
		})
	}
}

// span builds one span of a made-up OpenLIT Agno trace: n under parent (0:
// a root), from..to milliseconds, in process proc.
func span(proc *otelmap.Resource, n, parent byte, name string, from, to int, attrs ...attribute.KeyValue) otelmap.Span {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	sp := otelmap.Span{TraceID: trace.TraceID{0xe1}, SpanID: trace.SpanID{0xe1, n}, Name: name, Kind: trace.SpanKindInternal,
		Start: t0.Add(time.Duration(from) * time.Millisecond), End: t0.Add(time.Duration(to) * time.Millisecond),
		Attrs: append([]attribute.KeyValue{attribute.String("telemetry.sdk.name", "openlit")}, attrs...), Resource: proc}
	if parent != 0 {
		sp.ParentSpanID = trace.SpanID{0xe1, parent}
	}
	return sp
}

func teamRun(name string, members ...string) []attribute.KeyValue {
	list, _ := attribute.StringSlice("", members).Value.MarshalJSON()
	return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("invoke_workflow"),
		attribute.String("gen_ai.workflow.name", name), attribute.String("gen_ai.agno.team.agents", string(list))}
}

func agentRun(name string) []attribute.KeyValue {
	return []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String(name)}
}

var chat = []attribute.KeyValue{otelmap.AttrGenAIOperationName.String("chat"), attribute.String("gen_ai.request.model", "m")}

// TestOpenLITLeaderRules: the cases the live program does not show. A
// team span is a leader only with a model call and an agent of its own
// process as direct children; a model call or an agent of another process
// parented on it (a participant naming itself like an OpenLIT member to
// gain a caller, or lending the team a model call) makes nothing; a
// model call inside a member is the member's; a team led by a team reads
// as a chain of calls.
func TestOpenLITLeaderRules(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "agno-team"}
	peer := &otelmap.Resource{ServiceName: "participant"}
	read := func(spans []otelmap.Span) *tracedata.TraceData { return assemble.Trace(spans[0].TraceID, spans) }
	cases := []struct {
		name  string
		spans []otelmap.Span
		want  []string // edges
		notA  string   // not an agent
	}{
		{"a leader", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a", "b")...),
			span(app, 2, 1, "chat m", 1, 5, chat...),
			span(app, 3, 1, "invoke_agent a", 10, 20, agentRun("a")...),
			span(app, 4, 1, "invoke_agent b", 30, 40, agentRun("b")...),
		}, []string{"t->a", "t->b"}, ""},
		{"no model call of its own, one inside a member", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a", "b")...),
			span(app, 3, 1, "invoke_agent a", 10, 20, agentRun("a")...),
			span(app, 2, 3, "chat m", 11, 15, chat...),
			span(app, 4, 1, "invoke_agent b", 30, 40, agentRun("b")...),
		}, nil, "t"},
		{"a model call and no agent", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a")...),
			span(app, 2, 1, "chat m", 1, 5, chat...),
		}, nil, "t"},
		{"its only agent from another process", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a", "mallory")...),
			span(app, 2, 1, "chat m", 1, 5, chat...),
			span(peer, 3, 1, "invoke_agent mallory", 10, 20, agentRun("mallory")...),
		}, nil, "t"},
		{"its only model call from another process", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a", "b")...),
			span(peer, 2, 1, "chat m", 1, 5, chat...),
			span(app, 3, 1, "invoke_agent a", 10, 20, agentRun("a")...),
			span(app, 4, 1, "invoke_agent b", 30, 40, agentRun("b")...),
		}, nil, "t"},
		{"a team led by a team", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow outer", 0, 100, teamRun("outer", "inner")...),
			span(app, 2, 1, "chat m", 1, 5, chat...),
			span(app, 3, 1, "invoke_workflow inner", 10, 50, teamRun("inner", "a")...),
			span(app, 4, 3, "chat m", 11, 15, chat...),
			span(app, 5, 3, "invoke_agent a", 20, 30, agentRun("a")...),
		}, []string{"inner->a", "outer->inner"}, ""},
		{"a team named like the agent of its inner team", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow a", 0, 100, teamRun("a", "inner")...),
			span(app, 2, 1, "chat m", 1, 5, chat...),
			span(app, 3, 1, "invoke_workflow inner", 10, 50, teamRun("inner", "a")...),
			span(app, 4, 3, "chat m", 11, 15, chat...),
			span(app, 5, 3, "invoke_agent a", 20, 30, agentRun("a")...),
		}, []string{"inner->a"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			td := read(c.spans)
			got := assembletest.Edges(td)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("edges %v, want %v", got, c.want)
			}
			if c.notA != "" && slices.Contains(assembletest.AgentNames(td), c.notA) {
				t.Errorf("%s read as an agent: %v", c.notA, assembletest.AgentNames(td))
			}
		})
	}
}

// TestOpenLITParentCycles: families read the trace before its parent
// cycles are cut (docs/trace-assembly.md, "Coverage": cut above the
// cycle's smallest span id), so the walk from an agent span up to the
// team spans above it must end on a cycle: a participant sending an
// OpenLIT team span and two spans naming each other as parent would
// otherwise hold the assembly (and green serve's task) forever.
func TestOpenLITParentCycles(t *testing.T) {
	app := &otelmap.Resource{ServiceName: "agno-team"}
	for _, c := range []struct {
		name  string
		spans []otelmap.Span
	}{
		{"an agent and its model call each the other's parent, beside a leader", []otelmap.Span{
			span(app, 1, 0, "invoke_workflow t", 0, 100, teamRun("t", "a")...),
			span(app, 2, 1, "chat m", 1, 10, chat...),
			span(app, 3, 1, "invoke_agent a", 11, 50, agentRun("a")...),
			span(app, 4, 5, "invoke_agent b", 51, 60, agentRun("b")...),
			span(app, 5, 4, "chat m", 52, 58, chat...),
		}},
		{"two leaders each the other's parent", []otelmap.Span{
			span(app, 1, 2, "invoke_workflow t", 0, 100, teamRun("t", "a")...),
			span(app, 2, 1, "invoke_workflow u", 0, 100, teamRun("u", "t")...),
			span(app, 3, 1, "chat m", 1, 10, chat...),
			span(app, 4, 1, "invoke_agent a", 11, 50, agentRun("a")...),
			span(app, 5, 2, "chat m", 51, 60, chat...),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			td := assemble.Trace(c.spans[0].TraceID, c.spans)
			if !assembletest.HasWarning(td, "parent links form a cycle") {
				t.Errorf("no parent cycle warning: %q (edges %v)", td.Coverage.Warnings, assembletest.Edges(td))
			}
		})
	}
}
