package arch

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the import graph in docs/architecture.md and the hooks table in docs/operations.md")

const module = "github.com/coordbench/coordbench"

// allowed lists, per package (module-relative), the module packages it may
// import. A package below another never imports it; docs/architecture.md
// gives the reason for each row. "internal/..." of a package's own subtree
// is always allowed.
var allowed = map[string][]string{
	"tracedata":          {},
	"internal/textutil":  {},
	"internal/testenv":   {},
	"internal/stats":     {},
	"internal/cli":       {},
	"internal/doctest":   {},
	"internal/llmconfig": {},
	// encoding/json's bytes without reflection, for hand-written encoders
	// (report's task results, evals' results); jsontest is their tests'
	// filler, imported by tests only.
	"internal/jsonenc":          {},
	"internal/jsonenc/jsontest": {},
	// The benchmarks' trace generator (cmd/bench-ingest, cmd/bench-collector).
	"internal/tracegen": {},
	// What the whole-process benchmarks share: /proc usage, posting.
	"internal/procbench": {},
	// This process's CPU time, for the in-process benchmarks.
	"internal/cputime": {},
	// The tests of the shell scripts the Makefile runs (scripts/fuzz.sh).
	"scripts": {},
	// The A2A test agent; imported by tests only (a2acall's, green's,
	// cmd/green's).
	"internal/a2atest": {"a2aserve", "a2acall", "otelmap", "otelmap/assemble", "otelmap/sdkbridge", "otelmap/tracestore", "tracedata"},
	// Raw MCP for the tests of the MCP endpoints; imported by tests only.
	"internal/mcptest":     {},
	"otelmap":              {"tracedata"},
	"otelmap/extension":    {"otelmap", "tracedata"},
	"otelmap/otlpdecode":   {"otelmap"},
	"otelmap/tracestore":   {"otelmap", "tracedata"},
	"otelmap/otlpreceiver": {"otelmap", "otelmap/otlpdecode"},
	"otelmap/jaegerquery":  {"otelmap/otlpdecode"},
	"otelmap/sdkbridge":    {"otelmap", "otelmap/tracestore"},
	// Test helpers shared by otelmap's packages; imported by tests only.
	"otelmap/internal/otlptest": {"otelmap", "tracedata", "internal/testenv"},
	// internal/jsonenc: ParseObject reads a tool call's arguments.
	"otelmap/assemble": {"otelmap", "otelmap/extension", "otelmap/assemble/convmap", "otelmap/assemble/families",
		"otelmap/assemble/recognize", "tracedata", "internal/jsonenc"},
	// What the tests of assembly and of the families share (live captures,
	// edited spans); imported by tests only.
	"otelmap/assemble/internal/assembletest": {"otelmap", "otelmap/assemble", "otelmap/otlpdecode", "tracedata"},
	// A user's convention map: loaded, validated, matched against spans; a
	// convention family like the built-in ones.
	"otelmap/assemble/convmap": {"otelmap", "otelmap/assemble/recognize", "tracedata"},
	// The registry of the built-in convention families.
	"otelmap/assemble/families": {"otelmap/assemble/recognize", "otelmap/assemble/families/*"},
	// A convention family: one framework's, instrumentation's or
	// standard's spans, read through the interface of recognize
	// (internal/jsonenc: StringFields reads LangGraph's run metadata).
	"otelmap/assemble/families/*": {"otelmap", "otelmap/assemble/recognize", "tracedata", "internal/jsonenc"},
	// The reading of one span through the convention families into a
	// verdict: the Family interface and the registry's engine.
	"otelmap/assemble/recognize": {"otelmap", "tracedata"},
	"evals":                      {"tracedata", "internal/jsonenc"},
	"evals/judge":                {"evals", "tracedata", "internal/textutil", "internal/llmconfig"},
	"a2aserve":                   {"otelmap"},
	"a2acall":                    {"otelmap", "otelmap/extension", "tracedata", "internal/textutil"},
	"sandbox":                    {},
	// MCP tool delivery: the participant's side (a leaf the purple agent
	// speaks) and the green agent's host.
	"mcpcall":               {},
	"mcpserve":              {"mcpcall"},
	"groundtruth":           {"evals", "tracedata"},
	"report":                {"evals", "evals/judge", "tracedata", "internal/textutil", "internal/stats", "internal/jsonenc"},
	"scenario":              {"a2acall", "evals", "mcpcall"},
	"scenario/coordination": {"scenario", "groundtruth", "a2acall", "evals", "internal/textutil", "mcpcall"},
	"scenario/scicode":      {"scenario", "scenario/scicode/stepproto", "sandbox", "a2acall", "evals", "internal/textutil", "mcpcall"},
	// The smallest scenario, to copy.
	"scenario/echo": {"scenario", "a2acall", "evals"},
	// SciCode's step protocol: a leaf both the scenario and the purple
	// solver speak.
	"scenario/scicode/stepproto": {"internal/textutil"},
	"green": {"tracedata", "otelmap", "otelmap/assemble", "otelmap/sdkbridge", "otelmap/tracestore",
		"otelmap/otlpdecode", "otelmap/otlpreceiver", "otelmap/jaegerquery", "evals", "evals/judge", "internal/llmconfig", "a2aserve", "a2acall", "scenario",
		"scenario/coordination", "scenario/scicode", "groundtruth", "report", "internal/textutil", "internal/stats", "mcpserve", "mcpcall"},
	"purple": {"tracedata", "otelmap", "otelmap/assemble", "otelmap/sdkbridge", "otelmap/tracestore", "a2aserve", "a2acall", "internal/textutil", "internal/llmconfig",
		"scenario/scicode/stepproto", "mcpcall"},
	"internal/loopback": {"tracedata", "otelmap", "otelmap/otlpreceiver", "evals", "a2acall", "scenario", "scenario/coordination",
		"groundtruth", "report", "green", "purple", "internal/textutil"},
	"internal/arch": {},
	// The soak test (build tag soak, so go list sees its doc.go only).
	"internal/soak": {"internal/loopback", "green", "otelmap", "otelmap/tracestore", "otelmap/otlpreceiver", "purple", "report", "scenario"},
}

