package scicode_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// The judge's red team (issue 21): answers that try to pass without
// computing, or to stall, exhaust or blame the judge. Each route is one
// answer for one validation step, tested as that step with every earlier
// step given its reference code, and must get the verdict it names. Routes
// marked named were named in the issue; the others are ours.
type judgeRoute struct {
	class, name string
	named       bool
	problem     string
	step        int // index in the problem's steps
	// code is the answer for the step.
	code   func(step *scicode.Step) string
	reason string
	// strictOnly: SciCode's own comparison passes the answer, and only
	// the judge's stricter rules refuse it; the verdict must say so.
	strictOnly bool
}

// Classes of the judge's threat model (docs/scicode.md, "Threat model:
// the judge").
const (
	classStructure     = "structure and broadcasting"
	classExhaustion    = "judge resource exhaustion"
	classMisattributed = "failure misattribution"
	classEquivalent    = "equivalent structure (controls: must pass)"
	classEvidence      = "no evidence of computation"
	classValues        = "values that are not plain"
)

// wrapped is the step's reference code with its function's value passed
// through expr (of __v, the reference's value): the right numbers in
// another structure.
func wrapped(expr string) func(step *scicode.Step) string {
	return func(step *scicode.Step) string {
		name := funcName(step)
		return step.Reference + "\nimport numpy as __np\n__real = " + name + "\ndef " + name +
			"(*__a, **__k):\n    __v = __real(*__a, **__k)\n    return " + expr + "\n"
	}
}

// returning is the step's function returning expr, computing nothing.
func returning(expr string) func(step *scicode.Step) string {
	return func(step *scicode.Step) string {
		return "import numpy as __np\n" + strings.TrimRight(step.FunctionHeader, "\n") + "\n    return " + expr + "\n"
	}
}

// forgeRecords writes frames of the record channel (descriptor 3) itself,
// in the harness's format, then ends the process; frames is Python that
// builds `data` with __frame(header, blobs) (header a dict, or the raw
// bytes of one).
func forgeRecords(frames string) func(step *scicode.Step) string {
	return func(*scicode.Step) string {
		return `import json as __json, os as __os, struct as __struct
import numpy as __np, io as __io
def __frame(header, blobs=()):
    h = header if isinstance(header, bytes) else __json.dumps(header).encode()
    out = __struct.pack('>I', len(h)) + h + __struct.pack('>I', len(blobs))
    for b in blobs:
        out += __struct.pack('>Q', len(b)) + b
    return out
def __npy(arr):
    buf = __io.BytesIO()
    __np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()
data = __frame({'t': 'begin', 'case': 1})
` + frames + `
view = memoryview(data)
while view:
    view = view[__os.write(3, view):]
__os._exit(0)
`
	}
}

