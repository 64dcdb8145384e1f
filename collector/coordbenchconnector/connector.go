package coordbenchconnector

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// How a trace left the connector's hold (attribute coordbench.trace.completion).
const (
	// completionSettled: root held, every agent call answered, then quiet.
	completionSettled = "settled"
	// completionMaxWait: max_wait passed first.
	completionMaxWait = "max_wait"
	// completionEvicted: max_traces or max_spans forced it out early.
	completionEvicted = "evicted"
	// completionShutdown: the collector stopped while it was held.
	completionShutdown = "shutdown"
)

var errShutDown = errors.New("coordbench connector: shut down")

// instance is one pipeline's view of a core: the traces-to-metrics or the
// traces-to-logs connector of one id.
type instance struct {
	core    *core
	factory *factory
	id      component.ID
	// ingests is true for the traces-to-metrics instance. Both instances
	// of an id receive the same spans (the Collector fans a traces
	// pipeline out to every connector node of the id), so only one of
	// them feeds the core: the metrics one, else the logs one.
	ingests bool
	stopped sync.Once
}

func (i *instance) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces reads and holds the spans, in the goroutine of the
// Collector's receiver that took them (gRPC's recovers nothing): a panic
// in the reading, a bug of ours that some exporter's spans reach, fails
// this batch with an error, logged with the stack, not the Collector.
func (i *instance) ConsumeTraces(ctx context.Context, td ptrace.Traces) (err error) {
	defer func() {
		if p := recover(); p != nil {
			i.core.log.Error("coordbench: reading spans panicked; the batch is refused",
				zap.Int("spans", td.SpanCount()), zap.Any("panic", p), zap.Stack("stack"))
			err = fmt.Errorf("coordbench: reading the spans failed unexpectedly: %v", p)
		}
	}()
	if !i.ingests && i.core.hasMetrics() {
		return nil
	}
	return i.core.consume(ctx, td)
}

func (i *instance) Start(_ context.Context, _ component.Host) error {
	i.core.start()
	return nil
}

// Shutdown stops the core at the first instance's shutdown: the Collector
// stops both before the exporters after them, so what was held is
// assessed and emitted while both pipelines still run.
func (i *instance) Shutdown(ctx context.Context) error {
	var err error
	i.stopped.Do(func() {
		err = i.core.shutdown(ctx)
		i.factory.release(i.id)
	})
	return err
}

var _ connector.Traces = (*instance)(nil)

// heldTrace is the spans of one trace, waiting to be complete.
type heldTrace struct {
	id trace.TraceID
	// spans are packed (tracestore.Held): a few hundred bytes a span that
	// the garbage collector does not scan, unpacked when the trace is
	// checked and when it is assessed.
	spans *tracestore.Held
	first time.Time
	last  time.Time
	// checked is spans.Len() when the evidence was last found lacking,
	// and unanswered and detached what it lacked then: a trace released
	// with no span since (at max_wait, mostly) needs no second check.
	checked    int
	unanswered []tracestore.Call
	detached   int
	refused    int
	elem       *list.Element
	// quietElem is the trace's place in core.quiet, nil when it is not
	// there (checked since its last span).
	quietElem *list.Element
}

// released is a trace on its way to assessment.
type released struct {
	*heldTrace
	completion string
}

// core is one connector id's assessor: the hold, the workers, the
// metrics aggregate.
type core struct {
	cfg      *Config
	log      *zap.Logger
	tel      *telemetry
	registry *evals.Registry
	evalCfg  evals.Config
	// metricsCfg is evalCfg with what only the log record shows off: the
	// latency and text evaluators, the graph metrics no metric carries
	// (metricsOnlyGraph) and the evidence's reasons. Without a logs
	// pipeline nothing reads them: the metrics take the graph's label,
	// evidence level and the metrics graphMetrics names, and the
	// interactions.
	metricsCfg evals.Config
	await      *tracestore.Await
	// dict holds the held spans' attribute keys and names once.
	dict     *tracestore.Dict
	resource pcommon.Resource
	agg      *aggregate
	refs     int // guarded by factory.mu

	mu      sync.Mutex
	metrics consumer.Metrics
	logs    consumer.Logs
	held    map[trace.TraceID]*heldTrace
	order   *list.List // of *heldTrace, oldest first
	// quiet holds the traces whose spans changed since their evidence
	// was last checked, least recently added to first: a tick looks at
	// the traces whose wait ends, not at every trace held.
	quiet    *list.List
	spans    int
	done     recentIDs
	stopping bool
	// batch packs the spans of the batch being consumed, and inBatch
	// counts them by trace (both reused from batch to batch).
	batch   tracestore.Batch
	inBatch map[trace.TraceID]int

	work    chan released
	stop    chan struct{}
	loops   sync.WaitGroup // the hold's ticker and the metrics flusher
	workers sync.WaitGroup
	// submitting counts consume calls that may still send to work.
	submitting sync.WaitGroup
	startOnce  sync.Once
	started    bool
}

