package sdkbridge

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// Recorder is the in-process road of spans: a span processor on the
// assessor's own tracer provider that puts every ended span into a Store,
// so the assessor's own work and the calls it makes are part of the traces
// it assesses without an exporter round trip.
type Recorder struct {
	store *tracestore.Store

	mu        sync.RWMutex
	resources map[*resource.Resource]*otelmap.Resource

	stopped  atomic.Bool
	rejected atomic.Uint64
}

// maxCachedResources bounds the resource cache. A tracer provider has one
// resource, so the bound is only met by a program that makes providers
// without end; the cache then starts over.
const maxCachedResources = 256

var _ sdktrace.SpanProcessor = (*Recorder)(nil)

// NewRecorder returns a span processor that records ended spans into
// store, with Source SourceInProcess.
func NewRecorder(store *tracestore.Store) *Recorder {
	return &Recorder{store: store, resources: make(map[*resource.Resource]*otelmap.Resource)}
}

// OnStart does nothing: only ended spans are recorded.
func (r *Recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd records s. It is called synchronously on the goroutine that ended
// the span, and only takes the store's lock briefly.
func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	if r.stopped.Load() || !s.SpanContext().IsValid() {
		return
	}
	sp := spanFromReadOnly(s, r.resource(s.Resource()))
	// The resource is the recorder's own conversion, made once per tracer
	// provider and never changed: the store may hold it as it is.
	if res := r.store.AddShared([]otelmap.Span{sp}); res.Rejected > 0 {
		// A full store rejects every further span; log the 1st, 2nd, 4th,
		// 8th... rejection so the limit is reported without a flood. The
		// store counts them all (Stats).
		if n := r.rejected.Add(uint64(res.Rejected)); n&(n-1) == 0 {
			slog.Warn("in-process span not recorded", "reason", res.Reason, "rejected", n,
				"trace_id", sp.TraceID.String(), "span", sp.Name)
		}
	}
}

// Shutdown stops recording. Spans are recorded as they end, so there is
// nothing to flush; a done ctx is reported all the same, as the
// SpanProcessor contract asks.
func (r *Recorder) Shutdown(ctx context.Context) error {
	r.stopped.Store(true)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("recorder shutdown: %w", err)
	}
	return nil
}

// ForceFlush has nothing to flush; it reports a done ctx.
func (r *Recorder) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("recorder flush: %w", err)
	}
	return nil
}

// resource converts an SDK resource once; the spans of one provider share
// the result, which is also what lets assembly compare processes by
// pointer.
func (r *Recorder) resource(res *resource.Resource) *otelmap.Resource {
	if res == nil {
		return otelmap.EmptyResource()
	}
	r.mu.RLock()
	conv, ok := r.resources[res]
	r.mu.RUnlock()
	if ok {
		return conv
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if conv, ok := r.resources[res]; ok {
		return conv
	}
	if len(r.resources) >= maxCachedResources {
		clear(r.resources)
	}
	conv = convertResource(res)
	r.resources[res] = conv
	return conv
}

func convertResource(res *resource.Resource) *otelmap.Resource {
	if res == nil || res.Len() == 0 {
		return otelmap.EmptyResource()
	}
	out := &otelmap.Resource{Attrs: res.Attributes()}
	if v, ok := res.Set().Value(otelmap.AttrServiceName); ok && v.Type() == attribute.STRING {
		out.ServiceName = v.AsString()
	}
	return out
}

// SpanFromReadOnly converts an SDK span to a Span with Source
// SourceInProcess, or SourceExtension when the span carries
// coordbench.source=extension (a span the assessor rebuilt from a
// Traceability Extension step and re-emitted). Each call converts the
// resource anew; the Recorder caches it.
func SpanFromReadOnly(s sdktrace.ReadOnlySpan) otelmap.Span {
	return spanFromReadOnly(s, convertResource(s.Resource()))
}

func spanFromReadOnly(s sdktrace.ReadOnlySpan, res *otelmap.Resource) otelmap.Span {
	sc := s.SpanContext()
	sp := otelmap.Span{
		TraceID:  sc.TraceID(),
		SpanID:   sc.SpanID(),
		Name:     s.Name(),
		Kind:     s.SpanKind(),
		Start:    s.StartTime(),
		End:      s.EndTime(),
		Attrs:    s.Attributes(),
		Resource: res,
		Source:   otelmap.SourceInProcess,
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		sp.ParentSpanID = p.SpanID()
	}
	if ls := s.Links(); len(ls) > 0 {
		sp.EnsureDetail().Links = make([]otelmap.Link, len(ls))
		for i, l := range ls {
			sp.Detail.Links[i] = otelmap.Link{TraceID: l.SpanContext.TraceID(), SpanID: l.SpanContext.SpanID(), Attrs: l.Attributes}
		}
	}
	if es := s.Events(); len(es) > 0 {
		sp.EnsureDetail().Events = make([]otelmap.Event, len(es))
		for i, e := range es {
			sp.Detail.Events[i] = otelmap.Event{Name: e.Name, Time: e.Time, Attrs: e.Attributes}
		}
	}
	if st := s.Status(); st.Code == codes.Error {
		sp.StatusError = true
		sp.StatusMessage = st.Description
	}
	if v, ok := sp.Attr(otelmap.AttrSource); ok && v.Type() == attribute.STRING && v.AsString() == otelmap.SourceExtension {
		sp.Source = otelmap.SourceExtension
	}
	return sp
}
