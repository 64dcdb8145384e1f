package purple

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Faults make an agent misbehave on purpose, for tests and the benchmark's
// fault runs: an assessor must record a participant's failure as that
// task's failure and go on. Every fault but NoSpans applies to the requests
// of the tasks named in Tasks, or to every request when Tasks is empty.
type Faults struct {
	// Delay is added before the agent works on a request.
	Delay time.Duration
	// FailureRate is the probability (0..1) that a request's task ends
	// failed instead of being worked on; Seed seeds the draw, so a run is
	// repeatable.
	FailureRate float64
	Seed        uint64
	// Hang: the agent never answers (until it shuts down); a streaming
	// caller sees submitted and working first.
	Hang bool
	// Malformed: the task completes with an answer that holds no decision.
	Malformed bool
	// Crash: the HTTP response starts and the connection is cut in the
	// middle of it, as when the process dies.
	Crash bool
	// NoSpans: the agent emits nothing, neither OTLP nor extension steps
	// (its calls still carry trace context).
	NoSpans bool
	// Tasks restricts the faults to requests about these task ids (the
	// green agent's task_id, e.g. "iclr2017-305").
	Tasks []string
}

// MalformedAnswer is what an agent with the Malformed fault answers.
const MalformedAnswer = "¯\\_(ツ)_/¯ {\"verdict\": maybe"

// errInjected is the failure the FailureRate fault answers with.
var errInjected = errors.New("injected failure (fault: failure rate)")

// validate checks the fault settings.
func (f *Faults) validate() error {
	if f.FailureRate < 0 || f.FailureRate > 1 {
		return fmt.Errorf("failure rate %g outside 0..1", f.FailureRate)
	}
	if f.Delay < 0 {
		return fmt.Errorf("negative delay %v", f.Delay)
	}
	return nil
}

// applies reports whether the faults concern a request about taskID.
func (f *Faults) applies(taskID string) bool {
	return len(f.Tasks) == 0 || slices.Contains(f.Tasks, taskID)
}

// faultState is the agent's draw for FailureRate.
type faultState struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newFaultState(seed uint64) *faultState {
	return &faultState{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// fail draws whether this request fails.
func (s *faultState) fail(rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.Float64() < rate
}

// crash answers the request by cutting the connection in the middle of a
// response: the headers and part of a chunked body, then the close.
func crash(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "crash fault: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s",
		4096, `{"jsonrpc":"2.0","result":{"task":{"id":"`)
	_ = conn.Close()
}

// bodyTaskID finds the green agent's task id in a JSON-RPC request body:
// the first "task_id" string anywhere in it. It is how the crash fault,
// which strikes before any A2A decoding, honours Faults.Tasks.
func bodyTaskID(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var find func(v any, depth int) string
	find = func(v any, depth int) string {
		if depth > 16 {
			return ""
		}
		switch x := v.(type) {
		case map[string]any:
			if id, ok := x["task_id"].(string); ok {
				return id
			}
			for _, k := range sortedKeys(x) {
				if id := find(x[k], depth+1); id != "" {
					return id
				}
			}
		case []any:
			for _, e := range x {
				if id := find(e, depth+1); id != "" {
					return id
				}
			}
		}
		return ""
	}
	return find(v, 0)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
