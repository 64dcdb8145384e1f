// Package procbench is what the whole-process benchmarks (cmd/bench-ingest,
// cmd/bench-collector) share: a server process's CPU time and peak RSS
// from Linux's /proc, its stop, free loopback ports, posting a payload of
// OTLP export requests over several connections, and the medians and
// number formats of their tables.
package procbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Usage is a process's CPU time (user + system) and peak resident memory,
// from Linux's /proc.
type Usage struct {
	CPU     time.Duration
	PeakRSS int64 // bytes (VmHWM)
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux architecture Go supports.
const userHZ = 100

// ReadUsage reads the usage of the live process pid.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("process usage (Linux /proc needed): %w", err)
	}
	// The command name in parentheses may hold spaces: fields count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, errors.New("process usage: malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, errors.New("process usage: short /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, fmt.Errorf("process usage: %w", err)
	}
	u.CPU = time.Duration(utime+stime) * time.Second / userHZ
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("process usage: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return u, fmt.Errorf("process usage: VmHWM: %w", err)
			}
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// Stop ends the process with SIGTERM, then SIGKILL after grace; exited
// receives cmd.Wait's result.
func Stop(cmd *exec.Cmd, exited <-chan error, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// FreePort is a loopback port free now (the process started next binds
// it; another process taking it in between fails the run with a clear
// error, not a wrong figure).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ChildEnv is this process's environment without what would make a
// server export its own telemetry somewhere or call a paid model, plus
// extra.
func ChildEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "JAEGER_") || strings.HasPrefix(kv, "LLM_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// NewClient is an HTTP client of at most conns connections, uncompressed.
func NewClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		DisableCompression:  true,
	}}
}

// Post sends every body (OTLP protobuf) to url over conns connections,
// each request when a connection is free, and fails on the first answer
// other than 200.
func Post(ctx context.Context, c *http.Client, url string, bodies [][]byte, conns int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || ctx.Err() != nil {
					return
				}
				if err := postOne(ctx, c, url, bodies[i]); err != nil {
					cancel(fmt.Errorf("request %d: %w", i, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}

func postOne(ctx context.Context, c *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %q", resp.StatusCode, bytes.TrimSpace(answer[:min(len(answer), 300)]))
	}
	return nil
}

// WaitReady polls ready every 50 ms (each poll bounded by 2 s) until it
// says yes, the process exits (its exit error arrives on exited) or ctx
// ends.
func WaitReady(ctx context.Context, exited <-chan error, ready func(context.Context) bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok := ready(pollCtx)
		cancel()
		if ok {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// Median is the median of v (0 for none); v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Thousands formats x rounded, with thousands separators ("-" for an
// infinity or NaN: a run too short to measure).
func Thousands(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "-"
	}
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 && d != '-' && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}