func newCore(set connector.Settings, cfg *Config) (*core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tel, err := newTelemetry(set.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "coordbench")
	// Cumulative series of several collectors must stay apart: each
	// carries its collector's instance id.
	if v, ok := set.Resource.Attributes().Get("service.instance.id"); ok {
		res.Attributes().PutStr("service.instance.id", v.AsString())
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	c := &core{
		cfg:        cfg,
		log:        set.Logger,
		tel:        tel,
		registry:   evals.NewRegistry(evals.Options{}),
		evalCfg:    evals.Config{Evaluators: cfg.Evaluators, IncludeVirtualNodes: cfg.IncludeVirtualNodes},
		metricsCfg: evals.Config{Evaluators: recordOnlyOff(cfg.Evaluators), IncludeVirtualNodes: cfg.IncludeVirtualNodes, GraphMetrics: recordOnlyMetrics, WithoutReasons: true},
		await:      &tracestore.Await{Calls: assemble.CallRule(nil), AllAgents: true, Except: cfg.AwaitExcept},
		dict:       tracestore.NewDict(),
		resource:   res,
		agg:        newAggregate(cfg, tel),
		held:       map[trace.TraceID]*heldTrace{},
		order:      list.New(),
		quiet:      list.New(),
		done:       newRecentIDs(2 * cfg.MaxTraces),
		work:       make(chan released, 4*workers),
		stop:       make(chan struct{}),
	}
	c.workers.Add(workers)
	for range workers {
		go c.worker()
	}
	tel.observeHeld(func() (traces, spans int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return int64(len(c.held)), int64(c.spans)
	})
	return c, nil
}

func (c *core) setMetrics(m consumer.Metrics) { c.mu.Lock(); c.metrics = m; c.mu.Unlock() }
func (c *core) setLogs(l consumer.Logs)       { c.mu.Lock(); c.logs = l; c.mu.Unlock() }

func (c *core) hasMetrics() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metrics != nil
}

func (c *core) start() {
	c.startOnce.Do(func() {
		c.mu.Lock()
		c.started = true
		c.mu.Unlock()
		c.loops.Add(2)
		go c.watch()
		go c.flushLoop()
	})
}

// consume holds the spans of td by trace, packed as they are read from
// td (otlpdecode.Packer: no otelmap.Span of them is made). A
// trace past its bounds evicts the oldest held; spans of a trace already
// assessed are late, counted and dropped.
func (c *core) consume(ctx context.Context, td ptrace.Traces) error {
	now := time.Now()
	var evicted []released
	var invalid, late, dup, overTrace int
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return errShutDown
	}
	c.submitting.Add(1) // shutdown closes work only after these sends
	defer c.submitting.Done()
	// The spans are read and packed under the lock. A panic there (a bug
	// of ours that some exporter's spans reach; ConsumeTraces recovers
	// it and refuses the batch) still commits what was packed, unlocks,
	// and assesses the traces the batch evicted, so the hold stays whole.
	var panicked any
	func() {
		defer func() {
			c.batch.Commit()
			clear(c.inBatch)
			c.mu.Unlock()
			panicked = recover()
		}()
		// A trace's heads grow once per batch, by what the batch brings (its
		// records do in c.batch.Commit).
		if c.inBatch == nil {
			c.inBatch = map[trace.TraceID]int{}
		}
		// Counted by runs: a batch's spans of one trace mostly come
		// together, and a map increment per span was a tenth of reading
		// them (issue 31).
		var run trace.TraceID
		n := 0
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if id := trace.TraceID(sp.TraceID()); id != run || n == 0 {
						if n > 0 {
							c.inBatch[run] += n
						}
						run, n = id, 0
					}
					n++
				}
			}
		}
		if n > 0 {
			c.inBatch[run] += n
		}
		// A batch's spans of one trace mostly come together: the trace last
		// found is tried first. It is never evicted while it is last: a new
		// trace's evictions come before it becomes last, and max_spans's keep
		// the trace being added to.
		var last *heldTrace
		var sp otelmap.Span
		packer := otlpdecode.NewPacker(otelmap.SourceOTLP)
		for _, rs := range td.ResourceSpans().All() {
			res := packer.Resource(rs.Resource())
			for _, ss := range rs.ScopeSpans().All() {
				for _, ps := range ss.Spans().All() {
					if readHook != nil {
						readHook(ps)
					}
					traceID, spanID := trace.TraceID(ps.TraceID()), trace.SpanID(ps.SpanID())
					if !traceID.IsValid() || !spanID.IsValid() {
						invalid++
						continue
					}
					h := last
					if h == nil || h.id != traceID {
						if c.done.has(traceID) {
							late++
							continue
						}
						if h = c.held[traceID]; h == nil {
							for len(c.held) >= c.cfg.MaxTraces {
								evicted = append(evicted, c.evictLocked(nil, reasonMaxTraces))
							}
							h = &heldTrace{id: traceID, spans: tracestore.NewHeld(c.dict), first: now}
							h.elem = c.order.PushBack(h)
							c.held[traceID] = h
						}
						last = h
					}
					if h.spans.Has(spanID) {
						dup++ // a retried export
						continue
					}
					if h.spans.Len() >= c.cfg.MaxSpansPerTrace {
						h.refused++
						overTrace++
						continue
					}
					for c.spans >= c.cfg.MaxSpans {
						evicted = append(evicted, c.evictLocked(h, reasonMaxSpans))
					}
					if h.last != now {
						h.spans.Reserve(c.inBatch[traceID])
						if h.quietElem != nil {
							c.quiet.MoveToBack(h.quietElem)
						} else {
							h.quietElem = c.quiet.PushBack(h)
						}
					}
					attrs, n := packer.Span(ps, res, &sp)
					if c.batch.AddNewWith(h.spans, &sp, n, func(w *tracestore.AttrWriter) { packer.WriteAttrs(w, attrs) }) != tracestore.Added {
						h.refused++ // its records would pass 4 GiB
						overTrace++
						continue
					}
					if h.last != now { // a store the write barrier sees, once a batch
						h.last = now
					}
					c.spans++
				}
			}
		}
	}()
	c.tel.spansDropped(ctx, invalid, late, dup, overTrace)
	for _, r := range evicted {
		if err := c.submit(ctx, r); err != nil {
			return err
		}
	}
	if panicked != nil {
		panic(panicked)
	}
	return nil
}

