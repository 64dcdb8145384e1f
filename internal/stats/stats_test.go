package stats

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// pythonStats computes, for each sample, what Python's statistics module
// gives and the 95% interval from the t quantile, and the t quantiles asked
// for, both by scipy (scipy.stats.t.ppf) and to 40 digits by mpmath (the
// root of the regularised incomplete beta), because scipy's own quantile
// (cdflib's stdtrit in scipy 1.10) is only good to about 2e-9.
const pythonStats = `
import json, math, statistics, sys
import mpmath
from scipy import stats
mpmath.mp.dps = 40
def tq(p, df):
    f = lambda t: mpmath.betainc(df / 2.0, 0.5, 0, df / (df + t * t), regularized=True) / 2 - (1 - p)
    return float(mpmath.findroot(f, float(stats.t.ppf(p, df))))
doc = json.load(sys.stdin)
out = {"samples": [], "quantiles": [], "scipy_quantiles": []}
for xs in doc["samples"]:
    n = len(xs)
    r = {"mean": statistics.fmean(xs)}
    if n >= 2:
        sd = statistics.stdev(xs)
        half = tq(0.975, n - 1) * sd / math.sqrt(n)
        r.update(std_dev=sd, ci_low=r["mean"] - half, ci_high=r["mean"] + half)
    out["samples"].append(r)
for p, df in doc["quantiles"]:
    out["quantiles"].append(tq(p, df))
    out["scipy_quantiles"].append(float(stats.t.ppf(p, df)))
json.dump(out, sys.stdout)
`

func approx(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestAgainstPython checks mean, standard deviation, the 95% interval and
// t quantiles against Python's statistics and scipy on seeded samples of 2
// to 20 values: scores in 0..1, latencies in the thousands, counts, values
// large and close together, and constant samples.
func TestAgainstPython(t *testing.T) {
	py := testenv.NeedPython(t, "scipy", "mpmath")
	r := rand.New(rand.NewPCG(4, 13))
	var samples [][]float64
	for i := range 200 {
		n := 2 + i%19
		xs := make([]float64, n)
		for j := range xs {
			switch i % 5 {
			case 0:
				xs[j] = r.Float64()
			case 1:
				xs[j] = 200 + 3000*r.ExpFloat64()
			case 2:
				xs[j] = float64(r.IntN(7))
			case 3:
				xs[j] = 1e9 + r.Float64()*1e-3
			default:
				xs[j] = 0.75
			}
		}
		samples = append(samples, xs)
	}
	var quantiles [][2]float64
	for _, p := range []float64{0.9, 0.95, 0.975, 0.995} {
		for _, df := range []float64{1, 2, 3, 4, 5, 9, 19, 29, 100} {
			quantiles = append(quantiles, [2]float64{p, df})
		}
	}
	body, _ := json.Marshal(map[string]any{"samples": samples, "quantiles": quantiles})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", pythonStats)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var want struct {
		Samples []struct {
			Mean   float64  `json:"mean"`
			StdDev *float64 `json:"std_dev"`
			CILow  *float64 `json:"ci_low"`
			CIHigh *float64 `json:"ci_high"`
		} `json:"samples"`
		Quantiles      []float64 `json:"quantiles"`
		ScipyQuantiles []float64 `json:"scipy_quantiles"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i, xs := range samples {
		s := Summarize(xs)
		w := want.Samples[i]
		if s.Mean == nil || !approx(*s.Mean, w.Mean, 1e-15) {
			t.Errorf("sample %d: mean %v, Python %v", i, s.Mean, w.Mean)
		}
		for _, c := range []struct {
			name      string
			got, want *float64
		}{{"std_dev", s.StdDev, w.StdDev}, {"ci_low", s.CILow, w.CILow}, {"ci_high", s.CIHigh, w.CIHigh}} {
			if c.got == nil || c.want == nil {
				t.Errorf("sample %d: %s %v, Python %v", i, c.name, c.got, c.want)
				continue
			}
			d := math.Abs(*c.got-*c.want) / math.Max(1, math.Abs(*c.want))
			worst = math.Max(worst, d)
			if d > 1e-12 {
				t.Errorf("sample %d (n=%d): %s %.17g, Python %.17g", i, len(xs), c.name, *c.got, *c.want)
			}
		}
	}
	var worstQ, worstScipy float64
	for i, q := range quantiles {
		got := TQuantile(q[0], q[1])
		worstQ = math.Max(worstQ, math.Abs(got-want.Quantiles[i])/want.Quantiles[i])
		worstScipy = math.Max(worstScipy, math.Abs(got-want.ScipyQuantiles[i])/want.ScipyQuantiles[i])
		if !approx(got, want.Quantiles[i], 1e-13) || !approx(got, want.ScipyQuantiles[i], 1e-8) {
			t.Errorf("t quantile p=%v df=%v: %.17g, mpmath %.17g, scipy %.17g", q[0], q[1], got, want.Quantiles[i], want.ScipyQuantiles[i])
		}
	}
	t.Logf("%d samples: worst relative difference from statistics and the exact interval %.3g", len(samples), worst)
	t.Logf("%d t quantiles: worst relative difference from mpmath %.3g, from scipy.stats.t.ppf %.3g", len(quantiles), worstQ, worstScipy)
}

func TestSmallSamples(t *testing.T) {
	s := Summarize(nil)
	if s.N != 0 || s.Mean != nil || !s.TooFew || s.Note != "no samples" {
		t.Errorf("empty: %+v", s)
	}
	s = Summarize([]float64{0.4})
	if s.N != 1 || *s.Mean != 0.4 || s.StdDev != nil || s.CILow != nil || !s.TooFew || *s.Min != 0.4 || *s.Max != 0.4 {
		t.Errorf("one value: %+v", s)
	}
	s = Summarize([]float64{1, 3})
	// t(0.975, 1) = 12.706...; sd = √2; half = 12.706 · √2/√2.
	if s.N != 2 || !s.TooFew || *s.Mean != 2 || !approx(*s.StdDev, math.Sqrt2, 1e-15) ||
		!approx(*s.CIHigh-2, 12.706204736174707, 1e-9) || s.Note == "" {
		t.Errorf("two values: %+v", s)
	}
	s = Summarize([]float64{5, 5, 5, 5})
	if s.TooFew || *s.StdDev != 0 || *s.CILow != 5 || *s.CIHigh != 5 || s.Note != "" {
		t.Errorf("constant: %+v", s)
	}
	s = Summarize([]float64{1, math.NaN(), 2, math.Inf(1), 3})
	if s.N != 3 || s.Dropped != 2 || *s.Mean != 2 || *s.StdDev != 1 {
		t.Errorf("non-finite values: %+v", s)
	}
	b, err := json.Marshal(Summarize([]float64{7}))
	if err != nil || !bytes.Contains(b, []byte(`"std_dev":null`)) || !bytes.Contains(b, []byte(`"too_few":true`)) {
		t.Errorf("JSON %s %v", b, err)
	}
	for _, level := range []float64{0, 1, -0.5, math.NaN()} {
		if _, err := SummarizeLevel([]float64{1, 2, 3}, level); err == nil {
			t.Errorf("level %v accepted", level)
		}
	}
	if s, err := SummarizeLevel([]float64{1, 2, 3}, 0.9); err != nil || s.Level != 0.9 || *s.CIHigh >= *Summarize([]float64{1, 2, 3}).CIHigh {
		t.Errorf("90%% interval %+v %v: want narrower than the 95%% one", s, err)
	}
}
