// Command e2e runs coordbench's end-to-end benchmark (package e2e): every
// scenario of the ground truth (groundtruth/ground_truth.json), its purple topology on loopback, a
// real green agent assessing it through A2A, and the labels the green agent
// recovered from the spans compared with the ground truth.
//
//	e2e [--tasks id,id] [--parallel N] [--json FILE] [--judge] [-v]
//
// Exit status: 0 when every label was recovered, 1 when some was not (or a
// scenario failed), 2 on bad usage.
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

	"github.com/coordbench/coordbench/e2e"
	"github.com/coordbench/coordbench/groundtruth"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the command: flags to options, the benchmark, the report.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, jsonOut, code := options(args, getenv, stderr)
	if code >= 0 {
		return code
	}
	// green warns through the default logger when PeerRead is missing.
	slog.SetDefault(opts.Logger)
	rep, err := e2e.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 1
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return 1
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "e2e: write %s: %v\n", jsonOut, err)
			return 1
		}
	}
	if rep.Correct != len(rep.Scenarios) {
		return 1
	}
	return 0
}

// options reads the flags into the benchmark's options and the JSON
// report's path. A code of 0 or more means stop there and exit with it.
func options(args []string, getenv func(string) string, stderr io.Writer) (opts e2e.Options, jsonOut string, code int) {
	fs := flag.NewFlagSet("e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.String("tasks", "", "comma-separated scenario ids (default: all)")
	fs.IntVar(&opts.Parallel, "parallel", e2e.DefaultParallel, "scenarios run at once")
	fs.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	fs.BoolVar(&opts.Judge, "judge", false, "run the LLM judge too (AGENTBEATS_LLM_API_KEY; rule-based without it)")
	groundTruth := fs.String("ground-truth", "", "ground truth file (default $"+groundtruth.EnvFile+", else the built-in one)")
	fs.StringVar(&opts.PeerReadDir, "peerread", "", "PeerRead directory (default $COORDBENCH_PEERREAD_DIR, else ../shared/data/peerread)")
	verbose := fs.Bool("v", false, "log the agents' warnings")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, "", 0
		}
		return opts, "", 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "e2e: unexpected arguments %q\n", fs.Args())
		return opts, "", 2
	}
	gt, err := groundtruth.Resolve(*groundTruth, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "e2e: %v\n", err)
		return opts, "", 2
	}
	opts.GroundTruth = gt
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if opts.Judge {
		// The judge reads its key from the process's environment; the
		// agents' OpenTelemetry stays off.
		opts.Getenv = func(k string) string {
			if strings.HasPrefix(k, "AGENTBEATS_LLM_") {
				return getenv(k)
			}
			return ""
		}
	}
	for _, id := range strings.Split(*tasks, ",") {
		if id = strings.TrimSpace(id); id != "" {
			opts.TaskIDs = append(opts.TaskIDs, id)
		}
	}
	return opts, jsonOut, -1
}
