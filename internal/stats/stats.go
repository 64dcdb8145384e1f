// Package stats summarises repeated measurements: the mean, the sample
// standard deviation and a confidence interval for the mean from Student's
// t-distribution, with a flag when there are too few samples to conclude
// from. The green agent uses it to report a task run several times
// (config.repeats, the PRD's repeatable-numbers requirement).
//
// The definitions are those of Python's statistics module and of
// scipy.stats.t, against which the tests check them:
//
//	mean      = statistics.fmean(xs)
//	std_dev   = statistics.stdev(xs)            (n − 1 in the denominator)
//	ci        = mean ± t.ppf(1 − (1 − level)/2, n − 1) · std_dev / √n
package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultLevel is the confidence level of Summarize's interval.
const DefaultLevel = 0.95

// MinSamples is the fewest samples Summary.TooFew does not flag: with one
// there is no spread at all, and with two the interval spans ±12.7 standard
// errors (t at 1 degree of freedom), which concludes nothing.
const MinSamples = 3

// Summary describes a sample of one metric. Fields that the sample does not
// define are nil (and encode as null): the standard deviation and the
// interval of a single value, everything of an empty sample.
type Summary struct {
	// N is the number of finite values summarised.
	N int `json:"n"`
	// Dropped counts the values left out because they were NaN or ±Inf.
	Dropped int      `json:"dropped,omitempty"`
	Mean    *float64 `json:"mean"`
	// StdDev is the sample standard deviation (n − 1 in the denominator).
	StdDev *float64 `json:"std_dev"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
	// CILow and CIHigh bound the Level confidence interval for the mean,
	// from Student's t with N − 1 degrees of freedom.
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	Level  float64  `json:"ci_level"`
	// TooFew is true when N < MinSamples: the numbers are reported but
	// should not be concluded from. Note says so in words.
	TooFew bool   `json:"too_few"`
	Note   string `json:"note,omitempty"`
}

// Summarize summarises xs with a 95% interval.
func Summarize(xs []float64) Summary {
	s, _ := SummarizeLevel(xs, DefaultLevel)
	return s
}

// SummarizeLevel summarises xs with a confidence interval at level, which
// must lie strictly between 0 and 1.
func SummarizeLevel(xs []float64, level float64) (Summary, error) {
	if !(level > 0 && level < 1) {
		return Summary{}, fmt.Errorf("stats: confidence level %v outside (0, 1)", level)
	}
	s := Summary{Level: level}
	vals := make([]float64, 0, len(xs))
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s.Dropped++
			continue
		}
		vals = append(vals, x)
	}
	n := len(vals)
	s.N = n
	s.TooFew = n < MinSamples
	switch {
	case n == 0:
		s.Note = "no samples"
		return s, nil
	case n < MinSamples:
		s.Note = fmt.Sprintf("%d samples: too few to conclude from (at least %d needed)", n, MinSamples)
	}
	mean := Mean(vals)
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	s.Mean, s.Min, s.Max = &mean, &lo, &hi
	if n < 2 {
		return s, nil
	}
	sd := StdDev(vals)
	half := TQuantile(1-(1-level)/2, float64(n-1)) * sd / math.Sqrt(float64(n))
	ciLo, ciHi := mean-half, mean+half
	s.StdDev, s.CILow, s.CIHigh = &sd, &ciLo, &ciHi
	return s, nil
}

// Mean is the arithmetic mean of xs (statistics.fmean), NaN for none. It
// sums with Neumaier's compensation, so a long run of equal values gives
// that value back exactly.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return sum(xs) / float64(len(xs))
}

// StdDev is the sample standard deviation of xs (statistics.stdev), NaN for
// fewer than two values. It takes the deviations from the mean (two
// passes), which stays accurate when the values are large and close.
func StdDev(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	dev := make([]float64, n)
	for i, x := range xs {
		dev[i] = (x - m) * (x - m)
	}
	// The mean of the deviations, minus the rounding left in the first
	// pass (the corrected two-pass algorithm).
	var c float64
	for _, x := range xs {
		c += x - m
	}
	ss := sum(dev) - c*c/float64(n)
	return math.Sqrt(math.Max(ss, 0) / float64(n-1))
}

// TQuantile is the p quantile of Student's t-distribution with df degrees of
// freedom (scipy.stats.t.ppf(p, df)); NaN outside 0 < p < 1 or for df ≤ 0.
// gonum's quantile is good to about 1e-9; Newton steps on the upper tail
// probability, 0.5·I_{df/(df+t²)}(df/2, 1/2), refine it to a few ulps.
func TQuantile(p, df float64) float64 {
	switch {
	case !(p > 0 && p < 1) || !(df > 0):
		return math.NaN()
	case p == 0.5:
		return 0
	case p < 0.5:
		return -TQuantile(1-p, df)
	}
	q := 1 - p // the upper tail wanted
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
	lnNorm := lgamma((df+1)/2) - lgamma(df/2) - 0.5*math.Log(df*math.Pi)
	for range 8 {
		tail := 0.5 * mathext.RegIncBeta(df/2, 0.5, df/(df+t*t))
		pdf := math.Exp(lnNorm - (df+1)/2*math.Log1p(t*t/df))
		if pdf == 0 || math.IsNaN(tail) {
			break
		}
		step := (tail - q) / pdf // the tail falls as t grows
		t += step
		if math.Abs(step) <= 1e-15*math.Abs(t) {
			break
		}
	}
	return t
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}

// sum adds xs with Neumaier's compensated summation.
func sum(xs []float64) float64 {
	var s, c float64
	for _, x := range xs {
		t := s + x
		if math.Abs(s) >= math.Abs(x) {
			c += (s - t) + x
		} else {
			c += (x - t) + s
		}
		s = t
	}
	return s + c
}
