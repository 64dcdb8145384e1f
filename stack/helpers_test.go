package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// repoRoot is the main module's root (this module is one level below it).
func repoRoot(t *testing.T) string {
	t.Helper()
	return testenv.ModuleRoot(t)
}

// repoFile is the path of a file at the repository root.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	return testenv.RepoFile(t, name)
}

// toolBinary is bin/NAME, built by `make NAME` (otelcol) or `make
// jaeger-build` (jaeger); the test skips without it (fails under CI).
func toolBinary(t *testing.T, name, makeTarget string) string {
	t.Helper()
	return testenv.NeedTool(t, filepath.Join(repoRoot(t), "bin", name), "run `make "+makeTarget+"`")
}

// freePort returns a loopback port nothing listens on now. Another
// process may take it before the caller binds it; on this machine that is
// rare enough, and a bind failure names the port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output for the test log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a program the test started: its output is kept, shown in the
// log when the test fails, and the program is stopped (SIGTERM, then
// SIGKILL) when the test ends.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error // set when done is closed
}

// startProcess starts bin with args and env added to the test's
// environment, in dir (the repository root when empty).
func startProcess(t *testing.T, name, bin string, args, env []string, dir string) *process {
	t.Helper()
	if dir == "" {
		dir = repoRoot(t)
	}
	p := &process{name: name, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	// Its own process group, so a signal from the terminal to the test does
	// not reach it twice and the cleanup can stop what it started.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- output of %s (%s):\n%s", name, strings.Join(p.cmd.Args, " "), tail(p.out.String(), 20000))
		}
	})
	return p
}

// stop ends the process: SIGTERM, a grace period, then SIGKILL.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// tail keeps the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// waitFor polls check until it returns nil, the process (when given) exits,
// or timeout passes; the last error explains a failure.
func waitFor(t *testing.T, what string, timeout time.Duration, p *process, check func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p != nil {
			if done, err := p.exited(); done {
				t.Fatalf("%s: %s exited (%v) before it was ready:\n%s", what, p.name, err, tail(p.out.String(), 20000))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = check(ctx)
		cancel()
		if last == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not ready after %v: %v", what, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// httpOK is a check for waitFor: GET url answers 200.
func httpOK(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// otlpReady is a check for waitFor: an OTLP/HTTP endpoint takes an empty
// export request (protobuf: zero bytes).
func otlpReady(url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(nil))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %s", url, resp.Status)
		}
		return nil
	}
}

// errNotYet is what a polling check returns while it waits.
var errNotYet = errors.New("not yet")

// goBuild builds ./cmd/NAME of the main module into a temporary directory
// (the Go build cache makes a repeat a link).
func goBuild(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}
