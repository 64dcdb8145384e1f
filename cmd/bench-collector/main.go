// Command bench-collector measures the coordbench connector in a Collector
// against two contrib connectors, span_metrics and servicegraph, and all
// against the receiver alone (`make bench-collector`, which builds
// bin/otelcol first; docs/performance.md has the figures): it builds one
// deterministic OTLP protobuf payload (copies of every framework capture
// under otelmap/assemble/testdata/frameworks, each copy a trace id of its
// own, spread among traces of internal/tracegen, bench-ingest's
// generator), then, for each run, starts a fresh collector process of one
// configuration (configs/*.yaml) on free loopback ports, posts every
// request over -conns connections, waits until that configuration has
// processed the whole payload, reads the process's CPU time (from the
// first request, start-up not counted) and peak RSS from /proc, and stops
// it. "Processed whole" is read from outside the process: baseline, the
// debug exporter's sent spans in the collector's own metrics;
// coordbench_metrics (the connector in a metrics pipeline alone, as
// span_metrics and servicegraph run), the coordbench.traces counter equal
// to the traces sent; coordbench (a metrics and a logs pipeline), one log
// record per trace as well (a record twice fails the run); span_metrics,
// its calls counter summed over every series equal to the spans sent;
// service_graph, its request counter summed over every series equal to the
// payload's client/server pairs (payload.pairs). The connectors' outputs
// go by OTLP/HTTP to a sink in this process, which decodes them with
// pdata; with --snapshot it writes what each coordbench configuration
// emitted in its first counted run, to compare two builds' results.
//
// Configurations alternate run by run (baseline, coordbench_metrics,
// coordbench, span_metrics, service_graph, baseline, ...), after one
// warm-up round not counted; it prints every run, the medians, and the
// ratios of each coordbench configuration to each peer, of spans per
// CPU-second and of peak RSS, with and without the baseline's CPU (the
// receiver's own share, which every connector's run pays).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/internal/procbench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	otelcol     string
	configs     []string
	shape       payloadShape
	runs        int
	warmup      int
	conns       int
	runTimeout  time.Duration
	quick       bool
	configsFlag string
	snapshot    string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.New("bench-collector", "[--otelcol BIN] [--configs a,b] [--runs N] [--copies N] [--quick] [flags]",
		"Measure the coordbench connector in a Collector against the contrib span_metrics and servicegraph\n"+
			"connectors and the receiver alone: the same OTLP payload, fresh collector processes, runs interleaved (run from the\n"+
			"repository root; `make bench-collector` builds bin/otelcol).", stdout, stderr)
	c.Examples = []string{
		"bench-collector",
		"bench-collector --runs 7 --copies 100",
		"bench-collector --configs coordbench,span_metrics --quick",
	}
	o, code, ok := parseFlags(c, args)
	if !ok {
		return code
	}
	if err := bench(ctx, o, stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	return cli.ExitOK
}

func parseFlags(c *cli.Command, args []string) (o options, code int, ok bool) {
	fs := c.Flags
	fs.StringVar(&o.otelcol, "otelcol", "bin/otelcol", "the collector binary (coordbench's distribution)")
	fs.StringVar(&o.configsFlag, "configs", "baseline,coordbench_metrics,coordbench,span_metrics,service_graph", "the configurations to run, in this order each round")
	fs.StringVar(&o.shape.capturesDir, "captures", "otelmap/assemble/testdata/frameworks", "the framework captures (*.otlp.json)")
	fs.IntVar(&o.shape.copies, "copies", 60, "copies of each capture, each a trace of its own")
	fs.IntVar(&o.shape.generated.Requests, "requests", 40, "generated export requests")
	fs.IntVar(&o.shape.generated.SpansPerRequest, "spans", 2500, "spans per generated request")
	fs.IntVar(&o.shape.generated.SpansPerTrace, "spans-per-trace", 50, "spans per generated trace")
	fs.IntVar(&o.shape.generated.OpenTraces, "open-traces", 20, "generated traces under way at once, whose spans interleave")
	fs.IntVar(&o.runs, "runs", 5, "counted runs per configuration")
	fs.IntVar(&o.warmup, "warmup", 1, "rounds run first and not counted")
	fs.IntVar(&o.conns, "conns", 4, "concurrent connections of the client")
	fs.DurationVar(&o.runTimeout, "run-timeout", 5*time.Minute, "longest a run may take, start-up included")
	fs.StringVar(&o.snapshot, "snapshot", "", "a directory: write what each connector emitted in the first counted run to CONFIG.txt there (records' trace ids, attributes and body hashes; the last metrics' data points), to compare two builds' results")
	fs.BoolVar(&o.quick, "quick", false, "small sizes where not set: 2 copies, 4 requests of 500 spans, one run, no warm-up (for a test)")
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]*int{"copies": &o.shape.copies, "requests": &o.shape.generated.Requests,
			"spans": &o.shape.generated.SpansPerRequest, "runs": &o.runs, "warmup": &o.warmup}
		sizes := map[string]int{"copies": 2, "requests": 4, "spans": 500, "runs": 1, "warmup": 0}
		for name, v := range quick {
			if !set[name] {
				*v = sizes[name]
			}
		}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"requests", o.shape.generated.Requests}, {"spans", o.shape.generated.SpansPerRequest},
		{"spans-per-trace", o.shape.generated.SpansPerTrace}, {"open-traces", o.shape.generated.OpenTraces},
		{"runs", o.runs}, {"conns", o.conns}} {
		if v.n < 1 {
			return o, c.UsageError("--%s must be positive", v.name), false
		}
	}
	if o.shape.copies < 0 || o.warmup < 0 {
		return o, c.UsageError("--copies and --warmup must not be negative"), false
	}
	for name := range strings.SplitSeq(o.configsFlag, ",") {
		name = strings.TrimSpace(name)
		if _, known := configs[name]; !known {
			return o, c.UsageError("--configs: unknown configuration %q (known: baseline, coordbench_metrics, coordbench, span_metrics, service_graph)", name), false
		}
		if slices.Contains(o.configs, name) {
			return o, c.UsageError("--configs: %q twice", name), false
		}
		o.configs = append(o.configs, name)
	}
	return o, 0, true
}

