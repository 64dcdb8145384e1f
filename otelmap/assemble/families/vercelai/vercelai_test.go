package vercelai_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/tracedata"
)

// TestVercelAI attacks the vercel_ai family (vercelai.go) with the
// cases its live programs do not show, on their real captures: an agent
// left without ai.telemetry.functionId (as a sub-agent, as the caller, on
// every call), OpenInference's span processor layering its kinds on the
// ai.* spans, an operation the family does not know, the embedding
// wrapper spans. Exact reads of the live programs themselves are
// TestLiveCorpus's.
func TestVercelAI(t *testing.T) {
	t.Run("sub-agent without functionId", func(t *testing.T) {
		// team.mjs ... unnamed: the checker, run from the researcher's
		// fact_check tool, was given no functionId. Nothing names it: not
		// guessed, counted and warned about, the rest read exactly.
		for _, run := range []string{"run-1", "run-2", "run-3"} {
			id, spans := assembletest.LoadLive(t, "ai-sdk-5-deep", filepath.Join("captures-unnamed", run+".otlp.json"))
			td := assemble.Trace(id, spans)
			if got, want := assembletest.AgentNames(td), []string{"coordinator", "planner", "researcher", "writer"}; !slices.Equal(got, want) {
				t.Errorf("%s: agents = %q, want %q", run, got, want)
			}
			if got, want := assembletest.Edges(td), []string{"coordinator->planner", "coordinator->researcher", "coordinator->writer"}; !slices.Equal(got, want) {
				t.Errorf("%s: edges = %q, want %q", run, got, want)
			}
			if td.Coverage.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "experimental_telemetry.functionId") {
				t.Errorf("%s: unread agent spans %d, warnings %q; want the checker's ai.generateText counted and named in a warning",
					run, td.Coverage.UnreadAgentSpans, td.Coverage.Warnings)
			}
		}
	})
	t.Run("caller without functionId", func(t *testing.T) {
		// ai-sdk-6's streamed coordinator without its functionId (the SDK
		// then writes it on none of the call's spans): its sub-agents are
		// named, their caller is not, and no edge is made up.
		id, spans := assembletest.LoadLive(t, "ai-sdk-6", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, assembletest.AttrIs("ai.telemetry.functionId", "coordinator"), assembletest.Without("ai.telemetry.functionId"))
		td := assemble.Trace(id, spans)
		if got, want := assembletest.AgentNames(td), []string{"researcher", "writer"}; !slices.Equal(got, want) {
			t.Errorf("agents = %q, want %q (the coordinator has no name to show)", got, want)
		}
		for _, in := range td.Interactions {
			if in.From == "ai-sdk-6-team" {
				t.Errorf("edge %s -> %s: the service stood in for an unnamed agent", in.From, in.To)
			}
		}
		if td.Coverage.UnreadAgentSpans != 1 || !assembletest.HasWarning(td, "experimental_telemetry.functionId") {
			t.Errorf("unread agent spans %d, warnings %q; want the coordinator's ai.streamText counted", td.Coverage.UnreadAgentSpans, td.Coverage.Warnings)
		}
	})
	t.Run("no functionId at all", func(t *testing.T) {
		id, spans := assembletest.LoadLive(t, "ai-sdk-4", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, func(*otelmap.Span) bool { return true }, assembletest.Without("ai.telemetry.functionId"))
		td := assemble.Trace(id, spans)
		if len(td.Interactions) != 0 || !td.Coverage.NoEvidence {
			t.Errorf("interactions %v, no evidence %v; want no interaction and no evidence", assembletest.Edges(td), td.Coverage.NoEvidence)
		}
		if td.Coverage.UnreadAgentSpans != 3 || !assembletest.HasWarning(td, "3 spans are an agent its framework ran with no name recorded") {
			t.Errorf("unread agent spans %d, warnings %q; want all three agent runs counted", td.Coverage.UnreadAgentSpans, td.Coverage.Warnings)
		}
	})
	t.Run("OpenInference kinds layered on the ai spans", func(t *testing.T) {
		// @arizeai/openinference-vercel's span processor adds
		// openinference.span.kind from ai.operationId (Arize-ai/openinference
		// js/packages/openinference-vercel/src/constants.ts: generateText
		// and streamText AGENT, earlier CHAIN; do* LLM; toolCall TOOL) and
		// no agent.name: the AI SDK's own word still names the agents.
		for _, agentKind := range []string{"AGENT", "CHAIN"} {
			id, spans := assembletest.LoadLive(t, "ai-sdk-6", "captures/run-1.otlp.json")
			kinds := map[string]string{"ai.streamText": agentKind, "ai.generateText": agentKind,
				"ai.streamText.doStream": "LLM", "ai.generateText.doGenerate": "LLM", "ai.toolCall": "TOOL"}
			spans = assembletest.EditAttrs(spans, func(*otelmap.Span) bool { return true }, func(attrs []attribute.KeyValue) []attribute.KeyValue {
				for _, kv := range attrs {
					if kv.Key == "ai.operationId" {
						return append(attrs, attribute.String("openinference.span.kind", kinds[kv.Value.AsString()]))
					}
				}
				return attrs
			})
			td := assemble.Trace(id, spans)
			if got, want := assembletest.Edges(td), []string{"coordinator->researcher", "coordinator->writer"}; !slices.Equal(got, want) {
				t.Errorf("%s: edges = %q, want %q", agentKind, got, want)
			}
		}
	})
	t.Run("an operation no rule knows", func(t *testing.T) {
		// A later SDK's operation (say ai.generateSpeech) is not guessed
		// at: its span is counted as an unread ai.* span.
		id, spans := assembletest.LoadLive(t, "ai-sdk-5", "captures/run-1.otlp.json")
		extra := spans[len(spans)-1]
		extra.SpanID = trace.SpanID{0xee, 1}
		extra.Name = "ai.generateSpeech"
		extra.Attrs = []attribute.KeyValue{attribute.String("ai.operationId", "ai.generateSpeech"), attribute.String("ai.telemetry.functionId", "narrator")}
		td := assemble.Trace(id, append(slices.Clone(spans), extra))
		if td.Coverage.UnreadNamespaces["ai.*"] != 1 {
			t.Errorf("unread namespaces %v, want ai.* 1", td.Coverage.UnreadNamespaces)
		}
		if slices.Contains(assembletest.AgentNames(td), "narrator") {
			t.Error("an unknown operation was read as an agent")
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		// ai.embed (with its own functionId) around ai.embed.doEmbed, run
		// in the researcher's tool: the wrapper is neither an agent nor
		// unread, the model call is the researcher's step, nothing else
		// changes (shapes from src/embed/embed.ts, ai 5.0.277).
		id, spans := assembletest.LoadLive(t, "ai-sdk-5", "captures/run-1.otlp.json")
		var tool otelmap.Span
		for _, sp := range spans {
			if v, _, _ := sp.StringAttr("ai.toolCall.name"); v == "search_web" {
				tool = sp
			}
		}
		mk := func(n byte, parent trace.SpanID, op string) otelmap.Span {
			sp := tool
			sp.SpanID, sp.ParentSpanID, sp.Name = trace.SpanID{0xee, n}, parent, op
			sp.Start = tool.Start.Add(time.Duration(n) * time.Microsecond)
			sp.End = tool.End
			sp.Attrs = []attribute.KeyValue{attribute.String("ai.operationId", op), attribute.String("ai.telemetry.functionId", "embedder"),
				attribute.String("ai.model.id", "text-embedding-3-small"), attribute.String("operation.name", op+" embedder")}
			return sp
		}
		embed := mk(1, tool.SpanID, "ai.embed")
		spans = append(slices.Clone(spans), embed, mk(2, embed.SpanID, "ai.embed.doEmbed"))
		td := assemble.Trace(id, spans)
		if got, want := assembletest.AgentNames(td), []string{"coordinator", "researcher", "writer"}; !slices.Equal(got, want) {
			t.Errorf("agents = %q, want %q", got, want)
		}
		if len(td.Coverage.UnreadNamespaces) != 0 || td.Coverage.UnreadAgentSpans != 0 {
			t.Errorf("unread %v / %d agent spans; the embedding spans were read", td.Coverage.UnreadNamespaces, td.Coverage.UnreadAgentSpans)
		}
		var found bool
		for _, st := range td.Steps {
			if st.Name == "ai.embed.doEmbed" {
				found = st.Agent == "researcher" && st.CallType == tracedata.CallTool
			}
			if st.Name == "ai.embed" {
				t.Error("the ai.embed wrapper is a step")
			}
		}
		if !found {
			t.Error("ai.embed.doEmbed is not the researcher's model-call step")
		}
	})
	t.Run("transfer_to tool", func(t *testing.T) {
		// A tool named transfer_to_<agent> is a handoff in the AI SDK too:
		// its name is read from ai.toolCall.name.
		id, spans := assembletest.LoadLive(t, "ai-sdk-5", "captures/run-1.otlp.json")
		spans = assembletest.EditAttrs(spans, assembletest.AttrIs("ai.toolCall.name", "write"), func(attrs []attribute.KeyValue) []attribute.KeyValue {
			for i, kv := range attrs {
				if kv.Key == "ai.toolCall.name" {
					attrs[i] = attribute.String("ai.toolCall.name", "transfer_to_writer")
				}
			}
			return attrs
		})
		td := assemble.Trace(id, spans)
		if got, want := assembletest.Edges(td), []string{"coordinator->researcher", "coordinator->writer"}; !slices.Equal(got, want) {
			t.Errorf("edges = %q, want %q (the handoff and the nesting are one call)", got, want)
		}
		if in := assembletest.FindInteraction(td, "coordinator", "writer"); in == nil || in.Count != 1 {
			t.Errorf("coordinator -> writer %+v, want one call", in)
		}
	})
}
