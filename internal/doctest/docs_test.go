//go:build unix

package doctest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// stepTimeout bounds one step: generous, for a loaded 2-core machine (the
// demo and an assessment take seconds on a quiet one).
const stepTimeout = 5 * time.Minute

// documents returns the module's Markdown documents, README.md first, the
// rest in path order, with their blocks.
func documents(t *testing.T, root string) (names []string, blocks map[string][]Block) {
	t.Helper()
	blocks = map[string][]Block{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bs, err := Parse(filepath.ToSlash(rel), doc)
		if err != nil {
			t.Error(err)
		}
		names = append(names, filepath.ToSlash(rel))
		blocks[filepath.ToSlash(rel)] = bs
		return nil
	})
	if err != nil {
		t.Fatalf("reading the documents: %v", err)
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "README.md":
			return -1
		case b == "README.md":
			return 1
		}
		return strings.Compare(a, b)
	})
	return names, blocks
}

// TestEveryShellBlockIsMarked: every shell block of every document says
// whether it runs, skipped ones say why, and every check a marker names
// exists (and every check is named by some marker).
func TestEveryShellBlockIsMarked(t *testing.T) {
	names, blocks := documents(t, testenv.ModuleRoot(t))
	named := map[string]bool{}
	var runnable, skipped int
	for _, n := range names {
		if err := Lint(blocks[n]); err != nil {
			t.Error(err)
		}
		for _, b := range blocks[n] {
			switch {
			case b.Runnable():
				runnable++
				if b.Marker.Check != "" {
					if _, ok := checks[b.Marker.Check]; !ok {
						t.Errorf("%s: check %q is not one of the test's checks", b.Where(), b.Marker.Check)
					}
					named[b.Marker.Check] = true
				}
			case b.Shell() && b.Marker != nil:
				skipped++
				t.Logf("skipped: %s: %s", b.Where(), b.Marker.Reason)
			}
		}
	}
	for name := range checks {
		if !named[name] {
			t.Errorf("check %q is named by no block's marker (<!-- doctest: run check=%s -->)", name, name)
		}
	}
	t.Logf("%d documents, %d shell blocks run, %d skipped", len(names), runnable, skipped)
}

// TestDocs runs every runnable block, document by document, in order, each
// document in a fresh directory and shell session, against binaries built
// once from this checkout.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command (minutes); not in -short")
	}
	testenv.NeedTool(t, "bash")
	root := testenv.ModuleRoot(t)
	names, blocks := documents(t, root)
	var all strings.Builder
	for _, n := range names {
		for _, b := range blocks[n] {
			if b.Runnable() {
				all.WriteString(b.Body)
			}
		}
	}
	bin := buildCommands(t, root, all.String())
	base := baseRewrites(t, root, bin)
	for _, n := range names {
		var run []Block
		for _, b := range blocks[n] {
			if b.Runnable() {
				run = append(run, b)
			}
		}
		if len(run) == 0 {
			continue
		}
		t.Run(n, func(t *testing.T) { runDocument(t, root, bin, base, run) })
	}
}

