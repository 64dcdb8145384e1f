package genai

import (
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// The GenAI conventions in their previous shapes, "genai_previous": spans
// that carry gen_ai.* attributes but no gen_ai.operation.name, as
// instrumentations wrote them before the operation name was required, and
// as some still do.
//
//   - A span with gen_ai.tool.name is a tool call (Pydantic AI 1.x's
//     "running tool").
//   - A span with gen_ai.request.model, or OpenLLMetry's llm.request.type,
//     is an LLM call (Google ADK's call_llm, OpenLLMetry's openai.chat).
//   - A span with gen_ai.agent.name is an agent span only when it is the
//     agent's run: named "agent run" or "invoke_agent ...", or carrying
//     Pydantic AI's agent_name (Pydantic AI 1.x's "agent run"). Any other
//     span with gen_ai.agent.name is some agent's work, where frameworks
//     copy the name of the agent doing it (Pydantic AI puts it on every
//     span from OpenTelemetry baggage): it names no agent.
//
// These rules apply only where no other word said what the span is
// (recognize.TierFallback), and only then is the span claimed for them.

// previousWord reads the operation of a span without
// gen_ai.operation.name.
func (g *reader) previousWord(sp *otelmap.Span) recognize.Word {
	var w recognize.Word
	switch {
	case g.tool != "":
		w.Op = recognize.OpTool
	case g.model || g.llm:
		w.Op = recognize.OpLLM
	case g.agentName != "" && (g.pydanticAgent != "" || sp.Name == "agent run" || strings.HasPrefix(sp.Name, otelmap.SpanInvokeAgentPrefix)):
		w.Op = recognize.OpInvoke
	}
	if g.any || g.agentName != "" || g.agentID != "" {
		w.Claims = claimPrevious
	}
	return w
}
