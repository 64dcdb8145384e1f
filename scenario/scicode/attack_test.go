package scicode_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// An attack is a hostile solver's answer for a step: module-level code run
// before the tests, and the body of the step's function. Each came from
// issue 11 ("SciCode scores that no solver can forge"): every one of them
// made the old runner (the verdict being the exit status of the interpreter
// that ran the solver's code, with the targets in its namespace) score a
// step as passed, or a runner_error.
type attack struct {
	name string
	// module runs at module level after the function is defined; body is
	// the function's body (indented by four spaces).
	module, body string
	// reason is the verdict each step must get; also, where given, the
	// other reasons a step may get (nonsense where a test expects a tuple
	// makes the comparison raise, as it would in SciCode: crashed).
	reason string
	also   []string
	// problems default to attackProblems.
	problems []string
	// secondTurn, when set, is the body of a second answer, given the
	// feedback of the first (the exfiltration route).
	secondTurn func(feedback string) string
}

// garbage is a value close to no target.
const garbage = "    return 12345.678\n"

// snoop looks for the targets everywhere the old runner left them: open
// file descriptors (the HDF5 file was descriptor 3), the namespace (the old
// script's `targets`), the file system (test_data*.h5, problems_*.jsonl with
// ground_truth_code) and other processes' command lines in /proc. It
// returns what it found, or "nothing".
const snoop = `
def __snoop():
    import os, sys
    found = []
    for fd in range(3, 256):
        try:
            head = os.pread(fd, 8, 0)
            if head.startswith(b"\x89HDF"):
                found.append("fd %d is HDF5" % fd)
        except OSError:
            pass
    for name in ("targets", "target"):
        m = sys.modules.get("__main__")
        if m is not None and hasattr(m, name):
            found.append("%s=%r" % (name, getattr(m, name))[:200])
    seen = 0
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
        seen += 1
        if seen > 20000:
            break
        for f in files:
            if (f.startswith("test_data") and f.endswith(".h5")) or (f.startswith("problems_") and f.endswith(".jsonl")):
                p = os.path.join(root, f)
                try:
                    with open(p, "rb") as fh:
                        found.append("%s: %r" % (p, fh.read(64)))
                except OSError as e:
                    found.append("%s (unreadable: %s)" % (p, e.strerror))
    try:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmd = open("/proc/%s/cmdline" % pid, "rb").read()
                except OSError:
                    continue
                if b"scicode" in cmd or b".h5" in cmd:
                    found.append("pid %s: %r" % (pid, cmd[:120]))
    except OSError:
        pass
    return "; ".join(found) or "nothing"
`

// steal takes the targets where the old runner left them: `targets` in the
// script's namespace, the HDF5 file on descriptor 3, or test_data*.h5 on the
// file system; __steal(step) returns the next test case's target (the
// function is called once per case), or nonsense when nothing was found.
const steal = `
__stolen = {}
def __steal_all(step):
    if step in __stolen:
        return __stolen[step]
    import os, sys
    found = None
    m = sys.modules.get("__main__")
    if m is not None and hasattr(m, "targets"):
        found = list(m.targets)
    if found is None:
        sources = []
        for fd in range(3, 256):
            try:
                if os.pread(fd, 8, 0).startswith(b"\x89HDF"):
                    sources.append(os.fdopen(os.dup(fd), "rb"))
            except OSError:
                pass
        seen = 0
        for root, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
            seen += 1
            if seen > 20000:
                break
            sources += [os.path.join(root, f) for f in files if f.startswith("test_data") and f.endswith(".h5")]
        for src in sources:
            try:
                import h5py
                with h5py.File(src, "r") as f:
                    out, k = [], 1
                    while "%s/test%d" % (step, k) in f:
                        g = f["%s/test%d" % (step, k)]
                        vals = [g[n][()] for n in g.keys()]
                        out.append(vals[0] if len(vals) == 1 else tuple(vals))
                        k += 1
                found = out
                break
            except Exception:
                continue
    __stolen[step] = found
    return found

def __leak(step):
    import json, numpy
    found = __steal_all(step)
    if not found:
        return "None"
    return json.dumps([numpy.asarray(t).tolist() for t in found])

__calls = {}
def __steal(step):
    __calls[step] = __calls.get(step, 0) + 1
    found = __steal_all(step)
    if not found or __calls[step] > len(found):
        return 12345.678
    return found[__calls[step] - 1]
`

