package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestOptions: flags become the benchmark's options; with --judge only the
// LLM variables of the environment reach the agents.
func TestOptions(t *testing.T) {
	env := map[string]string{"AGENTBEATS_LLM_API_KEY": "k", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
	var stderr bytes.Buffer
	opts, jsonOut, code := options([]string{"--tasks", "a, b,", "--parallel", "2", "--judge", "--json", "r.json"},
		func(k string) string { return env[k] }, &stderr)
	if code >= 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Join(opts.TaskIDs, ",") != "a,b" || opts.Parallel != 2 || !opts.Judge || jsonOut != "r.json" || opts.Logger == nil {
		t.Errorf("options %+v, json %q", opts, jsonOut)
	}
	if opts.Getenv == nil || opts.Getenv("AGENTBEATS_LLM_API_KEY") != "k" || opts.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		t.Error("with --judge the agents should see the LLM variables and nothing else")
	}
	if opts, _, _ := options(nil, func(k string) string { return env[k] }, &stderr); opts.Getenv != nil {
		t.Error("without --judge the agents should see no environment (e2e.Options' nil Getenv)")
	}
	for _, args := range [][]string{{"--bogus"}, {"extra"}} {
		if _, _, code := options(args, func(string) string { return "" }, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
