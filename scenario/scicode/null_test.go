package scicode_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coordbench/coordbench/sandbox"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// rk4Variant is 78.2's function with body as its loop (names: f, state, t0,
// dt, n, g, L, beta, A, alpha; the result in traj).
func rk4Variant(body string) string {
	return "import numpy as np\ndef runge_kutta_4th_order(f, state, t0, dt, n, g, L, beta, A, alpha):\n" + indent(body) + "    return traj\n"
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// nullTrajectories are answers to 78.2 that compute nothing of the
// pendulum, each of the documented shape (n+1, 2), each made to satisfy
// SciCode's three properties (final angle within 0.1 of the harmonic
// solution, below the start, not NaN).
var nullTrajectories = map[string]string{
	"zeros":        "traj = np.zeros((n + 1, 2))",
	"ones (small)": "traj = np.ones((n + 1, 2)) * 0.05",
	"a constant":   "traj = np.full((n + 1, 2), 0.02)",
	"linspace":     "traj = np.stack([np.linspace(state[0], 0.0, n + 1), np.linspace(0.0, 0.01, n + 1)], axis=1)",
	"only the final angle moved": "traj = np.zeros((n + 1, 2))\n" +
		"traj[-1, 0] = state[0] * np.cos(np.sqrt(g / L) * n * dt)",
	"the initial state repeated, the end moved": "traj = np.tile(np.asarray(state, float), (n + 1, 1))\n" +
		"traj[-1, 0] = state[0] * np.cos(np.sqrt(g / L) * n * dt)",
	"input echo": "traj = np.tile(np.asarray(state, float), (n + 1, 1))\ntraj[-1] = [0.0, 0.0]",
	"noise":      "traj = 0.05 + 0.01 * np.random.default_rng(1).standard_normal((n + 1, 2))",
	"a sawtooth": "traj = (np.arange(2 * (n + 1)).reshape(n + 1, 2) % 7) * 0.001",
	"steps every 100 entries": "traj = np.repeat(np.linspace(state[0], 0.0, (n + 1) // 100 + 1), 100)[:n + 1]\n" +
		"traj = np.stack([traj, np.zeros(n + 1)], axis=1)",
	"NaN-free garbage (tiny)": "traj = np.full((n + 1, 2), 1e-300)\ntraj[::2] = -1e-300",
	"a random walk": "traj = 0.05 + np.cumsum(0.001 * np.random.default_rng(2).standard_normal((n + 1, 2)), axis=0)\n" +
		"traj -= traj[-1] - [0.05, 0.0]",
	"a slow sine": "ts = dt * np.arange(n + 1)\ntraj = np.stack([0.05 + 0.04 * np.cos(0.3 * ts), -0.012 * np.sin(0.3 * ts)], axis=1)",
}

// honestTrajectories integrate the pendulum by other valid methods than
// the reference's RK4; each meets SciCode's tests and must pass.
var honestTrajectories = map[string]string{
	"Euler-Cromer (symplectic)": `traj = np.zeros((n + 1, 2))
traj[0] = state
s = np.array(state, float)
t = t0
for i in range(1, n + 1):
    d = f(s, t, g, L, beta, A, alpha)
    w = s[1] + dt * d[1]
    th = s[0] + dt * w
    s = np.array([th, w])
    t += dt
    traj[i] = s`,
	"RK4 with two substeps per step": `traj = np.zeros((n + 1, 2))
traj[0] = state
s = np.array(state, float)
t = t0
h = dt / 2
for i in range(1, n + 1):
    for _ in range(2):
        k1 = f(s, t, g, L, beta, A, alpha)
        k2 = f(s + h / 2 * k1, t + h / 2, g, L, beta, A, alpha)
        k3 = f(s + h / 2 * k2, t + h / 2, g, L, beta, A, alpha)
        k4 = f(s + h * k3, t + h, g, L, beta, A, alpha)
        s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += h
    traj[i] = s`,
	"scipy solve_ivp (RK45)": `from scipy.integrate import solve_ivp
ts = t0 + dt * np.arange(n + 1)
sol = solve_ivp(lambda t, y: f(y, t, g, L, beta, A, alpha), (ts[0], ts[-1]), np.asarray(state, float), t_eval=ts, rtol=1e-9, atol=1e-12)
traj = sol.y.T`,
	"velocity Verlet": `traj = np.zeros((n + 1, 2))
traj[0] = state
th, w = float(state[0]), float(state[1])
t = t0
for i in range(1, n + 1):
    a = f(np.array([th, w]), t, g, L, beta, A, alpha)[1]
    wh = w + dt / 2 * a
    th = th + dt * wh
    a2 = f(np.array([th, wh]), t + dt, g, L, beta, A, alpha)[1]
    w = wh + dt / 2 * a2
    t += dt
    traj[i] = [th, w]`,
}

// TestNullTrajectoriesFail78_2: step 78.2 has no target; answers that
// compute nothing of the pendulum used to pass it. Every one of them now
// fails, compared with the reference's run on the same inputs, while the
// reference and honest different integrators pass.
func TestNullTrajectoriesFail78_2(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	split, _ := s.Split(scicode.SplitValidation)
	p, ok := split.Problem("78")
	if !ok {
		t.Fatal("no problem 78")
	}
	k := slices.IndexFunc(p.Steps, func(st scicode.Step) bool { return st.Number == "78.2" })
	type run struct {
		name, code string
		honest     bool
	}
	var runs []run
	for name, body := range nullTrajectories {
		runs = append(runs, run{name, rk4Variant(body), false})
	}
	for name, body := range honestTrajectories {
		runs = append(runs, run{name, rk4Variant(body), true})
	}
	runs = append(runs, run{"the reference", p.Steps[k].Reference, true})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, r := range runs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			v, err := s.Test(t.Context(), referenceRequest(split, p, k, r.code))
			if err != nil {
				t.Errorf("%s: %v", r.name, err)
				return
			}
			t.Logf("%-45s %-12s held %v; %s", r.name, v.Reason, v.CasesHeld, v.Detail)
			switch {
			case r.honest && !v.Passed:
				t.Errorf("%s (an honest answer): %s: %s", r.name, v.Reason, v.Detail)
			case r.honest && (!v.ReferenceChecked || len(v.Unchecked) > 0):
				t.Errorf("%s: the pass was not checked against the reference (checked %v, unchecked %v)", r.name, v.ReferenceChecked, v.Unchecked)
			case !r.honest && v.Passed:
				t.Errorf("%s (computes nothing) passed", r.name)
			case !r.honest && len(v.CasesHeld) != 3:
				// The attack is only an attack if SciCode's own properties hold.
				t.Errorf("%s: SciCode's properties held in cases %v only: not an attack on the judge", r.name, v.CasesHeld)
			}
		})
	}
	wg.Wait()
}

