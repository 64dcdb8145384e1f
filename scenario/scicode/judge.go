package scicode

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// The judge (py/coordbench_judge.py) is the trusted side of scoring: a
// Python process that never imports the solver's code. It rewrites each
// step's test cases into what the sandbox runs (assertions become records
// of the solver's values) and compares the recorded values with the targets,
// which only it reads. One process serves the scenario, one request at a
// time; it is started on first use, stopped after judgeIdle without work
// and restarted after a failure.

// pyFS holds the Python code: py/lib is what the sandbox's code may import
// (the harness and the scicode package), py/coordbench_judge.py and
// py/judge_*.py the judge.
//
//go:embed py/coordbench_judge.py py/judge_names.py py/judge_pass.py py/judge_records.py py/lib/coordbench_harness.py py/lib/scicode/__init__.py py/lib/scicode/compare/__init__.py py/lib/scicode/compare/cmp.py py/judge_targets.py
var pyFS embed.FS

// sandboxLib is the tree put on the sandbox's PYTHONPATH.
func sandboxLib() fs.FS {
	sub, err := fs.Sub(pyFS, "py/lib")
	if err != nil {
		panic(err) // embedded above
	}
	return sub
}

const (
	// judgeIdle stops an idle judge process.
	judgeIdle = 2 * time.Minute
	// judgeTimeout bounds one request (planning runs the test cases'
	// own setup statements; judging decodes up to the record cap).
	judgeTimeout = 10 * time.Minute
	// judgeMemory is the judge process's address-space limit.
	judgeMemory = 16 << 30
)

// errJudgeDied is a judge process that died or stopped answering.
var errJudgeDied = errors.New("the judge process ended")

// judge runs the judge process.
type judge struct {
	python func() string
	log    *slog.Logger

	mu   sync.Mutex
	proc *judgeProc
	idle *time.Timer
}

type judgeProc struct {
	cmd    *exec.Cmd
	dir    string
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   chan struct{}
}

// plannedCase is one test case as the sandbox runs it.
type plannedCase struct {
	Filename   string `json:"filename"`
	Source     string `json:"source"`
	Assertions []struct {
		Source   string   `json:"source"`
		Judged   string   `json:"judged"`
		Recorded []string `json:"recorded"`
	} `json:"assertions"`
}

// judgement is the judge's answer for one run.
type judgement struct {
	Passed  bool `json:"passed"`
	Failure *struct {
		Case      int    `json:"case"`
		Kind      string `json:"kind"` // failed, crashed, missing, invalid
		Detail    string `json:"detail"`
		Assertion string `json:"assertion"`
		Traceback string `json:"traceback"`
	} `json:"failure"`
	Malformed string `json:"malformed"`
	// CPUMS is the judge's CPU time for this run.
	CPUMS float64 `json:"cpu_ms"`
}

type judgeReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// plan rewrites a step's test cases; an error names a form that cannot be
// rewritten.
func (j *judge) plan(ctx context.Context, p *Problem, step *Step) ([]plannedCase, error) {
	var resp struct {
		judgeReply
		Cases []plannedCase `json:"cases"`
	}
	req := map[string]any{"op": "plan", "step": step.Number, "dependencies": p.Dependencies, "cases": step.TestCases}
	if err := j.call(ctx, req, nil, &resp); err != nil {
		return nil, err
	}
	if !resp.OK {
		return nil, fmt.Errorf("the test cases of step %s cannot be checked outside the sandbox: %s", step.Number, resp.Error)
	}
	return resp.Cases, nil
}

