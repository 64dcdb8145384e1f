package scicode_test

import (
	"context"
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

// The sandbox's red team (issue 21, docs/scicode.md "Threat model: the
// sandbox"): routes a hostile solver takes to a score it did not earn from
// inside the sandbox, grouped by class. Each is a solver's answer run
// through the protocol; each must score 0 with the reason given. The
// classes and the principle that defeats each:
//
//   - introspection: the sandbox's copy of a test case holds the solver's
//     inputs and nothing else (judge_pass.py prune), so the caller's frame,
//     every frame, linecache, the code objects, gc and the script on disk
//     show inputs only;
//   - feedback as an oracle: a run that did not complete fails as such
//     whatever its values, and where a target is a boolean the feedback
//     names no case;
//   - descriptors and inherited state: the boot script closes every
//     descriptor but 0-3 before the code runs, the environment is built,
//     not inherited, and no host name shows;
//   - run-wide resource exhaustion: a cgroup per run bounds its processes
//     together;
//   - failure misattribution: nothing the code does reaches the setup
//     channel or the judge, so its failures are its own.
//
// Routes marked "named" were named in the issue; the others are ours.

// sandboxAttack is one route.
type sandboxAttack struct {
	class, name string
	named       bool
	// module runs at module level after the step's function is defined;
	// body is the function's body ({step} is the step's number, quoted).
	module, body string
	reason       string
	also         []string
	limit        string
	problems     []string
	opts         sandbox.Options
	// secondTurn, when set, is the body of the second answer, given the
	// first turn's feedback, and secondModule its module-level code.
	secondTurn   func(feedback string) string
	secondModule string
	// checkFeedback checks every feedback message of the route.
	checkFeedback func(t *testing.T, step, text string)
}

// stealFrom are helpers that look for a value to return where each
// introspection route looks: each returns the first float or array it
// finds that the solver was not handed, else None.
const stealFrom = `
import sys as __sys, gc as __gc, linecache as __lc, re as __re, inspect as __inspect
import numpy as __np

def __values(d, skip):
    out = []
    for k, v in list(d.items()):
        if k.startswith("__") or any(v is s for s in skip):
            continue
        if isinstance(v, (float, __np.ndarray)) and not isinstance(v, bool):
            out.append((k, v))
    return out

def __prefer(found):
    for key in ("expected", "ref", "target", "answer", "result"):
        for k, v in found:
            if key in k.lower():
                return v
    return found[-1][1] if found else None

def __from_caller(args):
    # 0 this, 1 __steal, 2 the step's function, 3 the test case
    return __prefer(__values(__sys._getframe(3).f_locals, args))

def __from_frames(args):
    found = []
    f = __sys._getframe(2)
    while f is not None:
        found += __values(f.f_locals, args)
        if f.f_globals is not f.f_locals:
            found += __values(f.f_globals, args)
        f = f.f_back
    return __prefer(found)

def __from_source(args):
    nums = []
    for name, entry in list(__lc.cache.items()):
        if name.startswith("<test case"):
            text = "".join(entry[2])
            for m in __re.finditer(r"(expected\w*|ref\d*|target\w*)\s*=\s*(.+)", text):
                try:
                    return eval(m.group(2), {"np": __np})
                except Exception:
                    pass
            nums += [float(x) for x in __re.findall(r"-?\d+\.\d+", text)]
    return nums[-1] if nums else None

def __from_code_objects(args):
    consts = []
    for o in __gc.get_objects():
        if type(o).__name__ == "code" and o.co_filename.startswith("<test case"):
            consts += [c for c in o.co_consts if isinstance(c, float)]
    return consts[-1] if consts else None

def __from_script(args):
    try:
        text = open(__sys.argv[0]).read()
    except OSError:
        text = open(__inspect.getfile(__sys.modules["__main__"])).read()
    for m in __re.finditer(r"(expected_output|ref\d)\s*=\s*([^\\n']+)", text):
        try:
            return eval(m.group(2).replace("\\\\n", ""), {"np": __np})
        except Exception:
            pass
    return None

def __steal(route, args):
    try:
        v = route(args)
    except Exception:
        v = None
    return 12345.678 if v is None else v
`

// stealBody returns the value a route finds, from the step's function.
func stealBody(route string) string {
	return "    return __steal(" + route + ", list(locals().values()))\n"
}

// noCaseIndex checks that feedback names no case.
func noCaseIndex(t *testing.T, step, text string) {
	if regexp.MustCompile(`test case \d`).MatchString(text) {
		t.Errorf("the feedback for %s names a case although a target is a boolean:\n%s", step, text)
	}
}

func sandboxAttacks() []sandboxAttack {
	const (
		introspection = "introspection of the test's own frames and sources"
		oracle        = "feedback as an oracle"
		descriptors   = "descriptors and inherited state"
		exhaustion    = "run-wide resource exhaustion"
		misattributed = "failure misattribution"
	)
	// 78's first step computes its expected output in the case itself;
	// 10's cases carried reference constants (ref1 = -1.74756).
	frameProblems := []string{"78"}
	tight := sandbox.Options{Timeout: 300 * time.Second, MemoryBytes: 1 << 30, MaxProcesses: 32, CPUSeconds: 20}
	failed := []string{scicode.ReasonCrashed, scicode.ReasonInvalidResult}
	return []sandboxAttack{
		// ---- introspection
		{class: introspection, name: "the caller's frame locals (sys._getframe(1).f_locals)", named: true,
			module: stealFrom, body: stealBody("__from_caller"), reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},
		{class: introspection, name: "every frame's locals and globals (inspect.stack)", module: stealFrom,
			body: stealBody("__from_frames"), reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},
		{class: introspection, name: "the case's source in linecache", named: true, module: stealFrom,
			body: stealBody("__from_source"), reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},
		{class: introspection, name: "constants of the case's code objects (gc.get_objects)", named: true, module: stealFrom,
			body: stealBody("__from_code_objects"), reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},
		{class: introspection, name: "the script on disk (sys.argv[0], __file__)", named: true, module: stealFrom,
			body: stealBody("__from_script"), reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},
		{class: introspection, name: "the harness's own arguments (run_cases' cases, the record function's closure)",
			module: `import sys as __sys
def __harness_cases():
    f = __sys._getframe(0)
    while f is not None:
        if "cases" in f.f_locals and isinstance(f.f_locals["cases"], list):
            return "".join(src for _, src in f.f_locals["cases"])
        f = f.f_back
    return ""
`, body: "    text = __harness_cases()\n    return 12345.678 if 'expected' not in text else float(len(text))\n",
			reason: scicode.ReasonTestFailed, also: failed, problems: frameProblems},

		// ---- feedback as an oracle
		{class: oracle, name: "which case the feedback names, for a boolean target", named: true,
			body: "    return None\n", reason: scicode.ReasonTestFailed, also: failed, problems: []string{"29"},
			checkFeedback: func(t *testing.T, step, text string) {
				if step == "29.3" {
					noCaseIndex(t, step, text)
				}
			}},
		{class: oracle, name: "stopping in case 2 to learn whether case 1 held (right answer first)",
			module: rightThenStop("os._exit(0)"), body: "    pass\n", reason: scicode.ReasonNoResult, problems: []string{"1", "3"}},
		{class: oracle, name: "stopping in case 2 to learn whether case 1 held (wrong answer first)",
			module: "__n = {}\n",
			body:   "    import os\n    __n[0] = __n.get(0, 0) + 1\n    if __n[0] > 1:\n        os._exit(0)\n    return 12345.678\n",
			reason: scicode.ReasonNoResult, problems: []string{"1", "3"}},
		{class: oracle, name: "aborted (SIGABRT) after a right first case (no done)",
			module: rightThenStop("os.abort()"), body: "    pass\n",
			reason: scicode.ReasonNoResult, also: []string{scicode.ReasonCrashed}, problems: []string{"1"}},
		{class: oracle, name: "the comparison's error message (a value of another shape)", named: true,
			body: "    import numpy\n    return numpy.zeros(1000)\n", reason: scicode.ReasonTestFailed, also: failed, problems: []string{"1", "29"},
			checkFeedback: func(t *testing.T, step, text string) {
				if step == "29.3" {
					noCaseIndex(t, step, text)
				}
			}},

		// ---- descriptors and inherited state
		{class: descriptors, name: "descriptors left open by the runner's process", named: true,
			module: `import os
__fds = []
for __fd in range(4, 4096):
    try:
        os.fstat(__fd)
        __fds.append(__fd)
    except OSError:
        pass
if __fds:
    raise SystemExit("LEAKED DESCRIPTORS %r" % __fds)
`, body: "    return 12345.678\n", reason: scicode.ReasonTestFailed, problems: []string{"1"}},
		{class: descriptors, name: "writing a setup failure on the setup and gate descriptors",
			module: `import os
for __fd in (4, 5):
    try:
        os.write(__fd, b"setup failed: the solver says so\n")
    except OSError:
        pass
os._exit(120)
`, body: "    return 12345.678\n", reason: scicode.ReasonNoResult, problems: []string{"1"}},
		{class: descriptors, name: "host paths in mountinfo, the cgroup file and the hostname, raised into the feedback", named: true,
			module: `import socket
raise RuntimeError("HOST " + open("/proc/self/mountinfo").read().replace("\n", " ") + " | " +
                   open("/proc/self/cgroup").read().replace("\n", " ") + " | " + socket.gethostname())
`, body: "    return 12345.678\n", reason: scicode.ReasonCrashed, problems: []string{"1"},
			checkFeedback: func(t *testing.T, step, text string) {
				for _, leak := range []string{"coordbench-sandbox-", "/tmp/", "process_api", "/work/"} {
					if strings.Contains(text, leak) {
						t.Errorf("the feedback for %s carries %q:\n%s", step, leak, text)
					}
				}
			}},
		{class: descriptors, name: "a daemon left by the first turn, asked by the second",
			module: `import os, time
if not os.path.exists("/sandbox/work/.daemon"):
    open("/sandbox/work/.daemon", "w").write("x")
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
`, body: "    import os\n    return float(len([p for p in os.listdir('/proc') if p.isdigit()]) * 1000 + 0.5)\n",
			reason: scicode.ReasonTestFailed, problems: []string{"1"},
			secondModule: "# the second turn forks nothing\n",
			secondTurn: func(string) string {
				return "    import os\n    others = [p for p in os.listdir('/proc') if p.isdigit() and p != '1' and p != str(os.getpid())]\n" +
					"    if others or os.path.exists('/sandbox/work/.daemon'):\n        raise RuntimeError('STATE LEFT: %r' % others)\n    return 12345.678\n"
			},
			checkFeedback: func(t *testing.T, step, text string) {
				if strings.Contains(text, "STATE LEFT") {
					t.Errorf("the second turn found the first turn's state:\n%s", text)
				}
			}},

		// ---- run-wide resource exhaustion
		{class: exhaustion, name: "fork and allocate: four children of 400 MiB under a budget of 1 GiB", named: true,
			module: forkAllocate, body: "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitMemory,
			problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "threads past the process count", named: true,
			module: "import threading, time\nfor __i in range(200):\n    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
			body:   "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitProcesses, problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "many small processes, each under the CPU limit, together over it", named: true,
			module: `import os, time
for __i in range(8):
    if os.fork() == 0:
        while time.process_time() < 4:
            pass
        os._exit(0)
for __i in range(8):
    os.wait()
`, body: "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitCPU, problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "the work directory filled, then memory on top (tmpfs pages count)", named: true,
			module: `import os
for __k in range(4):
    with open("/sandbox/work/fill%d" % __k, "wb") as f:
        for __i in range(50):
            f.write(b"x" * (1 << 20))
__hog = []
for __i in range(40):
    __hog.append(bytearray(25 << 20))
    for __j in range(0, len(__hog[-1]), 4096):
        __hog[-1][__j] = 1
`, body: "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitMemory, problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "pipes grown to their largest and filled", named: true,
			module: `import os, fcntl
__pipes = []
try:
    while True:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass
        __pipes.append((r, w))
except OSError:
    pass
`, body: "    return 12345.678\n", reason: scicode.ReasonTestFailed, also: []string{scicode.ReasonLimit}, problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "a fork bomb of allocating children",
			module: `import os
__blocks = []
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        __blocks.append(bytearray(64 << 20))
        for __j in range(0, len(__blocks[-1]), 4096):
            __blocks[-1][__j] = 1
`, body: "    return 12345.678\n", reason: scicode.ReasonLimit, problems: []string{"1"}, opts: tight,
			// The bomb stops forking at the first refused fork, and which
			// bound refuses it first (the cgroup's process count, which the
			// runner sees, or RLIMIT_NPROC or memory, which it does not) is a
			// race; when the runner saw none, the parent goes on and returns
			// its float, judged by structure. The run stays within its
			// budget either way (TestSandboxPeakMemory) and scores 0.
			also: []string{scicode.ReasonTestFailed, scicode.ReasonCrashed}},

		{class: exhaustion, name: "memory held in a memfd, outside any address space",
			module: "import os\n__chunk = b'x' * (16 << 20)\n__fds = []\nfor __i in range(25):\n    __fds.append(os.memfd_create('hoard'))\n" +
				"    for __j in range(3):\n        os.write(__fds[-1], __chunk)\n",
			body: "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitMemory, problems: []string{"1"}, opts: tight},
		{class: exhaustion, name: "CPU spent by children never reaped",
			module: "import os, time\nfor __i in range(8):\n    if os.fork() == 0:\n        while time.process_time() < 4:\n            pass\n        os._exit(0)\ntime.sleep(600)\n",
			body:   "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitCPU, problems: []string{"1"}, opts: tight},

		// ---- failure misattribution
		{class: misattributed, name: "a segmentation fault in native code",
			module: "import ctypes\nctypes.string_at(0)\n", body: "    return 12345.678\n",
			reason: scicode.ReasonCrashed, also: []string{scicode.ReasonNoResult}, problems: []string{"1"}},
		{class: misattributed, name: "stdout and stderr closed, the record channel pointed at /dev/null, exit 0",
			module: "import os\n__null = os.open('/dev/null', os.O_WRONLY)\nos.dup2(__null, 3)\nos.close(1)\nos.close(2)\n",
			body:   "    return 12345.678\n", reason: scicode.ReasonNoResult, problems: []string{"1"}},
		// The script is its PID namespace's init, which ignores SIGSTOP
		// from inside: the run goes on (test_failed); where it would stop,
		// the clock ends it (timeout), never the runner's error.
		{class: misattributed, name: "the code stops itself (SIGSTOP to its whole process group)",
			module: "import os, signal\nos.killpg(0, signal.SIGSTOP)\n", body: "    return 12345.678\n",
			reason: scicode.ReasonTestFailed, also: []string{scicode.ReasonTimeout}, problems: []string{"1"}, opts: sandbox.Options{Timeout: 20 * time.Second}},
		{class: misattributed, name: "records past the cap",
			module: "import os\n__chunk = b'\\0' * (1 << 20)\nwhile True:\n    os.write(3, __chunk)\n",
			body:   "    return 12345.678\n", reason: scicode.ReasonLimit, limit: sandbox.LimitRecords, problems: []string{"1"}},
	}
}

// rightThenStop wraps the reference of a step so that its first call
// answers right and its second does stop.
func rightThenStop(stop string) string {
	return "{reference}\n__right = {fn}\n__n = [0]\ndef {fn}(*a, **k):\n    import os\n    __n[0] += 1\n" +
		"    if __n[0] > 1:\n        " + stop + "\n    return __right(*a, **k)\n"
}

// forkAllocate forks four children that each hold 400 MiB, the parent
// waiting for them.
const forkAllocate = `import os, time
__kids = []
for __i in range(4):
    pid = os.fork()
    if pid == 0:
        __b = bytearray(400 << 20)
        for __j in range(0, len(__b), 4096):
            __b[__j] = 1
        time.sleep(120)
        os._exit(0)
    __kids.append(pid)
for pid in __kids:
    os.waitpid(pid, 0)
`

// TestAttacksSandbox runs the sandbox's red team: every route scores 0 with
// its reason (and limit), on the problems given.
func TestAttacksSandbox(t *testing.T) {
	routes := sandboxAttacks()
	named := 0
	classes := map[string]int{}
	for _, at := range routes {
		classes[at.class]++
		if at.named {
			named++
		}
	}
	if len(routes) < 15 || 2*(len(routes)-named) < len(routes) {
		t.Errorf("%d routes, %d of them named in the issue: want at least 15, at least half not named", len(routes), named)
	}
	for _, at := range routes {
		t.Run(at.class+"/"+at.name, func(t *testing.T) {
			opts := at.opts
			if opts.Timeout == 0 {
				opts.Timeout = 120 * time.Second
			}
			s := newForTest(t, opts)
			if !scicode.TamperProof(s.Sandbox()) {
				testenv.Missing(t, "%s", "no tamper-proof sandbox here: "+strings.Join(s.Sandbox().Notes, "; "))
			}
			if at.opts.MemoryBytes != 0 && s.Sandbox().LimitMode == sandbox.LimitModePerProcess && at.limit != "" {
				testenv.Missing(t, "%s", "no cgroup for runs here: "+strings.Join(s.Sandbox().Notes, "; "))
			}
			split, _ := s.Split(scicode.SplitValidation)
			log := &messageLog{}
			solver := answerWith(split, log, func(step *scicode.Step, turn int, in solverInput) string {
				fill := strings.NewReplacer("{step}", strconv.Quote(step.Number), "{reference}", step.Reference, "{fn}", funcName(step))
				body, module := fill.Replace(at.body), fill.Replace(at.module)
				if turn > 1 && at.secondTurn != nil {
					fb, _ := in.Data["output"].(string)
					body = at.secondTurn(in.Text + "\n" + fb)
					module = at.secondModule
				}
				return strings.TrimRight(step.FunctionHeader, "\n") + "\n" + body + "\n" + module
			})
			url := startSolver(t, "attacker", solver, false)
			turns := 1
			if at.secondTurn != nil || at.checkFeedback != nil {
				turns = 2
			}
			for _, id := range at.problems {
				req := request(t, `{"participants": {"solver": %q}, "config": {"scenario": "scicode", "problem_ids": [%q], "max_num_steps": %d, "step_timeout_seconds": %d}}`,
					url, id, turns, int(opts.Timeout/time.Second))
				o, err := runProblem(t, s, t.Context(), req, 5*time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if o.Score != 0 || o.Outcome {
					t.Errorf("problem %s: scored %v (%s)", id, o.Score, o.Summary)
				}
				for _, st := range o.Steps {
					if st.Passed || (st.Reason != at.reason && !slices.Contains(at.also, st.Reason)) {
						t.Errorf("problem %s step %s: %s (%s); want %s", id, st.Step, st.Reason, st.Detail, at.reason)
					}
					if at.limit != "" && st.Reason == scicode.ReasonLimit && st.Limit != at.limit {
						t.Errorf("problem %s step %s: limit %q (%s); want %q", id, st.Step, st.Limit, st.Detail, at.limit)
					}
					if st.Reason == scicode.ReasonRunner {
						t.Errorf("problem %s step %s: the solver's failure became the runner's: %s", id, st.Step, st.Detail)
					}
				}
			}
			for _, m := range log.all() {
				if m.Kind != stepproto.FeedbackKind {
					continue
				}
				out, _ := m.Data["output"].(string)
				text := m.Text + "\n" + out
				for _, leak := range []string{"test_data", "problems_", "/work/", "coordbench-sandbox-", "LEAKED DESCRIPTORS"} {
					if strings.Contains(text, leak) {
						t.Errorf("the feedback for %s carries %q:\n%s", m.Step, leak, text)
					}
				}
				if at.checkFeedback != nil {
					at.checkFeedback(t, m.Step, text)
				}
			}
		})
	}
}

// funcName is the name of the step's function.
func funcName(step *scicode.Step) string {
	m := regexp.MustCompile(`def\s+(\w+)`).FindStringSubmatch(step.FunctionHeader)
	if m == nil {
		return "f"
	}
	return m[1]
}

// TestSandboxProbeFindsOnlyInputs runs the reference of 78.1 with a probe
// that walks every frame, linecache, the code objects and the script from
// inside the step's function: none holds the expected output, and the
// reference still passes.
func TestSandboxProbeFindsOnlyInputs(t *testing.T) {
	s := newForTest(t, sandbox.Options{Timeout: 120 * time.Second})
	if !scicode.TamperProof(s.Sandbox()) {
		testenv.Missing(t, "%s", "no tamper-proof sandbox here")
	}
	split, _ := s.Split(scicode.SplitValidation)
	p, _ := split.Problem("78")
	probe := `
import sys as __sys, gc as __gc, linecache as __lc
__seen = []
def __probe():
    f = __sys._getframe(1)
    while f is not None:
        __seen.extend(k for k in f.f_locals if "expected" in k)
        f = f.f_back
    for name, entry in list(__lc.cache.items()):
        if "expected" in "".join(entry[2]):
            __seen.append("linecache " + name)
    for o in __gc.get_objects():
        if type(o).__name__ == "code" and "expected" in " ".join(o.co_names + o.co_varnames):
            __seen.append("code " + o.co_name)
    if ("expected" + "_output =") in open(__sys.argv[0]).read():
        __seen.append("script")
`
	code := probe + "\n" + strings.Replace(p.Steps[0].Reference, "):\n", "):\n    __probe()\n", 1) +
		"\nimport atexit as __atexit\n__atexit.register(lambda: print('PROBE found:', sorted(set(__seen)) or 'nothing', flush=True))\n"
	v, err := s.Test(context.Background(), scicode.TestRequest{Split: split, Problem: p, Step: 0, Code: code})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Run.Output, "PROBE found: nothing") {
		t.Errorf("the probe found the expected output:\n%s", v.Run.Output)
	}
	if !v.Passed {
		t.Errorf("the reference with a probe did not pass: %s %s\n%s", v.Reason, v.Detail, v.Run.Output)
	}
}

// TestSandboxPeakMemory measures the run's peak memory (its cgroup's) under
// the worst route of each class, on step 1.1 with the tight budget of the
// exhaustion routes, for docs/scicode.md; each must stay within the budget.
func TestSandboxPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	opts := sandbox.Options{Timeout: 300 * time.Second, MemoryBytes: 1 << 30, MaxProcesses: 32, CPUSeconds: 20}
	s := newForTest(t, opts)
	if s.Sandbox().LimitMode == sandbox.LimitModePerProcess {
		testenv.Missing(t, "%s", "no cgroup for runs here")
	}
	split, _ := s.Split(scicode.SplitValidation)
	p, _ := split.Problem("1")
	worst := map[string]string{}
	for _, at := range sandboxAttacks() {
		switch at.name {
		case "every frame's locals and globals (inspect.stack)", "the comparison's error message (a value of another shape)",
			"descriptors left open by the runner's process", "fork and allocate: four children of 400 MiB under a budget of 1 GiB",
			"the work directory filled, then memory on top (tmpfs pages count)", "memory held in a memfd, outside any address space",
			"pipes grown to their largest and filled", "a fork bomb of allocating children", "records past the cap":
			fill := strings.NewReplacer("{step}", strconv.Quote(p.Steps[0].Number), "{reference}", p.Steps[0].Reference, "{fn}", funcName(&p.Steps[0]))
			worst[at.class+"/"+at.name] = strings.TrimRight(p.Steps[0].FunctionHeader, "\n") + "\n" + fill.Replace(at.body) + "\n" + fill.Replace(at.module)
		}
	}
	worst["baseline/the reference"] = p.Steps[0].Reference
	names := make([]string, 0, len(worst))
	for n := range worst {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		v, err := s.Test(t.Context(), scicode.TestRequest{Split: split, Problem: p, Step: 0, Code: worst[name], Timeout: opts.Timeout})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%-90s %-15s %-10s peak %4d MiB, %6.0f ms CPU", name, v.Reason, v.Limit, v.Run.PeakMemoryBytes>>20, v.Run.CPUMS)
		if v.Run.PeakMemoryBytes > opts.MemoryBytes {
			t.Errorf("%s: peak memory %d bytes over the budget %d", name, v.Run.PeakMemoryBytes, opts.MemoryBytes)
		}
	}
}
