package main

import (
	"context"
	"embed"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coordbench/coordbench/internal/procbench"
)

//go:embed configs/*.yaml
var configFiles embed.FS

// config is one collector configuration under test: which file it runs
// and when it has processed the whole payload.
type config struct {
	name string
	file string // under configs/
	// done tells from the sink and the collector's own metrics whether the
	// payload was processed whole; an error when something was lost or
	// counted twice (the run is then no figure).
	done func(ctx context.Context, r *runState) (bool, error)
	// unit is what one processed item is, for the progress note.
	unit string
}

// runState is what a config's done reads.
type runState struct {
	p         *payload
	sink      *sink
	telemetry string // the collector's Prometheus /metrics
	client    *http.Client
	scraped   time.Time // when done last read telemetry
}

var configs = map[string]config{
	"baseline": {name: "baseline", file: "baseline.yaml", unit: "spans exported", done: func(ctx context.Context, r *runState) (bool, error) {
		sent, err := promSum(ctx, r.client, r.telemetry, "otelcol_exporter_sent_spans")
		if err != nil {
			return false, err
		}
		return checkCount(sent, r.p.spans, "spans sent to the debug exporter")
	}},
	"coordbench": {name: "coordbench", file: "coordbench.yaml", unit: "traces assessed", done: func(ctx context.Context, r *runState) (bool, error) {
		traces, records, _, failures := r.sink.logState()
		if len(failures) > 0 {
			return false, fmt.Errorf("the sink could not decode: %v", failures)
		}
		if records != traces {
			return false, fmt.Errorf("%d log records for %d traces: a trace assessed twice", records, traces)
		}
		ok, err := checkCount(float64(traces), r.p.traces, "traces assessed (log records)")
		if err != nil {
			return false, err
		}
		if ok {
			if ok, err = checkCount(r.sink.counter("coordbench.traces"), r.p.traces, "traces counted (coordbench.traces)"); err != nil {
				return false, err
			}
		}
		return emitChecked(ctx, r, ok)
	}},
	"coordbench_metrics": {name: "coordbench_metrics", file: "coordbench_metrics.yaml", unit: "traces counted (coordbench.traces)", done: func(ctx context.Context, r *runState) (bool, error) {
		if _, records, _, failures := r.sink.logState(); len(failures) > 0 || records > 0 {
			return false, fmt.Errorf("the sink could not decode (%v) or got %d log records from a metrics pipeline", failures, records)
		}
		// A trace assessed twice counts twice: over the traces sent fails.
		ok, err := checkCount(r.sink.counter("coordbench.traces"), r.p.traces, "traces counted (coordbench.traces)")
		if err != nil {
			return false, err
		}
		return emitChecked(ctx, r, ok)
	}},
	"span_metrics": {name: "span_metrics", file: "span_metrics.yaml", unit: "spans counted", done: func(_ context.Context, r *runState) (bool, error) {
		if _, _, _, failures := r.sink.logState(); len(failures) > 0 {
			return false, fmt.Errorf("the sink could not decode: %v", failures)
		}
		// span_metrics skips spans whose resource has no service.name (one
		// capture's).
		return checkCount(r.sink.counter("traces.span.metrics.calls"), r.p.namedSpans, "spans counted (traces.span.metrics.calls)")
	}},
	"service_graph": {name: "service_graph", file: "service_graph.yaml", unit: "client/server pairs counted", done: func(_ context.Context, r *runState) (bool, error) {
		if _, _, _, failures := r.sink.logState(); len(failures) > 0 {
			return false, fmt.Errorf("the sink could not decode: %v", failures)
		}
		return checkCount(r.sink.counter("traces_service_graph_request_total"), r.p.pairs, "client/server pairs counted (traces_service_graph_request_total)")
	}},
}

// emitChecked fails a coordbench run whose connector's metrics or logs
// pipeline refused a batch, which would never arrive. The collector's own
// metrics are scraped when the sink has it all (ok), and at most every
// scrapeEvery before, so that a refusal fails the run before its timeout:
// a scrape is work done for the harness (a Prometheus gather: every tick
// was about 6% of the collector's CPU over a run of 11 s, once a second
// still 1.1% in a perf profile), which span_metrics's check, the sink
// alone, does not ask of its collector.
func emitChecked(ctx context.Context, r *runState, ok bool) (bool, error) {
	if !ok && time.Since(r.scraped) < scrapeEvery {
		return false, nil
	}
	r.scraped = time.Now()
	refused, err := promSum(ctx, r.client, r.telemetry, "otelcol_connector_coordbench_emit_failed")
	if err != nil {
		return false, err
	}
	if refused > 0 {
		return false, fmt.Errorf("the connector's metrics or logs pipeline refused %v batches (otelcol_connector_coordbench_emit_failed)", refused)
	}
	return ok, nil
}