// judge compares a run's records with the step's targets.
func (j *judge) judge(ctx context.Context, p *Problem, step *Step, targets string, plan []plannedCase, records []byte) (*judgement, error) {
	sources := make([]string, len(plan))
	for i, c := range plan {
		sources[i] = c.Source
	}
	var resp struct {
		judgeReply
		judgement
	}
	req := map[string]any{"op": "judge", "step": step.Number, "dependencies": p.Dependencies, "cases": step.TestCases,
		"targets": targets, "plan_sources": sources}
	if err := j.call(ctx, req, records, &resp); err != nil {
		return nil, err
	}
	if !resp.OK {
		return nil, fmt.Errorf("judge: step %s: %s", step.Number, resp.Error)
	}
	return &resp.judgement, nil
}

// call sends one request (with records for "judge") and reads the answer,
// starting the process if need be. A process that fails is stopped; the
// next call starts a new one.
func (j *judge) call(ctx context.Context, req map[string]any, records []byte, resp any) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.idle != nil {
		j.idle.Stop()
	}
	p, err := j.start()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, judgeTimeout)
	defer cancel()
	answered := make(chan error, 1)
	go func() { answered <- exchange(p, req, records, resp) }()
	select {
	case err = <-answered:
	case <-ctx.Done():
		err = fmt.Errorf("judge: %w", context.Cause(ctx))
	}
	if err != nil {
		j.stopLocked()
		return err
	}
	j.idle = time.AfterFunc(judgeIdle, j.stop)
	return nil
}

func exchange(p *judgeProc, req map[string]any, records []byte, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	var frame bytes.Buffer
	_ = binary.Write(&frame, binary.BigEndian, uint32(len(body)))
	frame.Write(body)
	if req["op"] == "judge" {
		_ = binary.Write(&frame, binary.BigEndian, uint64(len(records)))
		frame.Write(records)
	}
	if _, err := p.in.Write(frame.Bytes()); err != nil {
		return fmt.Errorf("%w: %v; %s", errJudgeDied, err, p.stderr.String())
	}
	var n uint32
	if err := binary.Read(p.out, binary.BigEndian, &n); err != nil {
		return fmt.Errorf("%w: %v; %s", errJudgeDied, err, p.stderr.String())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.out, b); err != nil {
		return fmt.Errorf("%w: %v; %s", errJudgeDied, err, p.stderr.String())
	}
	if err := json.Unmarshal(b, resp); err != nil {
		return fmt.Errorf("judge: answer: %w", err)
	}
	return nil
}

// start starts the process unless it runs (j.mu held).
func (j *judge) start() (*judgeProc, error) {
	if j.proc != nil {
		select {
		case <-j.proc.done:
			j.stopLocked()
		default:
			return j.proc, nil
		}
	}
	python := j.python()
	if python == "" {
		return nil, errors.New("judge: no Python")
	}
	dir, err := os.MkdirTemp("", "coordbench-judge-")
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	sub, _ := fs.Sub(pyFS, "py")
	if err := os.CopyFS(dir, sub); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("judge: write its code: %w", err)
	}
	// The judge removes its directory once it has loaded its code, so that
	// a judge killed with the green agent leaves nothing behind.
	cmd := exec.Command(python, "-s", filepath.Join(dir, "coordbench_judge.py"), fmt.Sprint(judgeMemory), "--remove-own-directory")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPATH=" + filepath.Join(dir, "lib"), "HOME=" + dir, "TMPDIR=" + dir,
		"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"}
	cmd.Dir = dir
	cmd.SysProcAttr = judgeProcAttr()
	p := &judgeProc{cmd: cmd, dir: dir, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("judge: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("judge: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("judge: start %s: %w", python, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	p.in, p.out = in, bufio.NewReaderSize(out, 1<<16)
	j.proc = p
	j.log.Debug("scicode judge started", "pid", cmd.Process.Pid)
	return p, nil
}

// stop ends the process; the next call starts another.
func (j *judge) stop() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stopLocked()
}

func (j *judge) stopLocked() {
	p := j.proc
	if p == nil {
		return
	}
	j.proc = nil
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	os.RemoveAll(p.dir)
}

// tailBuffer keeps the last max bytes written, for the judge's stderr.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
