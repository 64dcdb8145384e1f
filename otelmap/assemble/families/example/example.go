// Package example is a convention family for a framework that does not
// exist, Acme, written to be copied: the smallest family that reads a
// framework's own namespace. Acme (as this package imagines it) writes on
// every span of an agent's run:
//
//   - acme.kind: agent for an agent's run, model for a model call, tool
//     for a tool call, team for the run around a team of agents;
//   - acme.agent: the agent's name, on its run (and copied onto every span
//     of the run, where it names nothing);
//   - acme.handoff.to: on a tool call that hands control to another agent,
//     that agent.
//
// A new family is a folder like this one and a line in the registry
// (families.Builtin): see example_test.go, which adds this family to a
// registry and reads an Acme team exactly, and docs/trace-assembly.md,
// "Adding a family". A real family names, in its doc comment, the
// framework's versions and the live programs it was checked against.
package example

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Family is the Acme family.
var Family recognize.Family = family{}

type family struct{}

// Spec says what the family reads: Acme's keys, and the one attribute
// that names its agents (identified_by "acme.agent", ranked with the other
// frameworks' attributes).
func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name:       "acme",
		Keys:       []recognize.Key{recognize.Prefix("acme.", 0)},
		Identities: []recognize.Identity{{Label: "acme.agent", Tier: recognize.NameAttribute}},
		Unnamed:    "an Acme agent run without acme.agent",
	}
}

// NewReader returns what reads one span at a time.
func (family) NewReader() recognize.SpanReader { return &reader{} }

// reader is what Acme's attributes say of the span being read.
type reader struct {
	kind, agent, handoffTo string
}

func (a *reader) Reset() { *a = reader{} }

// Attr reads one acme.* attribute; the span is Acme's once acme.kind says
// what it is (Claim counts it in coverage.recognized).
func (a *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	switch kv.Key {
	case "acme.kind":
		a.kind = recognize.Quiet(kv)
		r.Claim()
	case "acme.agent":
		a.agent = recognize.Quiet(kv)
	case "acme.handoff.to":
		a.handoffTo = recognize.Quiet(kv)
	}
}

// Decide says what the span is, in a framework's own word: it comes before
// the instrumentations and the GenAI standard that may be on the same
// span.
func (a *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	w := recognize.Word{Understood: true}
	switch a.kind {
	case "agent":
		w.Op, w.Unnamed = recognize.OpInvoke, a.agent == ""
		r.Name(0, a.agent) // read only if the span is an agent's run
	case "model":
		w.Op = recognize.OpLLM
	case "tool":
		w.Op = recognize.OpTool
		if a.handoffTo != "" {
			r.HandoffNamed(a.handoffTo)
		}
	case "team":
		w.Workflow = true
	default:
		return // no kind, or one Acme does not write: say nothing
	}
	r.Say(recognize.TierFramework, w)
}
