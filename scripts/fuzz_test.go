package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/testenv"
)

// fuzzModule writes a module with one package whose only fuzz target is
// FuzzDecode with the given body, and returns its directory.
func fuzzModule(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":         "module fuzzdemo\n\ngo 1.26\n",
		"demo.go":        "package demo\n",
		"demo_test.go":   "package demo\n\nimport \"testing\"\n\nfunc FuzzDecode(f *testing.F) {\n\tf.Add(7)\n\tf.Fuzz(func(t *testing.T, n int) {\n" + body + "\n\t})\n}\n",
		"testdata/.keep": "",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type fuzzRun struct {
	out    string
	failed bool
}

// runFuzz runs fuzz.sh in dir on its one package with the given extra
// environment.
func runFuzz(t *testing.T, dir string, env ...string) fuzzRun {
	t.Helper()
	script, err := filepath.Abs("fuzz.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", script, "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"GOFLAGS=-mod=mod", "GOWORK=off"}, env...)...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("fuzz.sh: %v", err)
	}
	return fuzzRun{out: string(out), failed: err != nil}
}

// TestFuzzScriptWithGo runs fuzz.sh with the real go on targets that pass,
// that fuzzing breaks, and whose seed fails.
func TestFuzzScriptWithGo(t *testing.T) {
	goBin := testenv.NeedTool(t, "go")
	t.Run("passes", func(t *testing.T) {
		r := runFuzz(t, fuzzModule(t, "\t\t_ = n"), "GO="+goBin, "FUZZTIME=1s")
		if r.failed || !strings.Contains(r.out, "fuzz fuzzdemo FuzzDecode (1s)") {
			t.Fatalf("want a pass of FuzzDecode:\n%s", r.out)
		}
	})
	t.Run("finding fails and is kept", func(t *testing.T) {
		dir := fuzzModule(t, "\t\tif n != 7 {\n\t\t\tt.Fatalf(\"n = %d\", n)\n\t\t}")
		r := runFuzz(t, dir, "GO="+goBin, "FUZZTIME=30s")
		if !r.failed || !strings.Contains(r.out, "Failing input written to") || strings.Contains(r.out, "attempt 1 of") {
			t.Fatalf("want a failure at once with the input written:\n%s", r.out)
		}
		if found, _ := filepath.Glob(filepath.Join(dir, "testdata/fuzz/FuzzDecode/*")); len(found) == 0 {
			t.Fatalf("the failing input was not kept")
		}
	})
	t.Run("seed fails", func(t *testing.T) {
		r := runFuzz(t, fuzzModule(t, "\t\tt.Fatal(\"no\")"), "GO="+goBin, "FUZZTIME=1s")
		if !r.failed || strings.Contains(r.out, "attempt 1 of") {
			t.Fatalf("want a failure at once:\n%s", r.out)
		}
	})
}

// TestFuzzScriptFlakes plays the Go fuzzer's two flakes (recorded output:
// testdata/deadline-race.txt from this machine, testdata/hung.txt from
// golang/go#56238) through a stand-in go, testdata/fakego.sh.
func TestFuzzScriptFlakes(t *testing.T) {
	goBin := testenv.NeedTool(t, "go")
	fake, err := filepath.Abs("testdata/fakego.sh")
	if err != nil {
		t.Fatal(err)
	}
	input := "testdata/fuzz/FuzzDecode/a601188e726161766a8b077333fe62493bc92397a4c3bf5b205ac46814029453"
	for _, tc := range []struct {
		name, runs, replay string
		fail               bool
		fuzzCalls          int
		inputKept          bool
	}{
		{name: "deadline race once", runs: "race pass", fuzzCalls: 2},
		{name: "deadline race every time", runs: "race race race pass", fail: true, fuzzCalls: 3},
		{name: "worker hung on an input that passes alone", runs: "hung pass", replay: "pass", fuzzCalls: 2},
		{name: "worker hung on an input that fails alone", runs: "hung pass", replay: "fail", fail: true, fuzzCalls: 1, inputKept: true},
		{name: "hung then race then pass", runs: "hung race pass", replay: "pass", fuzzCalls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fuzzModule(t, "\t\t_ = n")
			log := filepath.Join(t.TempDir(), "calls")
			r := runFuzz(t, dir, "GO="+fake, "REAL_GO="+goBin, "FAKE_LOG="+log, "FAKE_RUNS="+tc.runs, "FAKE_REPLAY="+tc.replay)
			if r.failed != tc.fail {
				t.Fatalf("failed = %v, want %v:\n%s", r.failed, tc.fail, r.out)
			}
			calls, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(calls), " -fuzz "); n != tc.fuzzCalls {
				t.Errorf("fuzzed %d times, want %d:\n%s", n, tc.fuzzCalls, r.out)
			}
			_, statErr := os.Stat(filepath.Join(dir, input))
			if kept := statErr == nil; kept != tc.inputKept && strings.Contains(tc.runs, "hung") {
				t.Errorf("input kept = %v, want %v", kept, tc.inputKept)
			}
			if tc.fail && !strings.Contains(r.out, "--- FAIL: Fuzz") {
				t.Errorf("a failure must show the fuzzer's output:\n%s", r.out)
			}
		})
	}
}
