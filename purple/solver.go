package purple

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// The solver role answers the green agent's SciCode scenario
// (docs/scicode.md): one message per sub-step with the step's prompt and a
// data part naming the problem and the step, and, after a failing test, a
// feedback message in the same A2A context. Three modes:
//
//   - oracle: answers with the data set's reference code, looked up by
//     problem and step in the SciCode validation split (the only split with
//     reference code). A test fixture: a green agent must score it 100%.
//   - repair: answers with a stub first and with the reference after
//     feedback, to exercise the repair turns.
//   - llm: asks the agent's LLM (AGENTBEATS_LLM_*), with the step's earlier
//     turns in the same context, for a JSON object {"code": "..."}.
//
// The role "solver" takes its mode from SolverOptions.Mode (cmd/purple
// reads it from $COORDBENCH_SOLVER_MODE); without one, llm when the agent
// has an LLM, else oracle (logged). The roles "solver-oracle",
// "solver-repair" and "solver-llm" fix the mode.

// Solver roles.
const (
	RoleSolver       = "solver"
	RoleSolverOracle = "solver-oracle"
	RoleSolverRepair = "solver-repair"
	RoleSolverLLM    = "solver-llm"
)

// SolverMode is how the solver answers.
type SolverMode string

// Solver modes.
const (
	SolverOracle SolverMode = "oracle"
	SolverRepair SolverMode = "repair"
	SolverLLM    SolverMode = "llm"
)

// Environment cmd/purple reads into SolverOptions (the package itself
// reads no environment).
const (
	// EnvSolverMode sets the mode of the role "solver" (SolverOptions.Mode).
	EnvSolverMode = "COORDBENCH_SOLVER_MODE"
	// EnvSciCodeDir names the SciCode data directory, as for the green
	// agent (SolverOptions.DataDir); the oracle reads problems_dev.jsonl
	// from it.
	EnvSciCodeDir = "COORDBENCH_SCICODE_DIR"
)

const (
	// solverHistoryContexts bounds the contexts whose turns the LLM mode
	// remembers; solverHistoryChars bounds what it sends of them.
	solverHistoryContexts = 256
	solverHistoryChars    = 24000
	solverSystemPrompt    = "You are an expert scientific programmer solving a SciCode problem one step at a time. " +
		"Write the Python code of the requested step: define the function (or class) with exactly the header given, " +
		"use only the listed dependencies (they are imported before your code), do not repeat the previous steps' code, " +
		"and add no example usage or tests. When told that your code failed, fix it. " +
		`Answer with one JSON object: {"code": "<the complete Python code of the step>"}.`
)

// SolverOptions configure NewSolver.
type SolverOptions struct {
	// Mode fixes the mode; empty means llm when the agent has an LLM, else
	// oracle.
	Mode SolverMode
	// DataDir is the SciCode data directory for the oracle (default
	// ../shared/data/scicode relative to the working directory or the
	// module root).
	DataDir string
}

// Validate checks the mode.
func (o SolverOptions) Validate() error {
	switch o.Mode {
	case "", SolverOracle, SolverRepair, SolverLLM:
		return nil
	}
	return fmt.Errorf("solver mode %q: want %s, %s or %s", o.Mode, SolverOracle, SolverRepair, SolverLLM)
}

// Solver is the solver role. It is safe for concurrent use.
type Solver struct {
	opts SolverOptions

	refsOnce sync.Once
	refs     map[string]solverRef // by step number
	refsErr  error

	mu      sync.Mutex
	history map[string][]solverTurn // by A2A context: the current step's turns
	order   []string                // contexts, oldest first
	warned  bool
}

// solverRef is what the oracle knows of a step.
type solverRef struct {
	Problem, Header, Code string
}

// solverTurn is one exchange of the LLM mode.
type solverTurn struct {
	Asked, Answered string
}

// NewSolver returns a solver role.
func NewSolver(opts SolverOptions) *Solver {
	return &Solver{opts: opts, history: map[string][]solverTurn{}}
}

// StepRequest is one SciCode message as the solver reads it: what the step
// protocol (scenario/scicode/stepproto) says of the step, and the A2A
// context grouping the turns of one problem.
type StepRequest struct {
	stepproto.Request
	ContextID string
	Text      string
}

