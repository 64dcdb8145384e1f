package families_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/convmap"
	"github.com/coordbench/coordbench/otelmap/assemble/families"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

func span(name string, kind trace.SpanKind, attrs ...attribute.KeyValue) *otelmap.Span {
	return &otelmap.Span{Name: name, Kind: kind, Attrs: attrs}
}

// TestPrecedence reads single spans that carry several conventions and
// checks the verdict the precedence gives (the tiers of package recognize's
// reading.go, the order of the registry), one rule a case, with the
// reading alone (assembly's tests read the same rules through whole
// traces).
func TestPrecedence(t *testing.T) {
	conv, err := convmap.Parse([]byte(`name: myco
rules:
  - match: {span_name: '^myco\.run$'}
    is: agent
    agent: {attribute: myco.agent}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	invoke := otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent)
	for _, tc := range []struct {
		name  string
		conv  *convmap.Map
		sp    *otelmap.Span
		want  recognize.Verdict // the fields compared below
		label string            // identified_by of the agent's name
		fams  []string          // families claimed, by name
		notUs bool              // not Understood
	}{
		{name: "call_type wins the step's call type",
			sp: span("chat", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
				otelmap.AttrCallType.String("host")),
			want: recognize.Verdict{Op: recognize.OpLLM, Step: recognize.CallHost},
			fams: []string{"genai", "coordbench"}},
		{name: "call_type AGENT makes an agent span of an LLM span",
			sp: span("chat", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
				otelmap.AttrCallType.String("AGENT"), otelmap.AttrGenAIAgentName.String("a")),
			want: recognize.Verdict{Op: recognize.OpLLM, Step: recognize.CallAgent, Agent: true, Marker: true, AgentName: "a"}, label: tracedata.IdentityAgentName,
			fams: []string{"genai", "coordbench"}},
		{name: "a convention map's rule before the built-in families",
			conv: conv,
			sp: span("myco.run", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
				attribute.String("myco.agent", "planner"), otelmap.AttrGenAIAgentName.String("not-this")),
			want: recognize.Verdict{Op: recognize.OpInvoke, Step: recognize.CallAgent, Agent: true, Marker: true,
				AgentName: "planner"}, label: tracedata.IdentityConventions,
			fams: []string{"genai", "conventions"}},
		{name: "no map: the same span is GenAI's LLM call, naming no agent",
			sp: span("myco.run", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
				attribute.String("myco.agent", "planner"), otelmap.AttrGenAIAgentName.String("not-this")),
			want: recognize.Verdict{Op: recognize.OpLLM, Step: recognize.CallTool},
			fams: []string{"genai"}},
		{name: "the AI SDK's own operation before gen_ai.operation.name",
			sp: span("ai.toolCall", trace.SpanKindInternal, attribute.String("ai.operationId", "ai.toolCall"),
				otelmap.AttrGenAIOperationName.String(otelmap.OpChat)),
			want: recognize.Verdict{Op: recognize.OpTool, Step: recognize.CallTool},
			fams: []string{"genai", "vercel_ai"}},
		{name: "OpenLLMetry's task before GenAI's invoke_agent (CrewAI)",
			sp: span("research.task", trace.SpanKindInternal, attribute.String("traceloop.span.kind", "task"),
				invoke, otelmap.AttrGenAIAgentName.String("researcher")),
			want: recognize.Verdict{Workflow: true},
			fams: []string{"genai", "openllmetry"}},
		{name: "GenAI before OpenInference's coarser kind",
			sp: span("chat", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
				attribute.String("openinference.span.kind", "AGENT")),
			// OpenInference's AGENT that names no agent still looks like one.
			want: recognize.Verdict{Op: recognize.OpLLM, Step: recognize.CallTool, AgentLike: true},
			fams: []string{"genai", "openinference"}},
		{name: "gen_ai.agent.name before OpenInference's agent.name",
			sp: span("agent", trace.SpanKindInternal, invoke, otelmap.AttrGenAIAgentName.String("first"),
				otelmap.AttrOIAgentName.String("second")),
			want: recognize.Verdict{Op: recognize.OpInvoke, Step: recognize.CallAgent, Agent: true, Marker: true,
				AgentName: "first"}, label: tracedata.IdentityAgentName,
			fams: []string{"genai"}},
		{name: "an agent span naming no agent is an orchestration",
			sp:   span("crew", trace.SpanKindInternal, invoke),
			want: recognize.Verdict{Workflow: true, AgentLike: true}, label: "",
			fams: []string{"genai"}},
		{name: "gen_ai.agent.name on a tool span names nothing",
			sp: span("execute_tool search", trace.SpanKindInternal, otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool),
				otelmap.AttrGenAIAgentName.String("caller")),
			want: recognize.Verdict{Op: recognize.OpTool, Step: recognize.CallTool},
			fams: []string{"genai"}},
		{name: "an A2A client span names its callee",
			sp: span("SendMessage", trace.SpanKindClient, otelmap.AttrA2AMethodName.String("SendMessage"),
				otelmap.AttrGenAIAgentName.String("reviewer")),
			want: recognize.Verdict{Role: recognize.RoleClient, Marker: true, AgentName: "reviewer"}, label: tracedata.IdentityAgentName,
			fams: []string{"a2a", "genai_previous"}},
		{name: "an agent-card fetch is no side of a call",
			sp:   span("GET", trace.SpanKindClient, attribute.String("url.full", "http://h/.well-known/agent-card.json?x=1")),
			want: recognize.Verdict{Role: recognize.RoleInternal},
			fams: []string{"http"}},
		{name: "a failed A2A task in the 1.0 spelling fails the span",
			sp:   span("SendMessage", trace.SpanKindServer, otelmap.AttrA2ATaskState.String("TASK_STATE_FAILED")),
			want: recognize.Verdict{Role: recognize.RoleServer, Marker: true, Failed: true},
			fams: []string{"a2a"}},
		{name: "a handoff tool names its target",
			sp: span("execute_tool transfer_to_billing", trace.SpanKindInternal,
				otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("transfer_to_billing")),
			want: recognize.Verdict{Op: recognize.OpTool, Step: recognize.CallTool, Handoff: true, HandoffTo: "billing"},
			fams: []string{"genai"}},
		{name: "transfer_back_to is a delegation's reply, no handoff",
			sp: span("execute_tool", trace.SpanKindInternal,
				otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool), otelmap.AttrGenAIToolName.String("transfer_back_to_supervisor")),
			want: recognize.Verdict{Op: recognize.OpTool, Step: recognize.CallTool},
			fams: []string{"genai"}},
		{name: "a Langfuse agent observation is named by its span",
			sp:   span("researcher", trace.SpanKindInternal, lfType("agent"), attribute.String("langfuse.observation.input", "{}")),
			want: recognize.Verdict{Op: recognize.OpInvoke, Step: recognize.CallAgent, Agent: true, Marker: true, AgentName: "researcher"}, label: tracedata.IdentitySpanName,
			fams: []string{"langfuse"}},
		{name: "gen_ai.agent.name before a Langfuse agent's span name",
			sp:   span("run", trace.SpanKindInternal, lfType("agent"), otelmap.AttrGenAIAgentName.String("researcher")),
			want: recognize.Verdict{Op: recognize.OpInvoke, Step: recognize.CallAgent, Agent: true, Marker: true, AgentName: "researcher"}, label: tracedata.IdentityAgentName,
			fams: []string{"langfuse"}},
		{name: "a Langfuse agent observation without a name is an unnamed agent",
			sp:   span("", trace.SpanKindInternal, lfType("agent")),
			want: recognize.Verdict{Workflow: true, AgentLike: true, UnnamedAgent: true}, label: "",
			fams: []string{"langfuse"}},
		{name: "a Langfuse generation is a model call, a tool and a retriever tool calls",
			sp:   span("OpenAI.chat", trace.SpanKindInternal, lfType("generation"), attribute.String("langfuse.observation.model.name", "gpt-4o-mini")),
			want: recognize.Verdict{Op: recognize.OpLLM, Step: recognize.CallTool},
			fams: []string{"langfuse"}},
		{name: "a Langfuse tool observation named like an agent is a tool call",
			sp:   span("research-agent", trace.SpanKindInternal, lfType("retriever")),
			want: recognize.Verdict{Op: recognize.OpTool, Step: recognize.CallTool},
			fams: []string{"langfuse"}},
		{name: "a Langfuse chain named like an agent is the application's work",
			sp:   span("writer-agent", trace.SpanKindInternal, lfType("chain")),
			want: recognize.Verdict{},
			fams: []string{"langfuse"}},
		{name: "a Langfuse type nobody knows is unread",
			sp:    span("planner-agent", trace.SpanKindInternal, lfType("planner")),
			want:  recognize.Verdict{},
			fams:  []string{"langfuse"},
			notUs: true},
		{name: "the LangfuseSpanProcessor's attributes on another span say nothing",
			sp: span("GET", trace.SpanKindClient, attribute.String("langfuse.environment", "prod"),
				attribute.String("langfuse.trace.name", "agent-run"), attribute.String("langfuse.release", "1")),
			want:  recognize.Verdict{Role: recognize.RoleClient},
			notUs: true},
		{name: "the AI SDK's own operation before Langfuse's type",
			sp: span("ai.generateText", trace.SpanKindInternal, attribute.String("ai.operationId", "ai.generateText"),
				attribute.String("ai.telemetry.functionId", "writer"), lfType("generation")),
			want: recognize.Verdict{Op: recognize.OpInvoke, Step: recognize.CallAgent, Agent: true, Marker: true, AgentName: "writer"}, label: tracedata.IdentityVercelAI,
			fams: []string{"vercel_ai", "langfuse"}},
		{name: "a span of no family named like an agent only looks like one",
			sp:    span("MyAgent.step", trace.SpanKindInternal, attribute.String("zeta.agent.id", "x")),
			want:  recognize.Verdict{AgentLike: true},
			notUs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := families.Default()
			if tc.conv != nil {
				var err error
				if reg, err = families.With(tc.conv); err != nil {
					t.Fatal(err)
				}
			}
			rd := reg.Reader()
			defer reg.Release(rd)
			r := rd.Read(tc.sp, 1)
			got := r.Verdict
			got.Claimed, got.AgentRank, got.HandoffFromRank = 0, 0, 0
			if got != tc.want {
				t.Errorf("verdict\n got %+v\nwant %+v", got, tc.want)
			}
			if label := reg.IdentifiedBy(r.AgentRank); r.AgentName != "" && label != tc.label {
				t.Errorf("identified by %q, want %q", label, tc.label)
			}
			var fams []string
			for k := range reg.NumClaims() {
				if r.Claimed.Has(k) {
					fams = append(fams, reg.ClaimName(k))
				}
			}
			if !equalSets(fams, tc.fams) {
				t.Errorf("claimed %v, want %v", fams, tc.fams)
			}
			if r.Understood() == tc.notUs {
				t.Errorf("Understood() = %v, want %v", r.Understood(), !tc.notUs)
			}
			if len(rd.Warnings()) != 0 {
				t.Errorf("warnings %v, want none", rd.Warnings())
			}
		})
	}
}

// TestReaderReuse: a Reader's one Reading starts afresh at every span, and
// keeps the warnings of every span read, each with its span's id; a value
// of the wrong type is warned about and reads as absent, and loses nothing
// else of the span. A reader handed back and taken again keeps no warning.
func TestReaderReuse(t *testing.T) {
	reg := families.Default()
	rd := reg.Reader()
	bad := span("agent", trace.SpanKindServer, otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrGenAIAgentName.Int(7), otelmap.AttrGenAIAgentID.String("id-1"), otelmap.AttrCallType.String("BOSS"))
	r := rd.Read(bad, 0xa)
	if r.AgentName != "id-1" || reg.IdentifiedBy(r.AgentRank) != tracedata.IdentityAgentID || !r.Agent || r.Role != recognize.RoleServer {
		t.Errorf("bad span: %+v, want the agent named by its id", r.Verdict)
	}
	r = rd.Read(span("plain", trace.SpanKindInternal), 0xb)
	if r.Verdict != (recognize.Verdict{}) {
		t.Errorf("plain span after an agent span: %+v, want the zero verdict", r.Verdict)
	}
	w := rd.Warnings()
	if len(w) != 2 || w[0].Span != 0xa || w[0].Key != string(otelmap.AttrGenAIAgentName) ||
		w[1].Span != 0xa || w[1].Key != string(otelmap.AttrCallType) {
		t.Errorf("warnings %+v, want gen_ai.agent.name and coordbench.call_type on span 0xa", w)
	}
	reg.Release(rd)
	rd = reg.Reader()
	defer reg.Release(rd)
	if w := rd.Warnings(); len(w) != 0 {
		t.Errorf("a reader taken again has warnings %+v", w)
	}
}

// TestWithout: a family turned off (a registry operation) reads its spans
// as if it did not exist; the other families are untouched. A name that is
// no family's is an error.
func TestWithout(t *testing.T) {
	sp := span("prompt", trace.SpanKindInternal, attribute.String("genkit:type", "dotprompt"),
		attribute.String("genkit:name", "writer"), otelmap.AttrErrorType.String("boom"))
	reg := families.Default()
	rd := reg.Reader()
	defer reg.Release(rd)
	if r := rd.Read(sp, 1); r.AgentName != "writer" || reg.IdentifiedBy(r.AgentRank) != tracedata.IdentityGenkit || !r.Failed {
		t.Errorf("with genkit: %+v, want the agent writer, failed", r.Verdict)
	}
	without, err := reg.Without("genkit")
	if err != nil {
		t.Fatal(err)
	}
	rd2 := without.Reader()
	defer without.Release(rd2)
	if r := rd2.Read(sp, 1); r.AgentName != "" || r.Agent || r.Claimed != 0 || !r.Failed {
		t.Errorf("without genkit: %+v, want no agent, nothing claimed, still failed", r.Verdict)
	}
	for k := range without.NumClaims() {
		if without.ClaimName(k) == "genkit" {
			t.Errorf("genkit still a key of coverage.recognized")
		}
	}
	if _, err := reg.Without("gemkit"); err == nil {
		t.Error("Without(gemkit): no error for a name that is no family's")
	}
}

// lfType is Langfuse's langfuse.observation.type.
func lfType(t string) attribute.KeyValue { return attribute.String("langfuse.observation.type", t) }

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}
