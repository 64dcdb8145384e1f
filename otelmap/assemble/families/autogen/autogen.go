// Package autogen is the convention family of AutoGen AgentChat's group
// chats ("autogen" in coverage.recognized): the speaker turns of a team
// whose manager records no span.
//
// AgentChat runs each participant of a team (SelectorGroupChat,
// RoundRobinGroupChat, Swarm, MagenticOneGroupChat) in a ChatAgentContainer
// whose turn is one invoke_agent span (gen_ai.system=autogen,
// gen_ai.agent.name the participant, gen_ai.agent.id the container's
// AgentId, "<participant>_<team id>/<team id>": autogen-agentchat 0.7.5,
// teams/_group_chat/_chat_agent_container.py line 125 and
// _base_group_chat.py lines 123 and 637; autogen-core 0.7.5 _agent_id.py
// __str__). The group chat manager picks each speaker (a SelectorGroupChat
// by a model call whose answer names it) and records no span of its own
// when the runtime's tracing is off, as AutoGen's tracing guide sets it up
// (SingleThreadedAgentRuntime(tracer_provider=NoOpTracerProvider())): the
// turns are then siblings under the application's span, and nothing else
// says how control passed (the live corpus's autogen-selector-guide-py).
//
// The rule: the turns of one team (the same team id after the slash, and
// the participant's name before "_<team id>") under one parent span, in
// start order, each ending before the next starts, pass control from one
// speaker to the next: the next speaker's caller is the previous one
// (recognize.Tree.NameCaller), the speaker-turn edges the runtime's
// messages give when its tracing is on (autogen-selector-py). It gives a
// caller only where nothing else does (a Swarm's transfer_to_* handoff, a
// message), and turns that overlap in time give none (a concurrent run,
// not a chat). The manager's selection calls are left as they are read:
// model calls of whoever runs the team.
package autogen

import (
	"cmp"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Family is the AutoGen family.
var Family recognize.Family = family{}

type family struct{}

const (
	keySystem uint8 = iota
	keyAgentName
	keyAgentID
	keyOperation
)

func (family) Spec() recognize.Spec {
	return recognize.Spec{
		Name: "autogen",
		Keys: []recognize.Key{
			recognize.Exact("gen_ai.system", keySystem),
			recognize.Exact(string(otelmap.AttrGenAIAgentName), keyAgentName),
			recognize.Exact(string(otelmap.AttrGenAIAgentID), keyAgentID),
			recognize.Exact(string(otelmap.AttrGenAIOperationName), keyOperation),
		},
		// The callers it names are named by gen_ai.agent.name, as the
		// GenAI family names the agents themselves.
		Identities: []recognize.Identity{{Label: "gen_ai.agent.name", Tier: recognize.NameStandard}},
	}
}

func (family) NewReader() recognize.SpanReader { return &reader{} }

// turn is a participant's turn in a team.
type turn struct {
	span       int32
	name, team string
}

type reader struct {
	autogen, invoke bool
	name, id        string
	turns           []turn
}

func (g *reader) Reset() { g.autogen, g.invoke, g.name, g.id = false, false, "", "" }

func (g *reader) Attr(_ *recognize.Reading, kv *attribute.KeyValue, id uint8) {
	switch id {
	case keySystem:
		g.autogen = recognize.Quiet(kv) == "autogen"
	case keyAgentName:
		g.name = recognize.Quiet(kv)
	case keyAgentID:
		g.id = recognize.Quiet(kv)
	case keyOperation:
		g.invoke = recognize.Quiet(kv) == otelmap.OpInvokeAgent
	}
}

// Decide says nothing of the span: the GenAI family reads it.
func (g *reader) Decide(*recognize.Reading, *otelmap.Span) {}

func (g *reader) Begin() { g.turns = g.turns[:0] }

// Keep keeps the turns of a team: AutoGen invoke_agent spans whose agent
// id is a ChatAgentContainer's.
func (g *reader) Keep(r *recognize.Reading, _ *otelmap.Span, i int32) {
	if !g.autogen || !g.invoke || !r.Agent || g.name == "" {
		return
	}
	if team := teamOf(g.name, g.id); team != "" {
		g.turns = append(g.turns, turn{span: i, name: g.name, team: team})
	}
}

// teamOf returns the team id of a ChatAgentContainer's agent id,
// "<name>_<team>/<team>", "" for any other id.
func teamOf(name, id string) string {
	typ, team, ok := strings.Cut(id, "/")
	if !ok || team == "" || typ != name+"_"+team {
		return ""
	}
	return team
}

// Resolve names each turn's caller: the previous turn of its team under
// the same parent, when the turns do not overlap.
func (g *reader) Resolve(t recognize.Tree) {
	if len(g.turns) < 2 {
		return
	}
	start := func(i int32) int64 { return t.Span(i).Start.UnixNano() }
	end := func(i int32) int64 { return t.Span(i).End.UnixNano() }
	slices.SortFunc(g.turns, func(x, y turn) int {
		return cmp.Or(strings.Compare(x.team, y.team), cmp.Compare(t.Parent(x.span), t.Parent(y.span)),
			cmp.Compare(start(x.span), start(y.span)), cmp.Compare(x.span, y.span))
	})
	for lo := 0; lo < len(g.turns); {
		hi := lo + 1
		for hi < len(g.turns) && g.turns[hi].team == g.turns[lo].team && t.Parent(g.turns[hi].span) == t.Parent(g.turns[lo].span) {
			hi++
		}
		chat := g.turns[lo:hi]
		lo = hi
		overlap := false
		for k := 1; k < len(chat); k++ {
			overlap = overlap || end(chat[k-1].span) > start(chat[k].span)
		}
		if overlap {
			continue
		}
		for k := 1; k < len(chat); k++ {
			if chat[k].name != chat[k-1].name {
				t.NameCaller(chat[k].span, chat[k-1].name, 0)
			}
		}
	}
}
