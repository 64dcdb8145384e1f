package recognize

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// A2A, in two conventions.
//
// The OpenTelemetry A2A attributes (a2a.method.name, a2a.task.id,
// a2a.task.state, ...; coordbench's own A2A spans): any of them marks a span
// as part of an agent call, so that a client call nobody answered is still
// an interaction; a task state of failed or rejected fails the call.
//
// The A2A Python SDK's own telemetry (a2a-python's utils/telemetry.py
// trace_class/trace_function): spans named "a2a.client.<module>.<Class>.<method>"
// (kind CLIENT), "a2a.server.<...>" (kind SERVER) and "a2a.utils.<...>",
// with no attributes. They wrap the SDK's methods, not calls: the
// JSON-RPC transport's helpers, the request handler, every
// EventQueue.enqueue_event of an agent's answer (which the SDK opens as
// SERVER spans under the agent's own work). They are read as INTERNAL
// whatever their kind; the call itself is the HTTP client and server span
// pair the HTTP instrumentation records around them. The SDK reads and sends
// no trace context, so without HTTP instrumentation each request an agent
// receives starts a trace of its own under the SDK's server span
// (Verdict.ReceivedBlind).

// readA2A reads one a2a.* attribute.
func (r *Reading) readA2A(kv *attribute.KeyValue) {
	r.claimCore(claimA2A)
	r.s.a2aAttr = true
	if kv.Key == otelmap.AttrA2ATaskState && A2AFailed(r.Str(kv)) {
		r.Failed = true
	}
}

// readA2AName recognizes the A2A Python SDK's method spans by name.
func (r *Reading) readA2AName(name string) {
	if len(name) < len("a2a.utils.") || name[:4] != "a2a." {
		return
	}
	if rest := name[4:]; strings.HasPrefix(rest, "client.") || strings.HasPrefix(rest, "server.") || strings.HasPrefix(rest, "utils.") {
		r.claimCore(claimA2A)
		r.s.notCall = true // not a side of a call: read as INTERNAL
		r.s.clientSDK = strings.HasPrefix(rest, "client.")
		// The SDK propagates no trace context (no module of it injects or
		// extracts one): its server span at a trace's top received a
		// request whose caller may be traced elsewhere.
		r.ReceivedBlind = r.Role == RoleServer && strings.HasPrefix(rest, "server.")
	}
}

// A2AFailed reports an A2A task state that ends a call in error, in the 0.3
// ("failed") and the 1.0 ("TASK_STATE_FAILED") spellings.
func A2AFailed(state string) bool {
	if len(state) > len("TASK_STATE_") && strings.EqualFold(state[:len("TASK_STATE_")], "TASK_STATE_") {
		state = state[len("TASK_STATE_"):]
	}
	return strings.EqualFold(state, "failed") || strings.EqualFold(state, "rejected")
}