func judgeRoutes() []judgeRoute {
	empty := "__np.zeros((0,) + (1,) * 8)"
	return []judgeRoute{
		// Structure and broadcasting.
		{classStructure, "an empty array that broadcasts against any target", true, "1", 0, returning(empty), scicode.ReasonTestFailed, false},
		{classStructure, "a tuple of empty arrays for a tuple target", true, "3", 0, returning(empty + ", " + empty), scicode.ReasonTestFailed, false},
		{classStructure, "a scalar where the target is an array", true, "1", 0, returning("0.0"), scicode.ReasonTestFailed, false},
		{classStructure, "True where the target is an array", true, "1", 0, returning("True"), scicode.ReasonTestFailed, false},
		{classStructure, "None", true, "47", 0, returning("None"), scicode.ReasonTestFailed, false},
		{classStructure, "the right value in a one-element array", false, "47", 0, wrapped("__np.array([__v])"), scicode.ReasonTestFailed, false},
		{classStructure, "the right values as a column", false, "1", 0, wrapped("__v[:, None]"), scicode.ReasonTestFailed, false},
		{classStructure, "the right values flattened", false, "4", 0, wrapped("__v.reshape(-1)"), scicode.ReasonTestFailed, false},
		{classStructure, "bools where the target is numeric", false, "38", 0, wrapped("__v != 0"), scicode.ReasonTestFailed, false},
		{classStructure, "None for one item of a tuple", false, "3", 0, wrapped("(__v[0], None)"), scicode.ReasonTestFailed, false},
		{classStructure, "a tuple one item longer", false, "51", 2, wrapped("tuple(__v) + (0.0,)"), scicode.ReasonTestFailed, false},
		{classStructure, "an item of a compared tuple flattened", false, "10", 6, wrapped("(__v[0].ravel(), __v[1])"), scicode.ReasonTestFailed, false},
		// Equivalent structures pass: the rule is the target's structure,
		// not the reference's Python types.
		{classEquivalent, "the right values as nested lists", false, "1", 0, wrapped("__v.tolist()"), scicode.ReasonPassed, false},
		{classEquivalent, "a tuple target answered with a list", false, "3", 0, wrapped("list(__v)"), scicode.ReasonPassed, false},
		{classEquivalent, "a 0-d array for a number", false, "47", 0, wrapped("__np.asarray(__v)"), scicode.ReasonPassed, false},
		// Judge resource exhaustion.
		{classExhaustion, "more numbers than the judge decodes (11 M)", true, "1", 0, returning("__np.zeros(11_000_000, dtype=__np.int8)"), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a list nested 100 deep", true, "1", 0, returning("__import__('functools').reduce(lambda a, _: [a], range(100), 0.0)"), scicode.ReasonInvalidResult, false},
		{classExhaustion, "JSON nested 200,000 deep", true, "1", 0, forgeRecords(
			`data += __frame(b'{"t": "assert", "case": 1, "assertion": 0, "leaves": ' + b'[' * 200000 + b']' * 200000 + b'}')`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a flood of 200,001 records", true, "1", 0, forgeRecords(
			`data += __frame({'t': 'end', 'case': 7}) * 200000`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a matrix product of the recorded values amplified to 4e8 elements", true, "29", 2, returning("__np.zeros((2, 4, 20000))"), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a sparse matrix of 10^12 elements in its dense form", false, "1", 0, forgeRecords(
			`e = __npy(__np.zeros(0))
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'sparse': 'coo', 'shape': [10**6, 10**6], 'data': 0, 'row': 1, 'col': 2}]}, [e, __npy(__np.zeros(0, int)), __npy(__np.zeros(0, int))])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "an .npy of 10^12 zero-size items", false, "1", 0, forgeRecords(
			`h = "{'descr': '|V0', 'fortran_order': False, 'shape': (1000000000000,), }"
h = h + ' ' * (63 - (len(h) + 10) % 64) + '\n'
blob = b'\x93NUMPY\x01\x00' + __struct.pack('<H', len(h)) + h.encode()
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'npy': 0}]}, [blob])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult, false},
		// Failure misattribution: a malformed record is the solver's.
		{classMisattributed, "an object array whose shape overflows 64 bits", false, "1", 0, forgeRecords(
			`data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'objarray': {'shape': [2**32, 2**32], 'items': []}}]})
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a dict with an unhashable key", false, "1", 0, forgeRecords(
			`data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'dict': [[{'list': []}, {'int': '1'}]]}]})
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a truncated frame", true, "1", 0, forgeRecords(
			`data += __struct.pack('>I', 1000) + b'{"t": "ass'`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a value of a type numpy cannot compare (a string)", false, "1", 0, returning("'the answer'"), scicode.ReasonTestFailed, false},
		{classMisattributed, "a dict where the target is an array (are_dicts_close would raise)", false, "1", 0, returning("{'a': 1.0}"), scicode.ReasonTestFailed, false},
	}
}

