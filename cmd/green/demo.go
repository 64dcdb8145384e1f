package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/report"
)

// defaultDemoOutput is where `green demo` leaves its JSON result, so the
// terminal shows the readable summary and the detail stays at hand.
const defaultDemoOutput = "coordbench-demo-result.json"

// demoOptions are `green demo`'s flags, read.
type demoOptions struct {
	config evals.Config
	output string
}

// demo runs the built-in demo (loopback.RunDemo): a small agent team on
// loopback, assessed from its spans. It prints the Markdown summary to
// stdout and writes the JSON result to --output; with --output - the JSON
// goes to stdout and the summary to stderr, so stdout stays one JSON
// document for a pipe.
func demo(ctx context.Context, c *cli.Command, args []string) int {
	o, code, ok := demoFlags(c, args)
	if !ok {
		return code
	}
	return runDemo(ctx, c, o)
}

func demoFlags(c *cli.Command, args []string) (demoOptions, int, bool) {
	var o demoOptions
	c.Flags.StringVar(&o.output, "output", defaultDemoOutput, "write the JSON result to this file; - writes it to stdout and the summary to stderr")
	configArg := c.Flags.String("config", "", `evaluator config as JSON or @file, e.g. {"evaluators": {"judge": false}}`)
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	cfg, err := parseEvalConfig(*configArg)
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	o.config = cfg
	return o, 0, true
}

func runDemo(ctx context.Context, c *cli.Command, o demoOptions) int {
	res, err := loopback.RunDemo(ctx, loopback.DemoOptions{Config: o.config, Logger: slog.Default()})
	if err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	summary := report.Summary(res)
	if o.output == "-" || o.output == "" {
		fmt.Fprint(c.Stderr, summary)
		if err := writeJSON(res, "", c.Stdout); err != nil {
			return c.Fail(cli.ExitFailure, err)
		}
		return cli.ExitOK
	}
	if _, err := io.WriteString(c.Stdout, summary); err != nil {
		return c.Fail(cli.ExitFailure, fmt.Errorf("write summary: %w", err))
	}
	if err := writeJSON(res, o.output, c.Stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	slog.Info("demo: JSON result written", "path", o.output)
	return cli.ExitOK
}
