package recognize

import "github.com/coordbench/coordbench/otelmap"

// Span links: a span with a link is claimed by the family "links". What a
// link means (who caused the span: the caller of a call) is assembly's,
// once every span is known (otelmap/assemble/links.go).

// readLinks claims a span that has links.
func (r *Reading) readLinks(sp *otelmap.Span) {
	if len(sp.Links()) > 0 {
		r.claimCore(claimLinks)
	}
}