// judgeRoutes32 are issue 32's routes and ours beside them: a pass
// without evidence of a computation where SciCode's own comparison is
// weaker than equality, values that make the judge allocate or work
// beyond what they are, records the judge's code failed on (and blamed
// the harness for), and values that are not plain.
func judgeRoutes32() []judgeRoute {
	forgedObserve := func(value string) func(*scicode.Step) string {
		return func(step *scicode.Step) string {
			return step.Reference + `
import coordbench_harness as __h
__real_observe = __h.observe
def __forged(case, index, kind, thunk):
    if kind == 'value':
        __h._write({'t': 'observe', 'case': case, 'index': index, 'kind': kind, 'value': ` + value + `})
    else:
        __real_observe(case, index, kind, thunk)
__h.observe = __forged
`
		}
	}
	leaf := func(value string, blobs string) func(*scicode.Step) string {
		return forgeRecords(`data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [` + value + `]}, [` + blobs + `])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`)
	}
	return []judgeRoute{
		// Where SciCode's comparison is weaker than equality: 10.6's
		// are_equivalent (each row is some row of the target) and 78.2's
		// properties.
		{classEvidence, "nk copies of one g-point (10.6)", true, "10", 5, wrapped("__np.repeat(__v[:1], len(__v), axis=0)"), scicode.ReasonTestFailed, true},
		{classEvidence, "the g-points with one of them twice in place of another (10.6)", false, "10", 5, wrapped("__np.concatenate([__v[:-1], __v[:1]])"), scicode.ReasonTestFailed, true},
		{classEquivalent, "the g-points in another order (10.6)", false, "10", 5, wrapped("__v[::-1]"), scicode.ReasonPassed, false},
		{classEvidence, "a constant one-row trajectory (78.2)", true, "78", 1, func(*scicode.Step) string { return rk4Variant("traj = np.array([[0.05, 0.0]])") }, scicode.ReasonTestFailed, true},
		{classEvidence, "the harmonic final state alone (78.2)", false, "78", 1, func(*scicode.Step) string {
			return rk4Variant("traj = np.array([[state[0] * np.cos(np.sqrt(g / L) * n * dt), 0.0]])")
		}, scicode.ReasonTestFailed, true},
		{classEvidence, "the real trajectory transposed (78.2)", false, "78", 1, wrapped("__v.T"), scicode.ReasonTestFailed, true},
		// Judge resource exhaustion.
		{classExhaustion, "a forged DIA leaf of shape (1, 21500) (K x K numbers in its storage)", true, "1", 0, leaf(
			`{'sparse': 'dia', 'shape': [1, 21500], 'data': 0, 'row': 1, 'col': 2}`, `__npy(__np.ones(21500)), __npy(__np.zeros(21500, int)), __npy(__np.arange(21500))`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "63 MiB of nested empty lists", true, "1", 0, forgeRecords(
			`data += __frame(b'{"t":"junk","x":[' + b','.join([b'[]'] * 5_500_000) + b']}') * 4`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a forged LIL leaf of 5 M rows", false, "1", 0, leaf(
			`{'sparse': 'lil', 'shape': [5_000_000, 1], 'data': 0, 'row': 1, 'col': 2}`, `__npy(__np.zeros(0)), __npy(__np.zeros(0, int)), __npy(__np.zeros(0, int))`), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a dict of 200,000 keys that share one hash", false, "1", 0, leaf(
			`{'dict': [[{'int': str(1 + k * (2**61 - 1))}, {'float': 0.0}] for k in range(200_000)]}`, ``), scicode.ReasonInvalidResult, false},
		{classExhaustion, "a list that contains itself", false, "1", 0, returning("(lambda l: (l.append(l), l)[1])([])"), scicode.ReasonInvalidResult, false},
		{classExhaustion, "an endless generator", false, "1", 0, returning("(x for x in __import__('itertools').count())"), scicode.ReasonInvalidResult, false},
		// Failures the judge's code met on the solver's records, once
		// blamed on the harness (runner_error).
		{classMisattributed, "a forged observe record of shape [0, 2**64] (78.2)", true, "78", 1, forgedObserve(
			`{'objarray': {'shape': [0, 2**64], 'items': []}}`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a forged observe record of a dict with colliding keys (78.2)", false, "78", 1, forgedObserve(
			`{'dict': [[{'int': str(1 + k * (2**61 - 1))}, {'float': 0.0}] for k in range(1000)]}`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a forged error record with a 16 MB traceback", false, "1", 0, forgeRecords(
			`data += __frame({'t': 'error', 'case': 1, 'exception': 'E' * 100_000, 'traceback': 'x' * 16_000_000})`), scicode.ReasonCrashed, false},
		{classMisattributed, "an .npy holding a pickle", false, "1", 0, leaf(`{'npy': 0}`, `(lambda b: (__np.save(b, __np.array([print], dtype=object), allow_pickle=True), b.getvalue())[1])(__io.BytesIO())`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "a sparse leaf with an entry outside its shape", false, "1", 0, leaf(
			`{'sparse': 'coo', 'shape': [7, 1], 'data': 0, 'row': 1, 'col': 2}`, `__npy(__np.ones(1)), __npy(__np.array([10**12])), __npy(__np.zeros(1, int))`), scicode.ReasonInvalidResult, false},
		{classMisattributed, "an integer of 4,999 digits", false, "1", 0, leaf(`{'int': '9' * 4999}`, ``), scicode.ReasonInvalidResult, false},
		// Values of the right numbers that are not plain numbers.
		{classValues, "the right values viewed as datetime64", false, "1", 0, wrapped("__v.view('datetime64[ns]')"), scicode.ReasonTestFailed, false},
		{classValues, "the right values in a structured array", false, "1", 0, wrapped("__np.array([(x,) for x in __v], dtype=[('x', float)])"), scicode.ReasonTestFailed, false},
		{classValues, "the right values as strings", false, "1", 0, wrapped("__v.astype(str)"), scicode.ReasonTestFailed, false},
		{classValues, "the right values in an object array", false, "1", 0, wrapped("__v.astype(object)"), scicode.ReasonTestFailed, false},
	}
}

// TestAttacksJudge runs the judge's red team: every route gets its
// verdict, none is the runner's, and the corpus holds at least 15 attacks,
// at least half of them named by nobody.
func TestAttacksJudge(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	routes := append(judgeRoutes(), judgeRoutes32()...)
	attacks, ours := 0, 0
	for _, r := range routes {
		if r.class != classEquivalent {
			attacks++
			if !r.named {
				ours++
			}
		}
	}
	if attacks < 15 || 2*ours < attacks {
		t.Errorf("%d attack routes, %d of them ours: want at least 15, half ours", attacks, ours)
	}
	for _, r := range routes {
		t.Run(r.class+"/"+r.name, func(t *testing.T) {
			p, ok := split.Problem(r.problem)
			if !ok {
				t.Fatalf("no problem %s", r.problem)
			}
			step := &p.Steps[r.step]
			v, err := s.Test(t.Context(), referenceRequest(split, p, r.step, r.code(step)))
			if err != nil {
				t.Fatalf("step %s: the runner's error (%v), not a verdict", step.Number, err)
			}
			if v.Reason != r.reason || v.Passed != (r.reason == scicode.ReasonPassed) {
				t.Errorf("step %s: %s (%s), want %s\n%s", step.Number, v.Reason, v.Detail, r.reason, tail(v.Run.Output, 1500))
			}
			t.Logf("step %s: %s: %s (judge: %.0f ms, %.0f ms of CPU, peak RSS %d KiB)", step.Number, v.Reason, v.Detail, v.JudgeMS, v.JudgeCPUMS, v.JudgePeakRSSKiB)
			if r.reason == scicode.ReasonTestFailed && r.class == classStructure && !strings.Contains(v.Detail, "structure") {
				t.Errorf("the reason does not say the structure differs: %s", v.Detail)
			}
			if r.strictOnly && !v.StrictOnly {
				t.Errorf("the verdict does not say that SciCode's own comparison passes the answer")
			}
			if v.Passed && v.StrictOnly {
				t.Errorf("a pass marked strict_only")
			}
			// Whatever the records hold, the verdict's text stays short.
			if len(v.Detail) > 2000 {
				t.Errorf("a detail of %d bytes", len(v.Detail))
			}
		})
	}
}

// placeholders are values of the right kind with no content, as a
// participant that computes nothing returns them.
var placeholders = []string{"__np.zeros((0,) + (1,) * 8)", "0.0", "True", "None", "__np.zeros(1)"}

var returnNames = regexp.MustCompile(`^\s*return\s+(.*?)\s*$`)

// hollowAnswer is the step's function returning the placeholder once per
// name of its return line.
func hollowAnswer(step *scicode.Step, placeholder string) string {
	n := 1
	if m := returnNames.FindStringSubmatch(strings.TrimSpace(step.ReturnLine)); m != nil {
		n = len(strings.Split(m[1], ","))
	}
	vals := make([]string, n)
	for i := range vals {
		vals[i] = placeholder
	}
	return returning(strings.Join(vals, ", "))(step)
}

// constantTargets are the validation steps whose every target is one
// constant: the constant is their right answer on every test input, and no
// judge can tell it from a computed one (docs/scicode.md lists them).
var constantTargets = map[string]string{"10.10": "0.0"}

// TestHollowAnswersPassNothing: answers that compute nothing, in each
// placeholder, pass no validation sub-step (issue 21: before the structure
// rule the empty array alone passed 40 of 50).
func TestHollowAnswersPassNothing(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	split, _ := s.Split(scicode.SplitValidation)
	type job struct {
		step        *scicode.Step
		p           *scicode.Problem
		k           int
		placeholder string
	}
	jobs := make(chan job)
	var mu sync.Mutex
	passed := map[string][]string{}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for j := range jobs {
				v, err := s.Test(t.Context(), referenceRequest(split, j.p, j.k, hollowAnswer(j.step, j.placeholder)))
				switch {
				case err != nil:
					t.Errorf("step %s (%s): %v", j.step.Number, j.placeholder, err)
				case v.Passed && constantTargets[j.step.Number] != j.placeholder:
					mu.Lock()
					passed[j.step.Number] = append(passed[j.step.Number], j.placeholder)
					mu.Unlock()
				case v.Reason == scicode.ReasonRunner:
					t.Errorf("step %s (%s): runner_error", j.step.Number, j.placeholder)
				}
			}
		})
	}
	for _, p := range split.Problems {
		for k := range p.Steps {
			for _, ph := range placeholders {
				jobs <- job{&p.Steps[k], p, k, ph}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if len(passed) > 0 {
		t.Errorf("%d sub-steps pass with answers that compute nothing: %v", len(passed), passed)
	}
}

// slowFlood is an answer whose records cost the judge seconds to decode
// within every bound (two frames of 950,000 JSON numbers: 3.8 M JSON
// values of the 4 M allowed, 15 MiB a frame of the 16 allowed) and then
// fail: a list where 1.1's target is an array of 7.
var slowFlood = forgeRecords(`big = __json.dumps({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'list': [{'float': 1.0}] * 950_000}]}, separators=(',', ':')).encode()
big2 = big.replace(b'"case":1', b'"case":2')
data += __frame(big) + __frame({'t': 'end', 'case': 1})
data += __frame({'t': 'begin', 'case': 2}) + __frame(big2) + __frame({'t': 'end', 'case': 2})
data += __frame({'t': 'begin', 'case': 3}) + __frame({'t': 'assert', 'case': 3, 'assertion': 0, 'leaves': [{'float': 1.0}]})
data += __frame({'t': 'end', 'case': 3}) + __frame({'t': 'done'})`)

// TestJudgeFloodDoesNotDelayOthers: while three tasks flood the judge with
// records that are costly to decode, a fourth task's reference answer is
// judged, passes, and finishes before its (generous) deadline.
func TestJudgeFloodDoesNotDelayOthers(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	p1, _ := split.Problem("1")
	// Records that cost the judge seconds to decode within every bound
	// (slowFlood: 3.8 M JSON values). Before issue 32 this test sent
	// frames past the judge's 16 MiB frame bound, refused unread.
	flood := slowFlood(&p1.Steps[0])
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				v, err := s.Test(ctx, referenceRequest(split, p1, 0, flood))
				if err == nil && v.Passed {
					t.Errorf("the flood passed")
				}
			}
		})
	}
	p4, _ := split.Problem("4")
	deadline, stop := context.WithTimeout(t.Context(), 10*time.Minute)
	defer stop()
	for i := range 3 {
		v, err := s.Test(deadline, referenceRequest(split, p4, 0, p4.Steps[0].Reference))
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if !v.Passed {
			t.Errorf("round %d: the reference code got %s (%s) beside the flood", i, v.Reason, v.Detail)
		}
	}
	cancel()
	wg.Wait()
}
