package otelmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Span is one finished span as the decoders make it and the trace store
// gives it back (the store holds it packed: packed.go), whichever road it
// came by. It is deliberately small: identity, timing, kind, status,
// attributes, and the links and events that some instrumentations put what
// assembly needs in (a handoff joined only by a span link, a handoff's
// target named only in an event).
type Span struct {
	TraceID      trace.TraceID
	SpanID       trace.SpanID
	ParentSpanID trace.SpanID // invalid (zero) for a root span
	Name         string
	Kind         trace.SpanKind
	Start        time.Time
	End          time.Time
	// StatusError is true for status code Error; StatusMessage is its text.
	StatusError   bool
	StatusMessage string
	Attrs         []attribute.KeyValue
	// Resource is shared by the spans of one batch (in the store, by the
	// spans of one trace with equal resources); never nil in the store.
	Resource *Resource
	// Source is the road the span came by: SourceInProcess, SourceOTLP or
	// SourceExtension.
	Source string
	// Detail holds the span's links and events; nil when it has neither,
	// as most spans do. They sit behind one pointer rather than as two
	// slices in Span because a decoder writes millions of spans and two
	// empty slice headers would be 48 of a span's bytes; read them with
	// Links and Events.
	Detail *SpanDetail
}

// SpanDetail is what only some spans carry: links and events. A Span's
// Detail is nil, not empty, when it has neither.
type SpanDetail struct {
	// Links are the span's links, in recorded order; nil when none.
	Links []Link
	// Events are the span's events, in recorded order; nil when none.
	Events []Event
}

// Links returns the span's links, in recorded order; nil when none.
func (s *Span) Links() []Link {
	if s.Detail == nil {
		return nil
	}
	return s.Detail.Links
}

// Events returns the span's events, in recorded order; nil when none.
func (s *Span) Events() []Event {
	if s.Detail == nil {
		return nil
	}
	return s.Detail.Events
}

// EnsureDetail returns the span's Detail, allocating it first when the span
// has none; for decoders, which call it only when there is a link or an
// event.
func (s *Span) EnsureDetail() *SpanDetail {
	if s.Detail == nil {
		s.Detail = &SpanDetail{}
	}
	return s.Detail
}

// Link is a span link: another span this one is causally related to, in
// this trace or another (a message's creator, a batch's members).
type Link struct {
	TraceID trace.TraceID
	SpanID  trace.SpanID
	Attrs   []attribute.KeyValue
}

// Event is a span event: a named, timed record with attributes (an
// exception, a GenAI message).
type Event struct {
	Name  string
	Time  time.Time // the zero time when unset
	Attrs []attribute.KeyValue
}

// Resource is the entity that produced spans.
type Resource struct {
	// ServiceName is service.name, "" when absent.
	ServiceName string
	Attrs       []attribute.KeyValue
}

// emptyResource stands in for a missing resource so readers need no nil
// checks.
var emptyResource = &Resource{}

// EmptyResource is the one resource that stands for a missing resource
// throughout coordbench: decoders, the recorder and the store give it to a
// span without one, so that all such spans share it (assembly compares
// processes by resource pointer).
func EmptyResource() *Resource { return emptyResource }

// ResourceOrEmpty returns the span's resource or, when it has none, the one
// empty resource that stands for a missing resource throughout otelmap (the
// store, the recorder and the OTLP decoder use it too), so that readers need
// no nil checks and all spans without a resource share one.
func (s *Span) ResourceOrEmpty() *Resource {
	if s.Resource == nil {
		return emptyResource
	}
	return s.Resource
}

// Attr returns the value of key on the span, and whether it was there.
func (s *Span) Attr(key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attrs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// StringAttr returns key's value when it is a non-empty string. A value of
// another type is reported through ok=false and wrongType=true so callers
// can note it rather than guess.
func (s *Span) StringAttr(key attribute.Key) (v string, ok, wrongType bool) {
	val, found := s.Attr(key)
	if !found {
		return "", false, false
	}
	if val.Type() != attribute.STRING {
		return "", false, true
	}
	str := val.AsString()
	return str, str != "", false
}

// IntAttr returns key's value when it is an integer, or a float with no
// fraction.
func (s *Span) IntAttr(key attribute.Key) (int64, bool) {
	val, found := s.Attr(key)
	if !found {
		return 0, false
	}
	switch val.Type() {
	case attribute.INT64:
		return val.AsInt64(), true
	case attribute.FLOAT64:
		f := val.AsFloat64()
		if f == float64(int64(f)) {
			return int64(f), true
		}
	}
	return 0, false
}
