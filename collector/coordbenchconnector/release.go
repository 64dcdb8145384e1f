package coordbenchconnector

// The hold's release side: the watch that finds the traces whose wait ended,
// the workers that assess them, and what an assessment computes when no logs
// pipeline reads the record.

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// watch releases held traces that are complete or waited max_wait.
func (c *core) watch() {
	defer c.loops.Done()
	tick := min(c.cfg.Quiet/4, 250*time.Millisecond)
	tick = max(tick, 5*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var scratch tracestore.Scratch // the settle check's spans, tick after tick
	var evScratch tracestore.EvidenceScratch
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			for _, r := range c.due(time.Now(), &scratch, &evScratch) {
				c.work <- r
			}
		}
	}
}

// due takes out of the hold the traces complete by the settle rule or
// held max_wait. The evidence (tracestore.CheckEvidence) is checked only
// for traces quiet for Quiet whose spans changed since the last check,
// outside the lock: spans are only ever appended, so a held slice header
// stays valid.
func (c *core) due(now time.Time, scratch *tracestore.Scratch, evScratch *tracestore.EvidenceScratch) []released {
	type candidate struct {
		h    *heldTrace
		view *tracestore.Held
	}
	var out []released
	var check []candidate
	c.mu.Lock()
	// order is by first span, quiet by last: each is read up to the
	// first trace whose wait has not ended.
	for e := c.order.Front(); e != nil && now.Sub(e.Value.(*heldTrace).first) >= c.cfg.MaxWait; e = c.order.Front() {
		out = append(out, released{heldTrace: c.removeLocked(e.Value.(*heldTrace)), completion: completionMaxWait})
	}
	for e := c.quiet.Front(); e != nil && now.Sub(e.Value.(*heldTrace).last) >= c.cfg.Quiet; e = e.Next() {
		h := e.Value.(*heldTrace)
		check = append(check, candidate{h, h.spans.View()})
	}
	c.mu.Unlock()
	var complete []candidate
	for _, cand := range check {
		ev := tracestore.CheckEvidenceIn(cand.view.SpansForCheck(cand.h.id, scratch), c.await, evScratch)
		if ev.Whole() {
			complete = append(complete, cand)
			continue
		}
		c.mu.Lock()
		// Unchanged since the check (and still held): it waits for a
		// span or max_wait, not to be checked again.
		if h := cand.h; h.quietElem != nil && h.spans.Len() == cand.view.Len() {
			h.checked, h.unanswered, h.detached = cand.view.Len(), ev.Unanswered, ev.Detached
			c.quiet.Remove(h.quietElem)
			h.quietElem = nil
		}
		c.mu.Unlock()
	}
	if len(complete) == 0 {
		return out
	}
	c.mu.Lock()
	for _, cand := range complete {
		// Still held and unchanged since the check: else the next tick
		// looks again.
		if c.held[cand.h.id] == cand.h && cand.h.spans.Len() == cand.view.Len() {
			out = append(out, released{heldTrace: c.removeLocked(cand.h), completion: completionSettled})
		}
	}
	c.mu.Unlock()
	return out
}

func (c *core) worker() {
	defer c.workers.Done()
	var scratch tracestore.Scratch // the spans of trace after trace
	for r := range c.work {
		c.assess(r, &scratch)
	}
}

// assess runs what `green assess` runs on one trace (assemble.TraceWith,
// the evaluators' registry, report.NewTaskResult), records it in the
// metrics and emits its log record.
//
// The spans are unpacked into scratch (nil: fresh memory), which the next
// trace reuses: nothing of them outlives assess (aggregate.record copies
// the names it keeps).
//
// It runs in the connector's own workers, on spans any exporter to the
// Collector may have sent: a panic here (a bug of ours that such spans
// reach) drops this trace, logged with the stack, and leaves the Collector
// and the other traces alone (docs/operations.md#failures-stay-where-they-start).
func (c *core) assess(r released, scratch *tracestore.Scratch) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("coordbench: assessing a trace panicked; the trace is dropped",
				zap.String("trace_id", r.id.String()), zap.Any("panic", p), zap.Stack("stack"))
		}
	}()
	started := time.Now()
	c.mu.Lock()
	logs := c.logs
	c.mu.Unlock()
	// The trace is out of the hold: its spans are this worker's alone.
	spans := r.spans.SpansIn(r.id, scratch)
	in := evals.Inputs{Config: c.metricsCfg, Collection: &evals.Collection{
		Settled: r.completion == completionSettled, MaxWaitMS: c.cfg.MaxWait.Milliseconds(), RefusedSpans: r.refused,
	}}
	if logs != nil {
		in.Config = c.evalCfg
	}
	if r.completion != completionSettled {
		if r.checked != len(spans) {
			ev := tracestore.CheckEvidence(spans, c.await)
			r.unanswered, r.detached = ev.Unanswered, ev.Detached
		}
		in.Collection.Detached = r.detached
		if logs != nil { // only the evidence's reasons name them (metricsCfg has none)
			for _, u := range r.unanswered {
				in.Collection.Unanswered = append(in.Collection.Unanswered, u.Caller+" -> "+u.Callee)
			}
		}
	}
	// Without a logs pipeline nothing reads the steps: the metrics and the
	// graph evaluator read the agents and the interactions alone.
	td := assemble.TraceWith(r.id, spans, assemble.Options{WithoutSteps: logs == nil})
	rep := c.registry.Run(context.Background(), td, in, nil)
	tr := report.NewTaskResult(td, rep)
	tr.RefusedSpans = r.refused
	c.agg.record(&tr, r.completion)
	c.tel.assessed(r.completion, time.Since(started))
	if logs == nil {
		return
	}
	ld, err := logRecord(c.resource, &tr, r, len(spans), time.Now())
	if err != nil {
		c.log.Error("coordbench: cannot encode a task result", zap.String("trace_id", r.id.String()), zap.Error(err))
		return
	}
	if err := logs.ConsumeLogs(context.Background(), ld); err != nil {
		c.tel.emitFailed("logs")
		c.log.Warn("coordbench: the logs pipeline refused a result record", zap.String("trace_id", r.id.String()), zap.Error(err))
	}
}

// recordOnlyMetrics switches off the graph metrics that only the log
// record shows: graphMetrics (metrics.go) takes none of them, and the
// graph's label takes betweenness alone (evals, judge).
var recordOnlyMetrics = map[string]bool{
	evals.MetricClosenessCentrality: false, evals.MetricEigenvectorCentrality: false, evals.MetricPageRank: false,
	evals.MetricClustering: false, evals.MetricNumberStronglyConnectedComponents: false,
}

// recordOnlyOff is evaluators (the configuration's switches) with the
// evaluators whose results only the log record shows switched off.
func recordOnlyOff(evaluators map[string]bool) map[string]bool {
	out := map[string]bool{"latency": false, "text": false}
	for name, on := range evaluators {
		if _, recordOnly := out[name]; !recordOnly {
			out[name] = on
		}
	}
	return out
}
