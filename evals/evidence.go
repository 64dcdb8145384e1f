package evals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/tracedata"
)

// Evidence (docs/participants.md#no-confident-label-without-evidence): a graph
// built from part of a trace must not speak as if it had seen it all.
// JudgeEvidence weighs what the trace shows against what the assessor knows it
// did, and gives one of three levels:
//
//   - insufficient: the verdict would rest on missing spans, so the graph
//     evaluator's label becomes insufficient_evidence (the label the graph
//     alone gives is kept as Evidence.GraphLabel). It is insufficient when
//     (1) a participant the assessor called answered none of those calls
//     with a span of its own (its SERVER span, an in-process agent span,
//     or Traceability Extension steps): the assessor saw its calls leave,
//     so the participant took part, and an "isolated" or any other verdict
//     about it would be a guess; or (2) the trace is an assessor's, with
//     participants named, and holds no call at all (the assessor never
//     reached anyone); or (3) a service hosts several agents that no span
//     names (Coverage.SharedServices): the graph merges them into one node.
//   - partial: the label stands, with the reasons it may be off: some of
//     the assessor's calls to a participant were not answered; a call
//     between agents was seen from one side only (client_only: the
//     callee's spans are missing; server_only: the caller's); an agent
//     could not be named (spans without service.name); the wait for the
//     trace ended at its maximum with awaited calls unanswered; the span
//     store refused spans of the trace (Collection.RefusedSpans); spans
//     were cut off from the root when the wait ended, their parents
//     missing (Collection.Detached); received
//     spans outside the assessor's calls were set aside
//     (Collection.SetAsideOutside); spans of an agent or GenAI namespace
//     were read by no rule (Coverage.UnreadNamespaces: "14 spans carry
//     `ai.*` attributes no rule reads"). Such spans make the evidence
//     insufficient when no agent was named by a span of its own: nothing
//     of the team was read. A trace that is a fragment of a conversation
//     whose agents ran as separate traces (Collection.Split) is partial,
//     and insufficient when it shows no call between agents.
//   - complete: none of the above.
//
// A call from the virtual caller "user" into a root SERVER span is how
// every trace a participant starts itself begins, and does not count as
// one-sided. An interaction whose observation classes are all zero (built
// by hand rather than assembled) says nothing about its evidence and is
// not weighed.

// Evidence levels.
const (
	EvidenceComplete     = "complete"
	EvidencePartial      = "partial"
	EvidenceInsufficient = "insufficient"
)

// Evidence says how far a trace supports the graph evaluator's verdict.
type Evidence struct {
	// Level is EvidenceComplete, EvidencePartial or EvidenceInsufficient.
	Level string `json:"level"`
	// Reasons say what is missing, sorted; empty when complete.
	Reasons []string `json:"reasons,omitempty"`
	// GraphLabel is the label the graph alone gives, set when the level is
	// insufficient and the label was replaced by insufficient_evidence.
	GraphLabel string `json:"graph_label,omitempty"`
}

// Collection is what the caller knows of how a trace's spans were
// collected; nil when it knows nothing (an offline assessment of files).
type Collection struct {
	// Settled is false when the wait for the trace ended at its maximum
	// with calls that should have been answered still unanswered.
	Settled bool
	// Unanswered names those calls, "caller -> callee".
	Unanswered []string
	// MaxWait is the longest the caller waited, in milliseconds.
	MaxWaitMS int64
	// RefusedSpans counts the spans of the trace the span store refused
	// (tracestore.Store.RefusedSpans): a trace over its span limit, exports
	// refused by the ingest token rules.
	RefusedSpans int
	// SetAsideOutside counts the received spans set aside because they do
	// not descend from any call the assessor made (tracestore.Vouch): a
	// participant's own spans whose chain to the call broke among them,
	// so the graph may lack some of its work. Spans set aside for
	// claiming the assessor's identity are forgeries and weigh nothing.
	SetAsideOutside int
	// Split, when set, says the trace holds only part of a conversation
	// whose agents ran as separate root traces.
	Split *SplitConversation
	// Detached counts the spans cut off from the trace's root when the
	// wait ended (tracestore.DetachedSpans): their parents were lost, or
	// never came.
	Detached int
}

// SplitConversation says a trace is a fragment of one conversation
// (gen_ai.conversation.id) whose agents ran in separate traces: a
// framework that starts each agent as the root of a trace of its own
// (Mastra's agent network) leaves no trace that shows the team.
type SplitConversation struct {
	Conversation string
	// Traces counts the traces of the conversation.
	Traces int
	// Agents are the agents the conversation's traces name; Missing those
	// of them not in this trace.
	Agents, Missing []string
}

