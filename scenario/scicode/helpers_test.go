package scicode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// testDir is ../shared/data/scicode beside the module root.
func testDir(t testing.TB) string {
	t.Helper()
	return testenv.SharedData(t, "scicode")
}

func testSplit(t testing.TB) *scicode.Split {
	t.Helper()
	s, err := scicode.LoadSplit(testDir(t), scicode.SplitValidation)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Scenarios are shared by the tests of one sandbox configuration, so the
// data is read and the sandbox probed once per configuration.
var (
	scenariosMu sync.Mutex
	scenarios   = map[string]*scicode.Scenario{}
)

// newForTest builds the scenario on the test data, skipping (or failing
// with CI=true) without the data or a Python with the scientific stack.
func newForTest(t testing.TB, opts sandbox.Options) *scicode.Scenario {
	t.Helper()
	dir := testDir(t)
	key := fmt.Sprintf("%+v", opts)
	scenariosMu.Lock()
	defer scenariosMu.Unlock()
	if s, ok := scenarios[key]; ok {
		return s
	}
	s, err := scicode.New(context.Background(), scicode.Options{DataDir: dir, Sandbox: opts})
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, sandbox.ErrNoPython) {
			testenv.Missing(t, "%v", err)
		}
		t.Fatal(err)
	}
	t.Logf("sandbox: %+v", *s.Sandbox())
	scenarios[key] = s
	return s
}

// oracleStepTimeout is SciCode's own maximum: step 51.4's reference (a
// pure-Python molecular dynamics loop) needs about 40 s of CPU, which on a
// shared machine giving a test a tenth of a core is minutes of wall clock.
const oracleStepTimeout = 1800 * time.Second

// request builds a parsed request as the green agent would from
// {"participants": …, "config": …}.
func request(t testing.TB, format string, args ...any) *scenario.Request {
	t.Helper()
	var raw struct {
		Participants map[string]string          `json:"participants"`
		Config       map[string]json.RawMessage `json:"config"`
	}
	text := fmt.Sprintf(format, args...)
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		t.Fatalf("request %s: %v", text, err)
	}
	req := &scenario.Request{Participants: raw.Participants}
	cfg, _ := json.Marshal(raw.Config)
	if err := json.Unmarshal(cfg, &req.Config); err != nil {
		t.Fatalf("config %s: %v", cfg, err)
	}
	req.Config.Raw = raw.Config
	return req
}

// solverInput is what a test solver is asked.
type solverInput struct {
	Text      string
	Data      map[string]any // the SciCode data part
	ContextID string
	// DataParts are all the message's data parts (the MCP endpoint's
	// among them).
	DataParts []map[string]any
}

// solverFunc answers one message: the text and, when not nil, a data part.
type solverFunc func(ctx context.Context, in solverInput) (string, map[string]any, error)

// startSolver serves a solver on loopback (A2A 1.0, through a2aserve) and
// returns its URL. With hang the solver never answers until the test ends.
func startSolver(t testing.TB, name string, answer solverFunc, hang bool) string {
	t.Helper()
	stop := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := a2aserve.BaseURL(ln.Addr())
	card := &a2a.AgentCard{Name: name, Description: "a test SciCode solver", Version: "0",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	mux, err := a2aserve.NewHandler(a2aserve.Options{Card: card, Executor: &solverExecutor{answer: answer, hang: hang, stop: stop},
		TracerProvider: noop.NewTracerProvider(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return url
}

type solverExecutor struct {
	answer solverFunc
	hang   bool
	stop   chan struct{}
}

func (e *solverExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		in := solverInput{ContextID: ec.ContextID}
		for _, part := range ec.Message.Parts {
			switch v := part.Content.(type) {
			case a2a.Text:
				in.Text += string(v)
			case a2a.Data:
				if m, ok := v.Value.(map[string]any); ok {
					if in.Data == nil {
						in.Data = m
					}
					in.DataParts = append(in.DataParts, m)
				}
			}
		}
		if e.hang {
			<-e.stop
			return
		}
		text, data, err := e.answer(ctx, in)
		if err != nil {
			msg := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(err.Error()))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, msg), nil)
			return
		}
		parts := []*a2a.Part{a2a.NewTextPart(text)}
		if data != nil {
			parts = append(parts, a2a.NewDataPart(data))
		}
		if !yield(a2a.NewArtifactEvent(ec, parts...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (e *solverExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// refusedURL is a URL nobody listens at.
func refusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := a2aserve.BaseURL(ln.Addr())
	ln.Close()
	return url
}

// runProblem runs one problem of the request through the scenario with a
// messenger of its own.
func runProblem(t testing.TB, s *scicode.Scenario, ctx context.Context, req *scenario.Request, callTimeout time.Duration) (*scenarioOutcome, error) {
	t.Helper()
	tasks, err := s.Tasks(req)
	if err != nil {
		return nil, err
	}
	if len(tasks) != 1 {
		t.Fatalf("%d tasks, want 1", len(tasks))
	}
	m := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{Logger: quiet, CallTimeout: callTimeout})
	defer m.Close()
	o, err := s.Run(ctx, &scenario.TaskEnv{Messenger: m, Request: req}, tasks[0])
	if err != nil {
		return nil, err
	}
	steps, _ := o.Details["steps"].([]scicode.StepResult)
	return &scenarioOutcome{Outcome: o.Success, Score: o.Score, Summary: o.Summary, Details: o.Details, Steps: steps}, nil
}

// scenarioOutcome is an evals.Outcome with the steps typed.
type scenarioOutcome struct {
	Outcome bool
	Score   float64
	Summary string
	Details map[string]any
	Steps   []scicode.StepResult
}