func bench(ctx context.Context, o options, stdout io.Writer) error {
	if _, err := os.Stat(o.otelcol); err != nil {
		return fmt.Errorf("%w (make bench-collector builds bin/otelcol)", err)
	}
	genStart := time.Now()
	p, err := buildPayload(o.shape)
	if err != nil {
		return err
	}
	describe(stdout, o, p, time.Since(genStart))

	dir, err := os.MkdirTemp("", "bench-collector-")
	if err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	const row = "%-7s %-13s %8s %8s %14s %12s  %s\n"
	fmt.Fprintf(stdout, row, "run", "config", "wall s", "CPU s", "spans/CPU-s", "peak RSS MB", "")
	byConfig := map[string][]result{}
	for r := 1 - o.warmup; r <= o.runs; r++ {
		for _, name := range o.configs {
			// The client's garbage is collected now, not while it posts.
			debug.FreeOSMemory()
			res, err := runOnce(ctx, o, configs[name], p, r, dir)
			if err != nil {
				return err
			}
			label := fmt.Sprint(r)
			if r < 1 {
				label = "warm-up"
			} else {
				byConfig[name] = append(byConfig[name], res)
			}
			fmt.Fprintf(stdout, row, label, name, fmt.Sprintf("%.2f", res.wall.Seconds()), fmt.Sprintf("%.2f", res.cpu.Seconds()),
				procbench.Thousands(res.spansPerCPUSecond(p.spans)), fmt.Sprintf("%.0f", float64(res.peakRSS)/(1<<20)), completions(res.completions))
		}
	}
	_ = os.RemoveAll(dir)
	fmt.Fprintln(stdout)

	type med struct{ cpu, rss float64 }
	meds := map[string]med{}
	for _, name := range o.configs {
		var cpu, rss []float64
		for _, r := range byConfig[name] {
			cpu = append(cpu, r.cpu.Seconds())
			rss = append(rss, float64(r.peakRSS)/(1<<20))
		}
		m := med{procbench.Median(cpu), procbench.Median(rss)}
		meds[name] = m
		fmt.Fprintf(stdout, row, "median", name, "", fmt.Sprintf("%.2f", m.cpu), procbench.Thousands(float64(p.spans)/m.cpu), fmt.Sprintf("%.0f", m.rss), "")
	}
	base, okB := meds["baseline"]
	fmt.Fprintln(stdout)
	for _, name := range []string{"coordbench_metrics", "coordbench"} {
		ours, okO := meds[name]
		for _, peerName := range []string{"span_metrics", "service_graph"} {
			peer, okP := meds[peerName]
			if !okO || !okP {
				continue
			}
			fmt.Fprintf(stdout, "%s / %s: spans per CPU-second %s (medians of CPU time: %.2f s / %.2f s), peak RSS %s\n",
				name, peerName, ratio(peer.cpu, ours.cpu), ours.cpu, peer.cpu, ratio(ours.rss, peer.rss))
			if okB {
				fmt.Fprintf(stdout, "  without the receiver's share (baseline %.2f s): connector CPU %.2f s / %.2f s, spans per connector CPU-second %s / %s = %s\n",
					base.cpu, ours.cpu-base.cpu, peer.cpu-base.cpu,
					procbench.Thousands(float64(p.spans)/(ours.cpu-base.cpu)), procbench.Thousands(float64(p.spans)/(peer.cpu-base.cpu)),
					ratio(peer.cpu-base.cpu, ours.cpu-base.cpu))
			}
		}
	}
	return nil
}

func describe(w io.Writer, o options, p *payload, took time.Duration) {
	n := func(x int) string { return procbench.Thousands(float64(x)) }
	g := o.shape.generated
	fmt.Fprintf(w, "payload: %s spans, %s traces, in %s OTLP/protobuf requests; %.1f MB, sha256 %s, built in %s\n",
		n(p.spans), n(p.traces), n(len(p.bodies)), float64(p.bytes)/1e6, p.sha256[:16], took.Round(time.Millisecond))
	fmt.Fprintf(w, "         captures: %d framework captures (%s spans a copy) x %d copies = %s traces; generated (internal/tracegen): %s traces of %s spans, %s under way at a time\n",
		p.captures, n(p.captureSpans), o.shape.copies, n(p.captureTraces), n(g.Traces()), n(g.SpansPerTrace), n(g.OpenTraces))
	var kinds []string
	for k, v := range p.kinds {
		kinds = append(kinds, fmt.Sprintf("%s %s", k, n(v)))
	}
	sort.Strings(kinds)
	a := p.agentsPerTrace
	if len(a) > 0 {
		fmt.Fprintf(w, "         span kinds: %s; agents (service.name) per trace: min %d, median %d, max %d; %s spans without a service.name; %s client/server pairs\n",
			strings.Join(kinds, ", "), a[0], a[len(a)/2], a[len(a)-1], n(p.spans-p.namedSpans), n(p.pairs))
	}
	fmt.Fprintf(w, "collector: %s, fresh process per run; configs %s; %d counted runs each after %d warm-up round(s); client %d connections; %d CPUs\n\n",
		o.otelcol, strings.Join(o.configs, ", "), o.runs, o.warmup, o.conns, runtime.NumCPU())
}

func completions(c map[string]int) string {
	if c == nil {
		return ""
	}
	var parts []string
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