// JudgeEvidence weighs trace against in.Participants and in.Collection;
// see the comment at the top of this file for the rules. A nil trace has
// no evidence at all.
func JudgeEvidence(trace *tracedata.TraceData, in Inputs) Evidence {
	if trace == nil {
		return Evidence{Level: EvidenceInsufficient, Reasons: []string{"no trace"}}
	}
	quiet := in.Config.WithoutReasons
	insufficient, partial := reasons{quiet: quiet}, reasons{quiet: quiet}
	assessor := map[string]bool{}
	for _, a := range trace.Agents {
		if a.Role == tracedata.RoleAssessor {
			assessor[a.Name] = true
		}
		if a.IdentifiedBy == tracedata.IdentityUnknown && !a.Virtual {
			partial.add(func() string {
				return fmt.Sprintf("agent %q could not be named (its spans carry no service.name or agent name)", a.Name)
			})
		}
	}
	for _, it := range trace.Interactions {
		answered := it.BothSides + it.InProcess + it.ExtensionOnly + it.ServerOnly
		if answered+it.ClientOnly == 0 {
			continue // how the calls were observed is not known
		}
		switch {
		case assessor[it.From]:
			switch {
			case it.Count > 0 && answered == 0:
				insufficient.add(func() string {
					return fmt.Sprintf(
						"the assessor called %s %s and no span of %s answered any of them: it exported no spans for them (or not within the wait)",
						it.To, evidenceTimes(it.Count), it.To)
				})
			case answered < it.Count:
				partial.add(func() string {
					return fmt.Sprintf("%d of the assessor's %d calls to %s were not answered by a span of %s",
						it.Count-answered, it.Count, it.To, it.To)
				})
			}
		case it.From == tracedata.UserAgent:
			// A root SERVER span: how a trace a participant starts begins.
		default:
			if it.ClientOnly > 0 {
				// Concatenated, not fmt.Sprintf: every partly seen edge
				// of every trace writes one.
				partial.add(func() string {
					return it.From + " -> " + it.To + ": " + evidencePlural(it.ClientOnly, "call", "calls") +
						" seen from the caller only (the callee's spans are missing)"
				})
			}
			if it.ServerOnly > 0 {
				partial.add(func() string {
					return it.From + " -> " + it.To + ": " + evidencePlural(it.ServerOnly, "call", "calls") +
						" seen from the callee only (the caller's spans are missing)"
				})
			}
		}
	}
	// What assembly could not read (otelmap/assemble's recognizers): spans
	// that look like an agent's work no rule understood weaken any verdict,
	// and a trace with such spans and no interaction supports none.
	if n := trace.Coverage.UnreadAgentSpans; n > 0 {
		partial.add(func() string {
			return fmt.Sprintf("%s that look like an agent's work could not be read (docs/trace-assembly.md, \"my framework is not listed\")",
				evidencePlural(n, "span", "spans"))
		})
	}
	// Spans of an agent or GenAI namespace no rule read (Coverage.
	// UnreadNamespaces): the graph may lack what they did, so it is at best
	// partial; when no agent of the trace was named by an agent's own span
	// (only by service.name, an address or a placeholder), nothing of the
	// team was read and no verdict on its shape stands.
	if len(trace.Coverage.UnreadNamespaces) > 0 {
		for ns, n := range trace.Coverage.UnreadNamespaces { // the reasons are sorted in the end
			partial.add(func() string {
				return fmt.Sprintf("%s `%s` attributes no rule reads (docs/trace-assembly.md, \"spans no rule reads\")",
					evidencePlural(n, "span carries", "spans carry"), ns)
			})
		}
		if !teamRead(trace) {
			insufficient.add(func() string {
				return "no agent of the trace was named by a span of its own (only by service.name or an address) while spans of an agent namespace went unread: the team's structure could not be read"
			})
		}
	}
	if n := trace.Coverage.UnwiredAgents; n > 0 {
		if n == 1 {
			partial.add(func() string {
				return "1 agent shares the trace with another and no call, handoff, nesting or message the spans show says how control reached it: the graph lacks that edge (coverage.warnings names it)"
			})
		} else {
			partial.add(func() string {
				return fmt.Sprintf("%d agents share the trace and no call, handoff, nesting or message the spans show says how control reached them: the graph lacks those edges (coverage.warnings names them)", n)
			})
		}
	}
	if f := trace.Coverage.Fragment; f != "" {
		partial.add(func() string { return f })
	}
	// A service hosting several agents that no span names (Coverage.
	// SharedServices): they are one node in the graph, whose shape is then
	// not the team's.
	for svc := range trace.Coverage.SharedServices { // the reasons are sorted in the end
		insufficient.add(func() string {
			return fmt.Sprintf(
				"service %q hosts several agents (endpoints %s) that no span names: the graph merges them into one node, so its shape is not the team's",
				svc, strings.Join(trace.Coverage.SharedServices[svc], ", "))
		})
	}
	if trace.Coverage.NoEvidence {
		insufficient.add(func() string {
			return "the trace shows no interaction that could be read: no evidence of coordination either way"
		})
	}
	if len(assessor) > 0 && len(in.Participants) > 0 && len(trace.Interactions) == 0 {
		insufficient.add(func() string { return "no call between agents was observed, not even the assessor's" })
	}
	if c := in.Collection; c != nil && !c.Settled {
		partial.add(func() string {
			msg := fmt.Sprintf("the trace was assessed after the maximum wait of %d ms with %s unanswered",
				c.MaxWaitMS, evidencePlural(len(c.Unanswered), "awaited call", "awaited calls"))
			if len(c.Unanswered) > 0 {
				msg += " (" + strings.Join(c.Unanswered, ", ") + ")"
			}
			return msg
		})
	}
	if c := in.Collection; c != nil && c.Detached > 0 {
		partial.add(func() string {
			return fmt.Sprintf("%s cut off from the trace's root: spans between them and the root never arrived (lost, or never exported)",
				evidencePlural(c.Detached, "span", "spans"))
		})
	}
	if c := in.Collection; c != nil && c.RefusedSpans > 0 {
		partial.add(func() string {
			return fmt.Sprintf("the span store refused %s of this trace (docs/span-admission.md)",
				evidencePlural(c.RefusedSpans, "span", "spans"))
		})
	}
	if c := in.Collection; c != nil && c.SetAsideOutside > 0 {
		partial.add(func() string {
			return fmt.Sprintf("%s set aside, not counted: received outside the assessor's calls (docs/provenance.md)",
				evidencePlural(c.SetAsideOutside, "span", "spans"))
		})
	}
	if c := in.Collection; c != nil && c.Split != nil {
		s := c.Split
		msg := func() string {
			return fmt.Sprintf("this trace is one of %d traces of conversation %q, whose agents (%s) ran as separate traces (%s not in this one): no single trace shows how they coordinated",
				s.Traces, s.Conversation, strings.Join(s.Agents, ", "), strings.Join(s.Missing, ", "))
		}
		if agentCalls(trace) == 0 {
			insufficient.add(msg)
		} else {
			partial.add(msg)
		}
	}
	switch {
	case insufficient.n > 0:
		return Evidence{Level: EvidenceInsufficient, Reasons: evidenceSorted(append(insufficient.texts, partial.texts...))}
	case partial.n > 0:
		return Evidence{Level: EvidencePartial, Reasons: evidenceSorted(partial.texts)}
	}
	return Evidence{Level: EvidenceComplete}
}

