package recognize

import (
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"go.opentelemetry.io/otel/attribute"
)

// The Vercel AI SDK's own telemetry (experimental_telemetry), the ai.*
// spans of SDKs 4 to 6 (SDK 7 documents its LegacyOpenTelemetry integration
// as the same shape; not run here: SDK 7's default route is the GenAI
// conventions, read by genai.go, live program ai-sdk-7-genai). No
// gen_ai.operation.name: the SDK says what a span is in ai.operationId
// (which is also the span's name), and names the function in
// ai.telemetry.functionId, copied onto every span the call makes
// (src/telemetry/assemble-operation-name.ts; read in node_modules/ai/dist/
// index.mjs of ai 4.3.19, 5.0.277 and 6.0.326, the live corpus's
// ai-sdk-4/5/6 programs):
//
//   - ai.generateText, ai.streamText, ai.generateObject, ai.streamObject:
//     one call of the SDK's generation loop, what an agent is in the SDK
//     (Experimental_Agent in 5 and ToolLoopAgent in 6 run generateText or
//     streamText; in 4 an agent is a generateText with maxSteps). With
//     ai.telemetry.functionId it is an agent span naming that agent. Without
//     it nothing names the agent: the span is no agent, and it is counted
//     and warned about as an agent's work no rule can name (fUnnamedAgent),
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
//     handoff as in every family (handoff.go).
//   - ai.embed, ai.embedMany, ai.rerank: the SDK's call around its model
//     calls (retries, chunks), never an agent and no step of its own.
//
// The SDK sets no status on success and status Error with an exception
// event on failure (src/telemetry/record-span.ts): read as every span's.

// AI SDK operations, from ai.operationId.
const (
	aiNone    uint8 = iota
	aiAgent         // generateText, streamText, generateObject, streamObject
	aiModel         // the do* model calls
	aiTool          // toolCall
	aiWrapper       // embed, embedMany, rerank
	aiOther         // an operation this file does not know
)

// aiSlots is what the ai.* attributes say.
type aiSlots struct {
	op         uint8
	functionID string // ai.telemetry.functionId
	tool       string // ai.toolCall.name
}

// readVercelAI reads one ai.* attribute.
func (r *Reading) readVercelAI(kv *attribute.KeyValue, key string) {
	switch key {
	case "ai.operationId":
		r.claim(famVercelAI)
		r.ai.op = aiOperation(quiet(kv))
	case string(otelmap.AttrAIFunctionID):
		r.ai.functionID = quiet(kv)
	case "ai.toolCall.name":
		r.ai.tool = quiet(kv)
	}
}

// aiOperation classifies an ai.operationId.
func aiOperation(id string) uint8 {
	switch id {
	case "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject":
		return aiAgent
	case "ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate",
		"ai.streamObject.doStream", "ai.embed.doEmbed", "ai.embedMany.doEmbed", "ai.rerank.doRerank":
		return aiModel
	case "ai.toolCall":
		return aiTool
	case "ai.embed", "ai.embedMany", "ai.rerank":
		return aiWrapper
	}
	if !strings.HasPrefix(id, "ai.") {
		return aiNone
	}
	return aiOther
}

// operation classifies the span for decide, and reports whether the
// family knew its operation. An agent operation without a functionId is
// left to decide's rule for agent spans that name no agent, and marked
// unnamed.
func (s *aiSlots) operation(r *Reading) (op Op, workflow bool) {
	r.kindRead = s.op != aiOther
	switch s.op {
	case aiAgent:
		if s.functionID == "" {
			r.UnnamedAgent = true
		}
		return OpInvoke, false
	case aiModel:
		return OpLLM, false
	case aiTool:
		return OpTool, false
	}
	return OpNone, false
}