// buildCommands builds, into a temporary bin directory, green and purple
// and every other command that runnable text starts with `go run
// ./cmd/NAME` or bin/NAME, as `make build` would.
func buildCommands(t *testing.T, root, text string) string {
	t.Helper()
	names := []string{"green", "purple"}
	names = append(names, Commands(text)...)
	for _, m := range regexp.MustCompile(`\bbin/([A-Za-z0-9_-]+)`).FindAllStringSubmatch(text, -1) {
		if fi, err := os.Stat(filepath.Join(root, "cmd", m[1])); err == nil && fi.IsDir() {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	bin := filepath.Join(t.TempDir(), "bin")
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = root
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built %s in %v", strings.Join(names, ", "), time.Since(start).Round(time.Millisecond))
	return bin
}

// goTool is the go command that runs this test, else the one on PATH.
func goTool(t *testing.T) string {
	t.Helper()
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return testenv.NeedTool(t, "go")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// baseRewrites are the rewrites of every document: `go run ./cmd/NAME` to
// the built binary, and the Makefile targets the docs run to what their
// recipes do, checked against the Makefile so that the rewrite stays
// faithful.
func baseRewrites(t *testing.T, root, bin string) *Rewriter {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatalf("Makefile: %v", err)
	}
	for target, want := range map[string]string{
		"demo":  "$(GO) run ./cmd/green demo",
		"build": "$(GO) build -o $(BIN)/ ./cmd/...",
	} {
		if got := recipe(string(mk), target); got != want {
			t.Fatalf("the Makefile's %s recipe is %q, which this test rewrites `make %s` as %q: update baseRewrites", target, got, target, want)
		}
	}
	r := &Rewriter{}
	r.Func(GoRun, func(m []string) string { return filepath.Join(bin, m[1]) })
	r.Literal(`\bmake demo\b`, filepath.Join(bin, "green")+" demo")
	// The test built the commands the documents run into bin/ already.
	r.Literal(`\bmake build\b`, "true")
	return r
}

// recipe returns the one-line recipe of a Makefile target, "" if none.
func recipe(makefile, target string) string {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:[^\n]*\n\t([^\n]*)`)
	if m := re.FindStringSubmatch(makefile); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// tools are the commands a step may need that a fresh machine may lack.
var tools = regexp.MustCompile(`\b(curl|jq|make|python3|docker|docker-compose)\b`)

// runDocument runs one document's runnable blocks in one session, in a
// fresh directory holding bin/ (the built commands) and links to the
// repository's directories and configuration files.
func runDocument(t *testing.T, root, bin string, base *Rewriter, run []Block) {
	// The steps as written, then the ports they name mapped to free ones.
	type plan struct {
		b     Block
		steps []Step
	}
	var plans []plan
	var text strings.Builder
	for _, b := range run {
		steps, err := b.Steps()
		if err != nil {
			t.Fatalf("%s: %v", b.Where(), err)
		}
		plans = append(plans, plan{b, steps})
		for _, s := range steps {
			text.WriteString(s.Script)
			text.WriteString(strings.Join(s.Want, "\n"))
		}
	}
	rw := &Rewriter{rules: slices.Clone(base.rules)}
	ports := Ports(text.String())
	free := freePorts(t, len(ports))
	var mapped []string
	for i, p := range ports {
		rw.Port(p, free[i])
		mapped = append(mapped, fmt.Sprintf("%d→%d", p, free[i]))
	}
	if len(mapped) > 0 {
		t.Logf("ports: %s", strings.Join(mapped, " "))
	}
	needed := map[string]bool{}
	for _, line := range strings.Split(rw.Apply(text.String()), "\n") {
		for _, m := range tools.FindAllStringSubmatch(withoutComment(line), -1) {
			needed[m[1]] = true
		}
	}
	for _, tool := range slices.Sorted(maps.Keys(needed)) {
		testenv.NeedTool(t, tool)
	}

	dir := workspace(t, root, bin)
	s, err := Start(dir, sessionEnv(bin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(10 * time.Second) })
	for _, p := range plans {
		start := time.Now()
		for _, st := range p.steps {
			script := rw.Apply(st.Script)
			ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
			out, err := s.Run(ctx, script)
			cancel()
			if err != nil {
				t.Fatalf("%s, the step at line %d: %v\nscript:\n%s\noutput:\n%s", p.b.Where(), st.Line, err, script, tail(out, 6000))
			}
			want := make([]string, len(st.Want))
			for i, w := range st.Want {
				want[i] = rw.Apply(w)
			}
			if err := Match(want, out); err != nil {
				t.Fatalf("%s, the step at line %d: %v\nscript:\n%s\noutput:\n%s", p.b.Where(), st.Line, err, script, tail(out, 6000))
			}
		}
		t.Logf("ran %s in %v", p.b.Where(), time.Since(start).Round(time.Millisecond))
		if name := p.b.Marker.Check; name != "" {
			checks[name](t, dir)
		}
	}
}

// freePorts returns n distinct free loopback ports (held open together
// while they are chosen, so none repeats).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("a free port: %v", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// workspace is a fresh directory for one document: bin/ links to the built
// commands, and the repository's directories and its Makefile and YAML
// files are linked in, so that what a document writes (results, logs)
// lands here and never in the repository.
func workspace(t *testing.T, root, bin string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		link := e.IsDir() && !strings.HasPrefix(name, ".") && name != "bin" ||
			name == "Makefile" || strings.HasSuffix(name, ".yaml")
		if link {
			if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// sessionEnv is the test's environment with bin first on PATH and without
// what would send the agents' telemetry or the judge's requests anywhere
// (OTEL_*, AGENTBEATS_*) or point them at other data (COORDBENCH_*).
func sessionEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "OTEL_"), strings.HasPrefix(k, "AGENTBEATS_"), strings.HasPrefix(k, "COORDBENCH_"):
		case k == "PATH":
			env = append(env, "PATH="+bin+string(os.PathListSeparator)+v)
		default:
			env = append(env, kv)
		}
	}
	return env
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// readFile reads a file the documents' commands wrote.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the documented commands should have written it: %v", err)
	}
	return bytes.TrimSpace(b)
}
