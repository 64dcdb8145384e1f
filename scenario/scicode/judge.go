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
	"slices"
	"sync"
	"time"
)

// The judge (py/coordbench_judge.py) is the trusted side of scoring: a
// Python process that never imports the solver's code. It rewrites each
// step's test cases into what the sandbox runs (assertions become records
// of the solver's values) and compares the recorded values with the targets,
// which only it reads.
//
// One request runs in one process at a time, and each concurrent request
// gets its own process (up to judgeProcesses; past that, requests queue in
// arrival order, each bounded by its own deadline): one participant's
// records, however costly, hold up only the request that carries them. A
// process serves one request after another, each in a fork of its own
// that exits with its answer, so that nothing one request allocates
// reaches the next; it stops after judgeIdle without work. A process whose
// exchange fails (it or its fork died, its time or its task's ran out) is
// killed with its process group and never used again, and the request
// ends then, whatever holds the process's pipes. Each process is limited
// in address space (judgeMemory) and each request in CPU time (judgeCPU,
// SIGXCPU in the fork) and wall time (judgeTimeout, here).

// pyFS holds the Python code: py/lib is what the sandbox's code may import
// (the harness and the scicode package), py/coordbench_judge.py and
// py/judge_*.py the judge.
//
//go:embed py/coordbench_judge.py py/judge_names.py py/judge_null.py py/judge_pass.py py/judge_records.py py/judge_strict.py py/lib/coordbench_harness.py py/lib/scicode/__init__.py py/lib/scicode/compare/__init__.py py/lib/scicode/compare/cmp.py py/judge_targets.py py/judge_verdicts.py
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
	// judgeTimeout bounds one request's wall time (planning runs the
	// test cases' own setup statements; judging decodes up to the record
	// cap). It is the backstop of judgeCPU on a starved machine.
	judgeTimeout = 10 * time.Minute
	// judgeCPU bounds one request's CPU time, in the process.
	judgeCPU = 120 * time.Second
	// judgeMemory is each judge process's address-space limit: the
	// targets of a step, 64 MiB of records decoded (at most 10 M numbers)
	// and the comparisons' temporaries, which cannot amplify (the
	// structure rule and the broadcast bound, judge_strict.py).
	judgeMemory = 4 << 30
	// judgeProcesses is how many requests are judged at once.
	judgeProcesses = 8
	// judgeKillGrace bounds the wait for a killed process's pipes to
	// close (os/exec's WaitDelay) and for its exchange to end.
	judgeKillGrace = 10 * time.Second
	// judgeMaxAnswer bounds one answer of the judge: a plan of the
	// largest step is about 100 KiB, a verdict a few KiB (texts the
	// records carry are clipped in the judge).
	judgeMaxAnswer = 16 << 20
)

var (
	// errJudgeDied is a judge process that died or stopped answering.
	errJudgeDied = errors.New("the judge process ended")
	// errJudgeTime is a request that ran past the judge's own time limit
	// (judgeTimeout) while its caller still waited.
	errJudgeTime = errors.New("the judge did not answer within its time limit")
)

// judge runs the judge processes.
type judge struct {
	python func() string
	log    *slog.Logger
	// memory and cpu are each process's address-space limit and each
	// request's CPU budget (judgeMemory, judgeCPU; tests lower them).
	memory int64
	cpu    time.Duration

	// slots holds one token per process at work.
	slots chan struct{}
	mu    sync.Mutex
	idle  []*judgeProc
	// gen changes on stop: a process started before goes when it is
	// handed back.
	gen int
	// peakRSS is the largest peak resident memory a process reported
	// (KiB), for the docs' measurements.
	peakRSS int64
}

func newJudge(python func() string, log *slog.Logger) *judge {
	return &judge{python: python, log: log, memory: judgeMemory, cpu: judgeCPU, slots: make(chan struct{}, judgeProcesses)}
}

