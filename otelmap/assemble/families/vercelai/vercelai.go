// Package vercelai is the convention family of the Vercel AI SDK's own
// telemetry (experimental_telemetry), the ai.* spans of SDKs 4 to 6:
// "vercel_ai" in coverage.recognized (SDK 7 documents its
// LegacyOpenTelemetry integration as the same shape; not run here: SDK 7's
// default route is the GenAI conventions, read by the genai family, live
// program ai-sdk-7-genai). No gen_ai.operation.name: the SDK says what a
// span is in ai.operationId (which is also the span's name), and names the
// function in ai.telemetry.functionId, copied onto every span the call
// makes (src/telemetry/assemble-operation-name.ts; read in
// node_modules/ai/dist/index.mjs of ai 4.3.19, 5.0.277 and 6.0.326, and
// checked on the live corpus's ai-sdk-4, ai-sdk-5, ai-sdk-5-deep and
// ai-sdk-6 programs):
//
//   - ai.generateText, ai.streamText, ai.generateObject, ai.streamObject:
//     one call of the SDK's generation loop, what an agent is in the SDK
//     (Experimental_Agent in 5 and ToolLoopAgent in 6 run generateText or
//     streamText; in 4 an agent is a generateText with maxSteps). With
//     ai.telemetry.functionId it is an agent span naming that agent. Without
//     it nothing names the agent: the span is no agent, and it is counted
//     and warned about as an agent's work no rule can name (Word.Unnamed),
//     inside another agent's work too, since there it is a sub-agent whose
//     call the graph cannot show. ToolLoopAgent's id is on no span.
//   - ai.generateText.doGenerate, ai.streamText.doStream,
//     ai.generateObject.doGenerate, ai.streamObject.doStream, and the
//     embedding and reranking model calls ai.embed.doEmbed,
//     ai.embedMany.doEmbed, ai.rerank.doRerank (6): LLM calls.
//   - ai.toolCall: a tool call, named by ai.toolCall.name
//     (src/generate-text/execute-tool-call.ts in 6, generate-text.ts and
//     run-tools-transformation.ts before). A sub-agent run from a tool's
//     execute nests its own ai.generateText in the tool call: the call
//     caller -> sub-agent, read by nesting like any agent span. Under
//     streamText the tool calls are children of the ai.streamText.doStream
//     that asked for them, not of ai.streamText; the caller is still the
//     nearest enclosing agent span. A tool named transfer_to_<agent> is a
//     handoff as in every family.
//   - ai.embed, ai.embedMany, ai.rerank: the SDK's call around its model
//     calls (retries, chunks), never an agent and no step of its own.
//   - any other ai.operationId: unread.
//
// The SDK's own word comes before the instrumentations layered on it
// (recognize.TierFramework): OpenInference's AI SDK span processor marks
// ai.generateText AGENT (earlier CHAIN) with no agent name, and the SDK's
// model calls carry gen_ai.* attributes of the previous shape. The SDK
// sets no status on success and status Error with an exception event on
// failure (src/telemetry/record-span.ts): read as every span's.
package vercelai

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// Family is the Vercel AI SDK family.
var Family recognize.Family = family{}

type family struct{}

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name:       "vercel_ai",
		Keys:       []recognize.Key{recognize.Prefix("ai.", 0)},
		Identities: []recognize.Identity{{Label: tracedata.IdentityVercelAI, Tier: recognize.NameAttribute}},
		Unnamed:    "an AI SDK call without experimental_telemetry.functionId",
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// AI SDK operations, from ai.operationId.
const (
	opNone    uint8 = iota
	opAgent         // generateText, streamText, generateObject, streamObject
	opModel         // the do* model calls
	opTool          // toolCall
	opWrapper       // embed, embedMany, rerank
	opOther         // an operation this family does not know
)

// reader is what the ai.* attributes say of one span.
type reader struct {
	op         uint8
	functionID string // ai.telemetry.functionId
	tool       string // ai.toolCall.name
}

func (s *reader) Reset() { *s = reader{} }

func (s *reader) Attr(r *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	switch kv.Key {
	case "ai.operationId":
		r.Claim()
		s.op = operationOf(recognize.Quiet(kv))
	case otelmap.AttrAIFunctionID:
		s.functionID = recognize.Quiet(kv)
	case "ai.toolCall.name":
		s.tool = recognize.Quiet(kv)
	}
}

func (s *reader) Decide(r *recognize.Reading, _ *otelmap.Span) {
	r.ToolName(s.tool)
	if s.op == opNone {
		return
	}
	w := recognize.Word{Understood: s.op != opOther}
	switch s.op {
	case opAgent:
		w.Op, w.Unnamed = recognize.OpInvoke, s.functionID == ""
		r.Name(0, s.functionID)
	case opModel:
		w.Op = recognize.OpLLM
	case opTool:
		w.Op = recognize.OpTool
	}
	r.Say(recognize.TierFramework, w)
}

// operationOf classifies an ai.operationId.
func operationOf(id string) uint8 {
	switch id {
	case "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject":
		return opAgent
	case "ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate",
		"ai.streamObject.doStream", "ai.embed.doEmbed", "ai.embedMany.doEmbed", "ai.rerank.doRerank":
		return opModel
	case "ai.toolCall":
		return opTool
	case "ai.embed", "ai.embedMany", "ai.rerank":
		return opWrapper
	}
	if !strings.HasPrefix(id, "ai.") {
		return opNone
	}
	return opOther
}