// TestUncheckedPassSaysSo: where the split has no reference code (the test
// split), a pass that rests on 78.2's property cases cannot be checked and
// says so: the verdict lists the cases, and the step's result carries
// property_check "unchecked".
func TestUncheckedPassSaysSo(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	split, _ := s.Split(scicode.SplitValidation)
	orig, _ := split.Problem("78")
	p := *orig
	p.Steps = slices.Clone(orig.Steps)
	for i := range p.Steps {
		p.Steps[i].Reference = ""
	}
	k := slices.IndexFunc(p.Steps, func(st scicode.Step) bool { return st.Number == "78.2" })
	req := referenceRequest(split, orig, k, rk4Variant(nullTrajectories["zeros"]))
	req.Problem = &p
	v, err := s.Test(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Passed || v.ReferenceChecked || !slices.Equal(v.Unchecked, []int{1, 2, 3}) {
		t.Errorf("zeros on 78.2 without a reference: passed %v (%s), reference checked %v, unchecked %v; want a pass with cases 1-3 unchecked",
			v.Passed, v.Detail, v.ReferenceChecked, v.Unchecked)
	}
	// A step whose cases all meet real targets has nothing unchecked.
	p1, _ := split.Problem("1")
	v, err = s.Test(t.Context(), referenceRequest(split, p1, 0, p1.Steps[0].Reference))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Passed || v.ReferenceChecked || len(v.Unchecked) > 0 {
		t.Errorf("1.1's reference: passed %v, reference checked %v, unchecked %v", v.Passed, v.ReferenceChecked, v.Unchecked)
	}
}

// structuredNulls return, once per name of the return line, a value of an
// input's structure that computes nothing: zeros, ones or noise shaped like
// the first array the function is handed, or that array itself.
var structuredNulls = map[string]string{
	"zeros like the input": "__np.zeros_like(__x, dtype=float)",
	"ones like the input":  "__np.ones_like(__x, dtype=float)",
	"the input echoed":     "__x",
	"noise like the input": "__np.random.default_rng(0).standard_normal(__np.shape(__x))",
}

func structuredNull(step *scicode.Step, expr string) string {
	n := 1
	if m := returnNames.FindStringSubmatch(strings.TrimSpace(step.ReturnLine)); m != nil {
		n = len(strings.Split(m[1], ","))
	}
	vals := make([]string, n)
	for i := range vals {
		vals[i] = expr
	}
	return "import numpy as __np\n" + strings.TrimRight(step.FunctionHeader, "\n") + "\n" +
		"    __in = [v for v in list(locals().values()) if isinstance(v, __np.ndarray)]\n" +
		"    __x = __in[0] if __in else __np.zeros(3)\n" +
		"    return " + strings.Join(vals, ", ") + "\n"
}

// TestStructuredNullsCensus runs answers that compute nothing but have
// the input's structure through every validation step: none passes a step,
// and the cases they satisfy are logged (the census of undiscriminating
// cases in docs/scicode.md).
func TestStructuredNullsCensus(t *testing.T) {
	s := newForTest(t, sandbox.Options{})
	split, _ := s.Split(scicode.SplitValidation)
	var mu sync.Mutex
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, p := range split.Problems {
		for k := range p.Steps {
			for name, expr := range structuredNulls {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					step := &p.Steps[k]
					v, err := s.Test(t.Context(), referenceRequest(split, p, k, structuredNull(step, expr)))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						t.Errorf("step %s (%s): %v", step.Number, name, err)
					case v.Passed:
						t.Errorf("step %s passes with %s (property check %v, unchecked %v)", step.Number, name, v.ReferenceChecked, v.Unchecked)
					case v.Reason == scicode.ReasonRunner:
						t.Errorf("step %s (%s): runner_error", step.Number, name)
					case len(v.CasesHeld) > 0:
						t.Logf("census: step %s, %s: cases %v of %d hold; the step: %s (%s)", step.Number, name, v.CasesHeld, len(step.TestCases), v.Reason, v.Detail)
					}
				})
			}
		}
	}
	wg.Wait()
}
