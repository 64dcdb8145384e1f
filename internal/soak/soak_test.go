//go:build soak

package soak

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/loopback"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

var (
	sequential = flag.Int("soak.sequential", 1000, "assessments run one after the other")
	workers    = flag.Int("soak.workers", 10, "concurrent clients of the concurrent phase")
	perWorker  = flag.Int("soak.per-worker", 20, "assessments each concurrent client runs")
	tolerance  = flag.Float64("soak.tolerance", 0.20, "how much the last quarter's mean may exceed the second quarter's")
	samples    = flag.Int("soak.samples", 40, "samples per phase")
	csvOut     = flag.String("soak.csv", "", "write every sample here as CSV")
	settle     = flag.Int("soak.settle-quiet-ms", 500, "the requests' settle_quiet_ms")
	profDir    = flag.String("soak.heap-profiles", "", "write a heap profile here at the middle and the end of each phase")
	extension  = flag.Bool("soak.extension", true, "reviewer-2 returns Traceability Extension steps (else it exports OTLP like the others)")
)

// sample is one measurement of the process.
type sample struct {
	phase       string
	done        int // assessments finished
	elapsed     time.Duration
	rssKB       int64  // VmRSS
	heapKB      uint64 // live heap after a collection
	goroutines  int
	greenTasks  int // A2A tasks the green agent holds
	storeTraces int // traces its span store holds
}

