package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/coordbench/coordbench/evals"
)

// timeGo times the Go side on the graph of n nodes in a fresh process:
// this binary started again with -worker.
func timeGo(ctx context.Context, o options, n int) (*timing, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this binary to start the worker: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "-worker", strconv.Itoa(n),
		"-degree", strconv.Itoa(o.degree), "-seed", strconv.FormatUint(o.seed, 10), "-runs", strconv.Itoa(o.runsFor(n)))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	var t timing
	if err := json.Unmarshal(out, &t); err != nil {
		return nil, fmt.Errorf("decoding the worker's answer: %w", err)
	}
	return &t, nil
}

// runWorker is the Go side's worker process: it draws the graph of
// o.worker nodes (not timed, as the Python side's reading of its input is
// not), evaluates it o.runs times, and writes the timing, with the metrics
// of the last run, as JSON to w.
func runWorker(ctx context.Context, o options, w io.Writer) error {
	tr := newTrace(o, o.worker)
	runs := o.runsFor(o.worker)
	t := timing{Runs: runs, Best: math.Inf(1), CPUBest: math.Inf(1)}
	var res *evals.GraphResult
	for i := range runs {
		cpu0 := processCPU()
		start := time.Now()
		var err error
		res, err = evals.EvaluateGraph(ctx, tr, evals.Inputs{})
		if err != nil {
			return fmt.Errorf("evaluating %d nodes: %w", o.worker, err)
		}
		wall := time.Since(start).Seconds()
		cpu := processCPU() - cpu0
		if i == 0 {
			t.First, t.CPUFirst = wall, cpu
		}
		t.Best, t.CPUBest = min(t.Best, wall), min(t.CPUBest, cpu)
	}
	// The metrics as the evaluator's JSON has them, decoded as the Python
	// side's are, for compare.
	b, err := json.Marshal(res.Metrics)
	if err != nil {
		return fmt.Errorf("encoding the metrics: %w", err)
	}
	if err := json.Unmarshal(b, &t.Metrics); err != nil {
		return fmt.Errorf("decoding the metrics: %w", err)
	}
	if err := json.NewEncoder(w).Encode(t); err != nil {
		return fmt.Errorf("writing the timing: %w", err)
	}
	return nil
}
