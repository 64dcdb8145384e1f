// Package recognize reads one span through the table of convention
// families (the recognizers) into a Verdict: its side of a call, its
// operation and the step it is, the agent it names and by which rule,
// whether it failed, whether it hands off to another agent. Each family
// of span conventions (GenAI and its previous shapes, OpenInference,
// OpenLLMetry, the Vercel AI SDK, Genkit, VoltAgent, Langfuse, MCP, A2A, HTTP,
// messaging, span links, coordbench's own attributes, and a user's
// convention map from package convmap) is read by a file of its own; the
// precedence between them, when a span carries several, is in reading.go
// (docs/trace-assembly.md, "When a span carries several conventions").
//
// A Reader reads one span at a time and allocates nothing per span: trace
// assembly (package assemble) reads every span of a trace through it and
// decides calls, agents and steps by the verdict alone, never by the
// attributes the families read. What a span means among the others
// (pairing calls, nesting, tool servers, LangGraph node runs, the target
// of a handoff) is assembly's.
package recognize
