// Command e2e runs coordbench's end-to-end benchmark (package e2e): every
// scenario of the ground truth (groundtruth/ground_truth.json), its purple topology on loopback, a
// real green agent assessing it through A2A, and the labels the green agent
// recovered from the spans compared with the ground truth.
//
//	e2e [--tasks id,id] [--parallel N] [--json FILE] [--judge] [-v]
//
// Flags go anywhere (internal/cli); -h prints the usage with examples.
// Exit status: 0 when every label was recovered (or -h), 1 when some was
// not (or a scenario failed), 2 on bad usage.
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

	"github.com/coordbench/coordbench/e2e"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// command is e2e's command line: its usage and examples.
func command(stdout, stderr io.Writer) *cli.Command {
	c := cli.New("e2e", "[--tasks ID,ID] [--parallel N] [--json FILE] [--judge] [-v]",
		"Run every scenario of the ground truth on loopback (its purple team, a real green agent over A2A)\n"+
			"and compare the labels the green agent recovers from the spans with the ground truth.", stdout, stderr)
	c.Examples = []string{
		"e2e",
		"e2e --tasks iclr2017-305,iclr2017-749 --json e2e-report.json -v",
	}
	return c
}

// run is the command: flags to options, the benchmark, the report.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := command(stdout, stderr)
	opts, jsonOut, code := options(c, args, getenv)
	if code >= 0 {
		return code
	}
	// green warns through the default logger when PeerRead is missing.
	slog.SetDefault(opts.Logger)
	rep, err := e2e.Run(ctx, opts)
	if err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			return c.Fail(cli.ExitFailure, fmt.Errorf("write %s: %w", jsonOut, err))
		}
	}
	if rep.Correct != len(rep.Scenarios) {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// options reads the flags into the benchmark's options and the JSON
// report's path. A code of 0 or more means stop there and exit with it.
func options(c *cli.Command, args []string, getenv func(string) string) (opts e2e.Options, jsonOut string, code int) {
	fs := c.Flags
	tasks := fs.String("tasks", "", "comma-separated scenario ids (default: all)")
	fs.IntVar(&opts.Parallel, "parallel", e2e.DefaultParallel, "scenarios run at once")
	fs.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	fs.BoolVar(&opts.Judge, "judge", false, "run the LLM judge too (AGENTBEATS_LLM_API_KEY; rule-based without it)")
	groundTruth := fs.String("ground-truth", "", "ground truth file (default $"+groundtruth.EnvFile+", else the built-in one)")
	fs.StringVar(&opts.PeerReadDir, "peerread", "", "PeerRead directory (default $COORDBENCH_PEERREAD_DIR, else ../shared/data/peerread)")
	verbose := fs.Bool("v", false, "log the agents' warnings")
	positional, code, ok := c.Parse(args)
	if !ok {
		return opts, "", code
	}
	if len(positional) > 0 {
		return opts, "", c.UsageError("unexpected arguments %q", positional)
	}
	gt, err := groundtruth.Resolve(*groundTruth, getenv)
	if err != nil {
		return opts, "", c.Fail(cli.ExitUsage, err)
	}
	opts.GroundTruth = gt
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	opts.Logger = slog.New(slog.NewTextHandler(c.Stderr, &slog.HandlerOptions{Level: level}))
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
