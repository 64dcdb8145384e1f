// Package a2acall is coordbench's instrumented A2A client: the Messenger
// that the green agent drives participants with and that the base purple
// agent calls its peers with. It lives apart from both so that their calls
// have one span shape (docs/design.md#one-call-in-spans) and purple need
// not import green.
//
// A Messenger keeps one a2a-go client per participant URL, made from the
// agent's card on first use. Send delivers one message and waits for the
// final answer (a stream, a blocking send, then polling tasks/get if the
// task is not done yet) and returns it as a Reply; every failure is a
// *CallError naming the participant. It speaks A2A 1.0 through a2a-go and
// the 0.3 wire format that AgentBeats' Python agents speak through
// a2acompat/a2av0, chosen from the callee's agent card: 1.0 before 0.x,
// JSON-RPC before HTTP+JSON.
//
// Every call is one figure of spans:
//
//	invoke_agent <card name>   CLIENT  the GenAI agent invocation: gen_ai.agent.name/id
//	                                   (the callee), gen_ai.conversation.id, server.address/port,
//	                                   coordbench.call_type=AGENT, message text when captured
//	  SendMessage              CLIENT  the A2A method (or SendStreamingMessage, GetTask),
//	                                   a2a.* attributes
//	    POST                   CLIENT  the HTTP span as otelhttp makes it; carries traceparent
//	                                   and X-A2A-Extensions
//
// so the callee's SERVER spans pair with the POST span, and the steps it
// returns through the Traceability Extension become spans under
// invoke_agent (stored in the Messenger's store, the third road of spans).
// With Options.NoTransportSpans only invoke_agent is made, and traceparent
// carries its context.
//
// A span nobody records costs its start and end alone: attributes and
// message content are computed only for recording spans.
//
// Files, by concern: messenger.go (Options, New, Send), card.go (the agent
// card and AgentInfo), transport.go (protocol selection, blocking, streaming
// and polling calls), httpclient.go (the HTTP transport: POST span and
// headers), reply.go (collecting the answer into a Reply), spans.go (call
// spans, Traceability Extension steps), content.go (the message content of
// spans), pool.go (one client per URL, the URLs parsed once, Close),
// allow.go (the participant allowlist, Options.Allow).
package a2acall
