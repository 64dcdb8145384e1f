// Command bench-ingest compares green's OTLP/HTTP ingest with Jaeger v2's
// on the same payload (`make bench-ingest`, which builds both first): it
// generates one deterministic OTLP protobuf payload (by default 1,000,000
// spans in 200 export requests of 5,000: 4,000 traces of 250 GenAI and A2A
// spans from six agents, fifty traces under way at a time, so a trace's
// spans arrive over several requests), then, for each run, starts a fresh
// server process on free loopback ports, waits until it is ready, posts
// every request with the same client over -conns connections, checks that
// every request was answered 200 and that the server holds every span
// (green: its counters at /stats; Jaeger: its storage exporter's metrics
// and one trace read back through its query API), reads the process's CPU
// time and peak RSS from /proc, and stops it. Runs alternate, green then
// Jaeger, -runs times each; it prints every run and the medians: spans per
// second (wall, from the first request to the last span held), spans per
// CPU-second of the server process (its start-up not counted), peak RSS,
// and green's ratio to Jaeger.
//
// Jaeger runs as `make jaeger` runs it: jaeger-config.yaml (OTLP receiver,
// batch processor, in-memory storage of up to 100,000 traces). green runs
// as `green serve` with its default limits; the payload must fit them
// (traces held, spans per trace, request size), and the command refuses a
// shape that does not rather than measure rejections.
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
	"syscall"
	"time"

	"github.com/coordbench/coordbench/internal/procbench"

	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

func main() {
	// Interrupted, the run under way stops its server (runOnce's deferred
	// stop) before the command exits.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	greenBin, jaegerBin, jaegerConfig string
	shape                             payloadShape
	runs, conns                       int
	runTimeout                        time.Duration
	quick                             bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.New("bench-ingest", "[--green BIN] [--jaeger BIN|none] [--runs N] [--requests N] [--spans N] [--quick] [flags]",
		"Compare green's OTLP/HTTP ingest with Jaeger v2's on the same generated payload, fresh server\n"+
			"processes, runs interleaved (run from the repository root; `make bench-ingest` builds both).", stdout, stderr)
	c.Examples = []string{
		"bench-ingest",
		"bench-ingest --runs 5 --conns 8",
		"bench-ingest --jaeger none --quick",
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
	fs.StringVar(&o.greenBin, "green", "bin/green", "the green binary")
	fs.StringVar(&o.jaegerBin, "jaeger", "bin/jaeger", `the Jaeger v2 binary ("none": green alone)`)
	fs.StringVar(&o.jaegerConfig, "jaeger-config", "jaeger-config.yaml", "Jaeger's configuration")
	fs.IntVar(&o.shape.requests, "requests", 200, "export requests per run")
	fs.IntVar(&o.shape.spansPerRequest, "spans", 5000, "spans per request")
	fs.IntVar(&o.shape.spansPerTrace, "spans-per-trace", 250, "spans per trace")
	fs.IntVar(&o.shape.openTraces, "open-traces", 50, "traces under way at once, whose spans interleave")
	fs.IntVar(&o.runs, "runs", 5, "runs per server")
	fs.IntVar(&o.conns, "conns", 4, "concurrent connections of the client")
	fs.DurationVar(&o.runTimeout, "run-timeout", 5*time.Minute, "longest a run may take, start-up included")
	fs.BoolVar(&o.quick, "quick", false, "small sizes where not set: 20 requests of 500 spans, traces of 50, 10 under way, one run each (for a test)")
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	if o.quick {
		// The quick sizes, where a flag does not set its own.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]*int{"requests": &o.shape.requests, "spans": &o.shape.spansPerRequest,
			"spans-per-trace": &o.shape.spansPerTrace, "open-traces": &o.shape.openTraces, "runs": &o.runs}
		sizes := map[string]int{"requests": 20, "spans": 500, "spans-per-trace": 50, "open-traces": 10, "runs": 1}
		for name, v := range quick {
			if !set[name] {
				*v = sizes[name]
			}
		}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"requests", o.shape.requests}, {"spans", o.shape.spansPerRequest}, {"spans-per-trace", o.shape.spansPerTrace},
		{"open-traces", o.shape.openTraces}, {"runs", o.runs}, {"conns", o.conns}} {
		if v.n < 1 {
			return o, c.UsageError("--%s must be positive", v.name), false
		}
	}
	if t := o.shape.traces(); t > tracestore.DefaultMaxTraces {
		return o, c.UsageError("the payload has %d traces; green holds at most %d (tracestore.DefaultMaxTraces): raise --spans-per-trace", t, tracestore.DefaultMaxTraces), false
	}
	if o.shape.spansPerTrace > tracestore.DefaultMaxSpansPerTrace {
		return o, c.UsageError("green holds at most %d spans per trace", tracestore.DefaultMaxSpansPerTrace), false
	}
	return o, 0, true
}