// scrapeEvery is how often a coordbench run's telemetry is read before
// the sink has every result: longer than the benchmark's max_wait, so that
// a run that passes is read about once before its end.
const scrapeEvery = 15 * time.Second

func checkCount(got float64, want int, what string) (bool, error) {
	switch {
	case got > float64(want):
		return false, fmt.Errorf("%v %s, %d sent", got, what, want)
	case got == float64(want):
		return true, nil
	}
	return false, nil
}

// result is one run of one configuration.
type result struct {
	config string
	// wall is from the first request sent until the payload was
	// processed whole; cpu the collector process's CPU time over the same
	// stretch (its start-up not counted); peakRSS its VmHWM then.
	wall, cpu   time.Duration
	peakRSS     int64
	completions map[string]int // coordbench's records by completion
}

func (r result) spansPerCPUSecond(spans int) float64 { return float64(spans) / r.cpu.Seconds() }

// runOnce starts a fresh collector with cfg, posts the payload, waits
// until cfg says it was processed whole, reads the process's usage and
// stops it.
func runOnce(ctx context.Context, o options, cfg config, p *payload, run int, dir string) (result, error) {
	res := result{config: cfg.name}
	ctx, cancel := context.WithTimeout(ctx, o.runTimeout)
	defer cancel()
	snk, err := newSink()
	if err != nil {
		return res, err
	}
	defer snk.close()
	snk.snapshot = o.snapshot != "" && run == 1 && strings.HasPrefix(cfg.name, "coordbench")
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = procbench.FreePort(); err != nil {
			return res, err
		}
	}
	raw, err := configFiles.ReadFile("configs/" + cfg.file)
	if err != nil {
		return res, err
	}
	cfgPath := filepath.Join(dir, cfg.file)
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		return res, fmt.Errorf("config: %w", err)
	}
	logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", cfg.name, run))
	logFile, err := os.Create(logPath)
	if err != nil {
		return res, fmt.Errorf("log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, o.otelcol, "--config", cfgPath)
	cmd.Env = procbench.ChildEnv("BENCH_OTLP_HTTP=127.0.0.1:"+strconv.Itoa(ports[0]),
		"BENCH_TELEMETRY_PORT="+strconv.Itoa(ports[1]), "BENCH_SINK="+snk.url)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%s: start: %w", cfg.name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer procbench.Stop(cmd, exited, 30*time.Second)
	fail := func(err error) (result, error) {
		return res, fmt.Errorf("%s run %d: %w (its log: %s)", cfg.name, run, err, logPath)
	}

	client := procbench.NewClient(o.conns)
	defer client.CloseIdleConnections()
	st := &runState{p: p, sink: snk, telemetry: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/metrics", client: client}
	otlp := "127.0.0.1:" + strconv.Itoa(ports[0])
	if err := procbench.WaitReady(ctx, exited, func(ctx context.Context) bool { return collectorReady(ctx, client, st.telemetry, otlp) }); err != nil {
		return fail(err)
	}
	pid := cmd.Process.Pid
	before, err := procbench.ReadUsage(pid)
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := procbench.Post(ctx, client, "http://127.0.0.1:"+strconv.Itoa(ports[0])+"/v1/traces", p.bodies, o.conns); err != nil {
		return fail(err)
	}
	if err := waitDone(ctx, cfg, st, exited); err != nil {
		return fail(err)
	}
	res.wall = time.Since(start)
	after, err := procbench.ReadUsage(pid)
	if err != nil {
		return fail(err)
	}
	res.cpu, res.peakRSS = after.CPU-before.CPU, after.PeakRSS
	if cfg.name == "coordbench" {
		_, _, res.completions, _ = snk.logState()
	}
	if snk.snapshot {
		path := filepath.Join(o.snapshot, cfg.name+".txt")
		if err := os.WriteFile(path, []byte(strings.Join(snk.snapshotLines(), "\n")+"\n"), 0o644); err != nil {
			return fail(fmt.Errorf("snapshot: %w", err))
		}
	}
	return res, nil
}

func waitDone(ctx context.Context, cfg config, st *runState, exited <-chan error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cfg.done(ctx, st)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it processed the payload: %v", err)
		case <-ctx.Done():
			traces, records, byCompletion, _ := st.sink.logState()
			return fmt.Errorf("the payload (%d spans, %d traces) not processed whole (%s); the sink has %d records of %d traces %v, %s: %w",
				st.p.spans, st.p.traces, cfg.unit, records, traces, byCompletion, st.sink.counters(), ctx.Err())
		case <-tick.C:
		}
	}
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a/b) {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// collectorReady says whether the collector serves its telemetry and its
// OTLP receiver listens.
func collectorReady(ctx context.Context, c *http.Client, telemetry, otlp string) bool {
	if _, err := promSum(ctx, c, telemetry, "otelcol_process_uptime"); err != nil {
		return false
	}
	conn, err := net.DialTimeout("tcp", otlp, time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
