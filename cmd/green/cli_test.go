package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelp: -h, --help and help COMMAND print the usage with examples to
// stdout and exit 0, for green and every subcommand.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		code, stdout, stderr := runGreen(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
		for _, s := range subcommands() {
			for _, e := range s.examples {
				if !strings.Contains(stdout, "$ "+e+"\n") {
					t.Errorf("%q: the usage lacks the example %q:\n%s", args, e, stdout)
				}
			}
		}
	}
	for _, s := range subcommands() {
		for _, args := range [][]string{{s.name, "-h"}, {s.name, "--help"}, {"help", s.name}, {s.name, "x", "--help"}} {
			code, stdout, stderr := runGreen(t, args...)
			if code != 0 || stderr != "" {
				t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
			}
			if !strings.HasPrefix(stdout, "usage: green "+s.name+" ") || !strings.Contains(stdout, "Examples:\n  "+s.examples[0]+"\n") {
				t.Errorf("%q: usage:\n%s", args, stdout)
			}
		}
	}
}

// TestUnknownCommand: usage on stderr, exit 2.
func TestUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"asses"}, {"help", "asses"}} {
		code, stdout, stderr := runGreen(t, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, `unknown command "asses"`) || !strings.Contains(stderr, "usage: green") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", args, code, stdout, stderr)
		}
	}
}

// TestAssessFlagsAnywhere: flags before, between and after the files are
// read as flags, --config as JSON or @file in every position.
func TestAssessFlagsAnywhere(t *testing.T) {
	a, b := "../../otelmap/testdata/two_agents.otlp.json", "../../otelmap/testdata/sdk_export.otlp.jsonl"
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgFile, []byte(`{"evaluators": {"judge": false, "text": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `{"evaluators": {"judge": false, "text": false}}`
	for i, args := range [][]string{
		{"--otlp", a, b, "--config", cfg},
		{a, "--config", cfg, b},
		{"--config", "@" + cfgFile, a, b},
		{a, b, "--config=@" + cfgFile},
		{"--output", "OUT", a, b, "--config", cfg},
		{a, b, "--config", cfg, "--output", "OUT"},
	} {
		out := filepath.Join(dir, "out"+string(rune('a'+i))+".json")
		for j := range args {
			if args[j] == "OUT" {
				args[j] = out
			}
		}
		code, stdout, stderr := assessCmd(t, args...)
		if code != 0 {
			t.Errorf("%q: exit %d:\n%s", args, code, stderr)
			continue
		}
		if strings.Contains(strings.Join(args, " "), out) {
			if stdout != "" {
				t.Errorf("%q: --output given, stdout %q", args, stdout)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Errorf("%q: %v", args, err)
				continue
			}
			stdout = string(b)
		}
		var res assessOutput
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if len(res.Tasks) < 2 {
			t.Errorf("%q: %d tasks, want one per trace of both files", args, len(res.Tasks))
		}
		for _, task := range res.Tasks {
			if task.Evaluations.Judge != nil || task.Evaluations.Text != nil || task.Evaluations.Graph == nil {
				t.Errorf("%q: task %s: the config was not applied", args, task.TraceID)
			}
		}
	}
}

// TestErrorsPrefixedOnce: every error line names the command once.
func TestErrorsPrefixedOnce(t *testing.T) {
	for _, args := range [][]string{
		{"assess", "/no/such/file.json"},
		{"assess", "--config", "{", "x.json"},
		{"run", "--participant", "a=ftp://x"},
		{"run", "--participant", "a=http://127.0.0.1:1/", "extra"},
		{"demo", "--config", "[1]"},
		{"serve", "--port", "70000"},
	} {
		code, _, stderr := runGreen(t, args...)
		if code == 0 {
			t.Errorf("%q: exit 0", args)
		}
		first, _, _ := strings.Cut(stderr, "\n")
		// Skip the log lines a run writes before its error.
		for _, line := range strings.Split(stderr, "\n") {
			if strings.HasPrefix(line, "green ") {
				first = line
				break
			}
		}
		want := "green " + args[0] + ": "
		if !strings.HasPrefix(first, want) {
			t.Errorf("%q: first error line %q, want it to start with %q once", args, first, want)
		}
		if strings.Contains(stderr, want+"green") {
			t.Errorf("%q: doubled prefix:\n%s", args, stderr)
		}
	}
}
