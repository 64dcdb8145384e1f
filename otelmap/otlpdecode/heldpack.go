package otlpdecode

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// A Packer reads pdata spans for a tracestore.Batch's AddWith, straight
// from pdata: the record of each is byte for byte the one Batch.Add
// packs for the span EachSpan converts it into, but no attribute.KeyValue
// is built on the way, which was half the cost of taking a span in the
// Collector connector (docs/performance.md, issue 31):
//
//	attrs, n := p.Span(ps, res, &sp)
//	b.AddWith(h, &sp, n, func(w *tracestore.AttrWriter) { p.WriteAttrs(w, attrs) })
type Packer struct {
	c pdataConverter
	// patchSource: the source is one a record carries as a code, so a
	// span's coordbench.source=extension is found as its attributes are
	// written and set after them (AttrWriter.SetSource), not looked for
	// first.
	patchSource bool
	// d, links and events hold the span's links and events, reused from
	// span to span (AddWith copies them).
	d      otelmap.SpanDetail
	links  []otelmap.Link
	events []otelmap.Event
}

// AttrWriter is what Packer.WriteAttrs writes to: tracestore.AttrWriter.
type AttrWriter interface {
	String(key, v string)
	Int(key string, v int64)
	Float(key string, v float64)
	Bool(key string, v bool)
	Value(kv attribute.KeyValue)
	SetSource(source string)
}

// NewPacker returns a Packer stamping source on its spans, as EachSpan
// does. A Packer keeps pointers into the spans it read last: make one
// for each batch.
func NewPacker(source string) *Packer {
	switch source {
	case "", otelmap.SourceInProcess, otelmap.SourceOTLP, otelmap.SourceExtension:
		return &Packer{c: pdataConverter{source: source}, patchSource: true}
	}
	return &Packer{c: pdataConverter{source: source}}
}

// Resource converts the resource of a ResourceSpans, for Span to take
// for each of its spans, as EachSpan converts it: the returned resource
// may be kept; its strings point into r.
func (p *Packer) Resource(r pcommon.Resource) *otelmap.Resource {
	p.c.reuse = false
	p.c.attrsLeft = r.Attributes().Len()
	res := p.c.resource(r)
	p.c.reuse = true
	return res
}

// Span sets sp to the span EachSpan converts ps into, of resource res
// (Resource's), but for its trace id and attributes, and returns the
// attributes, for WriteAttrs, and their count, for AddWith. sp's links and
// events are valid until the next call.
func (p *Packer) Span(ps ptrace.Span, res *otelmap.Resource, sp *otelmap.Span) (pcommon.Map, int) {
	*sp = otelmap.Span{
		SpanID:       trace.SpanID(ps.SpanID()),
		ParentSpanID: trace.SpanID(ps.ParentSpanID()),
		Name:         ps.Name(),
		Kind:         pdataKind(ps.Kind()),
		Start:        pdataTime(ps.StartTimestamp()),
		End:          pdataTime(ps.EndTimestamp()),
		Resource:     res,
		Source:       p.c.source,
	}
	if ps.Links().Len() > 0 || ps.Events().Len() > 0 {
		p.detail(sp, ps)
	}
	if st := ps.Status(); st.Code() == ptrace.StatusCodeError {
		sp.StatusError = true
		sp.StatusMessage = st.Message()
	}
	attrs := ps.Attributes()
	if !p.patchSource && sourceIsExtension(attrs) {
		sp.Source = otelmap.SourceExtension
	}
	n := attrs.Len()
	if n >= 0x80 { // AddWith needs the count exactly
		n = 0
		for _, v := range attrs.All() {
			if v.Type() != pcommon.ValueTypeEmpty {
				n++
			}
		}
	}
	return attrs, n
}

// detail sets sp's Detail to ps's links and events as pdataConverter.detail
// converts them, in p's memory, which the next span reuses.
func (p *Packer) detail(sp *otelmap.Span, ps ptrace.Span) {
	p.c.scratch = p.c.scratch[:0]
	p.d = otelmap.SpanDetail{}
	if ls := ps.Links(); ls.Len() > 0 {
		p.links = p.links[:0]
		for _, l := range ls.All() {
			p.links = append(p.links, otelmap.Link{TraceID: trace.TraceID(l.TraceID()), SpanID: trace.SpanID(l.SpanID()), Attrs: p.c.attrs(l.Attributes())})
		}
		p.d.Links = p.links
	}
	if es := ps.Events(); es.Len() > 0 {
		p.events = p.events[:0]
		for _, e := range es.All() {
			p.events = append(p.events, otelmap.Event{Name: e.Name(), Time: pdataTime(e.Timestamp()), Attrs: p.c.attrs(e.Attributes())})
		}
		p.d.Events = p.events
	}
	sp.Detail = &p.d
}

// WriteAttrs writes m's attributes (Span's) to w as pdataConverter.attrs
// converts them (an empty value is dropped), and the span's source as
// EachSpan reads it, from the first coordbench.source that is not empty.
func (p *Packer) WriteAttrs(w AttrWriter, m pcommon.Map) {
	source := !p.patchSource // found, or looked for already
	ext := false
	for k, v := range m.All() {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			s := v.Str()
			if !source && k == string(otelmap.AttrSource) {
				source, ext = true, s == otelmap.SourceExtension
			}
			w.String(k, s)
			continue
		case pcommon.ValueTypeInt:
			w.Int(k, v.Int())
		case pcommon.ValueTypeDouble:
			w.Float(k, v.Double())
		case pcommon.ValueTypeBool:
			w.Bool(k, v.Bool())
		case pcommon.ValueTypeEmpty:
			continue
		default:
			if kv, ok := pdataKeyValue(k, v); ok {
				w.Value(kv)
				if !source && k == string(otelmap.AttrSource) {
					source, ext = true, kv.Value.Type() == attribute.STRING && kv.Value.AsString() == otelmap.SourceExtension
				}
			}
			continue
		}
		if !source && k == string(otelmap.AttrSource) {
			source = true // not a string: not the extension's
		}
	}
	if ext {
		w.SetSource(otelmap.SourceExtension)
	}
}

// sourceIsExtension tells whether the span of attributes m is marked
// coordbench.source=extension, as pdataConverter.span reads it: the
// first of its attributes of that key that is not empty is that string.
func sourceIsExtension(m pcommon.Map) bool {
	for k, v := range m.All() {
		if k != string(otelmap.AttrSource) || v.Type() == pcommon.ValueTypeEmpty {
			continue
		}
		if v.Type() == pcommon.ValueTypeStr {
			return v.Str() == otelmap.SourceExtension
		}
		kv, _ := pdataKeyValue(k, v)
		return kv.Value.Type() == attribute.STRING && kv.Value.AsString() == otelmap.SourceExtension
	}
	return false
}