// ParseStepRequest reads a SciCode request (stepproto.ParseRequest): the
// data part when present, else the text.
func ParseStepRequest(text string, data []map[string]any, contextID string) (StepRequest, error) {
	r, err := stepproto.ParseRequest(text, data)
	return StepRequest{Request: r, ContextID: contextID, Text: text}, err
}

// Answer implements Role.
func (s *Solver) Answer(ctx context.Context, env *Env, req *Request) (*Answer, error) {
	sr, err := ParseStepRequest(req.Text, req.Data, req.ContextID)
	if err != nil {
		return nil, fmt.Errorf("solver: %w", err)
	}
	var llm *LLM
	if env != nil {
		llm = env.LLM()
	}
	mode := s.mode(llm != nil, env)
	if ep, ok := mcpcall.FindEndpoint(req.Data); ok {
		// The green agent offers its tools (docs/mcp.md): the answers go
		// through them.
		return s.answerWithTools(ctx, env, llm, mode, sr, ep)
	}
	code, err := s.solve(ctx, llm, mode, sr)
	if err != nil {
		return nil, fmt.Errorf("solver (%s): %w", mode, err)
	}
	return &Answer{
		Text: "```python\n" + strings.TrimRight(code, "\n") + "\n```",
		Data: map[string]any{stepproto.CodeKey: code, "solver_mode": string(mode), "step_number": sr.Step},
	}, nil
}

// SolveStep answers one SciCode prompt as the green agent words it, with
// no data part and no A2A context (an LLM is not available here, so mode
// llm is an error): a way to use the solver outside the agent.
func (s *Solver) SolveStep(ctx context.Context, prompt string, mode SolverMode) (string, error) {
	sr, err := ParseStepRequest(prompt, nil, "")
	if err != nil {
		return "", fmt.Errorf("solver: %w", err)
	}
	return s.solve(ctx, nil, mode, sr)
}

// mode picks the mode of a request.
func (s *Solver) mode(haveLLM bool, env *Env) SolverMode {
	if s.opts.Mode != "" {
		return s.opts.Mode
	}
	if haveLLM {
		return SolverLLM
	}
	s.mu.Lock()
	warn := !s.warned
	s.warned = true
	s.mu.Unlock()
	if warn && env != nil && env.Logger != nil {
		env.Logger.Warn("solver: no LLM configured and no mode set (" + EnvSolverMode + "): answering with the data set's reference code (oracle mode)")
	}
	return SolverOracle
}

func (s *Solver) solve(ctx context.Context, llm *LLM, mode SolverMode, sr StepRequest) (string, error) {
	switch mode {
	case SolverOracle:
		return s.reference(sr)
	case SolverRepair:
		if !sr.Feedback && sr.Turn <= 1 {
			return s.firstDraft(sr)
		}
		return s.reference(sr)
	case SolverLLM:
		if llm == nil {
			return "", fmt.Errorf("no LLM configured (set %s)", llmconfig.EnvAPIKey)
		}
		return s.ask(ctx, llm, sr)
	}
	return "", fmt.Errorf("unknown mode %q: want %s, %s or %s", mode, SolverOracle, SolverRepair, SolverLLM)
}

// reference is the step's reference code.
func (s *Solver) reference(sr StepRequest) (string, error) {
	ref, err := s.lookup(sr)
	if err != nil {
		return "", err
	}
	if ref.Code == "" {
		return "", fmt.Errorf("the data set has no reference code for step %s (only the validation split has)", sr.Step)
	}
	return ref.Code, nil
}

// firstDraft is a wrong answer with the right header: the function raises.
// Its test fails (crashed), so the green agent sends feedback.
func (s *Solver) firstDraft(sr StepRequest) (string, error) {
	header := sr.Header
	if header == "" {
		ref, err := s.lookup(sr)
		if err != nil {
			return "", err
		}
		header = ref.Header
	}
	if strings.TrimSpace(header) == "" {
		return "", fmt.Errorf("no function header for step %s", sr.Step)
	}
	return strings.TrimRight(header, "\n") + "\n    raise NotImplementedError('first draft of step " + sr.Step + "')\n", nil
}

