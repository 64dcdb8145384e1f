package genai_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coordbench/coordbench/otelmap/assemble/internal/assembletest"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// TestAgent365 reads the live captures of Microsoft Agent 365's
// observability SDK (testdata/live/a365-observability), whose invoke_agent
// spans are all CLIENT and whose model calls are gen_ai.operation.name
// "Chat", for what TestLiveCorpus does not compare: every call in-process
// and the evidence complete (the writer runs only a Chat call, so a reader
// that leaves Chat unread takes its span for a call whose callee's spans
// are missing), and every Chat span its own agent's LLM step. Then attacks
// on the real capture: an agent recorded with its id only, and a model call
// under an operation no convention has.
func TestAgent365(t *testing.T) {
	for run := 1; run <= 3; run++ {
		t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			id, spans := assembletest.LoadLive(t, "a365-observability", fmt.Sprintf("captures/run-%d.otlp.json", run))
			td := assemble.Trace(id, spans)
			if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer"}) {
				t.Fatalf("edges %v", got)
			}
			for _, in := range td.Interactions {
				if in.InProcess != 1 || in.ClientOnly != 0 {
					t.Errorf("%s->%s = %+v, want one in-process call", in.From, in.To, in)
				}
			}
			if c := td.Coverage; c.Complete != 1 || c.UnreadAgentSpans != 0 {
				t.Errorf("coverage %+v", c)
			}
			llm := map[string]int{}
			for _, s := range td.Steps {
				if s.StepType == "llm_call" {
					llm[s.Agent]++
				}
			}
			if want := map[string]int{"coordinator": 3, "researcher": 2, "writer": 1}; fmt.Sprint(llm) != fmt.Sprint(want) {
				t.Errorf("LLM steps by agent %v, want %v", llm, want)
			}
		})
	}

	isWriter := assembletest.AttrIs(string(otelmap.AttrGenAIAgentName), "writer")

	t.Run("agent recorded by id only", func(t *testing.T) {
		// InvokeAgentScope without agentName: the span is "invoke_agent"
		// and only gen_ai.agent.id names the agent.
		id, spans := assembletest.LoadLive(t, "a365-observability", "captures/run-1.otlp.json")
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isWriter, assembletest.Without(string(otelmap.AttrGenAIAgentName))))
		if got := assembletest.Edges(td); !slices.Equal(got, []string{"coordinator->researcher", "coordinator->writer-id"}) {
			t.Errorf("edges %v", got)
		}
	})

	t.Run("model call under an operation nobody knows", func(t *testing.T) {
		// The writer's only own span no longer reads as a step: its CLIENT
		// agent span is then a call seen from the caller only, and the
		// evidence must say so rather than claim completeness.
		id, spans := assembletest.LoadLive(t, "a365-observability", "captures/run-1.otlp.json")
		isWriterChat := func(sp *otelmap.Span) bool {
			op, _, _ := sp.StringAttr(otelmap.AttrGenAIOperationName)
			return isWriter(sp) && op == "Chat"
		}
		rename := func(a []attribute.KeyValue) []attribute.KeyValue {
			for i := range a {
				if a[i].Key == otelmap.AttrGenAIOperationName {
					a[i] = otelmap.AttrGenAIOperationName.String("ChatCompletion")
				}
			}
			return a
		}
		td := assemble.Trace(id, assembletest.EditAttrs(spans, isWriterChat, rename))
		if in := assembletest.FindInteraction(td, "coordinator", "writer"); in == nil || in.ClientOnly != 1 {
			t.Errorf("coordinator->writer = %+v, want one call seen from the caller only", in)
		}
		if td.Coverage.Complete == 1 {
			t.Errorf("coverage %+v, want incomplete", td.Coverage)
		}
	})
}
