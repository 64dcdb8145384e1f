// Command green is coordbench's assessor ("green agent"). Subcommands:
//
//	green [serve] [--host H] [--port P] [--card-url URL] [--otlp-addr ADDR]
//	                                      serve A2A (the default: AgentBeats
//	                                      runs the image with these flags)
//	green run --participant ROLE=URL ... [--config JSON|@file] [--output FILE]
//	                                      run one assessment from the command line
//	green assess --otlp FILE [FILE ...]   assess OTLP JSON span files offline
//	green demo                            run the built-in demo
//
// Exit status: 0 on success, 1 on a failure while running, 2 on bad input
// (usage, unreadable or malformed files, a rejected request).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  green [serve] [--host HOST] [--port PORT] [--card-url URL] [--otlp-addr ADDR]
  green run --participant ROLE=URL [--participant ROLE=URL ...] [--config JSON|@file] [--output FILE]
  green assess --otlp FILE [FILE ...] [--config JSON|@file] [--output FILE]
  green demo

With no subcommand, or with flags only, green serves A2A (green serve -h lists the flags).
Authentication is off unless a token is configured: see docs/green-agent.md
($COORDBENCH_A2A_TOKEN, --a2a-token-file, --otlp-token-file, --participant-tokens-file).
`

func run(args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// AgentBeats starts the image as `green --host 0.0.0.0 --port 9009
	// --card-url ...`: flags without a subcommand serve.
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		return serve(ctx, args, stdout, stderr)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "run":
		return runAssessment(ctx, args[1:], stdout, stderr)
	case "assess":
		return assess(ctx, args[1:], stdout, stderr)
	case "demo":
		return demo(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "green: unknown subcommand %q\n%s", args[0], usage)
		return 2
	}
}

// judgeFromEnv reads the judge's AGENTBEATS_LLM_* variables, once. A
// configuration the judge cannot use is reported now; the command still
// runs, and every verdict says the rule-based judge answered and why.
func judgeFromEnv(cmd string) evals.JudgeConfig {
	cfg := evals.JudgeConfigFromEnv(os.Getenv)
	if err := cfg.Validate(); err != nil && cfg.APIKey != "" {
		slog.Warn(cmd+": the LLM judge cannot be used; the rule-based judge answers", "err", err)
	}
	return cfg
}

// fileList collects repeated --otlp flags.
type fileList []string

func (f *fileList) String() string     { return fmt.Sprint(*f) }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func assess(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("green assess", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files fileList
	fs.Var(&files, "otlp", "OTLP JSON file to assess (repeatable; further files may follow the flags)")
	configArg := fs.String("config", "", `evaluator config as JSON or @file, e.g. {"evaluators": {"judge": false}}`)
	output := fs.String("output", "", "write the JSON result to this file instead of stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		fmt.Fprintf(stderr, "green assess: no OTLP files given\n%s", usage)
		return 2
	}
	cfg, err := parseEvalConfig(*configArg)
	if err != nil {
		fmt.Fprintf(stderr, "green assess: %v\n", err)
		return 2
	}
	res, err := green.AssessOTLPFiles(ctx, files, green.OfflineOptions{
		Judge:  judgeFromEnv("green assess"),
		Config: cfg,
		Logger: slog.Default(),
	})
	if err != nil {
		fmt.Fprintf(stderr, "green assess: %v\n", err)
		var inputErr *green.InputError
		if errors.As(err, &inputErr) {
			return 2
		}
		return 1
	}
	if err := writeJSON(res, *output, stdout); err != nil {
		fmt.Fprintf(stderr, "green assess: %v\n", err)
		return 1
	}
	return 0
}

func parseEvalConfig(arg string) (evals.Config, error) {
	var cfg evals.Config
	if arg == "" {
		return cfg, nil
	}
	raw := []byte(arg)
	if arg[0] == '@' {
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return cfg, fmt.Errorf("read config: %w", err)
		}
		raw = b
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
