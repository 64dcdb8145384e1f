//go:build unix

package doctest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

func run(t *testing.T, s *Session, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.Run(ctx, script)
}

// TestSession: state carries from step to step, output is each step's own,
// nothing reads the steps from standard input, and a failing command ends
// the session naming the command.
func TestSession(t *testing.T) {
	testenv.NeedTool(t, "bash")
	s, err := Start(t.TempDir(), []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(5 * time.Second)
	if out, err := run(t, s, "cd /; X=1\necho one\n"); err != nil || out != "one\n" {
		t.Fatalf("step 1: %q, %v", out, err)
	}
	if out, err := run(t, s, "cat; echo \"$X $PWD\" >&2\n"); err != nil || out != "1 /\n" {
		t.Fatalf("step 2 (cat reads nothing, state kept, stderr merged): %q, %v", out, err)
	}
	out, err := run(t, s, "echo before\nfalse | cat\necho after\n")
	if err == nil || !strings.Contains(out, "before") || strings.Contains(out, "after") ||
		!strings.Contains(out, "doctest: exit status 1 from: ") {
		t.Fatalf("failing step: %q, %v", out, err)
	}
	if _, err := run(t, s, "echo again\n"); err == nil {
		t.Fatal("a step after the session ended ran")
	}
}

// TestSessionTimeoutAndCleanup: a step that outlives its context is cut
// off, and Close ends the background jobs with the session.
func TestSessionTimeoutAndCleanup(t *testing.T) {
	testenv.NeedTool(t, "bash")
	s, err := Start(t.TempDir(), []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, s, "sleep 1000 &\necho $! > pid\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Run(ctx, "sleep 1000\n"); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("a step past its deadline: %v", err)
	}
	pgid := s.cmd.Process.Pid
	s.Close(5 * time.Second)
	if alive(pgid) {
		t.Errorf("process group %d still has members after Close", pgid)
	}
}