type judgeProc struct {
	cmd    *exec.Cmd
	dir    string
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   chan struct{}
	gen    int
	idle   *time.Timer
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

// stepPlan is a step's test cases as the sandbox runs them, and which of
// them are property cases: their assertions meet no target but booleans,
// and their calls into the solver's code are observed (judge_null.py).
type stepPlan struct {
	Cases    []plannedCase
	Property []int
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
	// Unchecked are the property cases of a passing run whose values
	// could not be compared with a reference run's.
	Unchecked []int `json:"unchecked"`
	// Held are the cases that ran to their end with every assertion
	// holding, whatever the step's verdict.
	Held []int `json:"held"`
	// StrictOnly: the run failed on the judge's stricter rules alone;
	// SciCode's own comparison accepts its values.
	StrictOnly bool `json:"strict_only"`
	// CPUMS is the judge's CPU time for this run; PeakRSSKiB the peak
	// resident memory of the fork that judged it.
	CPUMS      float64 `json:"cpu_ms"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`
}

type judgeReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// plan rewrites a step's test cases; an error names a form that cannot be
// rewritten. targets (the HDF5 file, or "") tells which cases meet only
// boolean targets; without it only the cases that name no target are
// property cases.
func (j *judge) plan(ctx context.Context, p *Problem, step *Step, targets string) (*stepPlan, error) {
	var resp struct {
		judgeReply
		Cases    []plannedCase `json:"cases"`
		Property []int         `json:"property_cases"`
	}
	req := map[string]any{"op": "plan", "step": step.Number, "dependencies": p.Dependencies, "cases": step.TestCases,
		"targets": targets, "classes": p.ClassNames()}
	if err := j.call(ctx, req, nil, &resp); err != nil {
		return nil, err
	}
	if !resp.OK {
		return nil, fmt.Errorf("the test cases of step %s cannot be checked outside the sandbox: %s", step.Number, resp.Error)
	}
	return &stepPlan{Cases: resp.Cases, Property: resp.Property}, nil
}

// judge compares a run's records with the step's targets; with reference
// (the reference code's records on the same plan, not nil) the property
// cases' values are also compared with the reference's.
func (j *judge) judge(ctx context.Context, p *Problem, step *Step, targets string, plan *stepPlan, records, reference []byte) (*judgement, error) {
	sources := make([]string, len(plan.Cases))
	for i, c := range plan.Cases {
		sources[i] = c.Source
	}
	var resp struct {
		judgeReply
		judgement
	}
	req := map[string]any{"op": "judge", "step": step.Number, "dependencies": p.Dependencies, "cases": step.TestCases,
		"targets": targets, "plan_sources": sources, "observe": plan.Property, "reference": reference != nil,
		"classes": p.ClassNames()}
	payload := [][]byte{records}
	if reference != nil {
		payload = append(payload, reference)
	}
	if err := j.call(ctx, req, payload, &resp); err != nil {
		return nil, err
	}
	if !resp.OK {
		return nil, fmt.Errorf("judge: step %s: %s", step.Number, resp.Error)
	}
	return &resp.judgement, nil
}

// call sends one request (with its payload, each part length-prefixed:
// the records for "judge", then the reference's) to a process of its own
// and reads the answer. It waits for a free process at most until ctx
// ends; a process that fails or runs past judgeTimeout is killed.
func (j *judge) call(ctx context.Context, req map[string]any, payload [][]byte, resp any) error {
	select {
	case j.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("judge: waited for a free judge process until the task's time ran out: %w", context.Cause(ctx))
	}
	defer func() { <-j.slots }()
	p, err := j.take()
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeoutCause(ctx, judgeTimeout, errJudgeTime)
	defer cancel()
	answered := make(chan error, 1)
	go func() { answered <- exchange(p, req, payload, resp) }()
	select {
	case err = <-answered:
		if err == nil {
			j.handBack(p, resp)
			return nil
		}
		// A process whose exchange failed is never used again.
		j.kill(p)
		return err
	case <-tctx.Done():
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("judge: the task's time ran out while the judge compared its values: %w", context.Cause(ctx))
	} else {
		err = fmt.Errorf("judge: %w (%s)", errJudgeTime, judgeTimeout)
	}
	j.kill(p)
	// The exchange ends with the process's pipes, which the kill closed;
	// it is not waited for past judgeKillGrace, whatever holds them.
	select {
	case <-answered:
	case <-time.After(judgeKillGrace):
		j.log.Error("scicode: a judge exchange outlived its killed process", "pid", p.cmd.Process.Pid)
	}
	return err
}

func exchange(p *judgeProc, req map[string]any, payload [][]byte, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("judge: %w", err)
	}
	var frame bytes.Buffer
	_ = binary.Write(&frame, binary.BigEndian, uint32(len(body)))
	frame.Write(body)
	for _, part := range payload {
		_ = binary.Write(&frame, binary.BigEndian, uint64(len(part)))
		frame.Write(part)
	}
	if _, err := p.in.Write(frame.Bytes()); err != nil {
		return p.died(err)
	}
	var n uint32
	if err := binary.Read(p.out, binary.BigEndian, &n); err != nil {
		return p.died(err)
	}
	if n > judgeMaxAnswer {
		return fmt.Errorf("%w: an answer of %d bytes, more than %d", errJudgeDied, n, judgeMaxAnswer)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.out, b); err != nil {
		return p.died(err)
	}
	var died struct {
		Died string `json:"died"`
	}
	if err := json.Unmarshal(b, &died); err != nil {
		return fmt.Errorf("judge: answer: %w", err)
	}
	if died.Died != "" {
		// The fork that served the request died without answering.
		return fmt.Errorf("%w: %s", errJudgeDied, died.Died)
	}
	if err := json.Unmarshal(b, resp); err != nil {
		return fmt.Errorf("judge: answer: %w", err)
	}
	return nil
}