func bench(ctx context.Context, o options, stdout io.Writer) error {
	servers := []server{&greenServer{bin: o.greenBin}}
	if o.jaegerBin != "none" {
		servers = append(servers, &jaegerServer{bin: o.jaegerBin, config: o.jaegerConfig})
	}
	for _, path := range []string{o.greenBin, o.jaegerBin, o.jaegerConfig} {
		if path == "none" || (path == o.jaegerConfig && o.jaegerBin == "none") {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%w (make bench-ingest builds bin/green and bin/jaeger)", err)
		}
	}
	genStart := time.Now()
	p, err := generate(o.shape)
	if err != nil {
		return err
	}
	for _, b := range p.bodies {
		if len(b) > otlpreceiver.DefaultMaxBodyBytes {
			return fmt.Errorf("a request of %d bytes is over green's body limit (%d): lower --spans", len(b), otlpreceiver.DefaultMaxBodyBytes)
		}
	}
	sh := o.shape
	n := func(x int) string { return thousands(float64(x)) }
	fmt.Fprintf(stdout, "payload: %s spans in %s OTLP/protobuf requests of %s; %s traces of %s spans, %s under way at a time; %d services\n",
		n(sh.spans()), n(sh.requests), n(sh.spansPerRequest), n(sh.traces()), n(sh.spansPerTrace), n(sh.openTraces), p.services)
	fmt.Fprintf(stdout, "         %.1f MB (%.0f B/span), sha256 %s, generated in %s\n",
		float64(p.bytes)/1e6, float64(p.bytes)/float64(sh.spans()), p.sha256[:16], time.Since(genStart).Round(time.Millisecond))
	fmt.Fprintf(stdout, "green:   green serve, default limits: %s traces held (the payload has %s; its one source may take them all: --otlp-traces-per-source %s), %s spans per trace, %d MB per request\n",
		n(tracestore.DefaultMaxTraces), n(sh.traces()), n(tracestore.DefaultMaxTraces), n(tracestore.DefaultMaxSpansPerTrace), otlpreceiver.DefaultMaxBodyBytes>>20)
	if len(servers) > 1 {
		fmt.Fprintf(stdout, "jaeger:  %s (in-memory storage, batch processor)\n", o.jaegerConfig)
	}
	fmt.Fprintf(stdout, "client:  %d connections; %d runs per server, alternating; %d CPUs (GOMAXPROCS %d)\n\n",
		o.conns, o.runs, runtime.NumCPU(), runtime.GOMAXPROCS(0))

	logDir, err := os.MkdirTemp("", "bench-ingest-")
	if err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	const row = "%-7s %-13s %8s %12s %8s %12s %12s\n"
	fmt.Fprintf(stdout, row, "run", "server", "wall s", "spans/s", "CPU s", "spans/CPU-s", "peak RSS MB")
	byServer := map[string][]result{}
	for r := 1; r <= o.runs; r++ {
		for _, s := range servers {
			// The client's garbage (the payload's generation, the last
			// run's requests) is collected now, not while it posts.
			debug.FreeOSMemory()
			res, err := runOnce(ctx, o, s, p, r, logDir)
			if err != nil {
				return err
			}
			byServer[s.name()] = append(byServer[s.name()], res)
			fmt.Fprintf(stdout, row, fmt.Sprint(r), res.server, fmt.Sprintf("%.2f", res.wall.Seconds()),
				thousands(res.spansPerSecond()), fmt.Sprintf("%.2f", res.cpu.Seconds()),
				thousands(res.spansPerCPUSecond()), fmt.Sprintf("%.0f", float64(res.peakRSS)/(1<<20)))
		}
	}
	_ = os.RemoveAll(logDir)
	fmt.Fprintln(stdout)
	med := map[string][3]float64{}
	for _, s := range servers {
		rs := byServer[s.name()]
		m := [3]float64{
			median(rs, result.spansPerSecond),
			median(rs, result.spansPerCPUSecond),
			median(rs, func(r result) float64 { return float64(r.peakRSS) / (1 << 20) }),
		}
		med[s.name()] = m
		fmt.Fprintf(stdout, row, "median", s.name(), "", thousands(m[0]), "", thousands(m[1]), fmt.Sprintf("%.0f", m[2]))
	}
	if g, j := med["green"], med["jaeger"]; len(servers) > 1 {
		ratio := func(x float64) string { return fmt.Sprintf("%.2f×", x) }
		fmt.Fprintf(stdout, row, "ratio", "green/jaeger", "", ratio(g[0]/j[0]), "", ratio(g[1]/j[1]), ratio(g[2]/j[2]))
	}
	return nil
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return procbench.Median(v)
}

func thousands(x float64) string { return procbench.Thousands(x) }
