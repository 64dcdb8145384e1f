//go:build linux

package scicode_test

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// Issue 32: one participant must not be able to stop or fail another
// through the shared judge. The attacker here is a solver's answer, as a
// participant sends it; the others are honest answers (the reference code)
// of other tasks judged at the same time or right after, by the same
// processes.

// honestSteps are the steps whose reference code the honest tasks answer.
var honestSteps = []string{"3", "4", "47"}

// judgeIdle checks that every judge slot is free and no fork is left, and
// returns the judge processes.
func judgeIdle(t *testing.T, s *scicode.Scenario) []int {
	t.Helper()
	if n := s.JudgeSlotsHeld(); n != 0 {
		t.Errorf("%d judge slots held with no request in flight", n)
	}
	judges, forks, err := scicode.JudgeProcs()
	if err != nil {
		t.Fatal(err)
	}
	if len(forks) != 0 {
		t.Errorf("forks left with no request in flight: %v", forks)
	}
	if len(judges) > 8 {
		t.Errorf("%d judge processes, more than the judge's 8", len(judges))
	}
	return judges
}

// TestJudgeKilledOthersPass: while honest tasks are judged, the judge
// process working on an attacker's costly records is killed (as the
// kernel's OOM killer would, or a crash): the attacker's request ends with
// a verdict (the judge is tried once more in a new process), every honest
// answer passes, and afterwards no slot is held and no fork is left.
// Before issue 32 the killed request never returned and kept its slot.
func TestJudgeKilledOthersPass(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	p1, _ := split.Problem("1")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	attacked := make(chan struct{})
	wg.Go(func() {
		defer close(attacked)
		v, err := s.Test(ctx, referenceRequest(split, p1, 0, slowFlood(&p1.Steps[0])))
		switch {
		case err != nil:
			t.Errorf("the attacker's request: the runner's error %v, not a verdict", err)
		case v.Passed || v.Reason == scicode.ReasonRunner:
			t.Errorf("the attacker's request: %s (%s)", v.Reason, v.Detail)
		default:
			t.Logf("the attacker: %s: %s", v.Reason, v.Detail)
		}
	})
	// The killer: the judge process whose fork has spent a second of CPU
	// (an honest step costs the judge tens of milliseconds) is killed,
	// once.
	wg.Go(func() {
		for {
			judges, forks, _ := scicode.JudgeProcs()
			for _, pid := range forks {
				if scicode.CPUTicks(pid) > 100 {
					for _, j := range judges {
						if isParent(j, pid) {
							t.Logf("killing judge process %d (its fork %d works on the attacker's records)", j, pid)
							_ = syscall.Kill(j, syscall.SIGKILL)
							return
						}
					}
				}
			}
			select {
			case <-attacked:
				t.Error("the attacker's request ended before its judge could be killed")
				return
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	for _, id := range honestSteps {
		wg.Go(func() {
			p, _ := split.Problem(id)
			for round := range 2 {
				v, err := s.Test(ctx, referenceRequest(split, p, 0, p.Steps[0].Reference))
				if err != nil {
					t.Errorf("honest %s, round %d: %v", p.Steps[0].Number, round, err)
					continue
				}
				if !v.Passed {
					t.Errorf("honest %s, round %d: %s (%s)", p.Steps[0].Number, round, v.Reason, v.Detail)
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the requests did not end within 15 minutes")
	}
	judgeIdle(t, s)
}

// isParent says whether parent is pid's parent process.
func isParent(parent, pid int) bool {
	judges, forks, err := scicode.JudgeProcs()
	if err != nil || !slices.Contains(judges, parent) || !slices.Contains(forks, pid) {
		return false
	}
	return scicode.ParentPID(pid) == parent
}

// poisons are answers that make the judge allocate much or keep what it
// allocated, as participants did in issue 32, and routes of ours; each
// must cost the next request of the same judge process nothing.
var poisons = []struct {
	name, code string
}{
	// Named: a sparse DIA leaf of shape (1, K) counted as K numbers made
	// the comparison allocate K x K (3.75 GiB of address space).
	{"a forged DIA leaf of shape (1, 21500)", forgeRecords(`K = 21500
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'sparse': 'dia', 'shape': [1, K], 'data': 0, 'row': 1, 'col': 2}]}, [__npy(__np.ones(K)), __npy(__np.zeros(K, int)), __npy(__np.arange(K))])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`)(nil)},
	// Named: 63 MiB of nested empty lists cost 2.7 GiB resident, kept by
	// a reference cycle past the request.
	{"63 MiB of nested empty lists beside a failing value", forgeRecords(`junk = b'{"t":"junk","x":[' + b','.join([b'[]'] * 5_500_000) + b']}'
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'npy': 0}]}, [__npy(__np.zeros(7))]) + __frame({'t': 'end', 'case': 1})
for c in (2, 3):
    data += __frame({'t': 'begin', 'case': c}) + __frame({'t': 'assert', 'case': c, 'assertion': 0, 'leaves': [{'npy': 0}]}, [__npy(__np.zeros(7))]) + __frame({'t': 'end', 'case': c})
data += __frame({'t': 'done'}) + __frame(junk) * 4`)(nil)},
	// Ours: what stays within every bound and is built in full: 3.8 M
	// JSON values (several hundred MB in the judge), then a failing value
	// that held them by its traceback.
	{"3.8 M JSON values within the bounds, then a failing value", slowFlood(nil)},
	// Ours: a LIL matrix of 5 M rows (two Python lists a row: past the
	// bound, counted as 16 numbers each).
	{"a forged LIL leaf of 5 M rows", forgeRecords(`e = __npy(__np.zeros(0))
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'sparse': 'lil', 'shape': [5_000_000, 1], 'data': 0, 'row': 1, 'col': 2}]}, [e, __npy(__np.zeros(0, int)), __npy(__np.zeros(0, int))])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`)(nil)},
	// Ours: a dict of keys that all hash alike (quadratic to build).
	{"a dict of 200,000 colliding keys", forgeRecords(`P = 2**61 - 1
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'dict': [[{'int': str(1 + k * P)}, {'float': 0.0}] for k in range(200_000)]}]})
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`)(nil)},
}

// TestJudgePoisonReachesNoOne: each poison is judged, then honest answers
// by the same judge process (one request at a time: the process that
// served the poison serves the next): the honest answers pass, and the
// judge process's resident memory does not grow with what the poison
// made it allocate. Before issue 32 the nested lists left the process at
// 1.7 GB resident, and a DIA leaf made the next participant's correct
// answer invalid_result (MemoryError).
func TestJudgePoisonReachesNoOne(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	p1, _ := split.Problem("1")
	honest := func(when string) {
		t.Helper()
		for _, id := range append([]string{"1"}, honestSteps...) {
			p, _ := split.Problem(id)
			v, err := s.Test(t.Context(), referenceRequest(split, p, 0, p.Steps[0].Reference))
			if err != nil {
				t.Fatalf("honest %s %s: %v", p.Steps[0].Number, when, err)
			}
			if !v.Passed {
				t.Errorf("honest %s %s: %s (%s)", p.Steps[0].Number, when, v.Reason, v.Detail)
			}
		}
	}
	honest("first")
	judges := judgeIdle(t, s)
	rss := map[int]int64{}
	for _, pid := range judges {
		rss[pid] = scicode.ResidentKiB(pid)
	}
	for _, poison := range poisons {
		v, err := s.Test(t.Context(), referenceRequest(split, p1, 0, poison.code))
		if err != nil {
			t.Fatalf("%s: the runner's error %v, not a verdict", poison.name, err)
		}
		if v.Passed || v.Reason == scicode.ReasonRunner {
			t.Errorf("%s: %s (%s)", poison.name, v.Reason, v.Detail)
		}
		t.Logf("%s: %s: %s (judge: %.0f ms of CPU, fork's peak RSS %d KiB)", poison.name, v.Reason, v.Detail, v.JudgeCPUMS, v.JudgePeakRSSKiB)
		honest("after " + poison.name)
		for _, pid := range judgeIdle(t, s) {
			now := scicode.ResidentKiB(pid)
			before, seen := rss[pid]
			if !seen {
				rss[pid] = now
				continue
			}
			// The process reads each request's records (up to 64 MiB)
			// and frees them; it keeps nothing of what they made the
			// judge build.
			if now > before+64<<10 {
				t.Errorf("after %s: judge process %d holds %d KiB, %d KiB more than before", poison.name, pid, now, now-before)
			}
		}
	}
}