// rssKB reads VmRSS from /proc/self/status.
func rssKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("read /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// soakEnv is what the soak runs against: one green agent and one purple
// team, as the demo wires them (the coordinator and reviewer-1 export OTLP
// to the green agent, reviewer-2 returns Traceability Extension steps), up
// for the whole test.
type soakEnv struct {
	h            *loopback.Harness
	participants map[string]string
	start        time.Time
}

func startSoakEnv(t *testing.T) *soakEnv {
	t.Helper()
	noEnv := func(string) string { return "" }
	quiet := slog.New(slog.DiscardHandler)
	sc, err := loopback.StubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	h, err := loopback.Start(t.Context(), loopback.Options{
		Green: green.ServerOptions{
			Scenarios: map[string]scenario.Scenario{scenario.Coordination: sc},
			Getenv:    noEnv,
			Logger:    quiet,
		},
		CallTimeout: 5 * time.Minute,
		Logger:      quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	base := purple.Options{Getenv: noEnv, Logger: quiet, FlushOnResponse: true}
	coord, r1, r2 := base, base, base
	coord.Name, coord.Role, coord.OTLPEndpoint, coord.NoExtension = loopback.DemoCoordinator, purple.RoleCoordinator, h.URL(), true
	r1.Name, r1.Role, r1.OTLPEndpoint, r1.NoExtension = loopback.DemoReviewer1, purple.RoleReviewer, h.URL(), true
	r2.Name, r2.Role = loopback.DemoReviewer2, purple.RoleReviewer
	if !*extension {
		r2.OTLPEndpoint, r2.NoExtension = h.URL(), true
	}
	team, err := h.StartTeam(t.Context(), []purple.AgentSpec{
		{Options: r1}, {Options: r2},
		{Options: coord, PeerNames: []string{loopback.DemoReviewer1, loopback.DemoReviewer2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &soakEnv{h: h, participants: team.URLs(), start: time.Now()}
}

// assess runs one one-task assessment and checks that it produced a
// result with a graph.
func (e *soakEnv) assess(ctx context.Context, i int) error {
	raw, err := e.h.Assess(ctx, e.participants, map[string]any{
		"scenario":           scenario.Coordination,
		"entry_role":         loopback.DemoCoordinator,
		"task_ids":           []string{fmt.Sprintf("paper-%d", i%loopback.DemoTasks+1)},
		"settle_quiet_ms":    *settle,
		"settle_max_wait_ms": 10_000,
		"deadline_seconds":   300,
	})
	if err != nil {
		return err
	}
	res, err := report.Decode(raw)
	if err != nil {
		return fmt.Errorf("assessment %d: %w", i, err)
	}
	// green -> coordinator -> reviewer-1 and reviewer-2: a task that lost
	// spans under load would show fewer.
	if len(res.Tasks) != 1 || len(res.Tasks[0].Interactions) < 3 {
		return fmt.Errorf("assessment %d: %d tasks, want 1 with at least 3 interactions: %+v", i, len(res.Tasks), res.Tasks)
	}
	// reviewer-2 reports its work as Traceability Extension steps only.
	if cov := res.Tasks[0].Coverage; *extension && cov.SpansBySource[otelmap.SourceExtension] == 0 {
		return fmt.Errorf("assessment %d: no extension spans (reviewer-2's steps): spans by source %v, warnings %v", i, cov.SpansBySource, cov.Warnings)
	}
	return nil
}

func (e *soakEnv) measure(t *testing.T, phase string, done int) sample {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{
		phase: phase, done: done, elapsed: time.Since(e.start),
		rssKB: rssKB(t), heapKB: ms.HeapAlloc >> 10, goroutines: runtime.NumGoroutine(),
		greenTasks:  e.h.Green().Tasks().Stats().Tasks,
		storeTraces: e.h.Green().Store().Stats().Traces,
	}
}

// TestSoak runs the sequential phase, then the concurrent one, sampling
// as it goes, and checks that memory and goroutines level off in each.
func TestSoak(t *testing.T) {
	env := startSoakEnv(t)
	var all []sample
	all = append(all, env.measure(t, "start", 0))
	t.Logf("start: RSS %d KB, heap %d KB, %d goroutines", all[0].rssKB, all[0].heapKB, all[0].goroutines)

	seq := runPhase(t, env, "sequential", *sequential, 1)
	all = append(all, seq...)
	checkLevels(t, "sequential", seq)

	conc := runPhase(t, env, "concurrent", *workers**perWorker, *workers)
	all = append(all, conc...)
	checkLevels(t, "concurrent", conc)

	if *csvOut != "" {
		writeCSV(t, *csvOut, all)
	}
	t.Logf("green agent: receiver %+v; span store %+v; task store %+v",
		env.h.Green().Receiver().Stats(), env.h.Green().Store().Stats(), env.h.Green().Tasks().Stats())
}

// runPhase runs n assessments on w concurrent clients and samples the
// process every n/samples assessments.
func runPhase(t *testing.T, env *soakEnv, phase string, n, w int) []sample {
	t.Helper()
	if n <= 0 {
		return nil
	}
	every := max(1, n / *samples)
	var (
		mu      sync.Mutex
		done    int
		out     []sample
		failed  []string
		started = time.Now()
	)
	next := make(chan int)
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := env.assess(t.Context(), i)
				mu.Lock()
				done++
				if err != nil {
					failed = append(failed, err.Error())
				}
				if *profDir != "" && (done == n/2 || done == n) {
					writeHeapProfile(t, fmt.Sprintf("%s/%s-%04d.pprof", *profDir, phase, done))
				}
				if done%every == 0 || done == n {
					s := env.measure(t, phase, done)
					out = append(out, s)
					if len(out)%10 == 0 || done == n {
						t.Logf("%s %d/%d after %v: RSS %d KB, heap %d KB, %d goroutines, %d tasks held, %d traces held",
							phase, done, n, time.Since(started).Round(time.Second), s.rssKB, s.heapKB, s.goroutines, s.greenTasks, s.storeTraces)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%s: %d of %d assessments failed; first: %s", phase, len(failed), n, failed[0])
	}
	el := time.Since(started)
	t.Logf("%s: %d assessments on %d clients in %v (%.2f/s)", phase, n, w, el.Round(time.Second), float64(n)/el.Seconds())
	return out
}

// checkLevels: the last quarter's means of live heap and RSS are within
// the tolerance of the second quarter's (the first quarter is warm-up:
// pools, caches and the bounded stores filling), and the goroutines of the
// last quarter are no more than the second quarter's most, plus a few for
// connections closing.
func checkLevels(t *testing.T, phase string, s []sample) {
	t.Helper()
	if len(s) < 8 {
		t.Logf("%s: %d samples, too few to judge the trend", phase, len(s))
		return
	}
	q := len(s) / 4
	second, last := s[q:2*q], s[len(s)-q:]
	mean := func(xs []sample, f func(sample) float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += f(x)
		}
		return sum / float64(len(xs))
	}
	most := func(xs []sample) int {
		m := 0
		for _, x := range xs {
			m = max(m, x.goroutines)
		}
		return m
	}
	for _, m := range []struct {
		name  string
		f     func(sample) float64
		slack float64 // KB a small process may move by without it being growth
	}{
		{"live heap", func(x sample) float64 { return float64(x.heapKB) }, 2048},
		{"RSS", func(x sample) float64 { return float64(x.rssKB) }, 8192},
	} {
		a, b := mean(second, m.f), mean(last, m.f)
		t.Logf("%s %s: second quarter mean %.0f KB, last quarter mean %.0f KB (%+.1f%%)", phase, m.name, a, b, 100*(b-a)/a)
		if b > a*(1+*tolerance)+m.slack {
			t.Errorf("%s: %s grows: last quarter mean %.0f KB > second quarter mean %.0f KB + %.0f%%", phase, m.name, b, a, 100**tolerance)
		}
	}
	g2, gl := most(second), most(last)
	t.Logf("%s goroutines: second quarter at most %d, last quarter at most %d", phase, g2, gl)
	if gl > g2+10 {
		t.Errorf("%s: goroutines grow: %d in the last quarter, at most %d in the second", phase, gl, g2)
	}
}

func writeHeapProfile(t *testing.T, path string) {
	t.Helper()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeCSV(t *testing.T, path string, all []sample) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"phase", "done", "elapsed_s", "rss_kb", "heap_kb", "goroutines", "green_tasks", "store_traces"})
	for _, s := range all {
		_ = w.Write([]string{s.phase, strconv.Itoa(s.done), strconv.FormatFloat(s.elapsed.Seconds(), 'f', 1, 64),
			strconv.FormatInt(s.rssKB, 10), strconv.FormatUint(s.heapKB, 10), strconv.Itoa(s.goroutines),
			strconv.Itoa(s.greenTasks), strconv.Itoa(s.storeTraces)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
