// Command bench-graph times the graph evaluator against networkx (`make
// bench-graph`): it builds random directed graphs of 100, 1,000 and 10,000
// nodes with about ten edges per node from a fixed seed, times the full
// metric set in Go and, through scripts/bench_graph.py, in networkx on the
// same edge lists, checks the two agree where networkx ran in full, and
// prints a table.
//
// networkx's all-pairs metrics (betweenness, closeness, average shortest
// path length, diameter) cost one BFS per source in Python; above 1,000
// nodes the script times them from a sample of sources and scales the time
// to all of them, and the table marks those times as estimates. -nx-full
// runs networkx in full everywhere (about an hour at 10,000 nodes).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/tracedata"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: flags to options, then the benchmark.
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
}

// parseFlags reads the flags into options; ok false means exit with code.
func parseFlags(c *cli.Command, args []string) (o options, code int, ok bool) {
	fs := c.Flags
	sizes := fs.String("sizes", "100,1000,10000", "comma-separated node counts")
	fs.IntVar(&o.degree, "degree", 10, "edges per node")
	fs.Uint64Var(&o.seed, "seed", 20260101, "random seed")
	fs.IntVar(&o.runs, "runs", 0, "Go runs per graph, best taken (0: 5 up to 1,000 nodes, else 1)")
	fs.StringVar(&o.python, "python", "/usr/bin/python3", "python with networkx and scipy")
	fs.StringVar(&o.script, "script", "scripts/bench_graph.py", "the networkx timing script")
	fs.BoolVar(&o.nxFull, "nx-full", false, "run networkx in full on every graph (slow)")
	fs.IntVar(&o.fullMax, "nx-full-max", 1000, "largest graph networkx runs in full")
	fs.IntVar(&o.sample, "nx-sample", 200, "sources networkx's all-pairs metrics are timed from above -nx-full-max")
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
			return o, c.UsageError("bad size %q: want a node count of 2 or more", s), false
		}
		o.sizes = append(o.sizes, n)
	}
	if o.degree < 1 {
		return o, c.UsageError("--degree must be positive"), false
	}
	return o, 0, true
}

// graphIn is a graph as the Python side reads it.
type graphIn struct {
	ID    string   `json:"id"`
	Nodes []string `json:"nodes"`
	Edges [][3]any `json:"edges"`
}

// randomGraph draws degree×n distinct directed edges without self-loops
// (capped at n(n-1)), weights 1..5.
func randomGraph(r *rand.Rand, n, degree int) (*tracedata.TraceData, graphIn) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%05d", i)
	}
	m := min(degree*n, n*(n-1))
	type pair struct{ u, v int }
	seen := make(map[pair]bool, m)
	var pairs []pair
	for len(pairs) < m {
		p := pair{r.IntN(n), r.IntN(n)}
		if p.u == p.v || seen[p] {
			continue
		}
		seen[p] = true
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.u != b.u {
			return a.u - b.u
		}
		return a.v - b.v
	})
	tr := &tracedata.TraceData{TraceID: fmt.Sprintf("bench-%d", n)}
	for _, name := range names {
		tr.Agents = append(tr.Agents, tracedata.Agent{Name: name, IdentifiedBy: tracedata.IdentityAgentName})
	}
	g := graphIn{ID: strconv.Itoa(n), Nodes: names}
	for _, p := range pairs {
		w := 1 + r.IntN(5)
		tr.Interactions = append(tr.Interactions, tracedata.Interaction{From: names[p.u], To: names[p.v], Count: w})
		g.Edges = append(g.Edges, [3]any{names[p.u], names[p.v], w})
	}
	return tr, g
}

type nxResult struct {
	Seconds   float64        `json:"seconds"`
	Estimated bool           `json:"estimated"`
	Metrics   map[string]any `json:"metrics"`
}