// died is the error of an exchange that failed with err: the process
// ended (or is ending). Its last words on stderr say why; they are waited
// for a moment, since the pipe breaks before they are written.
func (p *judgeProc) died(err error) error {
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
	}
	return fmt.Errorf("%w: %v; %s", errJudgeDied, err, p.stderr.String())
}

// take returns an idle process that still runs, or starts one.
func (j *judge) take() (*judgeProc, error) {
	j.mu.Lock()
	for len(j.idle) > 0 {
		p := j.idle[len(j.idle)-1]
		j.idle = j.idle[:len(j.idle)-1]
		p.idle.Stop()
		select {
		case <-p.done:
			j.mu.Unlock()
			j.kill(p)
			j.mu.Lock()
			continue
		default:
		}
		j.mu.Unlock()
		return p, nil
	}
	gen := j.gen
	j.mu.Unlock()
	return j.start(gen)
}

// handBack makes p idle again, unless the judge was stopped since it
// started.
func (j *judge) handBack(p *judgeProc, resp any) {
	if r, ok := resp.(interface{ peak() int64 }); ok {
		j.notePeak(r.peak())
	}
	j.mu.Lock()
	if p.gen != j.gen {
		j.mu.Unlock()
		j.kill(p)
		return
	}
	p.idle = time.AfterFunc(judgeIdle, func() { j.retire(p) })
	j.idle = append(j.idle, p)
	j.mu.Unlock()
}

func (j *judge) notePeak(kib int64) {
	j.mu.Lock()
	j.peakRSS = max(j.peakRSS, kib)
	j.mu.Unlock()
}

func (r *judgement) peak() int64 { return r.PeakRSSKiB }

// retire stops p if it is still idle.
func (j *judge) retire(p *judgeProc) {
	j.mu.Lock()
	i := slices.Index(j.idle, p)
	if i < 0 {
		j.mu.Unlock()
		return
	}
	j.idle = slices.Delete(j.idle, i, i+1)
	j.mu.Unlock()
	j.close(p)
}

// start starts a process.
func (j *judge) start(gen int) (*judgeProc, error) {
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
	cmd := exec.Command(python, "-s", filepath.Join(dir, "coordbench_judge.py"), fmt.Sprint(j.memory),
		fmt.Sprint(int(j.cpu.Seconds())), "--remove-own-directory")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPATH=" + filepath.Join(dir, "lib"), "HOME=" + dir, "TMPDIR=" + dir,
		"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"}
	cmd.Dir = dir
	cmd.SysProcAttr = judgeProcAttr()
	// Wait returns once the process has exited, even if something it
	// started still holds its output.
	cmd.WaitDelay = judgeKillGrace
	p := &judgeProc{cmd: cmd, dir: dir, stderr: &tailBuffer{max: 4096}, done: make(chan struct{}), gen: gen}
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
	j.log.Debug("scicode judge started", "pid", cmd.Process.Pid)
	return p, nil
}

// stop ends the idle processes; those at work end when handed back. The
// next call starts another.
func (j *judge) stop() {
	j.mu.Lock()
	j.gen++
	idle := j.idle
	j.idle = nil
	j.mu.Unlock()
	for _, p := range idle {
		p.idle.Stop()
		j.close(p)
	}
}

// close ends an idle process: its input closes, and it is killed if it
// does not end at once.
func (j *judge) close(p *judgeProc) {
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		killGroup(p.cmd.Process)
		<-p.done
	}
	os.RemoveAll(p.dir)
}

// kill ends a process at work and everything it started (its process
// group). cmd.Wait returns within judgeKillGrace of the process's end.
func (j *judge) kill(p *judgeProc) {
	killGroup(p.cmd.Process)
	_ = p.in.Close()
	<-p.done
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
