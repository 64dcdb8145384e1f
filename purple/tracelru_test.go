package purple

import (
	"testing"
)

// TestStepsBeyondStoreBound: an agent called more times than its span store
// holds traces (its bound, within storeMaxAge) still answers every call
// with its steps: the least recent traces make room, none is refused.
// Before, the store refused every trace past the 1,000th, and the steps of
// every later call vanished without an error (found by the soak test). The
// bound is lowered to 50 so the test makes 70 calls, not 1,020.
func TestStepsBeyondStoreBound(t *testing.T) {
	const bound = 50
	h := newHarness(t)
	sys := startSystem(t, h, AgentSpec{Options: Options{Name: "reviewer-2", storedTraces: bound}})
	agent := sys.Agent("reviewer-2")
	calls := bound + 20
	for i := range calls {
		// No parent span: each call is a trace of its own.
		reply, err := h.m.Send(t.Context(), reviewRequest(agent.URL(), "t-bound"))
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if reply.ExtensionSteps == 0 {
			t.Fatalf("call %d of %d returned no extension steps (store %+v)", i+1, calls, agent.tel.store.Stats())
		}
	}
	st := agent.tel.store.Stats()
	if st.Traces > bound || st.RejectedMaxTraces != 0 {
		t.Errorf("store holds %d traces (bound %d), refused %d spans for the trace limit", st.Traces, bound, st.RejectedMaxTraces)
	}
	if n := agent.tel.lru.evictedCount(); n < calls-bound {
		t.Errorf("%d traces evicted, want at least %d", n, calls-bound)
	}
}
