package assemble_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// liveDir holds the live corpus: one folder per program that ran a real
// multi-agent team with a framework from npm against a scripted fake model
// (testdata/live/README.md).
var liveDir = filepath.Join("testdata", "live")

// minLiveRuns is how many captures each program must hold: span timing
// changes from run to run and some misreadings show on some runs only.
const minLiveRuns = 3

// liveTruth is a program's truth.json: what the team does, written from
// the program before coordbench's output was looked at. Unknown fields are
// refused, so a misspelt marker cannot silently do nothing.
type liveTruth struct {
	Framework string `json:"framework"`
	Pattern   string `json:"pattern"`
	Scenario  string `json:"scenario"`
	// Packages are the program's npm packages, each with the version its
	// package-lock.json pins and its monthly downloads.
	Packages map[string]struct {
		Version   string `json:"version"`
		Downloads int64  `json:"downloads_a_month"`
	} `json:"packages"`
	Agents       []string          `json:"agents"`
	Aliases      map[string]string `json:"aliases"`
	Interactions []struct {
		From  string `json:"from"`
		To    string `json:"to"`
		Count int    `json:"count"`
	} `json:"interactions"`
	NotAgents []string `json:"not_agents"`
	// ToolServers are the nodes with Role tool_server (MCP servers), which
	// are not agents.
	ToolServers []string `json:"tool_servers"`
	// Traces, when set, is how many traces one run exports.
	Traces int `json:"traces"`
	// Errored lists what really fails: agent names and "from -> to" calls.
	// Anything else counted as errored is a false error.
	Errored             []string `json:"errored"`
	ControlFlowStatuses string   `json:"control_flow_statuses"`
	// InsufficientEvidence, when set, says why the capture cannot show the
	// team: every trace must then be labelled insufficient_evidence.
	InsufficientEvidence string `json:"insufficient_evidence"`
	// NoTeamTraces, when set, says how many traces of a run show no team
	// and why (a card fetch by an untraced caller, made outside its
	// message, is a trace of its own): exactly that many traces must be
	// labelled insufficient_evidence, and every other one must show the
	// team.
	NoTeamTraces *struct {
		Count  int    `json:"count"`
		Reason string `json:"reason"`
	} `json:"no_team_traces"`
	// Fragments, when set, says how many of the traces that show the
	// team are fragments of the run, and why: each begins with a call
	// received from a caller it does not hold, or holds only part of a
	// conversation split across traces. Exactly that many must say so
	// (coverage.fragment, or a split conversation among their evidence's
	// reasons), and none of them may be complete
	// (docs/trace-assembly.md, "A trace that begins with a received call").
	Fragments *struct {
		Count  int    `json:"count"`
		Reason string `json:"reason"`
	} `json:"fragments"`
	// KnownMisread is a reason (the whole program) or an object of reasons
	// by run ("run-2"): coordbench misreads it today (FINDINGS.md).
	KnownMisread json.RawMessage `json:"known_misread"`
	Notes        []string        `json:"notes"`
}

// misread gives the known_misread reason for one run, and whether the
// marker is the program's (not the run's own).
func (lt *liveTruth) misread(run string) (reason string, programWide bool, err error) {
	raw := bytes.TrimSpace(lt.KnownMisread)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false, nil
	}
	if raw[0] == '"' {
		err := json.Unmarshal(raw, &reason)
		return reason, true, err
	}
	var byRun map[string]string
	if err := json.Unmarshal(raw, &byRun); err != nil {
		return "", false, fmt.Errorf("known_misread is neither a reason nor an object of reasons by run: %w", err)
	}
	return byRun[run], false, nil
}

// liveTally counts the outcomes of the corpus for the summary lines.
type liveTally struct {
	programs, runs, exact, insufficient, misread int
}

func (t *liveTally) add(o liveTally) {
	t.programs += o.programs
	t.runs += o.runs
	t.exact += o.exact
	t.insufficient += o.insufficient
	t.misread += o.misread
}

func (t liveTally) String() string {
	return fmt.Sprintf("%d programs, %d runs: %d exact, %d insufficient_evidence as expected, %d known misread, %d wrong",
		t.programs, t.runs, t.exact, t.insufficient, t.misread, t.runs-t.exact-t.insufficient-t.misread)
}

