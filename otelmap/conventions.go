package otelmap

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// GenAI attributes (semantic conventions v1.41.0, status Development).
const (
	AttrGenAIOperationName  = semconv.GenAIOperationNameKey
	AttrGenAIAgentName      = semconv.GenAIAgentNameKey
	AttrGenAIAgentID        = semconv.GenAIAgentIDKey
	AttrGenAIConversationID = semconv.GenAIConversationIDKey
	AttrGenAIInputMessages  = semconv.GenAIInputMessagesKey
	AttrGenAIOutputMessages = semconv.GenAIOutputMessagesKey
	AttrGenAIRequestModel   = semconv.GenAIRequestModelKey
	AttrGenAIResponseModel  = semconv.GenAIResponseModelKey
	AttrGenAIProviderName   = semconv.GenAIProviderNameKey
	AttrGenAIToolName       = semconv.GenAIToolNameKey
	AttrGenAIToolCallArgs   = semconv.GenAIToolCallArgumentsKey
	AttrGenAIInputTokens    = semconv.GenAIUsageInputTokensKey
	AttrGenAIOutputTokens   = semconv.GenAIUsageOutputTokensKey
	AttrServerAddress       = semconv.ServerAddressKey
	AttrServerPort          = semconv.ServerPortKey
	AttrServiceName         = semconv.ServiceNameKey
	AttrErrorType           = semconv.ErrorTypeKey
)

// Attributes of other conventions in which trace assembly's recognizers
// (otelmap/assemble) read an agent's name, besides gen_ai.agent.name and
// gen_ai.agent.id.
const (
	// OpenInference: the agent, and the graph node (LangGraph's) a span
	// runs and the node that called it.
	AttrOIAgentName         = attribute.Key("agent.name")
	AttrOIGraphNodeID       = attribute.Key("graph.node.id")
	AttrOIGraphNodeParentID = attribute.Key("graph.node.parent_id")
	// OpenLLMetry (Traceloop): the entity an agent or workflow span runs.
	AttrTraceloopEntityName = attribute.Key("traceloop.entity.name")
	// The OpenAI Agents SDK's handoffs (OpenLLMetry and GenAI spans).
	AttrGenAIHandoffFromAgent = attribute.Key("gen_ai.handoff.from_agent")
	AttrGenAIHandoffToAgent   = attribute.Key("gen_ai.handoff.to_agent")
	// The Vercel AI SDK: experimental_telemetry.functionId, which names
	// the agent of every span of a call.
	AttrAIFunctionID = attribute.Key("ai.telemetry.functionId")
	// Pydantic AI's own agent_name.
	AttrPydanticAgentName = attribute.Key("agent_name")
	// Genkit: the name of the action a span runs (an agent, a prompt, a
	// flow; genkit:type says which).
	AttrGenkitName = attribute.Key("genkit:name")
)

// NamesAgent reports whether k is an attribute in which trace assembly
// reads an agent's name: the recognizers read these constants, and
// provenance (otelmap/tracestore) takes a span of another road that names
// the assessor in one of them as speaking for it. One list, so that a name
// assembly reads is never one provenance overlooks. (A user's convention
// map may name more. Genkit's genkit:name also names prompts and flows:
// a span giving one of them the assessor's name is taken as a claim all
// the same.)
func NamesAgent(k attribute.Key) bool {
	switch k {
	case AttrGenAIAgentName, AttrGenAIAgentID,
		AttrOIAgentName, AttrOIGraphNodeID, AttrOIGraphNodeParentID,
		AttrTraceloopEntityName,
		AttrGenAIHandoffFromAgent, AttrGenAIHandoffToAgent,
		AttrAIFunctionID, AttrPydanticAgentName, AttrGenkitName:
		return true
	}
	return false
}

// Values of gen_ai.operation.name that coordbench reads.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// A2A attributes (the OpenTelemetry A2A conventions, not yet in semconv).
const (
	AttrA2AMethodName      = attribute.Key("a2a.method.name")
	AttrA2AMessageID       = attribute.Key("a2a.message.id")
	AttrA2ATaskID          = attribute.Key("a2a.task.id")
	AttrA2ATaskState       = attribute.Key("a2a.task.state")
	AttrA2AProtocolVersion = attribute.Key("a2a.protocol.version")
)