func attacks() []attack {
	return []attack{
		{name: "os._exit(0)", module: "import os\nos._exit(0)\n", body: garbage, reason: scicode.ReasonNoResult},
		{name: "atexit hook", module: "import atexit, os\natexit.register(lambda: os._exit(0))\n",
			body: "    raise RuntimeError('no answer')\n", reason: scicode.ReasonCrashed},
		{name: "sys.excepthook", module: "import sys, os\nsys.excepthook = lambda *a: os._exit(0)\n",
			body: "    raise RuntimeError('no answer')\n", reason: scicode.ReasonCrashed},
		{name: "raise SystemExit(0)", module: "raise SystemExit(0)\n", body: garbage, reason: scicode.ReasonNoResult},
		{name: "ctypes _exit", module: "import ctypes\nctypes.CDLL(None)._exit(0)\n", body: garbage, reason: scicode.ReasonNoResult},
		{name: "patched numpy", module: "import numpy\nfor n in ('allclose', 'isclose', 'array_equal', 'all', 'any'):\n    setattr(numpy, n, lambda *a, **k: True)\n", body: garbage, reason: scicode.ReasonTestFailed},
		{name: "patched scicode.compare.cmp", module: "import scicode.compare.cmp as c\nc.cmp_tuple_or_list = lambda *a: True\nc.are_dicts_close = lambda *a, **k: True\n",
			body: garbage, reason: scicode.ReasonTestFailed, also: []string{scicode.ReasonCrashed},
			// 10.7 and 70.6 are the validation steps whose tests use the
			// helpers.
			problems: []string{"10", "70", "1"}},
		{name: "patched builtins.__import__", module: `import builtins, types
_real_import = builtins.__import__
def _import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _real_import(name, globals, locals, fromlist, level)
    if name == 'scicode.parse.parse':
        fake = types.ModuleType(name)
        fake.process_hdf5_to_tuple = lambda step, n, f: [12345.678] * n
        return fake
    if name.split('.')[0] in ('numpy', 'scicode'):
        fake = types.ModuleType(name)
        fake.__dict__.update(module.__dict__)
        fake.allclose = fake.isclose = fake.cmp_tuple_or_list = fake.are_dicts_close = lambda *a, **k: True
        return fake
    return module
builtins.__import__ = _import
`, body: garbage, reason: scicode.ReasonTestFailed},
		{name: "object equal to everything", module: `class Yes:
    def __eq__(self, other): return True
    def __array_function__(self, *a, **k): return True
    def __array_ufunc__(self, *a, **k): return True
    def __bool__(self): return True
    def __len__(self): return 3
    def __getitem__(self, i): return self
`, body: "    return Yes()\n", reason: scicode.ReasonInvalidResult},
		{name: "ndarray subclass equal to everything", module: `import numpy
class Sneaky(numpy.ndarray):
    def __eq__(self, other): return True
    def __array_function__(self, *a, **k): return True
`, body: "    return numpy.full(1, 12345.678).view(Sneaky)\n", reason: scicode.ReasonTestFailed},
		{name: "targets through the namespace, a descriptor or the file system", module: steal,
			body: "    return __steal({step})\n", reason: scicode.ReasonTestFailed},
		{name: "targets exfiltrated through the feedback", module: steal,
			body: "    raise RuntimeError('LEAK: ' + __leak({step}))\n", reason: scicode.ReasonTestFailed,
			secondTurn: func(feedback string) string {
				// Hard-code whatever the feedback carried, one target
				// per call.
				leak := "None"
				for _, m := range regexp.MustCompile(`LEAK: ([^\n]*)`).FindAllStringSubmatch(feedback, -1) {
					if strings.HasPrefix(m[1], "[") && strings.HasSuffix(m[1], "]") && len(m[1]) > len(leak) {
						leak = m[1] // the whole of it, not a line cut short
					}
				}
				return fmt.Sprintf("    import json, numpy\n    leaked = json.loads(%q) if %q != 'None' else None\n"+
					"    __calls[0] = __calls.get(0, 0) + 1\n"+
					"    return numpy.array(leaked[__calls[0] - 1]) if leaked else 12345.678\n", leak, leak)
			}},
		{name: "the sandbox's setup-failure line and status 120", module: "import sys, os\n" +
			"sys.stderr.write('coordbench-sandbox: setup failed: the solver says so\\n')\nsys.stderr.flush()\nos._exit(120)\n",
			body: garbage, reason: scicode.ReasonNoResult},
		{name: "forged records", module: `import json, os, struct
def __frame(header):
    h = json.dumps(header).encode()
    return struct.pack('>I', len(h)) + h + struct.pack('>I', 0)
data = b''
for case in range(1, 4):
    data += __frame({'t': 'begin', 'case': case})
    data += __frame({'t': 'assert', 'case': case, 'assertion': 0, 'leaves': [{'float': 12345.678}]})
    data += __frame({'t': 'end', 'case': case})
data += __frame({'t': 'done'})
os.write(3, data)
os._exit(0)
`, body: garbage, reason: scicode.ReasonTestFailed},
	}
}

