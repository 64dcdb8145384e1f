package assemble_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/tracedata"
)

// The two principles of docs/trace-assembly.md, "Agents that share a
// trace" and "A trace that begins with a received call": the corpus held
// to the first by a check that does not use the assembler's own count, and
// attacks on each with cases no capture shows.

// TestCorpusNoUnexplainedComplete: across the framework fixtures and every
// capture of the live corpus, assessed as `green assess` does, no trace
// with evidence complete holds two or more agents named by a span that no
// call from another agent reaches. The check reads only the task JSON (its
// agents and interactions), not coverage.unwired_agents: a trace in which
// several named agents share the trace unexplained says it saw everything
// only if the principle is broken.
func TestCorpusNoUnexplainedComplete(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "live", "*", "captures*", "*.otlp.json"))
	fixtures, err2 := filepath.Glob(filepath.Join("testdata", "frameworks", "*.otlp.json"))
	files = append(files, fixtures...)
	if err != nil || err2 != nil || len(files) < 100 {
		t.Fatalf("corpus: %v %v (%d files)", err, err2, len(files))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	traces, shared := 0, 0
	for _, f := range files {
		res, err := green.AssessOTLPFiles(ctx, []string{f}, green.OfflineOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range res.Tasks {
			task := &res.Tasks[i]
			traces++
			tops := unreachedNamedAgents(task)
			if len(tops) < 2 {
				continue
			}
			shared++
			g, ok := task.Evaluations[evals.GraphEvaluatorName].(*evals.GraphResult)
			if !ok || g.Evidence == nil || g.Evidence.Level == evals.EvidenceComplete {
				t.Errorf("%s: trace %s: agents %q share the trace and no call from another agent reaches them, yet the graph says %+v", f, task.TraceID, tops, g)
			}
		}
	}
	t.Logf("%d files, %d traces, %d with named agents sharing the trace unexplained, none complete", len(files), traces, shared)
}

// unreachedNamedAgents returns the agents of a task named by a span (not by
// service.name, not virtual, not the assessor or a tool server) that no
// interaction from another real agent reaches.
func unreachedNamedAgents(task *report.TaskResult) []string {
	real := map[string]bool{}
	var named []string
	for _, a := range task.Agents {
		if a.Virtual || a.Role != "" {
			continue
		}
		real[a.Name] = true
		if a.IdentifiedBy != tracedata.IdentityServiceName {
			named = append(named, a.Name)
		}
	}
	reached := map[string]bool{}
	for _, in := range task.Interactions {
		if real[in.From] && in.From != in.To {
			reached[in.To] = true
		}
	}
	var out []string
	for _, n := range named {
		if !reached[n] {
			out = append(out, n)
		}
	}
	return out
}

// principleTrace builds spans of one trace for the attacks: every span in
// service "team", ids in order of the calls.
type principleTrace struct {
	id    trace.TraceID
	res   *otelmap.Resource
	t0    time.Time
	spans []otelmap.Span
}

func newPrincipleTrace(n byte) *principleTrace {
	return &principleTrace{id: trace.TraceID{0x9a, n, 1}, res: &otelmap.Resource{ServiceName: "team"}, t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// add adds a span under parent (-1: a root; -2: a parent the trace does
// not hold) and returns its index.
func (p *principleTrace) add(parent int, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) int {
	k := len(p.spans)
	sp := otelmap.Span{TraceID: p.id, SpanID: trace.SpanID{0x5b, byte(k + 1)}, Name: name, Kind: kind,
		Start: p.t0.Add(time.Duration(k) * time.Second), End: p.t0.Add(time.Duration(k)*time.Second + 900*time.Millisecond),
		Resource: p.res, Source: otelmap.SourceOTLP, Attrs: attrs}
	switch {
	case parent >= 0:
		sp.ParentSpanID = p.spans[parent].SpanID
	case parent == -2:
		sp.ParentSpanID = trace.SpanID{0xde, 0xad}
	}
	p.spans = append(p.spans, sp)
	return k
}

// agent adds an agent's run (a GenAI invoke_agent span) with a model call
// under it.
func (p *principleTrace) agent(parent int, name string) int {
	a := p.add(parent, "invoke_agent "+name, trace.SpanKindInternal,
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent), otelmap.AttrGenAIAgentName.String(name))
	p.add(a, "chat gpt-4o", trace.SpanKindClient, otelmap.AttrGenAIOperationName.String("chat"))
	return a
}

func (p *principleTrace) link(k int, to trace.TraceID, span trace.SpanID) {
	p.spans[k].Detail = &otelmap.SpanDetail{Links: []otelmap.Link{{TraceID: to, SpanID: span}}}
}

// judge assembles the trace and judges its evidence.
func (p *principleTrace) judge(opts assemble.Options) (*tracedata.TraceData, evals.Evidence) {
	td := assemble.TraceWith(p.id, p.spans, opts)
	return td, evals.JudgeEvidence(td, evals.Inputs{})
}

// TestPrincipleAgentsShareATrace attacks the first principle: a participant
// that wants a clean "isolated" or "single_agent" with complete evidence
// hides what connects its agents.
func TestPrincipleAgentsShareATrace(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(p *principleTrace)
		warn  string // in a coverage warning; "" when another rule than the unwired one speaks
	}{
		{
			// The manager's span is dropped: the members run as bare
			// siblings under the application's own span, which no rule
			// takes for an orchestration.
			name: "manager span hidden under the application's span",
			build: func(p *principleTrace) {
				root := p.add(-1, "main", trace.SpanKindInternal)
				p.agent(root, "planner")
				p.agent(root, "researcher")
				p.agent(root, "writer")
			},
			warn: `3 agents (planner, researcher, writer) ran under the span 5b01000000000000 "main", which connects them`,
		},
		{
			// Every span above the agents is dropped: each agent a root
			// of its own in the one trace.
			name: "no span above the agents at all",
			build: func(p *principleTrace) {
				p.agent(-1, "planner")
				p.agent(-1, "writer")
			},
			warn: "2 agents (planner, writer) share the trace with no span above them in common",
		},
		{
			// One agent is called by the user (an HTTP request received),
			// another runs beside it with no caller: an entry and a top.
			name: "a top beside an agent the user called",
			build: func(p *principleTrace) {
				srv := p.add(-1, "POST /", trace.SpanKindServer, attribute.String("http.request.method", "POST"), attribute.String("url.path", "/"))
				p.agent(srv, "planner")
				p.agent(-1, "writer")
			},
			warn: "(beside 1 agent called from outside the team)",
		},
		{
			// The manager is named, and runs first, but does not contain
			// the members: they are its siblings, as if its calls were
			// never recorded. The manager's own span is not a caller.
			name: "the manager beside its members, not around them",
			build: func(p *principleTrace) {
				root := p.add(-1, "crew", trace.SpanKindInternal)
				p.agent(root, "manager")
				p.agent(root, "researcher")
				p.agent(root, "writer")
			},
			warn: "3 agents (manager, researcher, writer) ran under the span",
		},
		{
			// The members' spans keep parent ids naming the dropped
			// manager's span: cut off from the trace's root.
			name: "members pointing at a manager span not exported",
			build: func(p *principleTrace) {
				root := p.add(-1, "main", trace.SpanKindInternal)
				p.agent(root, "planner")
				p.agent(-2, "researcher")
				p.agent(-2, "writer")
			},
		},
		{
			// Two agents that call each other, each once (a ring: each is
			// the other's callee), run beside the agent the user called:
			// every agent has a caller, yet nothing says how control
			// reached the ring.
			name: "a ring of agents beside an agent the user called",
			build: func(p *principleTrace) {
				srv := p.add(-1, "POST /", trace.SpanKindServer, attribute.String("http.request.method", "POST"), attribute.String("url.path", "/"))
				p.agent(srv, "planner")
				root := p.add(-1, "main", trace.SpanKindInternal)
				a := p.agent(root, "alpha")
				p.agent(a, "beta")
				b := p.agent(root, "beta")
				p.agent(b, "alpha")
			},
			warn: "2 agents (alpha, beta) ran under the span 5b04000000000000 \"main\", which connects them",
		},
		{
			// The same ring beside a top of its own.
			name: "a ring of agents beside another top",
			build: func(p *principleTrace) {
				root := p.add(-1, "main", trace.SpanKindInternal)
				p.agent(root, "planner")
				a := p.agent(root, "alpha")
				p.agent(a, "beta")
				b := p.agent(root, "beta")
				p.agent(b, "alpha")
			},
			warn: "3 agents (alpha, beta, planner) ran under the span 5b01000000000000 \"main\"",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPrincipleTrace(1)
			c.build(p)
			td, ev := p.judge(assemble.Options{})
			if ev.Level == evals.EvidenceComplete {
				t.Errorf("evidence complete; agents %v, interactions %v, coverage %+v", agentNames(td), edges(td), td.Coverage)
			}
			if c.warn != "" && !hasWarning(td, c.warn) {
				t.Errorf("no warning containing %q: %q", c.warn, td.Coverage.Warnings)
			}
			t.Logf("evidence %s: %q", ev.Level, ev.Reasons)
		})
	}

	// The control: the same three agents, the manager calling each
	// member by nesting, are explained, and complete.
	p := newPrincipleTrace(2)
	m := p.agent(-1, "manager")
	p.agent(m, "researcher")
	p.agent(m, "writer")
	td, ev := p.judge(assemble.Options{})
	if ev.Level != evals.EvidenceComplete || td.Coverage.UnwiredAgents != 0 || len(td.Interactions) != 2 {
		t.Errorf("nested team: evidence %+v, interactions %v, coverage %+v", ev, edges(td), td.Coverage)
	}

	// The control for the rings: two agents delegating to each other,
	// alone in the trace (the one the application ran first calls the
	// other, which later calls it back), are one top, as one agent is:
	// no false partial.
	p = newPrincipleTrace(4)
	a := p.agent(-1, "alpha")
	b := p.agent(a, "beta")
	p.agent(b, "alpha")
	td, ev = p.judge(assemble.Options{})
	if ev.Level != evals.EvidenceComplete || td.Coverage.UnwiredAgents != 0 {
		t.Errorf("a ring alone: evidence %+v, interactions %v, coverage %+v", ev, edges(td), td.Coverage)
	}
}