// lookup finds a step in the validation split.
func (s *Solver) lookup(sr StepRequest) (solverRef, error) {
	s.refsOnce.Do(func() { s.refs, s.refsErr = loadSolverRefs(s.opts.DataDir) })
	if s.refsErr != nil {
		return solverRef{}, s.refsErr
	}
	ref, ok := s.refs[sr.Step]
	if !ok || (sr.ProblemID != "" && ref.Problem != sr.ProblemID) {
		return solverRef{}, fmt.Errorf("step %s of problem %s is not in the SciCode validation split", sr.Step, sr.ProblemID)
	}
	return ref, nil
}

// loadSolverRefs reads problems_dev.jsonl from the data directory.
func loadSolverRefs(dir string) (map[string]solverRef, error) {
	if dir == "" {
		var err error
		if dir, err = solverDataDir(); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, "problems_dev.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the oracle needs the SciCode validation split: %w (set %s)", err, EnvSciCodeDir)
	}
	defer f.Close()
	refs := map[string]solverRef{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p struct {
			ID    string `json:"problem_id"`
			Steps []struct {
				Number string `json:"step_number"`
				Header string `json:"function_header"`
				Code   string `json:"ground_truth_code"`
			} `json:"sub_steps"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		for _, st := range p.Steps {
			refs[st.Number] = solverRef{Problem: p.ID, Header: st.Header, Code: st.Code}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return refs, nil
}

// solverDataDir finds the data where the green agent looks when no
// directory is given: ../shared/data/scicode from the working directory or
// the module root.
func solverDataDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the SciCode data: %w", err)
	}
	rel := filepath.Join("..", "shared", "data", "scicode")
	var tried []string
	for dir := wd; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, rel)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p, nil
		}
		tried = append(tried, p)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil || filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("no SciCode data: no directory given (%s) and none of %s exists", EnvSciCodeDir, strings.Join(tried, ", "))
}

// ask puts the request to the LLM with the step's earlier turns of the same
// context, and reads the code from its answer.
func (s *Solver) ask(ctx context.Context, llm *LLM, sr StepRequest) (string, error) {
	user := sr.Text
	if sr.Feedback {
		if prior := s.transcript(sr.ContextID); prior != "" {
			user = prior + "\n=== NOW ===\n" + sr.Text
		}
	}
	answer, err := llm.Chat(ctx, solverSystemPrompt, user)
	if err != nil {
		return "", err
	}
	code := solverCode(answer)
	if code == "" {
		return "", fmt.Errorf("the LLM answered without code: %.200q", answer)
	}
	s.remember(sr, code)
	return code, nil
}

// solverCode reads the code of the LLM's answer in any of the forms the
// green agent reads (stepproto.ExtractAnswer); "" when there is none.
func solverCode(answer string) string {
	code, _ := stepproto.ExtractAnswer(answer, nil)
	return code
}

// remember keeps the turn; a new step (not feedback) starts the context's
// history afresh, since each step's prompt carries everything before it.
func (s *Solver) remember(sr StepRequest, code string) {
	if sr.ContextID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.history[sr.ContextID]; !ok {
		s.order = append(s.order, sr.ContextID)
		if len(s.order) > solverHistoryContexts {
			delete(s.history, s.order[0])
			s.order = s.order[1:]
		}
	}
	turns := s.history[sr.ContextID]
	if !sr.Feedback {
		turns = nil
	}
	s.history[sr.ContextID] = append(turns, solverTurn{Asked: sr.Text, Answered: code})
}

// transcript is the context's turns of the current step, the latest within
// solverHistoryChars.
func (s *Solver) transcript(contextID string) string {
	s.mu.Lock()
	turns := append([]solverTurn(nil), s.history[contextID]...)
	s.mu.Unlock()
	var parts []string
	size := 0
	for i := len(turns) - 1; i >= 0; i-- {
		p := "=== YOU WERE ASKED ===\n" + turns[i].Asked + "\n=== YOU ANSWERED ===\n" + turns[i].Answered + "\n"
		if size+len(p) > solverHistoryChars && len(parts) > 0 {
			break
		}
		parts = append([]string{p}, parts...)
		size += len(p)
	}
	return strings.Join(parts, "")
}