// coordbench's own attributes.
const (
	// AttrCallType marks a span as a step: AGENT, TOOL or HOST.
	AttrCallType = attribute.Key("coordbench.call_type")
	// AttrSource records which road a span came by when it was rebuilt from
	// the Traceability Extension ("extension").
	AttrSource = attribute.Key("coordbench.source")
	// AttrStepType carries the extension's step_type.
	AttrStepType = attribute.Key("coordbench.step_type")
	// AttrCost carries the extension's cost.
	AttrCost = attribute.Key("coordbench.cost")
	// AttrTotalTokens carries the extension's total_tokens.
	AttrTotalTokens = attribute.Key("coordbench.total_tokens")
	// AttrCaller names the calling agent on a span rebuilt from an extension
	// step, where there is no enclosing span to tell it.
	AttrCaller = attribute.Key("coordbench.caller")
	// AttrRole on a resource marks the assessor ("assessor"), whose node is
	// drawn in the graph but left out of its metrics by default.
	AttrRole = attribute.Key("coordbench.role")
	// AttrTaskID and AttrAssessmentID tie the assessor's HOST spans to one
	// task and one assessment.
	AttrTaskID       = attribute.Key("coordbench.task.id")
	AttrAssessmentID = attribute.Key("coordbench.assessment.id")
	// The assessor's HOST spans: the scenario of an assessment, its number
	// of tasks, a task's index and success, and the score.
	AttrScenario    = attribute.Key("coordbench.scenario")
	AttrTaskCount   = attribute.Key("coordbench.task.count")
	AttrTaskIndex   = attribute.Key("coordbench.task.index")
	AttrTaskSuccess = attribute.Key("coordbench.task.success")
	AttrScore       = attribute.Key("coordbench.score")
	// AttrEvaluator names the evaluator of an evaluator's HOST span.
	AttrEvaluator = attribute.Key("coordbench.evaluator")
	// AttrParametersPrefix prefixes extension parameters flattened to
	// attributes; AttrRequestsPrefix the requests; AttrExtraPrefix the
	// additional_attributes.
	AttrParametersPrefix = "coordbench.parameters."
	AttrRequestsPrefix   = "coordbench.requests."
	AttrExtraPrefix      = "coordbench.attr."
)

// Span names.
const (
	SpanInvokeAgentPrefix = "invoke_agent "
	SpanChatPrefix        = "chat "
	SpanExecuteToolPrefix = "execute_tool "
	SpanAssessment        = "coordbench.assessment"
	SpanTask              = "coordbench.task"
	SpanEvaluatorPrefix   = "coordbench.evaluate "
)

// MaxContentChars bounds captured message text on a span; longer text is cut
// and ends with ContentTruncatedMarker.
const (
	MaxContentChars        = 16 << 10
	ContentTruncatedMarker = "…[truncated]"
)

// IngestTokenHeader is the HTTP header of an OTLP export request that
// carries an ingest token.
const IngestTokenHeader = "Coordbench-Ingest-Token"

// OTLPTracesPath is the path of OTLP/HTTP trace exports: where exporters
// send traces by default (the OTLP specification's /v1/traces) and where
// otelmap/otlpreceiver answers. It lives here so that an agent that only
// exports (the purple agent) imports no receiver, hence no pdata.
const OTLPTracesPath = "/v1/traces"

// IngestMetadataKey is the key of the A2A message metadata in which the
// assessor hands participants the ingest token: an object with "token" and
// "otlp_header" (IngestTokenHeader). It lives here, beside the header, so
// that the green agent that sends it and the purple agent that reads it
// share one spelling, with no import of the store or the receiver.
const IngestMetadataKey = "coordbench.ingest"

// RoleAssessor is the value of AttrRole on the green agent's resource.
const RoleAssessor = "assessor"

// Source values: the road a span came by.
const (
	SourceInProcess = "in_process"
	SourceOTLP      = "otlp"
	SourceExtension = "extension"
)

// TruncateContent cuts s to at most MaxContentChars bytes, on a rune
// boundary, marking the cut.
func TruncateContent(s string) string {
	if len(s) <= MaxContentChars {
		return s
	}
	cut := MaxContentChars - len(ContentTruncatedMarker)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ContentTruncatedMarker
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
