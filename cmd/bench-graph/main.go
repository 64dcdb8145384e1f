// Command bench-graph times the graph evaluator against networkx (`make
// bench-graph`): it builds random directed graphs of 100, 1,000 and 3,000
// nodes with about ten edges per node from a fixed seed, times the full
// metric set in Go and, through scripts/bench_graph.py, in networkx on the
// same edge lists, checks the two agree where networkx ran in full, and
// prints a table.
//
// Both sides are timed the same way: each graph is computed by each side
// in a process of its own, started for it (the Go side is this binary
// started again with -worker), which computes the metric set N times in a
// row (N = -runs: 5 up to 1,000 nodes, 3 above) and reports the first
// call, whatever a fresh process pays on its first use (networkx imports
// scipy then, Go grows its heap), and the best of the N. Wall time and
// process CPU time are both measured; the table gives the speed-up of each
// way of counting.
//
// networkx's all-pairs metrics (betweenness, closeness, average shortest
// path length, diameter) cost one BFS per source in Python; above
// -nx-full-max nodes (3,000) the script times them from a sample of sources
// and scales the time to all of them, once, and the table marks those times
// as estimates. -nx-full runs networkx in full everywhere.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/coordbench/coordbench/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command (internal/cli): flags to options, then the benchmark.
func run(args []string, stdout, stderr io.Writer) int {
	c := cli.New("bench-graph", "[--sizes N,N,...] [--degree D] [--nx-full] [flags]",
		"Time the graph evaluator against networkx on random directed graphs (run from the repository root).", stdout, stderr)
	c.Examples = []string{
		"bench-graph",
		"bench-graph --sizes 100,1000 --runs 3",
		"go run ./cmd/bench-graph --sizes 10000 --nx-full",
	}
	o, code, ok := parseFlags(c, args)
	if !ok {
		return code
	}
	if err := bench(o, stdout, stderr); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	return cli.ExitOK
}

type options struct {
	sizes   []int
	degree  int
	seed    uint64
	runs    int
	python  string
	script  string
	nxFull  bool
	fullMax int
	sample  int
	// worker, when positive, makes this process the Go side's worker for
	// the graph of that many nodes (see runWorker).
	worker int
}

func parseFlags(c *cli.Command, args []string) (o options, code int, ok bool) {
	fs := c.Flags
	sizes := fs.String("sizes", "100,1000,3000", "comma-separated node counts")
	fs.IntVar(&o.degree, "degree", 10, "edges per node")
	fs.Uint64Var(&o.seed, "seed", 20260101, "random seed")
	fs.IntVar(&o.runs, "runs", 0, "calls per graph and side, the best taken (0: 5 up to 1,000 nodes, 3 above)")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "python with networkx and scipy")
	fs.StringVar(&o.script, "script", "scripts/bench_graph.py", "the networkx timing script")
	fs.BoolVar(&o.nxFull, "nx-full", false, "run networkx in full on every graph (slow)")
	fs.IntVar(&o.fullMax, "nx-full-max", 3000, "largest graph networkx runs in full")
	fs.IntVar(&o.sample, "nx-sample", 200, "sources networkx's all-pairs metrics are timed from above -nx-full-max")
	fs.IntVar(&o.worker, "worker", 0, "internal: time the Go side on the graph of this many nodes and answer in JSON")
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 {
			return o, c.UsageError("bad size %q", s), false
		}
		o.sizes = append(o.sizes, n)
	}
	if o.degree < 1 {
		return o, c.UsageError("--degree must be positive"), false
	}
	if o.runs < 0 {
		return o, c.UsageError("--runs must not be negative"), false
	}
	return o, 0, true
}

// runsFor is the number of calls each side makes on a graph of n nodes.
func (o options) runsFor(n int) int {
	switch {
	case o.runs > 0:
		return o.runs
	case n <= 1000:
		return 5
	}
	return 3
}

// timing is one side's measurement of one graph, as the worker processes
// of both sides report it.
type timing struct {
	Runs int `json:"runs"`
	// First is the first call in a fresh process, Best the best of Runs;
	// wall seconds, and process CPU seconds.
	First    float64 `json:"first"`
	Best     float64 `json:"best"`
	CPUFirst float64 `json:"cpu_first"`
	CPUBest  float64 `json:"cpu_best"`
	// Estimated: networkx's all-pairs metrics timed from sampled sources
	// and scaled, once (Runs is 1).
	Estimated bool `json:"estimated"`
	// Metrics are the values computed, as JSON decodes them; nil where
	// networkx did not run in full.
	Metrics map[string]any `json:"metrics"`
}

