package tracestore

import (
	"encoding/binary"
	"slices"
	"strings"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// cloneResource returns a deep copy of res: the store keeps resources
// beyond the batch they came in, and a decoded resource's strings sit in
// memory shared with the whole batch (SpansFromProto's arenas, or the
// request body, which the receiver reuses), which the store does not
// keep.
func cloneResource(res *otelmap.Resource) *otelmap.Resource {
	if res == nil || res == otelmap.EmptyResource() {
		return otelmap.EmptyResource()
	}
	return &otelmap.Resource{ServiceName: strings.Clone(res.ServiceName), Attrs: cloneAttrs(res.Attrs)}
}

// cloneDetail returns a deep copy of d as cloneAttrs would copy each of
// its attribute lists and strings.Clone its event names, in a few
// allocations whatever its size: every string in one buffer, every
// attribute in one array (each list's capacity cut to its length). A
// span of an agent framework often has events, and copying them list by
// list was a third of the allocations of taking spans in the Collector
// connector (docs/performance.md, issue 31).
func cloneDetail(d *otelmap.SpanDetail) *otelmap.SpanDetail {
	size := 0
	for _, l := range d.Links {
		size += packedSizeHint(l.Attrs)
	}
	for _, e := range d.Events {
		size += len(e.Name) + packedSizeHint(e.Attrs)
	}
	b := make([]byte, 0, size)
	n := 0
	for _, l := range d.Links {
		for _, kv := range l.Attrs {
			b = otelmap.AppendPackedAttr(b, kv)
		}
		n += len(l.Attrs)
	}
	for _, e := range d.Events {
		b = append(b, e.Name...)
		for _, kv := range e.Attrs {
			b = otelmap.AppendPackedAttr(b, kv)
		}
		n += len(e.Attrs)
	}
	kvs := make([]attribute.KeyValue, n)
	r := reader{b: b}
	attrs := func(in []attribute.KeyValue) []attribute.KeyValue {
		if in == nil {
			return nil
		}
		out := kvs[:len(in):len(in)]
		kvs = kvs[len(in):]
		for i := range out {
			out[i] = r.attr()
		}
		return out
	}
	out := &otelmap.SpanDetail{}
	if d.Links != nil {
		out.Links = make([]otelmap.Link, len(d.Links))
		for i, l := range d.Links {
			out.Links[i] = otelmap.Link{TraceID: l.TraceID, SpanID: l.SpanID, Attrs: attrs(l.Attrs)}
		}
	}
	if d.Events != nil {
		out.Events = make([]otelmap.Event, len(d.Events))
		for i, e := range d.Events {
			name := ""
			if len(e.Name) > 0 {
				name = unsafe.String(&r.b[r.pos], len(e.Name))
				r.pos += len(e.Name)
			}
			out.Events[i] = otelmap.Event{Name: name, Time: e.Time, Attrs: attrs(e.Attrs)}
		}
	}
	return out
}

// packedSizeHint is the bytes otelmap.AppendPackedAttr takes for attrs,
// at most a few more, but for slices, which it guesses.
func packedSizeHint(attrs []attribute.KeyValue) int {
	n := 0
	for _, kv := range attrs {
		n += uvarintLen(len(kv.Key)) + len(kv.Key) + 1 // and the type byte
		switch kv.Value.Type() {
		case attribute.STRING:
			s := kv.Value.AsString()
			n += uvarintLen(len(s)) + len(s)
		case attribute.BOOL:
			n++
		case attribute.INT64:
			n += binary.MaxVarintLen64
		case attribute.FLOAT64:
			n += 8
		default:
			n += 32
		}
	}
	return n
}

func uvarintLen(n int) int {
	return len(binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64), uint64(n)))
}

// cloneAttrs copies attributes with their strings (through a packed
// record, which owns its bytes).
func cloneAttrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	if attrs == nil {
		return nil
	}
	var b []byte
	for _, kv := range attrs {
		b = otelmap.AppendPackedAttr(b, kv)
	}
	r := reader{b: b}
	out := make([]attribute.KeyValue, len(attrs))
	for i := range out {
		out[i] = r.attr()
	}
	return slices.Clip(out)
}
