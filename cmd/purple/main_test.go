package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServe starts the command as AgentBeats would (plus a role and a
// peer), reads its card over HTTP, and stops it with its context.
func TestServe(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("AGENTBEATS_LLM_API_KEY", "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--host", "127.0.0.1", "--port", itoa(port), "--card-url", "http://coordinator:9009",
			"--name", "coordinator", "--role", "coordinator", "--peer", "http://reviewer-1:9009"}, noEnv, io.Discard, &stderr)
	}()
	base := "http://127.0.0.1:" + itoa(port)
	var card map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/.well-known/agent-card.json")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&card)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("card is not JSON: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no card: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if card["name"] != "coordinator" || card["url"] != "http://coordinator:9009/" || card["protocolVersion"] == nil {
		t.Errorf("card %v", card)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no shutdown")
	}
	if !strings.Contains(stderr.String(), "reviewer-1:9009") {
		t.Errorf("the log does not name the peer:\n%s", stderr.String())
	}
}

// TestUsage: bad flags and values exit 2 with one message naming the
// command once; -h and --help print the usage with examples to stdout and
// exit 0.
func TestUsage(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), []string{"--port", "0", arg}, noEnv, &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), "usage: purple ") ||
			!strings.Contains(stdout.String(), "-role") || !strings.Contains(stdout.String(), "Examples:\n  purple --port") {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s", arg, code, stderr.String(), stdout.String())
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--bogus"}, 2, "purple: flag provided but not defined: -bogus\nusage: purple"},
		{[]string{"--role", "critic", "--port", "0"}, 2, `purple: unknown role "critic"`},
		{[]string{"--peers", "a=ftp://x", "--port", "0"}, 2, `purple: peer "a=ftp://x": want name=http`},
		{[]string{"--delegation", "mesh", "--port", "0"}, 2, `purple: delegation "mesh"`},
		{[]string{"--failure-rate", "2", "--port", "0"}, 2, "purple: failure rate 2"},
		{[]string{"extra", "--port", "0"}, 2, `purple: unexpected arguments ["extra"]`},
		{[]string{"--solver-mode", "guess", "--port", "0"}, 2, `purple: solver mode "guess"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), tc.args, noEnv, &stdout, &stderr); code != tc.code || !strings.HasPrefix(stderr.String(), tc.msg) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.msg, stderr.String())
		}
		if strings.Contains(stderr.String(), "purple: purple") {
			t.Errorf("%v: doubled prefix:\n%s", tc.args, stderr.String())
		}
	}
}

// TestEnvironment: the command reads the solver's mode and the agent's
// name from the environment it is given, as flag defaults.
func TestEnvironment(t *testing.T) {
	env := map[string]string{"COORDBENCH_SOLVER_MODE": "Repair", "COORDBENCH_SCICODE_DIR": "/data/scicode", "OTEL_SERVICE_NAME": "solver-1"}
	var stderr bytes.Buffer
	o, code := options(command(io.Discard, &stderr), []string{"--role", "solver"}, func(k string) string { return env[k] })
	if code >= 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if o.Name != "solver-1" || o.Role != "solver" || o.Roles["solver"] == nil {
		t.Errorf("options %+v", o)
	}
	env["COORDBENCH_SOLVER_MODE"] = "guess"
	if _, code := options(command(io.Discard, &stderr), nil, func(k string) string { return env[k] }); code != 2 || !strings.Contains(stderr.String(), `solver mode "guess"`) {
		t.Errorf("a bad mode in the environment: exit %d\n%s", code, stderr.String())
	}
}

// noEnv is an empty environment.
func noEnv(string) string { return "" }

func itoa(n int) string { return strconv.Itoa(n) }