// reasons are the reasons for one evidence level. Quiet
// (Config.WithoutReasons) counts them without writing them: the level is
// the same.
type reasons struct {
	texts []string
	n     int
	quiet bool
}

func (r *reasons) add(text func() string) {
	r.n++
	if !r.quiet {
		r.texts = append(r.texts, text())
	}
}

// applyEvidence weighs the evidence for r's verdict and replaces the label
// when it is insufficient.
func (r *GraphResult) applyEvidence(trace *tracedata.TraceData, in Inputs) {
	ev := JudgeEvidence(trace, in)
	if ev.Level == EvidenceInsufficient {
		ev.GraphLabel = r.Label
		r.Label = LabelInsufficientEvidence
	}
	r.Evidence = &ev
}

// agentCalls counts the calls between agents, leaving out those from the
// virtual user (how a trace a participant starts begins).
func agentCalls(trace *tracedata.TraceData) int {
	n := 0
	for _, it := range trace.Interactions {
		if it.From != tracedata.UserAgent {
			n += it.Count
		}
	}
	return n
}

// teamRead reports whether some agent of the trace was named by a span of
// its own (an agent span's attribute or name, or the Traceability
// Extension), rather than only by where its spans came from.
func teamRead(trace *tracedata.TraceData) bool {
	for _, a := range trace.Agents {
		switch a.IdentifiedBy {
		case tracedata.IdentityServiceName, tracedata.IdentityServerAddr, tracedata.IdentityUser, tracedata.IdentityUnknown, "":
		default:
			if a.Role != tracedata.RoleAssessor {
				return true
			}
		}
	}
	return false
}

func evidenceTimes(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func evidencePlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func evidenceSorted(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
