package coordbenchconnector

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/coordbench/coordbench/evals"
)

// Config is the connector's configuration (README.md shows it in YAML).
type Config struct {
	// Quiet is how long no span of a trace may arrive, once its root is held
	// and every agent call in it has its server side, before the trace is
	// assessed: the settle rule of the assessor (docs/participants.md).
	Quiet time.Duration `mapstructure:"quiet"`
	// MaxWait bounds how long a trace is held from its first span; a trace
	// still incomplete then is assessed as it is, and says so.
	MaxWait time.Duration `mapstructure:"max_wait"`
	// MaxTraces and MaxSpans bound what is held; over either, the oldest
	// trace is assessed at once (an eviction, counted and reported).
	MaxTraces int `mapstructure:"max_traces"`
	MaxSpans  int `mapstructure:"max_spans"`
	// MaxSpansPerTrace bounds one trace; spans over it are refused,
	// counted, and reported in the trace's result (refused_spans).
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// AwaitExcept names callees (agent names, or host:port) whose calls are
	// not awaited: agents known to export no spans.
	AwaitExcept []string `mapstructure:"await_except"`
	// Workers is how many traces are assessed at once; 0 is one per CPU.
	Workers int `mapstructure:"workers"`
	// MetricsFlushInterval is how often the cumulative metrics are emitted.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
	// MaxCallSeries bounds the (caller, callee, road) series kept; calls of
	// a new pair past it are counted as dropped, not emitted.
	MaxCallSeries int `mapstructure:"max_call_series"`
	// CallDurationBuckets are the explicit bucket bounds of the call
	// duration histogram.
	CallDurationBuckets []time.Duration `mapstructure:"call_duration_buckets"`
	// Evaluators switches the model-free evaluators ("graph", "latency",
	// "text") on and off; all are on by default. The LLM judge is not run
	// in the connector.
	Evaluators map[string]bool `mapstructure:"evaluators"`
	// IncludeVirtualNodes measures virtual callers ("user") in the graph
	// metrics, as the request config of the same name does.
	IncludeVirtualNodes bool `mapstructure:"include_virtual_nodes"`
}

// modelFree are the evaluators the connector runs.
var modelFree = []string{evals.GraphEvaluatorName, "latency", "text"}

func defaultDurationBuckets() []time.Duration {
	return []time.Duration{
		5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
		2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute,
	}
}

func createDefaultConfig() *Config {
	return &Config{
		Quiet:                2 * time.Second,
		MaxWait:              60 * time.Second,
		MaxTraces:            10_000,
		MaxSpans:             500_000,
		MaxSpansPerTrace:     10_000,
		MetricsFlushInterval: 15 * time.Second,
		MaxCallSeries:        10_000,
		CallDurationBuckets:  defaultDurationBuckets(),
	}
}

// Validate checks the configuration; the Collector calls it before
// building the pipeline.
func (c *Config) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	positive("quiet", c.Quiet)
	positive("max_wait", c.MaxWait)
	positive("metrics_flush_interval", c.MetricsFlushInterval)
	if c.Quiet > 0 && c.MaxWait > 0 && c.Quiet >= c.MaxWait {
		errs = append(errs, fmt.Errorf("quiet (%s) must be shorter than max_wait (%s)", c.Quiet, c.MaxWait))
	}
	for name, n := range map[string]int{
		"max_traces": c.MaxTraces, "max_spans": c.MaxSpans, "max_spans_per_trace": c.MaxSpansPerTrace, "max_call_series": c.MaxCallSeries,
	} {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, n))
		}
	}
	if c.MaxSpansPerTrace > c.MaxSpans && c.MaxSpans > 0 {
		errs = append(errs, fmt.Errorf("max_spans_per_trace (%d) must not exceed max_spans (%d)", c.MaxSpansPerTrace, c.MaxSpans))
	}
	if c.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers must not be negative, got %d", c.Workers))
	}
	if len(c.CallDurationBuckets) == 0 {
		errs = append(errs, errors.New("call_duration_buckets must not be empty"))
	}
	for i, b := range c.CallDurationBuckets {
		if b <= 0 || (i > 0 && b <= c.CallDurationBuckets[i-1]) {
			errs = append(errs, fmt.Errorf("call_duration_buckets must be positive and strictly increasing, got %v", c.CallDurationBuckets))
			break
		}
	}
	for name := range c.Evaluators {
		if !slices.Contains(modelFree, name) {
			errs = append(errs, fmt.Errorf("evaluators: %q is not one the connector runs (%v)", name, modelFree))
		}
	}
	return errors.Join(errs...)
}
