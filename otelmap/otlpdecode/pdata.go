package otlpdecode

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// maxIDWarnings bounds the warnings SpansFromTraces writes about spans with
// invalid ids: a batch of a hundred thousand broken spans should cost one
// summary line, not a hundred thousand.
const maxIDWarnings = 10

// attrChunk is how many attribute.KeyValue one shared backing array holds.
// Spans take their Attrs from such chunks, so converting a batch costs one
// allocation per chunk rather than one per span, while a trace kept longer
// than its batch pins at most a few chunks (64 bytes × attrChunk each) of
// other spans' attributes, not the whole batch.
const attrChunk = 1024

// SpansFromTraces converts decoded OTLP spans (pdata) into the store's Span.
// source is the road the spans came by (SourceOTLP for the receiver) and is
// stamped on every span, except one that carries
// coordbench.source=extension, which keeps SourceExtension.
//
// Every span is returned, even one whose trace or span id is invalid (all
// zero): the store rejects and counts such spans, so the sender's partial
// success tells how many were lost; the warnings say which (a few of them by
// name, then a count).
//
// The spans of one ResourceSpans share one *Resource. Span kind
// UNSPECIFIED becomes INTERNAL, as the OTLP specification allows and as the
// OpenTelemetry Go SDK does, so readers handle five kinds, not six. A zero
// timestamp becomes the zero time.Time (not 1970), so readers can test it
// with IsZero. Links and events are kept with their attributes (dropped
// attribute counts are not).
//
// Attributes keep their type for strings, booleans, integers, doubles and
// homogeneous arrays of those; maps, byte arrays and mixed arrays become
// their JSON text (pcommon.Value.AsString), and empty values are dropped,
// as the SDK drops invalid attributes.
func SpansFromTraces(td ptrace.Traces, source string) ([]otelmap.Span, []string) {
	c := pdataConverter{source: source, attrsLeft: attrCount(td)}
	rss := td.ResourceSpans()
	c.spans = make([]otelmap.Span, 0, td.SpanCount())
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := c.resource(rs.Resource())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				c.span(ss.At(k), res)
			}
		}
	}
	if c.badIDs > maxIDWarnings {
		c.warnings = append(c.warnings, fmt.Sprintf("%d more spans with an invalid trace or span id", c.badIDs-maxIDWarnings))
	}
	return c.spans, c.warnings
}

// EachSpan calls fn with every span of td in SpansFromTraces's order,
// converted as SpansFromTraces converts it, without keeping any: the span
// fn gets, its attributes and its links and events are reused for the
// next span, so fn must copy what it keeps (Held.Add does), and a batch
// costs a few allocations, not a []Span, whatever its size. The spans of
// one ResourceSpans share one *Resource, which fn may keep; its strings
// point into td. Spans with invalid ids are passed on, as SpansFromTraces
// returns them.
func EachSpan(td ptrace.Traces, source string, fn func(sp *otelmap.Span)) {
	c := pdataConverter{source: source, spans: make([]otelmap.Span, 0, 1)}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		// A resource's attributes outlive its spans: the batch's arena.
		c.reuse = false
		c.attrsLeft = rs.Resource().Attributes().Len()
		res := c.resource(rs.Resource())
		c.reuse = true
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				c.spans, c.scratch = c.spans[:0], c.scratch[:0]
				c.span(ss.At(k), res)
				fn(&c.spans[0])
			}
		}
	}
}

// pdataConverter carries the state of one SpansFromTraces call.
type pdataConverter struct {
	source   string
	spans    []otelmap.Span
	warnings []string
	badIDs   int
	// arena is the unused tail of the current attribute chunk.
	arena []attribute.KeyValue
	// attrsLeft is how many attributes the batch has yet to convert, so
	// that a small batch's chunk is its size, not attrChunk.
	attrsLeft int
	// reuse (EachSpan): one span at a time, the attributes of it and its
	// links and events cut from scratch, which the next span reuses.
	reuse   bool
	scratch []attribute.KeyValue
}

