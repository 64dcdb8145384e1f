package genai_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/families/genai"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

func span(name string, kind trace.SpanKind, attrs ...attribute.KeyValue) *otelmap.Span {
	return &otelmap.Span{Name: name, Kind: kind, Attrs: attrs}
}

// TestGenAIOperationSpellings: gen_ai.operation.name is read whatever the
// case and underscores of a known value (Microsoft Agent 365's
// InferenceScope writes "Chat"), and only of a known value: a word that
// contains one, or a value the conventions do not have, stays unread. The
// family is read alone, in a registry of its own.
func TestGenAIOperationSpellings(t *testing.T) {
	reg, err := recognize.NewRegistry(genai.Family)
	if err != nil {
		t.Fatal(err)
	}
	op := otelmap.AttrGenAIOperationName.String
	agentName, agentID := otelmap.AttrGenAIAgentName.String, otelmap.AttrGenAIAgentID.String
	for _, tc := range []struct {
		name      string
		sp        *otelmap.Span
		op        recognize.Op
		workflow  bool
		agent     bool
		agentName string
	}{
		// Agent 365's InferenceScope: "Chat <model>", its agent's identity
		// on it; an LLM call, not an agent span.
		{name: "Chat carrying its agent's name is an LLM call", op: recognize.OpLLM,
			sp: span("Chat gpt-4o-mini", trace.SpanKindClient, op("Chat"), agentName("coordinator"), agentID("coordinator-id"),
				otelmap.AttrGenAIRequestModel.String("gpt-4o-mini"))},
		{name: "TextCompletion", op: recognize.OpLLM, sp: span("TextCompletion m", trace.SpanKindClient, op("TextCompletion"))},
		{name: "GenerateContent", op: recognize.OpLLM, sp: span("GenerateContent m", trace.SpanKindClient, op("GenerateContent"))},
		{name: "upper case", op: recognize.OpLLM, sp: span("x", trace.SpanKindInternal, op("CHAT"))},
		{name: "Execute_Tool is a tool call naming no agent", op: recognize.OpTool,
			sp: span("x", trace.SpanKindInternal, op("Execute_Tool"), agentName("coordinator"))},
		{name: "InvokeAgent is an agent span", op: recognize.OpInvoke, agent: true, agentName: "writer",
			sp: span("x", trace.SpanKindInternal, op("InvokeAgent"), agentName("writer"))},
		// Agent 365's InvokeAgentScope without agentName: span
		// "invoke_agent", gen_ai.agent.id only.
		{name: "an agent span with an id and no name is named by its id", op: recognize.OpInvoke, agent: true, agentName: "writer-id",
			sp: span("invoke_agent", trace.SpanKindClient, op("invoke_agent"), agentID("writer-id"))},
		{name: "InvokeWorkflow is an orchestration", workflow: true, sp: span("x", trace.SpanKindInternal, op("InvokeWorkflow"))},
		{name: "a word containing chat is no LLM call", op: recognize.OpNone,
			sp: span("chatbot", trace.SpanKindInternal, op("chatbot"), agentName("bot"))},
		{name: "ChatCompletion is not a GenAI value", op: recognize.OpNone, sp: span("x", trace.SpanKindClient, op("ChatCompletion"))},
		{name: "chat with a space is not chat", op: recognize.OpNone, sp: span("x", trace.SpanKindClient, op("chat "))},
		{name: "create_agent stays neither step nor call", op: recognize.OpNone, sp: span("x", trace.SpanKindInternal, op("Create_Agent"))},
		// The same value under another library's key is not GenAI's.
		{name: "Chat under another key is unread", op: recognize.OpNone,
			sp: span("x", trace.SpanKindClient, attribute.String("a365.operation.name", "Chat"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := reg.Reader()
			defer reg.Release(rd)
			r := rd.Read(tc.sp, 1)
			if r.Op != tc.op || r.Workflow != tc.workflow || r.Agent != tc.agent || r.AgentName != tc.agentName {
				t.Errorf("verdict %+v, want op %v workflow %v agent %v named %q", r.Verdict, tc.op, tc.workflow, tc.agent, tc.agentName)
			}
		})
	}
}
