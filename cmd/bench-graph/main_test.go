package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestCommandLine: -h exits 0 with examples; bad flags and arguments exit
// 2 with one message; flags after an argument are still read.
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, errPf string
	}{
		{[]string{"--help"}, 0, "Examples:\n  bench-graph\n", ""},
		{[]string{"--sizes", "1"}, 2, "", `bench-graph: bad size "1"`},
		{[]string{"extra", "--degree", "3"}, 2, "", `bench-graph: unexpected arguments ["extra"]`},
		{[]string{"--bogus"}, 2, "", "bench-graph: flag provided but not defined: -bogus\nusage: bench-graph"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.HasPrefix(stderr.String(), tc.errPf) {
			t.Errorf("%q: exit %d, stdout:\n%s\nstderr:\n%s", tc.args, code, stdout.String(), stderr.String())
		}
	}
}

// TestRunWithoutNetworkx: a small graph is timed in Go (in a worker
// process, this test binary again); networkx that cannot run is an error
// that names the python and is prefixed once.
func TestRunWithoutNetworkx(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"--sizes", "20", "--runs", "1", "--python", "/no/such/python", "--script", "main.go"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1 (networkx not timed)", code)
	}
	if !strings.Contains(stderr.String(), "go: 20 nodes: first") {
		t.Errorf("the Go side was not timed:\n%s", stderr.String())
	}
	last := strings.TrimSpace(stderr.String())
	if i := strings.LastIndex(last, "\n"); i >= 0 {
		last = last[i+1:]
	}
	if !strings.HasPrefix(last, "bench-graph: ") || strings.HasPrefix(last, "bench-graph: bench-graph:") || !strings.Contains(last, "/no/such/python") {
		t.Errorf("last stderr line %q", last)
	}
}

// TestMain lets the test binary serve as the Go side's worker: the
// benchmark starts os.Executable() again with -worker, which under `go
// test` is this binary.
func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if a == "-worker" {
			os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}
