// Package spanorder decides which of two spans with the same id trace
// assembly keeps: a total order on spans (Less), so the choice does not
// depend on arrival order, in which a span its own process recorded beats
// one rebuilt from the Traceability Extension.
package spanorder

import (
	"cmp"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// Less orders two spans with the same id, so the one kept does not
// depend on arrival order. A span its own process recorded beats one rebuilt
// from the extension, as in the store; past that the order is arbitrary but
// total.
func Less(x, y *otelmap.Span) bool {
	if c := cmp.Compare(sourceRank(x), sourceRank(y)); c != 0 {
		return c < 0
	}
	if c := x.Start.Compare(y.Start); c != 0 {
		return c < 0
	}
	if c := x.End.Compare(y.End); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.Name, y.Name); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(x.Kind, y.Kind); c != 0 {
		return c < 0
	}
	if c := slices.Compare(x.ParentSpanID[:], y.ParentSpanID[:]); c != 0 {
		return c < 0
	}
	if x.StatusError != y.StatusError {
		return x.StatusError
	}
	if c := strings.Compare(x.StatusMessage, y.StatusMessage); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.Source, y.Source); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.ResourceOrEmpty().ServiceName, y.ResourceOrEmpty().ServiceName); c != 0 {
		return c < 0
	}
	if c := compareAttrs(x.Attrs, y.Attrs); c != 0 {
		return c < 0
	}
	if c := compareAttrs(x.ResourceOrEmpty().Attrs, y.ResourceOrEmpty().Attrs); c != 0 {
		return c < 0
	}
	if c := slices.CompareFunc(x.Links(), y.Links(), compareLinks); c != 0 {
		return c < 0
	}
	return slices.CompareFunc(x.Events(), y.Events(), compareEvents) < 0
}

func compareLinks(x, y otelmap.Link) int {
	return cmp.Or(slices.Compare(x.TraceID[:], y.TraceID[:]), slices.Compare(x.SpanID[:], y.SpanID[:]), compareAttrs(x.Attrs, y.Attrs))
}

func compareEvents(x, y otelmap.Event) int {
	return cmp.Or(strings.Compare(x.Name, y.Name), x.Time.Compare(y.Time), compareAttrs(x.Attrs, y.Attrs))
}

func sourceRank(s *otelmap.Span) int {
	if isExtension(s) {
		return 1
	}
	return 0
}

func compareAttrs(x, y []attribute.KeyValue) int {
	for i := 0; i < len(x) && i < len(y); i++ {
		if c := strings.Compare(string(x[i].Key), string(y[i].Key)); c != 0 {
			return c
		}
		if c := cmp.Compare(x[i].Value.Type(), y[i].Value.Type()); c != 0 {
			return c
		}
		if c := strings.Compare(x[i].Value.String(), y[i].Value.String()); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(x), len(y))
}

// isExtension reports whether a span was rebuilt from the Traceability
// Extension: by the road it came (the store's Source) or by the
// coordbench.source attribute, which survives a re-export through OTLP.
func isExtension(s *otelmap.Span) bool {
	if s.Source == otelmap.SourceExtension {
		return true
	}
	for i := range s.Attrs {
		if s.Attrs[i].Key == otelmap.AttrSource {
			return s.Attrs[i].Value.Type() == attribute.STRING && s.Attrs[i].Value.AsString() == otelmap.SourceExtension
		}
	}
	return false
}
