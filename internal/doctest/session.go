//go:build unix

package doctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Session is one bash process that runs steps one after the other, as a
// reader types them into one terminal: the directory, variables and
// background jobs of a step are there in the next. It runs with `set -e
// -o pipefail`, so a failing command ends the session (and fails its
// step), an ERR trap naming the command. Its stdout and stderr, and those
// of everything it starts, are one stream; standard input is empty, and
// steps arrive on file descriptor 3, so no command can read the next one.
type Session struct {
	cmd    *exec.Cmd
	steps  *os.File // the write end of the steps pipe
	marker string   // printed after each step, with its status

	mu     sync.Mutex
	out    bytes.Buffer  // everything read so far
	change chan struct{} // closed and replaced when out grows or the stream ends
	eof    bool

	exited chan struct{} // closed when bash has exited
	err    error         // bash's exit, valid once exited is closed
}

// loop is the session's bash program: read a NUL-terminated step from fd 3,
// eval it, print the marker.
const loop = `exec 2>&1
trap 'printf "doctest: exit status %d from: %s\n" "$?" "$BASH_COMMAND"' ERR
set -e -o pipefail
while IFS= read -r -d '' __doctest_step <&3; do
  eval "$__doctest_step"
  printf '\n%s\n' "$__doctest_marker"
done
`

// Start starts a session in dir with the environment env (nil: none).
// Everything it starts is in one process group, which Close kills.
func Start(dir string, env []string) (*Session, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("doctest: nonce: %w", err)
	}
	s := &Session{marker: "doctest-step-done-" + hex.EncodeToString(nonce), change: make(chan struct{}), exited: make(chan struct{})}
	stepsR, stepsW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("doctest: steps pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stepsR.Close()
		stepsW.Close()
		return nil, fmt.Errorf("doctest: output pipe: %w", err)
	}
	s.cmd = exec.Command("bash", "--noprofile", "--norc", "-c", loop)
	s.cmd.Dir = dir
	s.cmd.Env = slices.Concat(env, []string{"__doctest_marker=" + s.marker})
	s.cmd.Stdout, s.cmd.Stderr = outW, outW
	s.cmd.ExtraFiles = []*os.File{stepsR}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = s.cmd.Start()
	stepsR.Close()
	outW.Close()
	if err != nil {
		stepsW.Close()
		outR.Close()
		return nil, fmt.Errorf("doctest: start bash: %w", err)
	}
	s.steps = stepsW
	go s.read(outR)
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// read copies the output stream into s.out until every writer has closed
// it (bash and all it started).
func (s *Session) read(r *os.File) {
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		s.mu.Lock()
		s.out.Write(buf[:n])
		if err != nil {
			s.eof = true
		}
		close(s.change)
		s.change = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Run types script into the session and waits until it has run. It
// returns the output since it was typed (the background jobs' included),
// and an error when the session ended (a command failed: set -e) or ctx
// ended first.
func (s *Session) Run(ctx context.Context, script string) (string, error) {
	s.mu.Lock()
	start := s.out.Len()
	s.mu.Unlock()
	if _, err := s.steps.Write(append([]byte(script), 0)); err != nil {
		return "", fmt.Errorf("doctest: the session has ended: %w", err)
	}
	done := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s.marker) + `\n`)
	for {
		s.mu.Lock()
		out := s.out.Bytes()[start:]
		change := s.change
		if loc := done.FindIndex(out); loc != nil {
			got := string(bytes.TrimSuffix(out[:loc[0]], []byte("\n")))
			// The marker and its line are not output of the next step.
			rest := append([]byte(nil), out[loc[1]:]...)
			s.out.Truncate(start)
			s.out.WriteString(got)
			s.out.Write(rest)
			s.mu.Unlock()
			return got, nil
		}
		s.mu.Unlock()
		select {
		case <-change:
		case <-s.exited:
			// bash is gone; its output may still be arriving.
			s.drain(250 * time.Millisecond)
			s.mu.Lock()
			got := string(s.out.Bytes()[start:])
			s.mu.Unlock()
			return got, fmt.Errorf("the shell ended (%v) before the step finished", s.exitStatus())
		case <-ctx.Done():
			s.mu.Lock()
			got := string(s.out.Bytes()[start:])
			s.mu.Unlock()
			return got, fmt.Errorf("the step did not finish: %w", context.Cause(ctx))
		}
	}
}

// drain waits up to d for the output stream to end.
func (s *Session) drain(d time.Duration) {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		eof, change := s.eof, s.change
		s.mu.Unlock()
		if eof {
			return
		}
		select {
		case <-change:
		case <-deadline:
			return
		}
	}
}

func (s *Session) exitStatus() string {
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return "exit status " + strconv.Itoa(ee.ExitCode())
	}
	if s.err == nil {
		return "exit status 0"
	}
	return s.err.Error()
}

// Output is everything the session has printed.
func (s *Session) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Close ends the session: it closes the steps (bash ends its loop), then
// terminates the process group, bash's background jobs with it, and after
// grace kills what is left. It waits for bash.
func (s *Session) Close(grace time.Duration) {
	s.steps.Close()
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(grace):
	}
	// Background jobs may outlive bash; the group outlives it while they do.
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && syscall.Kill(-pgid, 0) == nil {
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-s.exited
	s.drain(grace)
}
