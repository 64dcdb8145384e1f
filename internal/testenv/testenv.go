// Package testenv is the one rule for tests that need something the
// repository does not hold: a data set (PeerRead, SciCode), a tool (a
// built binary, docker-compose), or Python with modules (networkx, numpy,
// h5py). Without it a test skips, saying what is missing, on a developer's
// machine, and fails under CI (CI=true, as .ci/run and CI services set it),
// where .ci/run provides everything and a skip would hide a lost test.
//
// Every Need function returns what it found, so a test reads as
//
//	dir := testenv.SharedData(t, "peerread")
//	py := testenv.NeedPython(t, "networkx", "scipy")
package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Module is the main module's path, by which ModuleRoot knows its go.mod.
const Module = "github.com/coordbench/coordbench"

// Python is the interpreter the oracle and sandbox tests use: the
// system's, where .ci/run installs the modules with the package manager.
const Python = "/usr/bin/python3"

// CI reports whether the tests run under CI: $CI parses as true.
func CI() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// Missing skips t saying why, or under CI fails it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI=true: .ci/run should have provided it)", msg)
	}
	t.Skip(msg)
}

// NeedFile returns path if it names a regular file (or a link to one).
func NeedFile(t testing.TB, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		Missing(t, "file needed: %v", err)
	case !fi.Mode().IsRegular():
		Missing(t, "file needed: %s is not a regular file", path)
	}
	return path
}

// NeedDir returns path if it names a directory (or a link to one).
func NeedDir(t testing.TB, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		Missing(t, "directory needed: %v", err)
	case !fi.IsDir():
		Missing(t, "directory needed: %s is not a directory", path)
	}
	return path
}

// NeedTool returns the path of the executable name: looked up in $PATH, or
// taken as it is when it holds a path separator (a built binary such as
// bin/otelcol; hint says how to get it, e.g. "make otelcol").
func NeedTool(t testing.TB, name string, hint ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		how := ""
		if len(hint) > 0 {
			how = " (" + strings.Join(hint, " ") + ")"
		}
		Missing(t, "tool needed: %v%s", err, how)
	}
	return path
}

// NeedPython returns Python if it imports every module given, logging
// their versions.
func NeedPython(t testing.TB, modules ...string) string {
	t.Helper()
	var script strings.Builder
	script.WriteString("import importlib\n")
	for _, m := range modules {
		fmt.Fprintf(&script, "m = importlib.import_module(%q); print(%q, getattr(m, '__version__', '?'))\n", m, m)
	}
	out, err := exec.Command(Python, "-c", script.String()).CombinedOutput()
	if err != nil {
		Missing(t, "%s with %s needed: %v: %s", Python, strings.Join(modules, ", "), err, lastLine(out))
	}
	if len(modules) > 0 {
		t.Logf("%s: %s", Python, strings.Join(strings.Fields(strings.ReplaceAll(string(bytes.TrimSpace(out)), "\n", ",")), " "))
	}
	return Python
}

// lastLine is the last non-empty line of a command's output: the error of a
// Python traceback.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ModuleRoot returns the directory of the main module's go.mod, found
// from the working directory upwards (a test runs in its package's
// directory; a nested module such as stack/ is passed over).
func ModuleRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if modulePath(filepath.Join(dir, "go.mod")) == Module {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatalf("testenv: no go.mod of %s above %s", Module, wd)
		}
	}
}

// modulePath reads the module line of a go.mod, "" when there is none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// SharedData returns the data set directory ../shared/data/<elem...>
// beside the module root, where the data sets live (data/README.md), if
// it is there.
func SharedData(t testing.TB, elem ...string) string {
	t.Helper()
	return NeedDir(t, filepath.Join(append([]string{ModuleRoot(t), "..", "shared", "data"}, elem...)...))
}

// RepoFile returns the path of name (slash-separated) below the module
// root; a file the repository holds is not optional, so its absence fails
// the test everywhere.
func RepoFile(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(ModuleRoot(t), filepath.FromSlash(name))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return p
}