// bench times every graph in Go and in networkx and prints the table to
// stdout, progress to stderr.
func bench(o options, stdout, stderr io.Writer) error {
	var traces []*tracedata.TraceData
	var graphs []graphIn
	for _, n := range o.sizes {
		// One stream per size, so a graph does not depend on which other
		// sizes were asked for.
		tr, g := randomGraph(rand.New(rand.NewPCG(o.seed, uint64(n))), n, o.degree)
		traces = append(traces, tr)
		graphs = append(graphs, g)
	}

	ctx := context.Background()
	goSecs := make([]float64, len(traces))
	goRes := make([]*evals.GraphResult, len(traces))
	for i, tr := range traces {
		runs := o.runs
		if runs <= 0 {
			runs = 1
			if len(tr.Agents) <= 1000 {
				runs = 5
			}
		}
		best := math.Inf(1)
		for range runs {
			start := time.Now()
			res, err := evals.EvaluateGraph(ctx, tr, evals.Inputs{})
			if err != nil {
				return fmt.Errorf("evaluating %d nodes: %w", len(tr.Agents), err)
			}
			best = min(best, time.Since(start).Seconds())
			goRes[i] = res
		}
		goSecs[i] = best
		fmt.Fprintf(stderr, "go: %d nodes: %.3fs\n", len(tr.Agents), best)
	}

	nx, version, nxErr := runNetworkx(ctx, o, graphs, stderr)
	if nxErr != nil {
		fmt.Fprintln(stderr, "bench-graph: networkx not timed:", nxErr)
	}

	fmt.Fprintf(stdout, "graph evaluator vs networkx %s — full metric set, GOMAXPROCS=%d, seed %d\n\n", version, runtime.GOMAXPROCS(0), o.seed)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\tedges\tGo (s)\tnetworkx (s)\tspeed-up\tvalues\t")
	for i, g := range graphs {
		nxCol, ratio, agree := "-", "-", "-"
		if res, ok := nx[g.ID]; ok {
			mark := ""
			if res.Estimated {
				mark = "≈"
			}
			nxCol = mark + fmtSecs(res.Seconds)
			if goSecs[i] > 0 {
				ratio = fmt.Sprintf("%s%.0fx", mark, res.Seconds/goSecs[i])
			}
			if res.Metrics != nil {
				agree = compare(goRes[i], res.Metrics)
			} else {
				agree = "not compared"
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\n", len(g.Nodes), len(g.Edges), fmtSecs(goSecs[i]), nxCol, ratio, agree)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "Go: best of 5 runs up to 1,000 nodes, 1 run above; both sides include building the graph.")
	if !o.nxFull {
		fmt.Fprintf(stdout, "≈: networkx's all-pairs metrics timed from %d sampled sources and scaled to all n (one BFS per source); -nx-full runs them in full.\n", o.sample)
	}
	return nxErr
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

// runNetworkx sends every graph to the timing script in one process call.
func runNetworkx(ctx context.Context, o options, graphs []graphIn, stderr io.Writer) (map[string]nxResult, string, error) {
	script := o.script
	if _, err := os.Stat(script); err != nil {
		return nil, "", fmt.Errorf("timing script %s not found (run from the repository root): %w", script, err)
	}
	body, err := json.Marshal(map[string]any{"graphs": graphs})
	if err != nil {
		return nil, "", fmt.Errorf("encoding graphs: %w", err)
	}
	args := []string{filepath.Clean(script), "--full-max", strconv.Itoa(o.fullMax), "--sample", strconv.Itoa(o.sample)}
	if o.nxFull {
		args = append(args, "--full")
	}
	cmd := exec.CommandContext(ctx, o.python, args...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", o.python, script, err)
	}
	var resp struct {
		Networkx string              `json:"networkx"`
		Results  map[string]nxResult `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, "", fmt.Errorf("decoding the timing script's answer: %w", err)
	}
	return resp.Results, resp.Networkx, nil
}

// compare checks every metric networkx reported against the Go result's
// JSON: the largest absolute difference, or the first disagreement.
func compare(res *evals.GraphResult, want map[string]any) string {
	b, err := json.Marshal(res.Metrics)
	if err != nil {
		return "encode error"
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		return "decode error"
	}
	var worst float64
	for _, name := range evals.GraphMetricNames {
		g, w := got[name], want[name]
		d, ok := diff(g, w)
		if !ok {
			return "DIFFER: " + name
		}
		worst = max(worst, d)
	}
	for _, flag := range []string{"eigenvector_centrality_converged", "pagerank_converged", "average_shortest_path_length_scope", "diameter_scope"} {
		if got[flag] != want[flag] {
			return "DIFFER: " + flag
		}
	}
	if worst > 1e-6 {
		return fmt.Sprintf("DIFFER: max |Δ| %.2g", worst)
	}
	return fmt.Sprintf("agree, max |Δ| %.1g", worst)
}

// diff is the largest absolute difference between two decoded metric
// values (numbers, nulls or maps of them); false when their shapes differ.
func diff(a, b any) (float64, bool) {
	switch av := a.(type) {
	case nil:
		if bm, ok := b.(map[string]any); ok {
			// Go reports a failed iteration as null per node.
			for _, v := range bm {
				if v != nil {
					return 0, false
				}
			}
			return 0, true
		}
		return 0, b == nil
	case float64:
		bv, ok := b.(float64)
		return math.Abs(av - bv), ok
	case map[string]any:
		if b == nil {
			for _, v := range av {
				if v != nil {
					return 0, false
				}
			}
			return 0, true
		}
		bm, ok := b.(map[string]any)
		if !ok || len(bm) != len(av) {
			return 0, false
		}
		var worst float64
		for k, v := range av {
			d, ok := diff(v, bm[k])
			if !ok {
				return 0, false
			}
			worst = max(worst, d)
		}
		return worst, true
	}
	return 0, false
}
