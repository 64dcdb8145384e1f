package convmap

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// A Map is a convention family like the built-in ones (recognize.Family):
// "conventions" in coverage.recognized and identified_by. Its word comes
// first (recognize.TierUser): a rule that matches a span says its
// operation, the agent it names and the target it hands off to, whatever
// the built-in families say; spans no rule matches are read by them as
// before. Every span is matched, since a rule may match a span's name
// alone.

// Spec describes the map as a family.
func (c *Map) Spec() recognize.Spec {
	return recognize.Spec{
		Name:       "conventions",
		Identities: []recognize.Identity{{Label: tracedata.IdentityConventions, Tier: recognize.NameUser}},
		EverySpan:  true,
	}
}

// NewReader returns a reader that matches the map's rules, span by span.
func (c *Map) NewReader() recognize.SpanReader { return mapReader{c} }

// mapReader matches one span at a time; it keeps nothing.
type mapReader struct{ c *Map }

func (mapReader) Reset()                                              {}
func (mapReader) Attr(*recognize.Reading, *attribute.KeyValue, uint8) {}

// Decide applies the first rule that matches sp.
func (m mapReader) Decide(r *recognize.Reading, sp *otelmap.Span) {
	rule := m.c.Match(sp)
	if rule == nil {
		return
	}
	r.Claim()
	w := recognize.Word{Understood: true}
	switch rule.Is {
	case Agent:
		w.Op = recognize.OpInvoke
	case LLM:
		w.Op = recognize.OpLLM
	case Tool, Handoff:
		w.Op = recognize.OpTool
	case Workflow:
		w.Workflow = true
	}
	r.Say(recognize.TierUser, w)
	if rule.Is == Handoff {
		r.HandoffOverride(rule.Target.Read(sp))
	}
	if rule.Agent != nil {
		r.NameOverride(0, rule.Agent.Read(sp))
	}
}