// readHook, when set (by a test), sees each span consume reads, under the
// lock: a test makes it panic, as a bug reached by some span would.
var readHook func(sp ptrace.Span)

// Eviction reasons (attribute reason of the evicted-traces counter).
const (
	reasonMaxTraces = "max_traces"
	reasonMaxSpans  = "max_spans"
)

// evictLocked takes the oldest held trace other than keep out of the hold.
// The bounds' validation guarantees there is one: keep alone never holds
// max_spans spans.
func (c *core) evictLocked(keep *heldTrace, reason string) released {
	e := c.order.Front()
	if e.Value.(*heldTrace) == keep {
		e = e.Next()
	}
	h := e.Value.(*heldTrace)
	c.tel.evicted(reason)
	return released{heldTrace: c.removeLocked(h), completion: completionEvicted}
}

func (c *core) removeLocked(h *heldTrace) *heldTrace {
	c.order.Remove(h.elem)
	if h.quietElem != nil {
		c.quiet.Remove(h.quietElem)
		h.quietElem = nil
	}
	delete(c.held, h.id)
	c.spans -= h.spans.Len()
	c.done.add(h.id)
	return h
}

func (c *core) submit(ctx context.Context, r released) error {
	select {
	case c.work <- r:
		return nil
	case <-ctx.Done():
		// The trace is out of the hold already: assess it here rather
		// than lose it.
		c.assess(r, nil)
		return nil
	}
}

// flushLoop emits the cumulative metrics every metrics_flush_interval.
func (c *core) flushLoop() {
	defer c.loops.Done()
	t := time.NewTicker(c.cfg.MetricsFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.flush(context.Background())
		}
	}
}

func (c *core) flush(ctx context.Context) {
	c.mu.Lock()
	metrics := c.metrics
	c.mu.Unlock()
	if metrics == nil {
		return
	}
	md, ok := c.agg.metrics(c.resource, time.Now())
	if !ok {
		return
	}
	if err := metrics.ConsumeMetrics(ctx, md); err != nil {
		c.tel.emitFailed("metrics")
		c.log.Warn("coordbench: the metrics pipeline refused the connector's metrics", zap.Error(err))
	}
}

// shutdown assesses every trace still held (completion "shutdown"),
// waits for the workers and emits the metrics a last time. Spans that
// arrive after it began are refused.
func (c *core) shutdown(ctx context.Context) error {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return nil
	}
	c.stopping = true
	started := c.started
	var rest []released
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		rest = append(rest, released{heldTrace: c.removeLocked(e.Value.(*heldTrace)), completion: completionShutdown})
	}
	c.mu.Unlock()
	close(c.stop)
	c.loops.Wait()
	c.submitting.Wait()
	for _, r := range rest {
		c.work <- r
	}
	close(c.work)
	done := make(chan struct{})
	go func() { c.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("coordbench connector: shutdown: %w", ctx.Err())
	}
	if started {
		c.flush(ctx)
	}
	return c.tel.close()
}
