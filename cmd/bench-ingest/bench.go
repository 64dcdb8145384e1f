package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/coordbench/coordbench/internal/procbench"
)

// result is one run of one server.
type result struct {
	server string
	run    int
	spans  int
	// wall is from the first request sent until the server held every
	// span; cpu the server process's CPU time over the same stretch
	// (its start-up is not counted).
	wall, cpu time.Duration
	peakRSS   int64
}

func (r result) spansPerSecond() float64    { return float64(r.spans) / r.wall.Seconds() }
func (r result) spansPerCPUSecond() float64 { return float64(r.spans) / r.cpu.Seconds() }

// runOnce starts a fresh process of s, posts the payload to it, waits
// until it holds every span, reads its usage and stops it.
func runOnce(ctx context.Context, o options, s server, p *payload, run int, logDir string) (result, error) {
	res := result{server: s.name(), run: run, spans: p.shape.spans()}
	ctx, cancel := context.WithTimeout(ctx, o.runTimeout)
	defer cancel()
	cmd, err := s.command(ctx)
	if err != nil {
		return res, err
	}
	logPath := filepath.Join(logDir, fmt.Sprintf("%s-%d.log", s.name(), run))
	logFile, err := os.Create(logPath)
	if err != nil {
		return res, fmt.Errorf("%s: log: %w", s.name(), err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%s: start: %w", s.name(), err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer procbench.Stop(cmd, exited, 10*time.Second)
	fail := func(err error) (result, error) {
		return res, fmt.Errorf("%s run %d: %w (its log: %s)", s.name(), run, err, logPath)
	}

	client := procbench.NewClient(o.conns)
	defer client.CloseIdleConnections()
	if err := procbench.WaitReady(ctx, exited, func(ctx context.Context) bool { return s.ready(ctx, client) }); err != nil {
		return fail(err)
	}
	pid := cmd.Process.Pid
	before, err := procbench.ReadUsage(pid)
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	if err := procbench.Post(ctx, client, s.tracesURL(), p.bodies, o.conns); err != nil {
		return fail(err)
	}
	if err := waitHeld(ctx, s, client, res.spans); err != nil {
		return fail(err)
	}
	res.wall = time.Since(start)
	after, err := procbench.ReadUsage(pid)
	if err != nil {
		return fail(err)
	}
	res.cpu, res.peakRSS = after.CPU-before.CPU, after.PeakRSS
	if j, ok := s.(*jaegerServer); ok {
		if err := j.checkTrace(ctx, client, traceID(0).String(), p.shape.spansPerTrace); err != nil {
			return fail(err)
		}
	}
	return res, nil
}

// waitHeld polls until the server holds want spans.
func waitHeld(ctx context.Context, s server, c *http.Client, want int) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := s.held(ctx, c)
		if err != nil {
			return err
		}
		if n == want {
			return nil
		}
		if n > want {
			return fmt.Errorf("holds %d spans, %d were sent", n, want)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("holds %d of the %d spans sent: %w", n, want, ctx.Err())
		case <-tick.C:
		}
	}
}
