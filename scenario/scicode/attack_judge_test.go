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
}

// Classes of the judge's threat model (docs/scicode.md, "Threat model:
// the judge").
const (
	classStructure     = "structure and broadcasting"
	classExhaustion    = "judge resource exhaustion"
	classMisattributed = "failure misattribution"
	classEquivalent    = "equivalent structure (controls: must pass)"
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
		{classStructure, "an empty array that broadcasts against any target", true, "1", 0, returning(empty), scicode.ReasonTestFailed},
		{classStructure, "a tuple of empty arrays for a tuple target", true, "3", 0, returning(empty + ", " + empty), scicode.ReasonTestFailed},
		{classStructure, "a scalar where the target is an array", true, "1", 0, returning("0.0"), scicode.ReasonTestFailed},
		{classStructure, "True where the target is an array", true, "1", 0, returning("True"), scicode.ReasonTestFailed},
		{classStructure, "None", true, "47", 0, returning("None"), scicode.ReasonTestFailed},
		{classStructure, "the right value in a one-element array", false, "47", 0, wrapped("__np.array([__v])"), scicode.ReasonTestFailed},
		{classStructure, "the right values as a column", false, "1", 0, wrapped("__v[:, None]"), scicode.ReasonTestFailed},
		{classStructure, "the right values flattened", false, "4", 0, wrapped("__v.reshape(-1)"), scicode.ReasonTestFailed},
		{classStructure, "bools where the target is numeric", false, "38", 0, wrapped("__v != 0"), scicode.ReasonTestFailed},
		{classStructure, "None for one item of a tuple", false, "3", 0, wrapped("(__v[0], None)"), scicode.ReasonTestFailed},
		{classStructure, "a tuple one item longer", false, "51", 2, wrapped("tuple(__v) + (0.0,)"), scicode.ReasonTestFailed},
		{classStructure, "an item of a compared tuple flattened", false, "10", 6, wrapped("(__v[0].ravel(), __v[1])"), scicode.ReasonTestFailed},
		// Equivalent structures pass: the rule is the target's structure,
		// not the reference's Python types.
		{classEquivalent, "the right values as nested lists", false, "1", 0, wrapped("__v.tolist()"), scicode.ReasonPassed},
		{classEquivalent, "a tuple target answered with a list", false, "3", 0, wrapped("list(__v)"), scicode.ReasonPassed},
		{classEquivalent, "a 0-d array for a number", false, "47", 0, wrapped("__np.asarray(__v)"), scicode.ReasonPassed},
		// Judge resource exhaustion.
		{classExhaustion, "more numbers than the judge decodes (11 M)", true, "1", 0, returning("__np.zeros(11_000_000, dtype=__np.int8)"), scicode.ReasonInvalidResult},
		{classExhaustion, "a list nested 100 deep", true, "1", 0, returning("__import__('functools').reduce(lambda a, _: [a], range(100), 0.0)"), scicode.ReasonInvalidResult},
		{classExhaustion, "JSON nested 200,000 deep", true, "1", 0, forgeRecords(
			`data += __frame(b'{"t": "assert", "case": 1, "assertion": 0, "leaves": ' + b'[' * 200000 + b']' * 200000 + b'}')`), scicode.ReasonInvalidResult},
		{classExhaustion, "a flood of 200,001 records", true, "1", 0, forgeRecords(
			`data += __frame({'t': 'end', 'case': 7}) * 200000`), scicode.ReasonInvalidResult},
		{classExhaustion, "a matrix product of the recorded values amplified to 4e8 elements", true, "29", 2, returning("__np.zeros((2, 4, 20000))"), scicode.ReasonInvalidResult},
		{classExhaustion, "a sparse matrix of 10^12 elements in its dense form", false, "1", 0, forgeRecords(
			`e = __npy(__np.zeros(0))
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'sparse': 'coo', 'shape': [10**6, 10**6], 'data': 0, 'row': 1, 'col': 2}]}, [e, __npy(__np.zeros(0, int)), __npy(__np.zeros(0, int))])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult},
		{classExhaustion, "an .npy of 10^12 zero-size items", false, "1", 0, forgeRecords(
			`h = "{'descr': '|V0', 'fortran_order': False, 'shape': (1000000000000,), }"
h = h + ' ' * (63 - (len(h) + 10) % 64) + '\n'
blob = b'\x93NUMPY\x01\x00' + __struct.pack('<H', len(h)) + h.encode()
data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'npy': 0}]}, [blob])
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult},
		// Failure misattribution: a malformed record is the solver's.
		{classMisattributed, "an object array whose shape overflows 64 bits", false, "1", 0, forgeRecords(
			`data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'objarray': {'shape': [2**32, 2**32], 'items': []}}]})
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult},
		{classMisattributed, "a dict with an unhashable key", false, "1", 0, forgeRecords(
			`data += __frame({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'dict': [[{'list': []}, {'int': '1'}]]}]})
data += __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`), scicode.ReasonInvalidResult},
		{classMisattributed, "a truncated frame", true, "1", 0, forgeRecords(
			`data += __struct.pack('>I', 1000) + b'{"t": "ass'`), scicode.ReasonInvalidResult},
		{classMisattributed, "a value of a type numpy cannot compare (a string)", false, "1", 0, returning("'the answer'"), scicode.ReasonTestFailed},
		{classMisattributed, "a dict where the target is an array (are_dicts_close would raise)", false, "1", 0, returning("{'a': 1.0}"), scicode.ReasonTestFailed},
	}
}

// TestAttacksJudge runs the judge's red team: every route gets its
// verdict, none is the runner's, and the corpus holds at least 15 attacks,
// at least half of them named by nobody.
func TestAttacksJudge(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	routes := judgeRoutes()
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

// TestJudgeFloodDoesNotDelayOthers: while three tasks flood the judge with
// records that are costly to decode, a fourth task's reference answer is
// judged, passes, and finishes before its (generous) deadline.
func TestJudgeFloodDoesNotDelayOthers(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	split, _ := s.Split(scicode.SplitValidation)
	p1, _ := split.Problem("1")
	// Four records of a 1.4 M-item JSON list each (the header bound is 16
	// MiB): decoding each is seconds of the judge's CPU.
	flood := forgeRecords(`big = __json.dumps({'t': 'assert', 'case': 1, 'assertion': 0, 'leaves': [{'list': [{'float': 1.0}] * 1_400_000}]}).encode()
data += __frame(big) * 4 + __frame({'t': 'end', 'case': 1}) + __frame({'t': 'done'})`)(&p1.Steps[0])
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