// attrCount is the number of attributes of td's resources, spans, links
// and events.
func attrCount(td ptrace.Traces) int {
	n := 0
	for _, rs := range td.ResourceSpans().All() {
		n += rs.Resource().Attributes().Len()
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				n += sp.Attributes().Len()
				for _, l := range sp.Links().All() {
					n += l.Attributes().Len()
				}
				for _, e := range sp.Events().All() {
					n += e.Attributes().Len()
				}
			}
		}
	}
	return n
}

func (c *pdataConverter) resource(r pcommon.Resource) *otelmap.Resource {
	attrs := r.Attributes()
	if attrs.Len() == 0 {
		return otelmap.EmptyResource()
	}
	res := &otelmap.Resource{Attrs: c.attrs(attrs)}
	if v, ok := attrs.Get(string(otelmap.AttrServiceName)); ok && v.Type() == pcommon.ValueTypeStr {
		res.ServiceName = v.Str()
	}
	return res
}

func (c *pdataConverter) span(ps ptrace.Span, res *otelmap.Resource) {
	c.spans = append(c.spans, otelmap.Span{
		TraceID:      trace.TraceID(ps.TraceID()),
		SpanID:       trace.SpanID(ps.SpanID()),
		ParentSpanID: trace.SpanID(ps.ParentSpanID()),
		Name:         ps.Name(),
		Kind:         pdataKind(ps.Kind()),
		Start:        pdataTime(ps.StartTimestamp()),
		End:          pdataTime(ps.EndTimestamp()),
		Attrs:        c.attrs(ps.Attributes()),
		Resource:     res,
		Source:       c.source,
	})
	sp := &c.spans[len(c.spans)-1]
	c.detail(sp, ps)
	if st := ps.Status(); st.Code() == ptrace.StatusCodeError {
		sp.StatusError = true
		sp.StatusMessage = st.Message()
	}
	// A span the assessor rebuilt from a Traceability Extension step and
	// exported may come back through a Collector; it must stay marked as
	// such, so that the span its own process recorded replaces it in the
	// store (as the in-process road does, see SpanFromReadOnly).
	if v, ok := sp.Attr(otelmap.AttrSource); ok && v.Type() == attribute.STRING && v.AsString() == otelmap.SourceExtension {
		sp.Source = otelmap.SourceExtension
	}
	if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
		c.badIDs++
		if c.badIDs <= maxIDWarnings {
			c.warnings = append(c.warnings, fmt.Sprintf("span %q (trace id %s, span id %s): invalid trace or span id",
				sp.Name, sp.TraceID, sp.SpanID))
		}
	}
}

// detail converts ps's links and events into sp's Detail.
func (c *pdataConverter) detail(sp *otelmap.Span, ps ptrace.Span) {
	if ls := ps.Links(); ls.Len() > 0 {
		sp.EnsureDetail().Links = make([]otelmap.Link, ls.Len())
		for i := range sp.Detail.Links {
			l := ls.At(i)
			sp.Detail.Links[i] = otelmap.Link{TraceID: trace.TraceID(l.TraceID()), SpanID: trace.SpanID(l.SpanID()), Attrs: c.attrs(l.Attributes())}
		}
	}
	if es := ps.Events(); es.Len() > 0 {
		sp.EnsureDetail().Events = make([]otelmap.Event, es.Len())
		for i := range sp.Detail.Events {
			e := es.At(i)
			sp.Detail.Events[i] = otelmap.Event{Name: e.Name(), Time: pdataTime(e.Timestamp()), Attrs: c.attrs(e.Attributes())}
		}
	}
}

