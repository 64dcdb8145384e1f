package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/report"
)

// defaultDemoOutput is where `green demo` leaves its JSON result, so the
// terminal shows the readable summary and the detail stays at hand.
const defaultDemoOutput = "coordbench-demo-result.json"

// demo runs the built-in demo (loopback.RunDemo): a small agent team on
// loopback, assessed from its spans. It prints the Markdown summary to
// stdout and writes the JSON result to --output; with --output - the JSON
// goes to stdout and the summary to stderr, so stdout stays one JSON
// document for a pipe.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("green demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", defaultDemoOutput, "write the JSON result to this file; - writes it to stdout and the summary to stderr")
	configArg := fs.String("config", "", `evaluator config as JSON or @file, e.g. {"evaluators": {"judge": false}}`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "green demo: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	cfg, err := parseEvalConfig(*configArg)
	if err != nil {
		fmt.Fprintf(stderr, "green demo: %v\n", err)
		return 2
	}
	res, err := loopback.RunDemo(ctx, loopback.DemoOptions{Config: cfg, Logger: slog.Default()})
	if err != nil {
		fmt.Fprintf(stderr, "green demo: %v\n", err)
		return 1
	}
	summary := report.Summary(res)
	if *output == "-" || *output == "" {
		fmt.Fprint(stderr, summary)
		if err := writeJSON(res, "", stdout); err != nil {
			fmt.Fprintf(stderr, "green demo: %v\n", err)
			return 1
		}
		return 0
	}
	if _, err := io.WriteString(stdout, summary); err != nil {
		fmt.Fprintf(stderr, "green demo: write summary: %v\n", err)
		return 1
	}
	if err := writeJSON(res, *output, stdout); err != nil {
		fmt.Fprintf(stderr, "green demo: %v\n", err)
		return 1
	}
	slog.Info("demo: JSON result written", "path", *output)
	return 0
}
