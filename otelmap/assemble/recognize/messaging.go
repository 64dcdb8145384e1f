package recognize

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// Messaging: PRODUCER and CONSUMER spans, with the messaging.* attributes
// (messaging.operation, messaging.destination, messaging.destination.name)
// or a framework's own message.* ones (a workflow's message.send with
// message.destination_executor_id). As the Collector's servicegraph
// connector pairs them, a PRODUCER span is the client side of a call and a
// CONSUMER span its server side, whatever the transport: a CONSUMER under
// the PRODUCER that sent its message is a call answered (a runtime's
// publish then process spans).
//
// What joins a message to its sender is often a span link rather than the
// parent: the publishing span runs in the runtime's loop and links to the
// span that created the message, and the consuming span links to it too.
// Such links are read as the caller (links.go). A CONSUMER that
// nothing sent (a receive or acknowledgement under the application's own
// span) is not a call: a server side is an incoming call only when its
// parent is remote or absent (otelmap/assemble/calls.go).

// readMessagingKind claims PRODUCER and CONSUMER spans.
func (r *Reading) readMessagingKind(sp *otelmap.Span) {
	if sp.Kind == trace.SpanKindProducer || sp.Kind == trace.SpanKindConsumer {
		r.claimCore(claimMessaging)
	}
}
