package purple

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// This file: the exporter that sends each trace's spans with its ingest
// token (ingest.go). The SDK's OTLP/HTTP exporter sends the same headers on
// every request, so ingestExporter splits each batch by token: spans of
// traces without one go through the agent's exporter as before, the spans
// of each token's traces through an exporter made with the same options
// plus the token's header. Those are made when a token's spans are first
// exported and kept for the next batches, at most maxIngestExporters at
// once (the least recently used is shut down to make room) and shut down
// once unused for storeMaxAge: one per assessment the agent is serving.

// maxIngestExporters bounds the exporters with a token header an exporter
// keeps: an agent seldom serves more assessments at once.
const maxIngestExporters = 16

// newIngestExporterFunc makes an exporter like the agent's own whose
// requests also carry in's header.
type newIngestExporterFunc func(ctx context.Context, in ingest) (sdktrace.SpanExporter, error)

type ingestExporter struct {
	base    sdktrace.SpanExporter
	tokens  *ingestTokens
	make    newIngestExporterFunc
	max     int
	maxIdle time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	order *list.List // of *ingestExp, least recently used first
	by    map[ingest]*list.Element
	done  bool
}

type ingestExp struct {
	in   ingest
	exp  sdktrace.SpanExporter
	used time.Time
}

var _ sdktrace.SpanExporter = (*ingestExporter)(nil)

func newIngestExporter(base sdktrace.SpanExporter, tokens *ingestTokens, mk newIngestExporterFunc, log *slog.Logger) *ingestExporter {
	return &ingestExporter{
		base: base, tokens: tokens, make: mk, max: maxIngestExporters, maxIdle: storeMaxAge, log: log,
		order: list.New(), by: map[ingest]*list.Element{},
	}
}

// ExportSpans sends spans of traces without a token through the base
// exporter and each token's through its own. The batch span processor
// calls it from one goroutine at a time.
//
// The OpenTelemetry SDK's batch processor calls it in a goroutine of its
// own, where nothing recovers: a panic here (an exporter made for a
// caller's ingest token) loses this batch, logged, and not the agent.
func (x *ingestExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if x.log != nil {
				x.log.Error("span export panicked; the batch is lost", "spans", len(spans), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			err = fmt.Errorf("span export failed unexpectedly: %v", r)
		}
	}()
	if x.tokens.len() == 0 {
		return x.base.ExportSpans(ctx, spans)
	}
	var plain []sdktrace.ReadOnlySpan
	var groups map[ingest][]sdktrace.ReadOnlySpan
	for _, s := range spans {
		in, ok := x.tokens.lookup(s.SpanContext().TraceID())
		if !ok {
			plain = append(plain, s)
			continue
		}
		if groups == nil {
			groups = map[ingest][]sdktrace.ReadOnlySpan{}
		}
		groups[in] = append(groups[in], s)
	}
	var errs []error
	if len(plain) > 0 {
		errs = append(errs, x.base.ExportSpans(ctx, plain))
	}
	for in, group := range groups {
		exp, err := x.exporter(ctx, in)
		if err != nil {
			errs = append(errs, fmt.Errorf("exporter with the ingest token header: %w", err))
			continue
		}
		errs = append(errs, exp.ExportSpans(ctx, group))
	}
	return errors.Join(errs...)
}

// exporter returns in's exporter, making it when needed and shutting down
// those unused for maxIdle, and the least recently used beyond max.
func (x *ingestExporter) exporter(ctx context.Context, in ingest) (sdktrace.SpanExporter, error) {
	now := time.Now()
	var retired []sdktrace.SpanExporter
	defer func() {
		// Outside x.mu: a shutdown may wait on the network.
		for _, e := range retired {
			if err := e.Shutdown(ctx); err != nil {
				x.log.Debug("purple: retired ingest exporter", "err", err)
			}
		}
	}()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return nil, errors.New("exporter is shut down")
	}
	for e := x.order.Front(); e != nil; e = x.order.Front() {
		ie := e.Value.(*ingestExp)
		if now.Sub(ie.used) < x.maxIdle {
			break
		}
		retired = append(retired, x.remove(e))
	}
	if e := x.by[in]; e != nil {
		ie := e.Value.(*ingestExp)
		ie.used = now
		x.order.MoveToBack(e)
		return ie.exp, nil
	}
	exp, err := x.make(ctx, in)
	if err != nil {
		return nil, err
	}
	for x.order.Len() >= x.max {
		retired = append(retired, x.remove(x.order.Front()))
	}
	x.by[in] = x.order.PushBack(&ingestExp{in: in, exp: exp, used: now})
	return exp, nil
}

// remove takes e out of the cache and returns its exporter. x.mu is held.
func (x *ingestExporter) remove(e *list.Element) sdktrace.SpanExporter {
	ie := x.order.Remove(e).(*ingestExp)
	delete(x.by, ie.in)
	return ie.exp
}

// exporters is how many exporters with a token header are kept, for tests.
func (x *ingestExporter) exporters() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.order.Len()
}

// Shutdown shuts down the base exporter and every token's. The batch
// processor calls it in a goroutine of its own too (see ExportSpans).
func (x *ingestExporter) Shutdown(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if x.log != nil {
				x.log.Error("span exporter shutdown panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
			err = fmt.Errorf("span exporter shutdown failed unexpectedly: %v", r)
		}
	}()
	x.mu.Lock()
	x.done = true
	exps := []sdktrace.SpanExporter{x.base}
	for x.order.Len() > 0 {
		exps = append(exps, x.remove(x.order.Front()))
	}
	x.mu.Unlock()
	var errs []error
	for _, e := range exps {
		errs = append(errs, e.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// withIngestHeader returns headers plus in's header, replacing a header of
// the same name in another spelling (the exporter sets each with
// http.Header.Set, so two spellings would race for one header).
func withIngestHeader(headers map[string]string, in ingest) map[string]string {
	out := make(map[string]string, len(headers)+1)
	maps.Copy(out, headers)
	for k := range out {
		if strings.EqualFold(k, in.Header) {
			delete(out, k)
		}
	}
	out[in.Header] = in.Token
	return out
}

// envHeaders are the headers the SDK's exporter reads from the
// environment: OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
// OTEL_EXPORTER_OTLP_HEADERS (the SDK's rule: the first replaces the
// second), "name=value" pairs joined by commas with the values
// percent-encoded. An exporter given headers by option no longer reads
// them, so an exporter with a token header must be given them too.
func envHeaders(getenv func(string) string) map[string]string {
	v := getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
	if v == "" {
		v = getenv("OTEL_EXPORTER_OTLP_HEADERS")
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(v, ",") {
		n, val, found := strings.Cut(pair, "=")
		name := strings.TrimSpace(n)
		if !found || !validHeaderName(name) {
			continue
		}
		dec, err := url.PathUnescape(val)
		if err != nil {
			continue
		}
		out[name] = strings.TrimSpace(dec)
	}
	return out
}