// liveLanguage tells a program's language by the file that runs its team:
// team.py for Python (harness/pylive.mjs), a Node program otherwise.
func liveLanguage(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "team.py")); err == nil {
		return "Python"
	}
	return "JavaScript"
}

// TestLiveCorpus assesses every committed capture of the live corpus as
// `green assess` does (green.AssessOTLPFiles: the same file reader, span
// store, assembly and evaluators) and compares each run with its program's
// truth: exactly the truth's agents and interactions with their counts
// (calls from the virtual "user" left out, as in TestFrameworkFixtures),
// none of its not-agents, no agent or call errored unless the truth says
// it fails, and a graph label other than insufficient_evidence. A program
// whose capture cannot show the team is expected insufficient_evidence on
// every trace instead. A run marked known_misread is compared all the same
// and what differs is logged, not failed, until the recognizer is fixed; a
// marker no run needs any more is an error, so it is removed with the fix.
//
// With LIVE_CAPTURES set to a directory (`make live`: the programs just run
// again by run.sh -o), the captures are read from DIR/PROGRAM/run-N.otlp.json
// instead. Fresh runs are not the committed ones, so there a marker (of the
// program or of any run) excuses a misread run and is not required to be
// needed.
func TestLiveCorpus(t *testing.T) {
	fresh := os.Getenv("LIVE_CAPTURES")
	programs := livePrograms(t)
	byLanguage := map[string]*liveTally{}
	for _, prog := range programs {
		dir := filepath.Join(liveDir, prog)
		lang := liveLanguage(dir)
		if byLanguage[lang] == nil {
			byLanguage[lang] = &liveTally{}
		}
		tally := byLanguage[lang]
		t.Run(prog, func(t *testing.T) {
			tally.programs++
			truth := loadLiveTruth(t, dir)
			checkLivePackages(t, dir, truth)
			captures := filepath.Join(dir, "captures")
			if fresh != "" {
				captures = filepath.Join(fresh, prog)
			}
			runs := liveRuns(t, captures)
			misreadRuns, programMarked := 0, false
			for _, run := range runs {
				t.Run(run, func(t *testing.T) {
					tally.runs++
					problems, silent, summary := assessLiveRun(t, filepath.Join(captures, run+".otlp.json"), truth)
					// A trace read wrong with evidence complete is a silent
					// misread: never excused by a known_misread marker
					// (docs/trace-assembly.md, "Agents that share a trace").
					for _, s := range silent {
						t.Errorf("SILENT MISREAD: %s\n  coordbench read: %s", s, summary)
					}
					reason, wide, err := truth.misread(run)
					if err != nil {
						t.Fatalf("truth.json: %v", err)
					}
					if fresh != "" && reason == "" && len(bytes.TrimSpace(truth.KnownMisread)) > 0 {
						reason, wide = "marked for other runs of the program", true
					}
					programMarked = programMarked || wide
					switch {
					case len(problems) == 0 && reason != "" && !wide && fresh == "":
						t.Errorf("run is marked known_misread (%s) but comes out as its truth says: remove the marker", reason)
					case len(problems) == 0:
						if os.Getenv("LIVE_VERBOSE") != "" {
							t.Logf("coordbench read: %s", summary)
						}
						if truth.InsufficientEvidence != "" {
							tally.insufficient++
						} else {
							tally.exact++
						}
					case reason != "":
						misreadRuns++
						tally.misread++
						t.Logf("KNOWN MISREAD (%s):\n  %s\n  coordbench read: %s", reason, strings.Join(problems, "\n  "), summary)
					default:
						t.Errorf("%s\n  coordbench read: %s", strings.Join(problems, "\n  "), summary)
					}
				})
			}
			if programMarked && misreadRuns == 0 && fresh == "" {
				t.Errorf("known_misread is set for the program but every run comes out as its truth says: remove the marker")
			}
		})
	}
	var all liveTally
	for _, lang := range slices.Sorted(maps.Keys(byLanguage)) {
		t.Logf("live corpus, %s: %s", lang, byLanguage[lang])
		all.add(*byLanguage[lang])
	}
	t.Logf("live corpus: %s", all)
}

// livePrograms lists the program folders: every folder of testdata/live
// with a truth.json.
func livePrograms(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(liveDir, "*", "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(filepath.Dir(f)))
	}
	if len(names) == 0 {
		t.Fatalf("no program in %s (a folder with truth.json)", liveDir)
	}
	return names
}

