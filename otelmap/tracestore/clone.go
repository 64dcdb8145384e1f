package tracestore

import (
	"slices"
	"strings"

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

func cloneDetail(d *otelmap.SpanDetail) *otelmap.SpanDetail {
	out := &otelmap.SpanDetail{}
	if d.Links != nil {
		out.Links = make([]otelmap.Link, len(d.Links))
		for i, l := range d.Links {
			out.Links[i] = otelmap.Link{TraceID: l.TraceID, SpanID: l.SpanID, Attrs: cloneAttrs(l.Attrs)}
		}
	}
	if d.Events != nil {
		out.Events = make([]otelmap.Event, len(d.Events))
		for i, e := range d.Events {
			out.Events[i] = otelmap.Event{Name: strings.Clone(e.Name), Time: e.Time, Attrs: cloneAttrs(e.Attrs)}
		}
	}
	return out
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