// bench runs the benchmark (or, with -worker, one Go-side measurement)
// and prints the table to stdout.
func bench(o options, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if o.worker > 0 {
		return runWorker(ctx, o, stdout)
	}

	type row struct {
		nodes, edges int
		goT, nxT     *timing
		values       string
	}
	var rows []row
	var version string
	var nxErrs []error
	for _, n := range o.sizes {
		g := newGraph(o, n)
		r := row{nodes: n, edges: len(g.Edges), values: "-"}
		goT, err := timeGo(ctx, o, n)
		if err != nil {
			return fmt.Errorf("the Go side, %d nodes: %w", n, err)
		}
		r.goT = goT
		fmt.Fprintf(stderr, "go: %d nodes: first %.4fs, best of %d %.4fs\n", n, goT.First, goT.Runs, goT.Best)
		nxT, v, err := timeNetworkx(ctx, o, g)
		if err != nil {
			nxErrs = append(nxErrs, fmt.Errorf("%d nodes: %w", n, err))
			fmt.Fprintln(stderr, "bench-graph: networkx not timed:", err)
		} else {
			version = v
			r.nxT = nxT
			if nxT.Metrics != nil {
				r.values = compare(goT.Metrics, nxT.Metrics)
			} else {
				r.values = "not compared"
			}
		}
		rows = append(rows, r)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}

	fmt.Printf("graph evaluator vs networkx %s — full metric set, GOMAXPROCS=%d, seed %d\n", version, runtime.GOMAXPROCS(0), o.seed)
	for _, clock := range []struct {
		title string
		first func(*timing) float64
		best  func(*timing) float64
	}{
		{"wall time", func(t *timing) float64 { return t.First }, func(t *timing) float64 { return t.Best }},
		{"process CPU time", func(t *timing) float64 { return t.CPUFirst }, func(t *timing) float64 { return t.CPUBest }},
	} {
		fmt.Printf("\n%s\n", clock.title)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\t\tGo (s)\t\tnetworkx (s)\t\tspeed-up\t\t\t")
		fmt.Fprintln(tw, "nodes\tedges\tfirst\tbest\tfirst\tbest\tfirst\tbest\tvalues\t")
		for _, r := range rows {
			cols := []string{"-", "-", "-", "-"}
			if t := r.nxT; t != nil {
				mark := ""
				if t.Estimated {
					mark = "≈"
				}
				cols = []string{mark + fmtSecs(clock.first(t)), mark + fmtSecs(clock.best(t)),
					ratio(mark, clock.first(t), clock.first(r.goT)), ratio(mark, clock.best(t), clock.best(r.goT))}
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.nodes, r.edges,
				fmtSecs(clock.first(r.goT)), fmtSecs(clock.best(r.goT)), cols[0], cols[1], cols[2], cols[3], r.values)
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the table: %w", err)
		}
	}
	fmt.Println()
	fmt.Println("Each side computes each graph in a fresh process of its own: \"first\" is that process's")
	fmt.Printf("first call, \"best\" the best of %s calls. Both include building the graph.\n", runsText(o))
	fmt.Println("CPU time counts every thread (the Go side's BFS runs on GOMAXPROCS workers, networkx on one):")
	fmt.Println("on a loaded machine it is the steadier clock; wall time is what a user waits.")
	if !o.nxFull && slicesMax(o.sizes) > o.fullMax {
		fmt.Printf("≈: networkx's all-pairs metrics timed once from %d sampled sources and scaled to all n (one BFS per source); -nx-full runs them in full.\n", o.sample)
	}
	return errors.Join(nxErrs...)
}

func runsText(o options) string {
	if o.runs > 0 {
		return strconv.Itoa(o.runs)
	}
	return "N (5 up to 1,000 nodes, 3 above)"
}

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// ratio is a/b as a speed-up, "-" when b is not positive.
func ratio(mark string, a, b float64) string {
	if b <= 0 || a <= 0 {
		return "-"
	}
	return fmt.Sprintf("%s%.0fx", mark, a/b)
}

func fmtSecs(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f", s)
	case s >= 1:
		return fmt.Sprintf("%.2f", s)
	default:
		return fmt.Sprintf("%.4f", s)
	}
}