// attrs converts m, taking the slice from the shared arena. The slice's
// capacity is cut to its length so that an append by a reader copies
// rather than overwriting the next span's attributes.
func (c *pdataConverter) attrs(m pcommon.Map) []attribute.KeyValue {
	n := m.Len()
	if n == 0 {
		return nil
	}
	var out []attribute.KeyValue
	left := c.attrsLeft
	c.attrsLeft -= n
	if c.reuse {
		if cap(c.scratch)-len(c.scratch) < n {
			c.scratch = make([]attribute.KeyValue, 0, max(n, 2*cap(c.scratch), 64))
		}
		out = c.scratch[len(c.scratch) : len(c.scratch) : len(c.scratch)+n]
		c.scratch = c.scratch[:len(c.scratch)+n]
	} else if n > attrChunk/4 {
		out = make([]attribute.KeyValue, 0, n) // a large set gets its own array
	} else {
		if len(c.arena) < n {
			c.arena = make([]attribute.KeyValue, max(n, min(attrChunk, left)))
		}
		out = c.arena[:0:n]
		c.arena = c.arena[n:]
	}
	m.Range(func(k string, v pcommon.Value) bool {
		if kv, ok := pdataKeyValue(k, v); ok {
			out = append(out, kv) // never beyond cap n: no reallocation
		}
		return true
	})
	if len(out) == 0 {
		return nil
	}
	return out[:len(out):len(out)]
}

// keyValue converts one pdata attribute; ok is false for an empty value.
func pdataKeyValue(k string, v pcommon.Value) (attribute.KeyValue, bool) {
	key := attribute.Key(k)
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return key.String(v.Str()), true
	case pcommon.ValueTypeInt:
		return key.Int64(v.Int()), true
	case pcommon.ValueTypeDouble:
		return key.Float64(v.Double()), true
	case pcommon.ValueTypeBool:
		return key.Bool(v.Bool()), true
	case pcommon.ValueTypeSlice:
		if kv, ok := pdataSlice(key, v.Slice()); ok {
			return kv, true
		}
		return key.String(v.AsString()), true
	case pcommon.ValueTypeMap, pcommon.ValueTypeBytes:
		return key.String(v.AsString()), true
	default: // ValueTypeEmpty
		return attribute.KeyValue{}, false
	}
}

// homogeneousSlice converts an array whose elements are all strings, all
// booleans, all integers or all doubles into the matching attribute slice.
// An empty array becomes an empty string slice.
func pdataSlice(key attribute.Key, s pcommon.Slice) (attribute.KeyValue, bool) {
	n := s.Len()
	if n == 0 {
		return key.StringSlice([]string{}), true
	}
	typ := s.At(0).Type()
	for i := 1; i < n; i++ {
		if s.At(i).Type() != typ {
			return attribute.KeyValue{}, false
		}
	}
	switch typ {
	case pcommon.ValueTypeStr:
		vs := make([]string, n)
		for i := range vs {
			vs[i] = s.At(i).Str()
		}
		return key.StringSlice(vs), true
	case pcommon.ValueTypeInt:
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = s.At(i).Int()
		}
		return key.Int64Slice(vs), true
	case pcommon.ValueTypeDouble:
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = s.At(i).Double()
		}
		return key.Float64Slice(vs), true
	case pcommon.ValueTypeBool:
		vs := make([]bool, n)
		for i := range vs {
			vs[i] = s.At(i).Bool()
		}
		return key.BoolSlice(vs), true
	}
	return attribute.KeyValue{}, false
}

// spanKind maps the OTLP span kind to the OpenTelemetry API's.
func pdataKind(k ptrace.SpanKind) trace.SpanKind {
	switch k {
	case ptrace.SpanKindServer:
		return trace.SpanKindServer
	case ptrace.SpanKindClient:
		return trace.SpanKindClient
	case ptrace.SpanKindProducer:
		return trace.SpanKindProducer
	case ptrace.SpanKindConsumer:
		return trace.SpanKindConsumer
	default: // INTERNAL, UNSPECIFIED, and values from a newer protocol
		return trace.SpanKindInternal
	}
}

func pdataTime(ts pcommon.Timestamp) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(ts))
}