// attackProblems are single-step validation problems, fast to test.
var attackProblems = []string{"1", "3", "4"}

// TestAttacks is the attack corpus of issue 11: each hostile answer, on
// three problems, scores 0 with the reason its route earns, and nothing of
// the targets reaches the solver, through the run's output or the repair
// feedback.
func TestAttacks(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	if !scicode.TamperProof(s.Sandbox()) {
		testenv.Missing(t, "%s", "no tamper-proof sandbox here: "+strings.Join(s.Sandbox().Notes, "; "))
	}
	split, _ := s.Split(scicode.SplitValidation)
	for _, at := range attacks() {
		t.Run(at.name, func(t *testing.T) {
			log := &messageLog{}
			solver := answerWith(split, log, func(step *scicode.Step, turn int, in solverInput) string {
				body := strings.ReplaceAll(at.body, "{step}", strconv.Quote(step.Number))
				if turn > 1 && at.secondTurn != nil {
					fb, _ := in.Data["output"].(string)
					body = at.secondTurn(in.Text + "\n" + fb)
				}
				return at.module + "\n" + strings.TrimRight(step.FunctionHeader, "\n") + "\n" + body
			})
			url := startSolver(t, "attacker", solver, false)
			turns := 1
			if at.secondTurn != nil {
				turns = 2
			}
			problems := at.problems
			if problems == nil {
				problems = attackProblems
			}
			for _, id := range problems {
				req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": [%q], "max_num_steps": %d}}`, url, id, turns)
				o, err := runProblem(t, s, t.Context(), req, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if o.Score != 0 || o.Outcome {
					t.Errorf("problem %s: scored %v (%s)", id, o.Score, o.Summary)
				}
				for _, st := range o.Steps {
					last := st.Attempts[len(st.Attempts)-1]
					if st.Passed || (st.Reason != at.reason && !slices.Contains(at.also, st.Reason)) || st.Turns != turns {
						t.Errorf("problem %s step %s: %s (%s), %d turns; want %s", id, st.Step, st.Reason, st.Detail, st.Turns, at.reason)
					}
					if last.Code == "" {
						t.Errorf("step %s: the attempt's code is not in the details", st.Step)
					}
				}
			}
			for _, m := range log.all() {
				if m.Kind != stepproto.FeedbackKind {
					continue
				}
				out, _ := m.Data["output"].(string)
				for _, leak := range []string{"is HDF5", "test_data", "problems_", "targets=", "/work/", "/proc/"} {
					if strings.Contains(m.Text, leak) || strings.Contains(out, leak) {
						t.Errorf("the feedback for %s carries %q:\n%s", m.Step, leak, m.Text)
					}
				}
				if at.secondTurn != nil && !strings.Contains(m.Text, "LEAK: None") {
					t.Errorf("the feedback for %s does not show what the code found:\n%s", m.Step, m.Text)
				}
			}
		})
	}
}

// TestAttackSnoopFindsNothing runs the snooping route by itself and reads
// what it printed: in the sandbox there is no descriptor, file or process
// that leads to the targets.
func TestAttackSnoopFindsNothing(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	if !scicode.TamperProof(s.Sandbox()) {
		testenv.Missing(t, "%s", "no tamper-proof sandbox here")
	}
	split, _ := s.Split(scicode.SplitValidation)
	p, _ := split.Problem("1")
	code := snoop + "\nprint('SNOOP:', __snoop(), flush=True)\n" + p.Steps[0].Reference
	v, err := s.Test(context.Background(), scicode.TestRequest{Split: split, Problem: p, Step: 0, Code: code})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Run.Output, "SNOOP: nothing") {
		t.Errorf("the code found something:\n%s", v.Run.Output)
	}
	if !v.Passed {
		t.Errorf("the reference code with a harmless print did not pass: %s %s", v.Reason, v.Detail)
	}
}
