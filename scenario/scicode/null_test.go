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