// TestPrincipleFragments attacks the second principle: a trace that wants
// to look whole hides that it began with a call received from elsewhere.
func TestPrincipleFragments(t *testing.T) {
	other := trace.TraceID{0x0f, 0x0f}
	for _, c := range []struct {
		name     string
		build    func(p *principleTrace)
		fragment string // in coverage.fragment; "" when the trace is no fragment
	}{
		{
			// The participant's top is a SERVER span linked to the
			// caller's span in a trace it does not send: the link gives
			// it away.
			name: "a top SERVER span linked to a trace not held",
			build: func(p *principleTrace) {
				srv := p.add(-1, "POST /rpc", trace.SpanKindServer)
				p.link(srv, other, trace.SpanID{1})
				m := p.agent(srv, "manager")
				p.agent(m, "worker")
			},
			fragment: "it continues another trace",
		},
		{
			// A message consumed at the top, its producer not held and
			// no link: a runtime that starts a trace per delivery.
			name: "a CONSUMER top with no link",
			build: func(p *principleTrace) {
				c := p.add(-1, "process inbox", trace.SpanKindConsumer)
				m := p.agent(c, "manager")
				p.agent(m, "worker")
			},
			fragment: "a message consumed from a producer the trace does not hold",
		},
		{
			// The A2A Python SDK's request handler at the top: the SDK
			// reads no trace context, so nothing says the request was
			// not sent by a traced caller.
			name: "the A2A SDK's handler at the top",
			build: func(p *principleTrace) {
				h := p.add(-1, "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher.handle_requests", trace.SpanKindServer)
				m := p.agent(h, "manager")
				p.agent(m, "worker")
			},
			fragment: "a library that reads no trace context",
		},
		{
			// The consumer wrapped in an INTERNAL span the receiver
			// opened first (a worker's loop, or forged to make the
			// fragment's top look like a run): nothing in the trace sent
			// the message all the same.
			name: "a CONSUMER under a wrapping INTERNAL root",
			build: func(p *principleTrace) {
				root := p.add(-1, "main", trace.SpanKindInternal)
				c := p.add(root, "process inbox", trace.SpanKindConsumer)
				m := p.agent(c, "manager")
				p.agent(m, "worker")
			},
			fragment: "the trace's first received call is span 5b02000000000000 \"process inbox\" under span 5b01000000000000 \"main\"",
		},
		{
			// The A2A SDK's handler under a wrapping INTERNAL root, no
			// HTTP server span above it.
			name: "the A2A SDK's handler under a wrapping INTERNAL root",
			build: func(p *principleTrace) {
				root := p.add(-1, "serve", trace.SpanKindInternal)
				h := p.add(root, "a2a.server.routes.jsonrpc_dispatcher.JsonRpcDispatcher.handle_requests", trace.SpanKindServer)
				m := p.agent(h, "manager")
				p.agent(m, "worker")
			},
			fragment: "a library that reads no trace context",
		},
		{
			// A CONSUMER top linking to itself, forged so that it "links
			// to a span the trace holds": no producer sent it.
			name: "a CONSUMER top linked to itself",
			build: func(p *principleTrace) {
				c := p.add(-1, "process inbox", trace.SpanKindConsumer)
				p.link(c, p.id, p.spans[c].SpanID)
				m := p.agent(c, "manager")
				p.agent(m, "worker")
			},
			fragment: "a message consumed from a producer the trace does not hold",
		},
		{
			// A CONSUMER top linking to a PRODUCER run under it: what the
			// consumer went on to send, not what it received.
			name: "a CONSUMER top linked to a producer under it",
			build: func(p *principleTrace) {
				c := p.add(-1, "process inbox", trace.SpanKindConsumer)
				m := p.agent(c, "manager")
				prod := p.add(m, "send task", trace.SpanKindProducer)
				p.link(c, p.id, p.spans[prod].SpanID)
				p.agent(m, "worker")
			},
			fragment: "a message consumed from a producer the trace does not hold",
		},
		{
			// A whole run added as a second root of the trace, beside the
			// fragment's top: the received call is still a top.
			name: "a fragment's top beside a run of its own",
			build: func(p *principleTrace) {
				p.agent(-1, "planner")
				srv := p.add(-1, "POST /rpc", trace.SpanKindServer)
				p.link(srv, other, trace.SpanID{3})
				p.agent(srv, "worker")
			},
			fragment: "it continues another trace",
		},
		{
			// The control: a message produced and consumed in the trace
			// (the consumer under the producer, no link).
			name: "a CONSUMER under its PRODUCER",
			build: func(p *principleTrace) {
				m := p.agent(-1, "manager")
				prod := p.add(m, "send task", trace.SpanKindProducer)
				c := p.add(prod, "receive task", trace.SpanKindConsumer)
				p.agent(c, "worker")
			},
		},
		{
			// The control: the producer is in the trace, the consumer
			// links to it: the trace holds the whole message.
			name: "a CONSUMER linked to its producer in the trace",
			build: func(p *principleTrace) {
				root := p.agent(-1, "manager")
				prod := p.add(root, "send task", trace.SpanKindProducer)
				c := p.add(-1, "receive task", trace.SpanKindConsumer)
				p.link(c, p.id, p.spans[prod].SpanID)
				p.agent(c, "worker")
			},
		},
		{
			// The control: an agent's run linked to where the agent was
			// created (an INTERNAL top): a run, not a delivery.
			name: "an INTERNAL top linked to where its agent was created",
			build: func(p *principleTrace) {
				m := p.agent(-1, "manager")
				p.link(m, other, trace.SpanID{2})
				p.agent(m, "worker")
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPrincipleTrace(3)
			c.build(p)
			td, ev := p.judge(assemble.Options{})
			got := td.Coverage.Fragment
			if c.fragment == "" {
				if got != "" {
					t.Errorf("coverage.fragment %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, c.fragment) {
				t.Errorf("coverage.fragment %q, want it to contain %q", got, c.fragment)
			}
			if ev.Level == evals.EvidenceComplete {
				t.Errorf("a fragment with evidence complete: %+v", ev)
			}
		})
	}
}
