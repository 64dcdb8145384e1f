// Command green is coordbench's assessor ("green agent"). Subcommands:
//
//	green [serve] [--host H] [--port P] [--card-url URL] [--otlp-addr ADDR]
//	                                      serve A2A (the default: AgentBeats
//	                                      runs the image with these flags)
//	green run --participant ROLE=URL ... [--config JSON|@file] [--output FILE]
//	                                      run one assessment from the command line
//	green assess [--config JSON|@file] [--conventions FILE] [--output FILE] FILE ...
//	                                      assess OTLP JSON span files offline
//	green demo [--output FILE]            run the built-in demo
//	green help [COMMAND]                  the usage, or a command's flags
//
// Every subcommand reads its flags anywhere on the line (internal/cli);
// -h or --help prints its usage with examples and exits 0. Exit status: 0
// on success, 1 on a failure while running, 2 on bad input (usage,
// unreadable or malformed files, a rejected request).
//
// Each subcommand is its flags read into options, then a function that
// runs them.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/internal/llmconfig"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// subcommand is one of green's subcommands: what its usage says, and the
// function that parses its arguments with the command c and runs it.
type subcommand struct {
	name, synopsis, summary string
	examples                []string
	run                     func(ctx context.Context, c *cli.Command, args []string) int
}

// command makes the cli.Command of s.
func (s subcommand) command(stdout, stderr io.Writer) *cli.Command {
	c := cli.New("green "+s.name, s.synopsis, s.summary, stdout, stderr)
	c.Examples = s.examples
	return c
}

func subcommands() []subcommand {
	return []subcommand{
		{
			name:     "serve",
			synopsis: "[--host HOST] [--port PORT] [--card-url URL] [--otlp-addr ADDR] [flags]",
			summary: "Serve the green agent over A2A (1.0 and 0.3) until SIGINT or SIGTERM. This is the default:\n" +
				"green with flags and no subcommand serves, as AgentBeats starts the image.",
			examples: []string{
				"green serve --port 9009",
				"green --host 0.0.0.0 --port 9009 --card-url http://green:9009/",
			},
			run: serve,
		},
		{
			name:     "run",
			synopsis: "--participant ROLE=URL [--participant ROLE=URL ...] [--config JSON|@file] [--output FILE] [flags]",
			summary: "Run one assessment against live participants, without a server: the Markdown summary goes\n" +
				"to stderr, the JSON result to stdout, and --output writes the AgentBeats results file.",
			examples: []string{
				`green run --participant coordinator=http://127.0.0.1:9018/ --config '{"num_tasks": 2}' --output results.json`,
				"green run --participant coordinator=http://127.0.0.1:9018/ --config @config.json",
			},
			run: runAssessment,
		},
		{
			name:     "assess",
			synopsis: "[--config JSON|@file] [--conventions FILE] [--output FILE] FILE [FILE ...]",
			summary: "Assess OTLP JSON span files offline (an export request per file, or one per line): one task\n" +
				"per trace, every evaluator, the JSON result on stdout or in --output.",
			examples: []string{
				"green assess spans.otlp.json",
				`green assess a.otlp.json b.otlp.jsonl --config '{"evaluators": {"judge": false}}' --output result.json`,
			},
			run: assess,
		},
		{
			name:     "demo",
			synopsis: "[--output FILE|-] [--config JSON|@file]",
			summary: "Run the built-in demo: a small agent team on loopback, assessed from its spans. The summary\n" +
				"goes to stdout and the JSON result to --output (" + defaultDemoOutput + ").",
			examples: []string{
				"green demo",
				"green demo --output - > result.json",
			},
			run: demo,
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: green [COMMAND] [flags] [arguments]\n\nCommands:\n")
	for _, s := range subcommands() {
		fmt.Fprintf(w, "  %-7s %s\n", s.name, strings.ReplaceAll(s.summary, "\n", "\n          "))
		for _, e := range s.examples {
			fmt.Fprintf(w, "            $ %s\n", e)
		}
	}
	fmt.Fprint(w, `  help    green help COMMAND lists a command's flags (as does green COMMAND -h)

With no command, or with flags only, green serves. Flags go anywhere on the line.
Exit status: 0 on success, 1 on a failure while running, 2 on bad usage or input.
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	subs := subcommands()
	find := func(name string) (subcommand, bool) {
		for _, s := range subs {
			if s.name == name {
				return s, true
			}
		}
		return subcommand{}, false
	}
	// AgentBeats starts the image as `green --host 0.0.0.0 --port 9009
	// --card-url ...`: flags without a subcommand serve.
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		s, _ := find("serve")
		return s.run(ctx, s.command(stdout, stderr), args)
	}
	name := args[0]
	if isHelp(name) || name == "help" {
		if name == "help" && len(args) > 1 {
			s, ok := find(args[1])
			if !ok {
				fmt.Fprintf(stderr, "green help: unknown command %q\n", args[1])
				usage(stderr)
				return cli.ExitUsage
			}
			s.command(stdout, stderr).PrintUsage(stdout)
			return cli.ExitOK
		}
		usage(stdout)
		return cli.ExitOK
	}
	s, ok := find(name)
	if !ok {
		fmt.Fprintf(stderr, "green: unknown command %q\n", name)
		usage(stderr)
		return cli.ExitUsage
	}
	return s.run(ctx, s.command(stdout, stderr), args[1:])
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// judgeFromEnv reads the judge's AGENTBEATS_LLM_* variables, once. A
// configuration the judge cannot use is reported now; the command still
// runs, and every verdict says the rule-based judge answered and why.
func judgeFromEnv(cmd string) llmconfig.Config {
	cfg := llmconfig.FromEnv(os.Getenv)
	if err := cfg.Validate(); err != nil && cfg.Enabled() {
		slog.Warn(cmd+": the LLM judge cannot be used; the rule-based judge answers", "err", err)
	}
	return cfg
}

// readConfigArg reads a --config value: a JSON object, or @file holding
// one. The empty value is the empty object.
func readConfigArg(arg string) (json.RawMessage, error) {
	if arg == "" {
		return json.RawMessage("{}"), nil
	}
	raw := []byte(arg)
	if arg[0] == '@' {
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("config must be a JSON object: %w", err)
	}
	return raw, nil
}

// parseEvalConfig reads an evaluator config (--config of assess and demo)
// as readConfigArg does.
func parseEvalConfig(arg string) (evals.Config, error) {
	var cfg evals.Config
	raw, err := readConfigArg(arg)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("parse config: %w", err)
	}
	return cfg, nil
}

func writeJSON(v any, path string, stdout io.Writer) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	b = append(b, '\n')
	if path == "" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}