func loadLiveTruth(t *testing.T, dir string) *liveTruth {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var lt liveTruth
	if err := dec.Decode(&lt); err != nil {
		t.Fatalf("truth.json: %v", err)
	}
	if lt.Framework == "" || len(lt.Packages) == 0 {
		t.Fatalf("truth.json names no framework or no packages")
	}
	if lt.InsufficientEvidence == "" && len(lt.Agents) == 0 {
		t.Fatalf("truth.json names no agents and does not expect insufficient_evidence")
	}
	if nt := lt.NoTeamTraces; nt != nil && (nt.Count < 1 || nt.Reason == "" || lt.InsufficientEvidence != "") {
		t.Fatalf("truth.json: no_team_traces needs a count of at least 1 and a reason, and contradicts insufficient_evidence")
	}
	if f := lt.Fragments; f != nil && (f.Count < 1 || f.Reason == "" || lt.InsufficientEvidence != "") {
		t.Fatalf("truth.json: fragments needs a count of at least 1 and a reason, and contradicts insufficient_evidence")
	}
	for _, in := range lt.Interactions {
		if in.Count < 1 {
			t.Fatalf("truth.json: interaction %s -> %s has count %d", in.From, in.To, in.Count)
		}
	}
	return &lt
}

// checkLivePackages holds the truth's versions to the package-lock: the
// versions the captures were made with, not the ones someone remembers.
func checkLivePackages(t *testing.T, dir string, truth *liveTruth) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "requirements.txt")); err == nil {
		checkLivePythonPackages(t, dir, truth)
		return
	}
	raw, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("a program pins its packages with package-lock.json: %v", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &lock); err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(truth.Packages)) {
		want := truth.Packages[name]
		got, ok := lock.Packages["node_modules/"+name]
		switch {
		case !ok:
			t.Errorf("truth names package %s, which package-lock.json does not install", name)
		case got.Version != want.Version:
			t.Errorf("truth says %s@%s, package-lock.json installs %s", name, want.Version, got.Version)
		}
	}
}

