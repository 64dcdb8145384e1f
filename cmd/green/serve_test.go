package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
)

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeFlagsAndSignal starts `green` as AgentBeats does (flags, no
// subcommand), reads the card as curl would, and stops it with SIGTERM.
func TestServeFlagsAndSignal(t *testing.T) {
	ready := make(chan *green.Server, 1)
	serveReady = func(s *green.Server) { ready <- s }
	defer func() { serveReady = nil }()

	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"--host", "127.0.0.1", "--port", "0", "--card-url", "http://green:9009", "--shutdown-timeout", "5s"}, &stdout, &stderr)
	}()
	var srv *green.Server
	select {
	case srv = <-ready:
	case c := <-code:
		t.Fatalf("green exited %d: %s", c, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("green did not start")
	}

	resp, err := http.Get("http://" + srv.Addr().String() + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var card map[string]any
	if err := json.Unmarshal(body, &card); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card: %s %v: %s", resp.Status, err, body)
	}
	if card["url"] != "http://green:9009/" || card["name"] != green.DefaultAgentName || card["protocolVersion"] != "0.3" {
		t.Errorf("card = %v", card)
	}

	// The signal context of run() catches SIGTERM: a graceful shutdown.
	terminateSelf(t)
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d after SIGTERM: %s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("green did not stop on SIGTERM")
	}
}

func TestServeBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "70000"},
		{"--card-url", "green:9009", "--port", "0"},
		{"serve", "extra"},
		{"--no-such-flag"},
		{"--allow-participants", "http://purple/", "--port", "0"},
	} {
		var stdout, stderr bytes.Buffer
		if c := run(args, &stdout, &stderr); c == 0 {
			t.Errorf("%q: exit 0", args)
		}
	}
	var stdout, stderr bytes.Buffer
	if c := run([]string{"serve", "-h"}, &stdout, &stderr); c != 0 || !bytes.Contains(stdout.Bytes(), []byte("-card-url")) || !bytes.Contains(stdout.Bytes(), []byte("-allow-participants")) {
		t.Errorf("serve -h: exit %d, %s", c, stdout.String())
	}
}

// TestConventionsFlagEveryCommand: serve and run take --conventions as
// assess does, and a map with an error stops each before any work, exit 2,
// naming the line.
func TestConventionsFlagEveryCommand(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nrules:\n  - match: {kind: sideways}\n    is: tool\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--port", "0", "--conventions", bad},
		{"run", "--participant", "a=http://127.0.0.1:1/", "--conventions", bad},
		{"assess", "--conventions", bad, "x.json"},
	} {
		var stdout, stderr bytes.Buffer
		if c := run(args, &stdout, &stderr); c != 2 || !strings.Contains(stderr.String(), bad+`:3:19: rules[0].match.kind: "sideways"`) {
			t.Errorf("%q: exit %d, stderr %q", args, c, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	for _, cmd := range []string{"serve", "run", "assess"} {
		stdout.Reset()
		if c := run([]string{cmd, "-h"}, &stdout, &stderr); c != 0 || !strings.Contains(stdout.String(), "-conventions") {
			t.Errorf("%s -h: exit %d, no --conventions in\n%s", cmd, c, stdout.String())
		}
	}
}

// terminateSelf sends this process SIGTERM, as an orchestrator stopping
// the green agent does: run()'s signal context catches it.
func terminateSelf(t *testing.T) {
	t.Helper()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
