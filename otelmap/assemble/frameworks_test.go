package assemble_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// frameworkTruth is the part of a fixture's NAME.truth.json the table test
// checks: the agents a user would name, names that are aliases of one of
// them (a proxy's name), the agent-to-agent calls with their counts, and
// names that must never be agents.
type frameworkTruth struct {
	Framework    string            `json:"framework"`
	Agents       []string          `json:"agents"`
	Aliases      map[string]string `json:"aliases"`
	Interactions []struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Count int    `json:"count"`
	} `json:"interactions"`
	NotAgents []string `json:"not_agents"`
}

// loadFramework reads testdata/frameworks/NAME.otlp.json with otlpdecode's
// OTLP file reader, as a user's exported file is read, and its truth.
func loadFramework(t *testing.T, name string) (trace.TraceID, []otelmap.Span, frameworkTruth) {
	t.Helper()
	dir := filepath.Join("testdata", "frameworks")
	docs, err := otlpdecode.ReadOTLPJSONFile(filepath.Join(dir, name+".otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spans []otelmap.Span
	for _, d := range docs {
		sp, warns := otlpdecode.SpansFromTraces(d, otelmap.SourceOTLP)
		if len(warns) > 0 {
			t.Fatalf("%s: %v", name, warns)
		}
		spans = append(spans, sp...)
	}
	ids := map[trace.TraceID]bool{}
	for _, sp := range spans {
		ids[sp.TraceID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("%s holds %d traces, want 1", name, len(ids))
	}
	raw, err := os.ReadFile(filepath.Join(dir, name+".truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var truth frameworkTruth
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatalf("%s.truth.json: %v", name, err)
	}
	return spans[0].TraceID, spans, truth
}

// frameworkNames lists the fixtures: every NAME.otlp.json beside a
// NAME.truth.json.
func frameworkNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "frameworks", "*.truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".truth.json"))
	}
	if len(names) < 17 {
		t.Fatalf("found %d framework fixtures, want at least 17", len(names))
	}
	return names
}

// TestFrameworkFixtures assembles each framework's trace and compares the
// graph with the fixture's ground truth: exactly its agents (a proxy's name
// only as an alias of the agent it stands for), exactly its interactions
// with their counts, none of the names that must not be agents, no span
// left unread that looks like an agent's, and evidence, not an empty
// graph. The caller of the whole run is not an agent: a call from the
// virtual "user" node (a root server span's caller, or the application
// around the agents) is left out of the comparison, as the truth leaves it
// out, and "user" may appear only as a virtual node. Each result must not
// depend on the order of the spans.
func TestFrameworkFixtures(t *testing.T) {
	for _, name := range frameworkNames(t) {
		t.Run(name, func(t *testing.T) {
			id, spans, truth := loadFramework(t, name)
			td := assemble.Trace(id, spans)
			checkFramework(t, td, truth)

			want := mustJSON(t, td)
			rng := rand.New(rand.NewPCG(7, uint64(len(spans))))
			for range 3 {
				shuffled := slices.Clone(spans)
				rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				if got := mustJSON(t, assemble.Trace(id, shuffled)); got != want {
					t.Fatalf("result depends on span order")
				}
			}
		})
	}
}

func checkFramework(t *testing.T, td *tracedata.TraceData, truth frameworkTruth) {
	t.Helper()
	var agents []string
	aliases := map[string][]string{}
	for _, a := range td.Agents {
		if a.Name == tracedata.UserAgent {
			if !a.Virtual {
				t.Errorf("agent %q is not virtual", a.Name)
			}
			continue
		}
		agents = append(agents, a.Name)
		aliases[a.Name] = a.Aliases
	}
	slices.Sort(agents)
	wantAgents := slices.Sorted(slices.Values(truth.Agents))
	if !slices.Equal(agents, wantAgents) {
		t.Errorf("agents = %q, want %q", agents, wantAgents)
	}
	for alias, canon := range truth.Aliases {
		if !slices.Contains(aliases[canon], alias) {
			t.Errorf("agent %q has aliases %q, want %q among them", canon, aliases[canon], alias)
		}
	}
	for _, n := range truth.NotAgents {
		if slices.Contains(agents, n) {
			t.Errorf("%q is an agent; the truth says it is not", n)
		}
	}

	got := map[string]int{}
	for _, in := range td.Interactions {
		if in.From == tracedata.UserAgent {
			continue
		}
		got[in.From+" -> "+in.To] += in.Count
	}
	want := map[string]int{}
	for _, in := range truth.Interactions {
		want[in.From+" -> "+in.To] += in.Count
	}
	if !mapsEqual(got, want) {
		t.Errorf("interactions = %v, want %v", got, want)
	}

	if td.Coverage.NoEvidence {
		t.Errorf("coverage says no evidence: %+v", td.Coverage)
	}
	for _, w := range td.Coverage.Warnings {
		if strings.Contains(w, "look like an agent") {
			t.Errorf("warning: %s", w)
		}
	}
	if td.Coverage.Recognized == nil {
		t.Errorf("coverage counts no recognizer: %+v", td.Coverage)
	}
	if t.Failed() || os.Getenv("FRAMEWORKS_VERBOSE") != "" {
		t.Logf("%s: agents %s; interactions %s; warnings %q; recognized %v unrecognized %d complete %v",
			truth.Framework, describeAgents(td), edges(td), td.Coverage.Warnings, td.Coverage.Recognized, td.Coverage.Unrecognized, td.Coverage.Complete)
	}
}

func mapsEqual(x, y map[string]int) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func describeAgents(td *tracedata.TraceData) string {
	var out []string
	for _, a := range td.Agents {
		s := fmt.Sprintf("%s(%s", a.Name, a.IdentifiedBy)
		if a.Virtual {
			s += ",virtual"
		}
		if len(a.Aliases) > 0 {
			s += ",aliases " + strings.Join(a.Aliases, "|")
		}
		out = append(out, s+")")
	}
	return strings.Join(out, " ")
}

// TestFrameworkSteps checks what the fixtures' steps say beyond the graph:
// LLM calls read from the previous GenAI and OpenInference shapes with
// their model and tokens, one LLM call recorded twice counted once, steps
// attributed to the agent doing them (not to the agent a framework copies
// onto them, not to a router), a proxy's step to the agent it stood for.
func TestFrameworkSteps(t *testing.T) {
	steps := func(t *testing.T, name string) []tracedata.Step {
		id, spans, _ := loadFramework(t, name)
		return assemble.Trace(id, spans).Steps
	}
	count := func(ss []tracedata.Step, pred func(tracedata.Step) bool) int {
		n := 0
		for _, s := range ss {
			if pred(s) {
				n++
			}
		}
		return n
	}
	t.Run("google-adk-transfer", func(t *testing.T) {
		ss := steps(t, "google-adk-transfer")
		if n := count(ss, func(s tracedata.Step) bool { return strings.HasPrefix(s.Name, "generate_content") }); n != 0 {
			t.Errorf("%d generate_content steps under call_llm, want them counted once, as call_llm", n)
		}
		if n := count(ss, func(s tracedata.Step) bool {
			return s.Name == "call_llm" && s.StepType == "llm_call" && s.Model == "gemini-2.5-flash" && s.TotalTokens > 0
		}); n != 5 {
			t.Errorf("%d call_llm LLM steps with model and tokens, want 5", n)
		}
	})
	t.Run("openai-agents-openllmetry", func(t *testing.T) {
		ss := steps(t, "openai-agents-openllmetry")
		if n := count(ss, func(s tracedata.Step) bool { return s.Name == "openai.response" }); n != 3 {
			t.Errorf("%d openai.response steps, want 3 (each LLM call once)", n)
		}
	})
	t.Run("openai-agents-openinference", func(t *testing.T) {
		ss := steps(t, "openai-agents-openinference")
		if n := count(ss, func(s tracedata.Step) bool { return s.Name == "response" && s.Model != "" && s.TotalTokens > 0 }); n != 3 {
			t.Errorf("%d LLM steps with model and tokens, want 3", n)
		}
	})
	t.Run("pydantic-ai-1x", func(t *testing.T) {
		for _, s := range steps(t, "pydantic-ai-1x") {
			switch {
			case s.Name == "running tool" && (s.StepType != "tool_call" || s.Agent != "joke_selection_agent"):
				t.Errorf("tool step = %+v", s)
			case s.Name == "agent run" && s.Agent == "joke_generation_agent" && s.Caller != "joke_selection_agent":
				t.Errorf("delegate's agent step = %+v", s)
			}
		}
	})
	t.Run("autogen-selector-group-chat", func(t *testing.T) {
		for _, s := range steps(t, "autogen-selector-group-chat") {
			if s.Name == "execute_tool search_web_tool" && s.Agent != "WebSearchAgent" {
				t.Errorf("tool step = %+v", s)
			}
		}
		// The group chat manager's speaker selections are no agent's.
		if n := count(steps(t, "autogen-selector-group-chat"), func(s tracedata.Step) bool {
			return s.Name == "openai.chat" && s.Agent == tracedata.UserAgent
		}); n != 4 {
			t.Errorf("%d speaker selections attributed to the application, want 4", n)
		}
	})
	t.Run("google-adk-remote-a2a", func(t *testing.T) {
		for _, s := range steps(t, "google-adk-remote-a2a") {
			if s.Name == "invoke_agent prime_agent" && (s.Agent != "check_prime_agent" || s.Caller != "root_agent") {
				t.Errorf("proxy's step = %+v", s)
			}
		}
	})
}

// TestNoEvidence: spans that look like agents' but name none any rule
// reads give a warning and an empty graph that is no evidence, not
// complete; a single named agent with no calls is complete; the counts of
// recognized and unrecognized spans add up.
func TestNoEvidence(t *testing.T) {
	id := trace.TraceID{0xe0}
	res := &otelmap.Resource{ServiceName: "svc"}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	span := func(n byte, parent byte, name string, attrs ...attribute.KeyValue) otelmap.Span {
		sp := otelmap.Span{TraceID: id, SpanID: trace.SpanID{0xe0, n}, Name: name, Kind: trace.SpanKindInternal,
			Start: t0.Add(time.Duration(n) * time.Millisecond), End: t0.Add(time.Second), Attrs: attrs, Resource: res}
		if parent != 0 {
			sp.ParentSpanID = trace.SpanID{0xe0, parent}
		}
		return sp
	}
	// A framework of its own: agents as spans with custom attributes.
	custom := []otelmap.Span{
		span(1, 0, "Crew.kickoff"),
		span(2, 1, "PlannerAgent.invoke", attribute.String("myfw.agent", "planner")),
		span(3, 1, "WriterAgent.invoke", attribute.String("myfw.agent", "writer")),
		span(4, 3, "chat gpt-4o", otelmap.AttrGenAIOperationName.String("chat")),
	}
	td := assemble.Trace(id, custom)
	c := td.Coverage
	if !c.NoEvidence || c.Complete != 0 || c.UnreadAgentSpans != 2 || c.Unrecognized != 3 || c.Recognized["genai"] != 1 {
		t.Errorf("custom framework coverage = %+v", c)
	}
	if !hasWarning(td, `2 spans look like an agent's work but name no agent any rule reads (the first: span e002000000000000 "PlannerAgent.invoke")`) ||
		!hasWarning(td, "no evidence of coordination") {
		t.Errorf("warnings = %q", c.Warnings)
	}

	// One agent, named, with no calls: nothing was missed.
	single := []otelmap.Span{
		span(1, 0, "invoke_agent solo", otelmap.AttrGenAIOperationName.String("invoke_agent"), otelmap.AttrGenAIAgentName.String("solo")),
		span(2, 1, "chat gpt-4o", otelmap.AttrGenAIOperationName.String("chat")),
	}
	td = assemble.Trace(id, single)
	if c := td.Coverage; c.NoEvidence || c.Complete != 1 || c.UnreadAgentSpans != 0 || len(c.Warnings) != 0 {
		t.Errorf("single agent coverage = %+v", c)
	}
}
