// Command e2e runs coordbench's end-to-end benchmarks (package e2e).
//
// The reconstruction benchmark (the default): every scenario of the
// ground truth (groundtruth/ground_truth.json), its purple topology on
// loopback, a real green agent assessing it through A2A, and the labels
// the green agent recovered from the spans compared with the ground truth.
//
// The validity benchmark (-perturb): the perturbation matrix, topologies
// by perturbations (late batches, duplicate exports, a silent, slow or
// failing reviewer, a dropped exporter, clock skew), each case checked
// against the verdict the documented rules call for.
//
//	e2e [--perturb [--perturbations a,b] [--per-pattern]] [--tasks id,id] [--parallel N] [--json FILE] [--judge] [-v]
//
// Flags go anywhere (internal/cli); -h prints the usage with examples.
// Exit status: 0 when every expected verdict held (or -h), 1 when some
// did not (or a scenario failed), 2 on bad usage.
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
	c := cli.New("e2e", "[--perturb [--perturbations A,B] [--per-pattern]] [--tasks ID,ID] [--parallel N] [--json FILE] [--judge] [-v]",
		"Reconstruction benchmark: run every scenario of the ground truth on loopback (its purple team, a real\n"+
			"green agent over A2A) and compare the labels the green agent recovers from the spans with the ground truth.\n"+
			"Validity benchmark (--perturb): run the topologies under perturbations and check each verdict against\n"+
			"the one the documented rules call for (the same label, insufficient_evidence, or a recorded failure).", stdout, stderr)
	c.Examples = []string{
		"e2e",
		"e2e --tasks iclr2017-305,iclr2017-749 --json e2e-report.json -v",
		"e2e --perturb --per-pattern",
		"e2e --perturb --tasks iclr2017-305 --perturbations late_export_5s,silent_entry",
	}
	return c
}

// run is the command: flags to options, the benchmark, the report.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := command(stdout, stderr)
	po, jsonOut, code := options(c, args, getenv)
	if code >= 0 {
		return code
	}
	opts := po.Options
	// green warns through the default logger when PeerRead is missing.
	slog.SetDefault(opts.Logger)
	if po.perturb {
		return runPerturb(ctx, c, po.PerturbOptions, jsonOut, stdout)
	}
	fmt.Fprintln(stdout, "reconstruction benchmark: the ground truth's topologies, unperturbed")
	rep, err := e2e.Run(ctx, opts)
	if err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if err := writeJSON(jsonOut, rep); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if rep.Correct != len(rep.Scenarios) {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// runPerturb runs the validity benchmark and prints its matrix.
func runPerturb(ctx context.Context, c *cli.Command, po e2e.PerturbOptions, jsonOut string, stdout io.Writer) int {
	fmt.Fprintln(stdout, "validity benchmark: the perturbation matrix")
	rep, err := e2e.RunPerturb(ctx, po)
	if err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if err := rep.WriteTable(stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if err := writeJSON(jsonOut, rep); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if rep.Correct != rep.Run {
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// writeJSON writes v as indented JSON to path (nothing when path is empty).
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// cmdOptions are the benchmark options and which benchmark to run.
type cmdOptions struct {
	e2e.PerturbOptions
	perturb bool
}

// options reads the flags into the benchmark's options and the JSON
// report's path. A code of 0 or more means stop there and exit with it.
func options(c *cli.Command, args []string, getenv func(string) string) (co cmdOptions, jsonOut string, code int) {
	opts := &co.Options
	fs := c.Flags
	fs.BoolVar(&co.perturb, "perturb", false, "run the validity benchmark (the perturbation matrix) instead of the reconstruction one")
	fs.BoolVar(&co.PerPattern, "per-pattern", false, "with --perturb: one topology per pattern (when --tasks is not given)")
	perts := fs.String("perturbations", "", "with --perturb: comma-separated perturbation names (default: all)")
	fs.DurationVar(&co.PerturbSettleMaxWait, "settle-max-wait", e2e.DefaultPerturbSettleMaxWait,
		"with --perturb: the green agent's maximum settle wait (its default; lower it to see the matrix fail)")
	tasks := fs.String("tasks", "", "comma-separated scenario ids (default: all)")
	fs.IntVar(&opts.Parallel, "parallel", e2e.DefaultParallel, "scenarios run at once")
	fs.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	fs.BoolVar(&opts.Judge, "judge", false, "run the LLM judge too (AGENTBEATS_LLM_API_KEY; rule-based without it)")
	groundTruth := fs.String("ground-truth", "", "ground truth file (default $"+groundtruth.EnvFile+", else the built-in one)")
	fs.StringVar(&opts.PeerReadDir, "peerread", "", "PeerRead directory (default $COORDBENCH_PEERREAD_DIR, else ../shared/data/peerread)")
	verbose := fs.Bool("v", false, "log the agents' warnings")
	positional, code, ok := c.Parse(args)
	if !ok {
		return co, "", code
	}
	if len(positional) > 0 {
		return co, "", c.UsageError("unexpected arguments %q", positional)
	}
	gt, err := groundtruth.Resolve(*groundTruth, getenv)
	if err != nil {
		return co, "", c.Fail(cli.ExitUsage, err)
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
	opts.TaskIDs = splitList(*tasks)
	co.Perturbations = splitList(*perts)
	return co, jsonOut, -1
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}
