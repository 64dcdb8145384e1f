package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Agent is one agent under test: a built binary and how to serve it on a
// loopback port.
type Agent struct {
	Name string
	Bin  string
	Args func(port int) []string
}

// running is an agent serving.
type running struct {
	name string
	base string // http://127.0.0.1:port
	cmd  *exec.Cmd
	log  string
	done chan error
}

// readyTimeout bounds an agent's start (a 2-core machine shared with
// other work).
const readyTimeout = 2 * time.Minute

// start serves the agent on a free loopback port, logging to a file in
// dir, and waits until its health check answers. A port taken between
// choosing and binding is retried.
func start(ctx context.Context, a Agent, dir string) (*running, error) {
	var lastErr error
	for attempt := range 3 {
		r, err := startOnce(ctx, a, dir, attempt)
		if err == nil {
			return r, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOnce(ctx context.Context, a Agent, dir string, attempt int) (*running, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(dir, fmt.Sprintf("%s-%d.log", a.Name, attempt))
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(a.Bin, a.Args(port)...)
	cmd.Dir = dir
	// A fixed environment: no exporter, no LLM, no data sets, whatever
	// the caller's shell holds, so the agents answer the same everywhere.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir()}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", a.Name, err)
	}
	r := &running{name: a.Name, base: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, log: logFile, done: make(chan error, 1)}
	go func() {
		r.done <- cmd.Wait()
		_ = f.Close()
	}()
	if err := r.waitReady(ctx); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// waitReady polls the health check until it answers, the process ends or
// readyTimeout passes.
func (r *running) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-r.done:
			r.done <- err
			return fmt.Errorf("%s exited before serving (%v); log:\n%s", r.name, err, logTail(r.log))
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s/healthz within %s; log:\n%s", r.name, r.base, readyTimeout, logTail(r.log))
		case <-tick.C:
		}
	}
}

// stop asks the agent to shut down (SIGINT, its graceful shutdown), and
// kills it if it has not within a while.
func (r *running) stop() {
	if r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// freePort is a loopback port nothing listened on a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}

func logTail(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), 2000)
}