// checkLivePythonPackages holds a Python program's truth to its hashed
// requirements.txt (uv pip compile --generate-hashes): every package the
// truth names is pinned there at the truth's version. Names compare as
// PEP 503 normalizes them.
func checkLivePythonPackages(t *testing.T, dir string, truth *liveTruth) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "requirements.txt"))
	if err != nil {
		t.Fatalf("requirements.txt: %v", err)
	}
	pinned := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		name, version, ok := strings.Cut(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), `\`)), "==")
		if !ok || strings.HasPrefix(name, "#") || strings.HasPrefix(name, "--") {
			continue
		}
		pinned[pep503Name(name)] = strings.TrimSpace(version)
	}
	for _, name := range slices.Sorted(maps.Keys(truth.Packages)) {
		want := truth.Packages[name]
		got, ok := pinned[pep503Name(name)]
		switch {
		case !ok:
			t.Errorf("truth names package %s, which requirements.txt does not pin", name)
		case got != want.Version:
			t.Errorf("truth says %s==%s, requirements.txt pins %s", name, want.Version, got)
		}
	}
}

var pep503Run = regexp.MustCompile(`[-_.]+`)

// pep503Name is a Python distribution's name as PEP 503 compares them.
func pep503Name(name string) string {
	return pep503Run.ReplaceAllString(strings.ToLower(strings.TrimSpace(name)), "-")
}

var liveRunName = regexp.MustCompile(`^run-[0-9]+$`)

// liveRuns lists the captures in dir, run-N.otlp.json.
func liveRuns(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.otlp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, f := range files {
		run := strings.TrimSuffix(filepath.Base(f), ".otlp.json")
		if !liveRunName.MatchString(run) {
			t.Errorf("capture %s is not named run-N.otlp.json", f)
			continue
		}
		runs = append(runs, run)
	}
	if len(runs) < minLiveRuns {
		t.Fatalf("%d captures in %s, want at least %d (run.sh writes them)", len(runs), dir, minLiveRuns)
	}
	return runs
}

// assessLiveRun assesses one capture as `green assess` does and returns
// what differs from the truth (nothing when the run is read right), the
// traces among them read wrong with evidence complete (silent: each
// trace's own agents and interactions, not the run's, differ from the
// truth), and a one-line account of what was read.
func assessLiveRun(t *testing.T, path string, truth *liveTruth) (problems, silent []string, summary string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := green.AssessOTLPFiles(ctx, []string{path}, green.OfflineOptions{})
	if err != nil {
		t.Fatalf("assess: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("the capture itself is faulty: %s", w)
	}
	traces := 0
	for _, task := range res.Tasks {
		traces += 1 + len(task.Coverage.JoinedTraces) // traces joined by span links are one task
	}
	if truth.Traces > 0 && traces != truth.Traces {
		problems = append(problems, fmt.Sprintf("%d traces, want %d", traces, truth.Traces))
	}

	var labels, levels []string
	var fragment []bool
	agents := map[string]tracedata.Agent{}
	edges := map[string]int{}
	errored := map[string]int{}
	var warnings, coverage []string
	defer func() {
		if len(problems) > 0 {
			silent = liveSilent(res.Tasks, truth)
		}
	}()
	for _, task := range res.Tasks {
		coverage = append(coverage, fmt.Sprintf("recognized %v unrecognized %d", task.Coverage.Recognized, task.Coverage.Unrecognized))
		label, level := liveGraphVerdict(task)
		labels = append(labels, label)
		levels = append(levels, level)
		fragment = append(fragment, liveFragment(task))
		warnings = append(warnings, task.Coverage.Warnings...)
		for _, a := range task.Agents {
			if a.Name == tracedata.UserAgent && a.Virtual {
				continue
			}
			prev := agents[a.Name]
			a.Errors += prev.Errors
			a.Aliases = append(a.Aliases, prev.Aliases...)
			agents[a.Name] = a
			if a.Errors > 0 {
				errored[a.Name] = a.Errors
			}
		}
		for _, in := range task.Interactions {
			if in.Errors > 0 {
				errored[in.From+" -> "+in.To] += in.Errors
			}
			if in.From == tracedata.UserAgent {
				continue
			}
			edges[in.From+" -> "+in.To] += in.Count
		}
	}
	var tools []string
	for name, a := range agents {
		if a.Role == tracedata.RoleToolServer {
			tools = append(tools, name)
			delete(agents, name)
		}
	}
	slices.Sort(tools)
	if want := slices.Sorted(slices.Values(truth.ToolServers)); !slices.Equal(tools, want) {
		problems = append(problems, fmt.Sprintf("tool servers = %q, want %q", tools, want))
	}
	names := slices.Sorted(maps.Keys(agents))
	summary = fmt.Sprintf("%d traces; agents %s; interactions %v; errored %v; labels %q; evidence %q; coverage %q; warnings %q",
		len(res.Tasks), liveDescribeAgents(agents), edges, errored, labels, levels, coverage, warnings)

	if truth.InsufficientEvidence != "" {
		for i, label := range labels {
			if label != evals.LabelInsufficientEvidence {
				problems = append(problems, fmt.Sprintf("trace %d is labelled %q with evidence %q, want insufficient_evidence (%s)",
					i+1, label, levels[i], truth.InsufficientEvidence))
			}
		}
		return problems, nil, summary
	}

	wantAgents := slices.Sorted(slices.Values(truth.Agents))
	if !slices.Equal(names, wantAgents) {
		problems = append(problems, fmt.Sprintf("agents = %q, want %q", names, wantAgents))
	}
	for alias, canon := range truth.Aliases {
		if !slices.Contains(agents[canon].Aliases, alias) {
			problems = append(problems, fmt.Sprintf("agent %q has aliases %q, want %q among them", canon, agents[canon].Aliases, alias))
		}
	}
	for _, n := range truth.NotAgents {
		if _, ok := agents[n]; ok {
			problems = append(problems, fmt.Sprintf("%q is an agent; the truth says it is not", n))
		}
	}
	want := map[string]int{}
	for _, in := range truth.Interactions {
		want[in.From+" -> "+in.To] += in.Count
	}
	if !mapsEqual(edges, want) {
		problems = append(problems, fmt.Sprintf("interactions = %v, want %v", edges, want))
	}
	for _, what := range slices.Sorted(maps.Keys(errored)) {
		if !slices.Contains(truth.Errored, what) {
			problems = append(problems, fmt.Sprintf("%s counted %d errors; nothing in the run failed (false error)", what, errored[what]))
		}
	}
	noTeam := 0
	if truth.NoTeamTraces != nil {
		noTeam = truth.NoTeamTraces.Count
	}
	insufficient := 0
	for i, label := range labels {
		switch {
		case label == evals.LabelInsufficientEvidence && insufficient < noTeam:
			insufficient++
		case label == evals.LabelInsufficientEvidence || label == "":
			problems = append(problems, fmt.Sprintf("trace %d is labelled %q with evidence %q: the capture shows the team", i+1, label, levels[i]))
		}
	}
	if insufficient < noTeam {
		problems = append(problems, fmt.Sprintf("%d traces labelled insufficient_evidence, want %d that show no team (%s)",
			insufficient, noTeam, truth.NoTeamTraces.Reason))
	}
	wantFragments, fragments := 0, 0
	if truth.Fragments != nil {
		wantFragments = truth.Fragments.Count
	}
	for i, label := range labels {
		if label == evals.LabelInsufficientEvidence || !fragment[i] {
			continue
		}
		fragments++
		if levels[i] == evals.EvidenceComplete {
			problems = append(problems, fmt.Sprintf("trace %d is a fragment with evidence complete", i+1))
		}
	}
	if fragments != wantFragments {
		reason := "none is"
		if truth.Fragments != nil {
			reason = truth.Fragments.Reason
		}
		problems = append(problems, fmt.Sprintf("%d traces that show the team say they are fragments, want %d (%s)", fragments, wantFragments, reason))
	}
	return problems, nil, summary
}

// liveSilent returns the tasks of a run read wrong (it has problems) with
// evidence complete: with the truth insufficient_evidence, any complete
// trace; otherwise a complete trace whose own agents or interactions (the
// virtual user's calls and tool servers left out) are not the truth's.
// A trace that shows the team whole and right may be complete while
// another trace of the run is misread. A run read right has no silent
// trace: a complete trace holding part of the team is right when the run
// ran the team more than once (agno-team-route-py: one trace per
// team.run), and a part cut off from its caller is a fragment, which
// truth.fragments counts and which may never be complete.
func liveSilent(tasks []report.TaskResult, truth *liveTruth) []string {
	wantAgents := slices.Sorted(slices.Values(truth.Agents))
	want := map[string]int{}
	for _, in := range truth.Interactions {
		want[in.From+" -> "+in.To] += in.Count
	}
	var out []string
	for i, task := range tasks {
		label, level := liveGraphVerdict(task)
		if level != evals.EvidenceComplete {
			continue
		}
		var names []string
		for _, a := range task.Agents {
			if !(a.Name == tracedata.UserAgent && a.Virtual) && a.Role != tracedata.RoleToolServer {
				names = append(names, a.Name)
			}
		}
		slices.Sort(names)
		edges := map[string]int{}
		for _, in := range task.Interactions {
			if in.From != tracedata.UserAgent {
				edges[in.From+" -> "+in.To] += in.Count
			}
		}
		if truth.InsufficientEvidence == "" && slices.Equal(names, wantAgents) && mapsEqual(edges, want) {
			continue
		}
		out = append(out, fmt.Sprintf("trace %d (%s) reads %s with evidence complete: agents %q, interactions %v; the truth: agents %q, interactions %v",
			i+1, task.TraceID, label, names, edges, wantAgents, want))
	}
	return out
}

// liveFragment reports whether an assessed trace says it is a fragment of
// its run: it begins with a call received from a caller it does not hold,
// or it holds part of a conversation split across traces.
func liveFragment(task report.TaskResult) bool {
	if task.Coverage.Fragment != "" {
		return true
	}
	g, ok := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
	if !ok || g.Evidence == nil {
		return false
	}
	return slices.ContainsFunc(g.Evidence.Reasons, func(r string) bool { return strings.Contains(r, "ran as separate traces") })
}

// liveGraphVerdict is the graph evaluator's label and evidence level of
// one assessed trace.
func liveGraphVerdict(task report.TaskResult) (label, level string) {
	g, ok := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
	if !ok || g == nil {
		return "", ""
	}
	if g.Evidence != nil {
		level = g.Evidence.Level
	}
	return g.Label, level
}

func liveDescribeAgents(agents map[string]tracedata.Agent) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		a := agents[name]
		s := fmt.Sprintf("%s(%s", name, a.IdentifiedBy)
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
