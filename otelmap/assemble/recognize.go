package assemble

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// This file is where spans are read. Every span is read once, through a
// table of recognizers, into a reading: what the span says about its side
// of a call, its operation, the agent it names and whether it failed. The
// later phases (calls.go, identity.go) decide by the reading and never look
// at attributes themselves, so that a span convention coordbench does not
// emit (OpenInference, OpenLLMetry, the earlier GenAI shapes, messaging,
// the A2A SDKs' own spans, plain HTTP) can be taught to assembly as one more
// recognizer: a file recognize_<family>.go and a line in recognizers.
//
// The steps' details (model, tokens, messages: steps.go) are read
// separately, only for the spans that are steps.

// reading is what the recognizers read from one span.
type reading struct {
	// role is the side of a call the span records. It starts as the span
	// kind says (spanKindRole); a recognizer may correct it.
	role uint8
	// op is the GenAI operation class; callType a call type the span marks
	// itself with explicitly (ctNone if none). A span with either is a step.
	op, callType uint8
	// agentName and agentID name an agent: the agent doing the span's work
	// on an INTERNAL or SERVER agent span, the callee on a CLIENT one.
	agentName, agentID string
	// marker says a client span belongs to an agent call, so that a call
	// nobody answered is still an interaction.
	marker bool
	// failed: the call or operation failed (besides the span's status).
	failed bool
	// ext: the span was rebuilt from the Traceability Extension.
	ext bool
	// hasAddr: the span names the server it called (server.address).
	hasAddr bool

	id       uint64         // the span id, for warnings
	warnings *[]attrWarning // where warnings go
}

// A recognizer reads the spans of one family of conventions. read looks at
// one span and records in r what its conventions say, and leaves alone what
// they do not speak of: r already holds what the span kind says and what
// recognizers earlier in the table read. An attribute of the wrong type or
// value is reported with r.warn (r.str does it for strings) and counts as
// absent.
type recognizer interface {
	read(sp *otelmap.Span, r *reading)
}

// recognizers is the table every span is read through, in order.
func recognizers() []recognizer {
	return []recognizer{coordbenchConventions{}}
}

// str returns a string attribute's value, noting a value of another type.
func (r *reading) str(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		r.warn(string(kv.Key), fmt.Sprintf("is %s, want string", kv.Value.Type()))
		return ""
	}
	return kv.Value.AsString()
}

// warn notes an attribute of the wrong type or value.
func (r *reading) warn(key, what string) {
	*r.warnings = append(*r.warnings, attrWarning{id: r.id, key: key, msg: what})
}

// scan reads node i's span through the recognizers and keeps what
// structure and identity depend on.
func (a *assembler) scan(i int32) {
	n := &a.nodes[i]
	sp := a.span(i)
	r := &a.reading
	*r = reading{role: spanKindRole(sp.Kind), id: n.id, warnings: &a.attrWarnings}
	for _, rec := range a.recognizers {
		rec.read(sp, r)
	}
	n.role, n.op = r.role, r.op
	if r.marker {
		n.flags |= fMarker
	}
	if r.failed {
		n.flags |= fFailed
	}
	if r.ext {
		n.flags |= fExt
	}
	if r.hasAddr {
		n.flags |= fHasAddr
	}
	ct := r.callType
	if n.op == opInvoke || ct == ctAgent {
		n.flags |= fAgent | fMarker
	}
	switch {
	case ct != ctNone:
		n.callType = ct
	case n.flags&fAgent != 0:
		n.callType = ctAgent
	case n.op == opLLM || n.op == opTool:
		n.callType = ctTool
	}
	if n.callType != ctNone {
		n.flags |= fStep
	}
	name, id := r.agentName, r.agentID
	rank := rankAgentName
	if name == "" {
		name, rank = id, rankAgentID
	}
	if name != "" {
		if n.flags&fExt != 0 {
			rank = rankExtension
		}
		n.selfIdent = a.intern(name)
		a.note(n.selfIdent, rank, false)
		if id != "" {
			if x := &a.idents[n.selfIdent]; x.id == "" || id < x.id {
				x.id = id
			}
		}
	}
}

// a2aFailed reports an A2A task state that ends a call in error, in the 0.3
// ("failed") and the 1.0 ("TASK_STATE_FAILED") spellings.
func a2aFailed(state string) bool {
	if len(state) > len("TASK_STATE_") && strings.EqualFold(state[:len("TASK_STATE_")], "TASK_STATE_") {
		state = state[len("TASK_STATE_"):]
	}
	return strings.EqualFold(state, "failed") || strings.EqualFold(state, "rejected")
}
