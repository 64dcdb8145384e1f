package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// TestOptions: flags become the benchmark's options; with --judge only the
// LLM variables of the environment reach the agents.
func TestOptions(t *testing.T) {
	env := map[string]string{"AGENTBEATS_LLM_API_KEY": "k", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
	var stderr bytes.Buffer
	opts, jsonOut, code := options(command(io.Discard, &stderr), []string{"--tasks", "a, b,", "--parallel", "2", "--judge", "--json", "r.json"},
		func(k string) string { return env[k] })
	if code >= 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Join(opts.TaskIDs, ",") != "a,b" || opts.Parallel != 2 || !opts.Judge || jsonOut != "r.json" || opts.Logger == nil {
		t.Errorf("options %+v, json %q", opts, jsonOut)
	}
	if opts.Getenv == nil || opts.Getenv("AGENTBEATS_LLM_API_KEY") != "k" || opts.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		t.Error("with --judge the agents should see the LLM variables and nothing else")
	}
	if opts, _, _ := options(command(io.Discard, &stderr), nil, func(k string) string { return env[k] }); opts.Getenv != nil {
		t.Error("without --judge the agents should see no environment (e2e.Options' nil Getenv)")
	}
	co, _, code := options(command(io.Discard, &stderr), []string{"--perturb", "--per-pattern", "--perturbations", "late_export_5s,silent_entry", "--settle-max-wait", "2s"},
		func(string) string { return "" })
	if code >= 0 || !co.perturb || !co.PerPattern || strings.Join(co.Perturbations, ",") != "late_export_5s,silent_entry" ||
		co.PerturbSettleMaxWait != 2*time.Second {
		t.Errorf("--perturb flags: exit %d, options %+v", code, co)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "e2e: flag provided but not defined: -bogus\nusage: e2e "},
		{[]string{"extra", "-v"}, `e2e: unexpected arguments ["extra"]`},
		{[]string{"--ground-truth", "/no/such/gt.json"}, "e2e: "},
	} {
		var stderr bytes.Buffer
		if _, _, code := options(command(io.Discard, &stderr), tc.args, func(string) string { return "" }); code != 2 ||
			!strings.HasPrefix(stderr.String(), tc.want) || strings.Contains(stderr.String(), "e2e: e2e:") {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, stderr.String())
		}
	}
}

// TestHelpAndOnePrefix: -h prints the usage with examples and exits 0; an
// error of the benchmark itself (an unknown task id) is prefixed once.
func TestHelpAndOnePrefix(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-v", "--help"}, func(string) string { return "" }, &stdout, &stderr); code != 0 ||
		stderr.Len() != 0 || !strings.Contains(stdout.String(), "Examples:\n  e2e\n") {
		t.Errorf("--help: exit %d, stderr %q, stdout:\n%s", code, stderr.String(), stdout.String())
	}
	stdout.Reset()
	code := run(t.Context(), []string{"--tasks", "no-such-task"}, func(string) string { return "" }, &stdout, &stderr)
	if code != 1 || !strings.HasPrefix(stderr.String(), "e2e: ") || strings.Contains(stderr.String(), "e2e: e2e:") {
		t.Errorf("unknown task: exit %d, stderr:\n%s", code, stderr.String())
	}
}