// mayImportPurple are the only packages, tests included, that import purple:
// the assessor never depends on the system under test.
var mayImportPurple = []string{"internal/loopback", "internal/soak", "e2e", "cmd/purple"}

type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []listed {
	t.Helper()
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("the go command is needed to list the packages: %v", err)
		}
	}
	cmd := exec.Command(goBin, "list", "-json", module+"/...")
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ours returns the module-relative names of the module's packages in imps.
func ours(imps []string) []string {
	var out []string
	for _, imp := range imps {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

// layerOf is the row of allowed that governs pkg: its own, the row of
// its folder's children ("dir/*") when it has none, or its nearest
// parent's for internal packages below it (otelmap/assemble/internal/x
// follows otelmap/assemble).
func layerOf(pkg string) (string, bool) {
	if _, ok := allowed[pkg]; ok {
		return pkg, true
	}
	if i := strings.LastIndex(pkg, "/"); i > 0 {
		if _, ok := allowed[pkg[:i]+"/*"]; ok && !strings.Contains(pkg, "/internal/") {
			return pkg[:i] + "/*", true
		}
	}
	if i := strings.Index(pkg, "/internal/"); i > 0 {
		return layerOf(pkg[:i])
	}
	return "", false
}

// isChildOf reports whether pkg is a child of the folder a row "dir/*"
// names.
func isChildOf(pkg, row string) bool {
	dir, ok := strings.CutSuffix(row, "/*")
	rest, under := strings.CutPrefix(pkg, dir+"/")
	return ok && under && !strings.Contains(rest, "/")
}

func TestImportsRunDownward(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if strings.HasPrefix(rel, "cmd/") || rel == "e2e" {
			continue // mains and the benchmark sit on top and may import anything
		}
		row, ok := layerOf(rel)
		if !ok {
			t.Errorf("package %s has no row in allowed: give it a layer here and a paragraph in docs/architecture.md", rel)
			continue
		}
		for _, imp := range ours(p.Imports) {
			if strings.HasPrefix(imp, row+"/internal/") || strings.HasPrefix(imp, rel+"/internal/") {
				continue
			}
			if !slices.ContainsFunc(allowed[row], func(a string) bool { return a == imp || isChildOf(imp, a) }) {
				t.Errorf("%s imports %s, which its layer does not allow (see docs/architecture.md)", rel, imp)
			}
		}
	}
}

func TestOnlyTheHarnessImportsPurple(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if rel == "purple" || slices.Contains(mayImportPurple, rel) {
			continue
		}
		all := p.Imports
		if !strings.HasPrefix(rel, "cmd/") {
			// A command's own tests may start purple agents to run the
			// command against (cmd/green's `green run` tests do): commands
			// sit on top, and the command itself still may not.
			all = slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		}
		if slices.Contains(ours(all), "purple") {
			t.Errorf("%s (or its tests) imports purple; only %v may", rel, mayImportPurple)
		}
	}
}

var graphBlock = regexp.MustCompile("(?s)(<!-- import graph: begin -->\n)(.*?)(<!-- import graph: end -->)")

// TestArchitectureDocGraph: the Mermaid graph in docs/architecture.md is the
// module's real import graph (run with -update to redraw it).
func TestArchitectureDocGraph(t *testing.T) {
	var edges []string
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		if strings.Contains(rel, "/internal/") || rel == "internal/arch" {
			continue // a package's own internals are drawn as the package
		}
		for _, imp := range ours(p.Imports) {
			if strings.Contains(imp, "/internal/") {
				continue
			}
			edges = append(edges, fmt.Sprintf("  %s --> %s", node(drawnAs(rel)), node(drawnAs(imp))))
		}
	}
	slices.Sort(edges)
	edges = slices.Compact(edges)
	want := "```mermaid\nflowchart TD\n" + strings.Join(edges, "\n") + "\n```\n"

	path := filepath.Join(moduleRoot(t), "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := graphBlock.FindSubmatchIndex(doc)
	if m == nil {
		t.Fatalf("%s has no import graph block between <!-- import graph: begin --> and <!-- import graph: end -->", path)
	}
	got := string(doc[m[4]:m[5]])
	if got == want {
		return
	}
	if *update {
		out := slices.Concat(doc[:m[4]], []byte(want), doc[m[5]:])
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/architecture.md's import graph is not the module's; run `go test ./internal/arch -update` and explain new arrows there.\ngot:\n%s\nwant:\n%s", got, want)
}

// drawnAs is the node a package is drawn as: the convention families, a
// package each, as one node "otelmap/assemble/families/*".
func drawnAs(rel string) string {
	if isChildOf(rel, "otelmap/assemble/families/*") {
		return "otelmap/assemble/families/*"
	}
	return rel
}

// node is a Mermaid node id with the package path as its label.
func node(rel string) string {
	id := strings.NewReplacer("/", "_", "-", "_", "*", "all").Replace(rel)
	return fmt.Sprintf("%s[%s]", id, rel)
}
