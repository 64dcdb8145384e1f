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

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
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

// loadFramework reads testdata/frameworks/NAME.otlp.json with otelmap's
// OTLP file reader, as a user's exported file is read, and its truth.
func loadFramework(t *testing.T, name string) (trace.TraceID, []otelmap.Span, frameworkTruth) {
	t.Helper()
	dir := filepath.Join("testdata", "frameworks")
	docs, err := otelmap.ReadOTLPJSONFile(filepath.Join(dir, name+".otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spans []otelmap.Span
	for _, d := range docs {
		sp, warns := otelmap.SpansFromTraces(d, otelmap.SourceOTLP)
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
