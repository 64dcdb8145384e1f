// Package recognize reads one span at a time into a Verdict: its side of
// a call, its operation and the step it is, the agent it names and by
// which rule, whether it failed, whether it hands off to another agent.
//
// The reading of agents' spans is the convention families' (Family): a
// family says which attribute keys it reads and, for a span that carries
// them, what the span is, through a Reading's methods (Say, Name,
// HandoffKind, ...); the built-in families are packages of their own under
// otelmap/assemble/families, listed in precedence order by its registry,
// and a user's convention map (package convmap) is one more. A Registry
// routes each attribute key to the family that reads it, and decide
// settles, by a fixed precedence (reading.go), what the families said.
// This package reads itself only what calls are made of, whatever the
// registry holds: the A2A, HTTP, MCP and messaging conventions, span
// links, coordbench's own attributes, and the span's kind, status,
// error.type and server.address (core.go).
//
// A Reader reads one span at a time and allocates nothing per span: trace
// assembly (package assemble) reads every span of a trace through it and
// decides calls, agents and steps by the verdict alone, never by the
// attributes the families read. What a span means among the others
// (pairing calls, nesting, tool servers, the target of a handoff) is
// assembly's, and, where a family's spans mean something only once their
// parents are known, the family's pass over the tree (TreePass).
package recognize
