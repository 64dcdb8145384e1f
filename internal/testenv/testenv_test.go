package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRoot(t *testing.T) {
	root := ModuleRoot(t)
	if got := modulePath(filepath.Join(root, "go.mod")); got != Module {
		t.Errorf("module root %s declares %q", root, got)
	}
	if p := RepoFile(t, "internal/testenv/testenv.go"); NeedFile(t, p) != p {
		t.Errorf("NeedFile(%s) changed the path", p)
	}
	if d := NeedDir(t, root); d != root {
		t.Errorf("NeedDir(%s) = %s", root, d)
	}
}

func TestCI(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "": false, "false": false, "yes": false} {
		t.Setenv("CI", v)
		if CI() != want {
			t.Errorf("CI=%q: %v", v, !want)
		}
	}
}

// TestMissing runs the test binary again on a test that lacks a file: it
// skips, and with CI=true it fails, saying what is missing either way.
func TestMissing(t *testing.T) {
	if os.Getenv("TESTENV_HELPER") == "1" {
		NeedFile(t, filepath.Join(t.TempDir(), "no-such-file"))
		t.Fatal("NeedFile returned for a missing file")
	}
	for _, ci := range []string{"false", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_HELPER=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != (ci == "true") || !strings.Contains(string(out), "no-such-file") {
			t.Errorf("CI=%s: failed %v, want %v:\n%s", ci, failed, ci == "true", out)
		}
		if ci == "false" && !strings.Contains(string(out), "--- SKIP") {
			t.Errorf("CI=false: the test did not skip:\n%s", out)
		}
	}
}

func TestNeedTool(t *testing.T) {
	if got := NeedTool(t, os.Args[0]); got != os.Args[0] {
		t.Errorf("NeedTool(%s) = %s", os.Args[0], got)
	}
}
