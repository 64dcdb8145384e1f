package assemble

import (
	"github.com/coordbench/coordbench/otelmap"
)

// CallRule returns trace assembly's reading of one span as a side of a
// call, for a wait that must agree with assembly on what a call is without
// assembling (the settle wait: tracestore.Await.Calls, whose type it fits;
// the store does not import assembly, so the caller passes the rule in).
// agentCall is true when the span marks an agent call as the families
// read it: an agent's invocation by the word that settles the span's
// operation (conv's included), a coordbench.call_type of AGENT, an a2a.*
// attribute. callee is the agent the span names, as assembly names it (""
// for none). conv may be nil; the function is safe for concurrent use.
func CallRule(conv *Conventions) func(sp *otelmap.Span) (agentCall bool, callee string) {
	reg := Options{Conventions: conv}.registry()
	return func(sp *otelmap.Span) (bool, string) {
		// Attribute warnings are assembly's to report, not the wait's.
		rd := reg.Reader()
		r := rd.Read(sp, 0)
		marker, name := r.Marker, r.AgentName
		reg.Release(rd)
		return marker, name
	}
}
