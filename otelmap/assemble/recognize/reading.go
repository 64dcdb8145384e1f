package recognize

import (
	"fmt"
	"math/bits"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// This file is where spans are read. Every span is read once: one loop
// over its attributes hands each to the family that reads its key (the
// Registry's dispatch table) or to this package's own reading of the
// protocols; then each family that read something says what the span is
// (SpanReader.Decide), and decide settles the Verdict by the precedence
// below. Assembly decides by the Verdict and never looks at the
// attributes the families read.
//
// Precedence, when a span carries several conventions (documented in
// docs/trace-assembly.md, "When a span carries several conventions"):
//
//  1. coordbench.call_type is the span's own statement of its call type
//     and wins for the step's call type.
//  2. The operation: the strongest word (Tier: the user's convention
//     map, a protocol's request, a framework's own namespace, an
//     instrumentation's own kind, the GenAI standard, a coarser kind, a
//     shape read from what is left); between words of one tier, the
//     family listed first in the registry.
//  3. The agent's name, only on an agent span (or on the client span of
//     an A2A call, where the standard's name names the callee): a rule of
//     the user's map that names the agent, whatever else does; else the
//     name of the best rank (NameTier, then registry order): the
//     standard's attribute, a family's attribute, the agent's id, the
//     user's map, the span's name. A name on any other span (an LLM or
//     tool span, where frameworks copy the caller's) names nothing.
//  4. An agent span that names no agent is the run of something around
//     agents, or of an agent no rule can name: no agent, and no step.
//  5. Not a call side: an agent-card fetch (plain HTTP) and the A2A SDK's
//     method spans are read as INTERNAL whatever their kind, and so is an
//     orchestration span (a workflow, a swarm, a crew, a task).
//
// The steps' details (model, tokens, messages) are read separately, by
// otelmap/assemble/steps.go, only for the spans that are steps.

// A Reader reads spans one at a time into the one Reading it reuses, so
// that reading a span allocates nothing. Registry.Reader hands one out.
type Reader struct {
	reg         *Registry
	fams        []SpanReader
	callers     []CallerNamer // per family, nil where it names no callers
	namespacers []Namespacer
	passes      []TreePass
	finishers   []Finisher
	touched     uint64 // the families that read the current span
	kept        bool   // Keep handed a span to a pass since Begin
	r           Reading
}

// Registry is the registry the reader reads by.
func (rd *Reader) Registry() *Registry { return rd.reg }

// Read reads sp through the families and settles its Verdict. id is the
// span's id, for the warnings. The Reading is the Reader's and is valid
// until the next call.
func (rd *Reader) Read(sp *otelmap.Span, id uint64) *Reading {
	r := &rd.r
	r.Verdict = Verdict{Role: SpanKindRole(sp.Kind)}
	r.s = spanFacts{}
	r.id = id
	rd.touched = 0
	reg := rd.reg
	attrs := sp.Attrs
	for k := range attrs {
		kv := &attrs[k]
		key := string(kv.Key)
		if len(key) < minKey {
			continue
		}
		// This package's own keys, whatever the registry holds: the
		// protocols a call is made of (a2a.go, http.go, mcp.go,
		// messaging.go), coordbench's own (coordbench.go), and what any
		// span may carry (error.type, server.address). By hand, here: a
		// call per attribute would cost as much as the switch.
		switch key[0] {
		case 'c':
			if strings.HasPrefix(key, "coordbench.") {
				r.readCoordbench(kv)
			}
		case 'a':
			switch {
			case strings.HasPrefix(key, "a2a."):
				r.readA2A(kv)
			case strings.HasPrefix(key, "asgi."):
				// ASGI's per-message spans of an HTTP server.
				r.claimCore(claimHTTP)
			}
		case 'e':
			if kv.Key == otelmap.AttrErrorType && r.Str(kv) != "" {
				r.Failed = true
			}
		case 's':
			if kv.Key == otelmap.AttrServerAddress {
				r.HasAddr = r.Str(kv) != ""
			}
		case 'm':
			switch {
			case strings.HasPrefix(key, "mcp."):
				r.readMCP(kv, key)
			case strings.HasPrefix(key, "messaging.") || strings.HasPrefix(key, "message."):
				r.claimCore(claimMessaging)
			}
		case 'j':
			if strings.HasPrefix(key, "jsonrpc.") {
				r.readMCP(kv, key)
			}
		case 'h':
			if strings.HasPrefix(key, "http.") {
				r.readHTTP(kv, key)
			}
		case 'u':
			if strings.HasPrefix(key, "url.") {
				r.readHTTP(kv, key)
			}
		}
		b := reg.dispatch[key[0]]
		if b == nil {
			continue
		}
		bk := &b[key[1]]
		es := bk.entries
		// The entries a key of this length can be (keyBucket.byLen), in
		// registry order; every entry where the bucket has too many.
		var cand uint64
		if bk.byLen != nil {
			cand = bk.byLen[min(len(key), maxLenClass)]
		}
		for j := 0; j < len(es); j++ {
			if bk.byLen != nil {
				if cand == 0 {
					break
				}
				j = bits.TrailingZeros64(cand)
				cand &= cand - 1
			}
			// The key is the entry's, or starts with it: by its first 8
			// bytes as one word (keyEntry.head), the rest as a string.
			e := &es[j]
			if n := len(e.name); len(key) < n || !e.prefix && len(key) != n {
				continue
			} else if len(key) < 8 {
				if key[:n] != e.name {
					continue
				}
			} else if load8(key)&e.mask != e.head || n > 8 && key[8:n] != e.name[8:] {
				continue
			}
			f := int(e.fam)
			if rd.touched&(1<<f) == 0 {
				rd.touched |= 1 << f
				rd.fams[f].Reset()
			}
			r.cur = f
			rd.fams[f].Attr(r, kv, e.id)
		}
	}
	if reg.every != 0 {
		for t := reg.every &^ rd.touched; t != 0; t &= t - 1 {
			f := bits.TrailingZeros64(t)
			rd.touched |= 1 << f
			rd.fams[f].Reset()
		}
	}
	r.decide(sp)
	return r
}

// Warnings returns the attributes of the wrong type or value on every span
// read so far, in the order read.
func (rd *Reader) Warnings() []Warning { return rd.r.warnings }

// Callers appends the callers the families name on agent span sp, just
// read (CallerNamer), in registry order.
func (rd *Reader) Callers(sp *otelmap.Span, out []Caller) []Caller {
	for t := rd.touched; t != 0; t &= t - 1 {
		f := bits.TrailingZeros64(t)
		if c := rd.callers[f]; c != nil {
			rd.r.cur = f
			out = c.Callers(&rd.r, sp, out)
		}
	}
	return out
}

// Keep hands span sp, numbered i, just read, to the passes of the
// families that read it (TreePass.Keep).
func (rd *Reader) Keep(sp *otelmap.Span, i int32) {
	rd.kept = true
	for t := rd.touched; t != 0; t &= t - 1 {
		f := bits.TrailingZeros64(t)
		if p := rd.passes[f]; p != nil {
			rd.r.cur = f
			p.Keep(&rd.r, sp, i)
		}
	}
}

// Resolve runs the families' first passes in registry order, each on
// tree(f), the tree as family f sees it.
func (rd *Reader) Resolve(tree func(fam int) Tree) {
	for f, p := range rd.passes {
		if p != nil {
			p.Resolve(tree(f))
		}
	}
}

// Finish runs the families' second passes (Finisher) in registry order.
func (rd *Reader) Finish(tree func(fam int) Tree) {
	for f, p := range rd.finishers {
		if p != nil {
			p.Finish(tree(f))
		}
	}
}

// Reading is one span as the families read it: the Verdict, and what the
// families said of it on the way. A family reads and writes it through
// its methods, in its own name: the Reader sets whose turn it is.
type Reading struct {
	Verdict
	s spanFacts

	rd       *Reader
	cur      int       // the family being asked
	id       uint64    // the span id, for warnings
	warnings []Warning // kept across the spans a Reader reads
}

// spanFacts is what the families said of the span, before decide settles
// the Verdict.
type spanFacts struct {
	// This package's own reading (coordbench.go, a2a.go, http.go, mcp.go).
	ct        CallType // coordbench.call_type: CallNone if absent
	a2aAttr   bool     // any a2a.* attribute
	sawURL    bool     // a URL, path or route attribute
	notCall   bool     // not a side of a call: an agent-card fetch, an SDK method span
	clientSDK bool     // an A2A SDK client method span (Verdict.ClientMethod)
	mcpMethod string   // mcp.method.name

	understood bool // some family knew what the span is

	said    bool // a word was said: the strongest so far
	word    Word
	tier    Tier
	wordFam int // the family that said it, -1 for this package

	name, overrideName     string // the best name, the user's map's
	nameRank, overrideRank Rank
	override               bool
	agentID                string
	agentIDRank            Rank
	kindAgent              bool // a family's kind says agent

	handoffKind       bool // a family's kind says handoff
	handoffTo         string
	handoffNamed      bool // a family names the target of a tool call that hands off
	handoffNamedTo    string
	handoffOverride   bool
	handoffOverrideTo string
	handoffFrom       string
	handoffFromRank   Rank
	toolName          string
	toolArgs          string
}

// Str returns a string attribute's value, noting a value of another type
// among the span's warnings: for the attributes a family polices.
func (r *Reading) Str(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		r.Warn(string(kv.Key), fmt.Sprintf("is %s, want string", kv.Value.Type()))
		return ""
	}
	return kv.Value.AsString()
}

// Quiet returns a string attribute's value, or "" for another type,
// without a warning: for attributes of conventions whose types coordbench
// does not police.
func Quiet(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		return ""
	}
	return kv.Value.AsString()
}

// Warn notes an attribute of the wrong type or value.
func (r *Reading) Warn(key, what string) {
	r.warnings = append(r.warnings, Warning{Span: r.id, Key: key, Msg: what})
}

// Claim claims the span for the family: it read something of it
// (coverage.recognized counts it under the family's name).
func (r *Reading) Claim() { r.Claimed |= 1 << r.rd.reg.claimBase[r.cur] }

// ClaimAs claims the span under the family's Spec.Also[k-1] (k 0: its
// name).
func (r *Reading) ClaimAs(k int) { r.Claimed |= 1 << (r.rd.reg.claimBase[r.cur] + k) }

// Claims reports whether the family claimed the span (under its name).
func (r *Reading) Claims() bool { return r.Claimed.Has(r.rd.reg.claimBase[r.cur]) }

func (r *Reading) claimCore(k int) { r.Claimed |= 1 << k }

// Say says what the span's operation is, with a word of the given tier;
// the strongest word is taken (Tier).
func (r *Reading) Say(tier Tier, w Word) {
	if r.s.said && tier >= r.s.tier {
		return
	}
	r.s.said, r.s.word, r.s.tier, r.s.wordFam = true, w, tier, r.cur
}

// Taken reports whether the family's word settled the operation (for
// TreePass.Keep and CallerNamer.Callers, once the span is read).
func (r *Reading) Taken() bool { return r.s.said && r.s.wordFam == r.cur }

// Understand: the family knew what the span is, whatever settles its
// operation (Understood).
func (r *Reading) Understand() { r.s.understood = true }

// Name offers name as the agent's, by the family's Identities[identity];
// the best rank's name is taken. An empty name is no offer.
func (r *Reading) Name(identity int, name string) {
	if name == "" {
		return
	}
	if rank := r.rd.reg.ranks[r.cur][identity]; r.s.name == "" || rank < r.s.nameRank {
		r.s.name, r.s.nameRank = name, rank
	}
}

// NameOverride names the agent whatever any family names it (the user's
// map): by the family's Identities[identity]. An empty name leaves the
// agent unnamed unless the span carries an agent id.
func (r *Reading) NameOverride(identity int, name string) {
	r.s.override, r.s.overrideName, r.s.overrideRank = true, name, r.rd.reg.ranks[r.cur][identity]
}

// ID gives the agent's id (Verdict.AgentID), also offered as its name by
// the family's Identities[identity].
func (r *Reading) ID(identity int, id string) {
	if id == "" {
		return
	}
	r.s.agentID, r.s.agentIDRank = id, r.rd.reg.ranks[r.cur][identity]
	r.Name(identity, id)
}

// KindAgent: the family's kind says the span is an agent's run, whatever
// settles its operation: if nothing names the agent, the span looks like
// an agent's work (Verdict.AgentLike).
func (r *Reading) KindAgent() { r.s.kindAgent = true }

// HandoffKind: the family's kind says the span is a handoff (its target is
// HandoffTarget's, if any family gives one).
func (r *Reading) HandoffKind() { r.s.handoffKind = true }

// HandoffTarget gives the target of a handoff the span's kind says it is.
func (r *Reading) HandoffTarget(to string) {
	if to != "" && r.s.handoffTo == "" {
		r.s.handoffTo = to
	}
}

// HandoffNamed: if the span is a tool call, it hands off to target ("" for
// a target not named).
func (r *Reading) HandoffNamed(target string) {
	r.s.handoffNamed, r.s.handoffNamedTo = true, target
}

// HandoffOverride: the span is a handoff to target ("" for not named),
// whatever else it is (the user's map).
func (r *Reading) HandoffOverride(target string) {
	r.s.handoffOverride, r.s.handoffOverrideTo = true, target
}

// HandoffSource names the agent handing off, by the family's
// Identities[identity].
func (r *Reading) HandoffSource(identity int, name string) {
	if name != "" && r.s.handoffFrom == "" {
		r.s.handoffFrom, r.s.handoffFromRank = name, r.rd.reg.ranks[r.cur][identity]
	}
}

// ToolName gives the name of the tool the span calls; the first family
// in the registry to give one names it.
func (r *Reading) ToolName(name string) {
	if name != "" && r.s.toolName == "" {
		r.s.toolName = name
	}
}

// ToolArguments gives the tool call's arguments as JSON.
func (r *Reading) ToolArguments(args string) {
	if args != "" && r.s.toolArgs == "" {
		r.s.toolArgs = args
	}
}

// Rank is the rank of the family's Identities[identity].
func (r *Reading) Rank(identity int) Rank { return r.rd.reg.ranks[r.cur][identity] }

// decide settles the verdict from what the families said, by the
// precedence in this file's comment.
func (r *Reading) decide(sp *otelmap.Span) {
	rd := r.rd
	r.readSpanName(sp)
	if r.s.mcpMethod != "" {
		r.cur = -1
		r.Say(TierProtocol, Word{Op: mcpOperation(r.s.mcpMethod)})
	}
	for t := rd.touched; t != 0; t &= t - 1 {
		f := bits.TrailingZeros64(t)
		r.cur = f
		rd.fams[f].Decide(r, sp)
	}
	if s := &r.s; s.said {
		r.Op, r.Workflow = s.word.Op, s.word.Workflow
		s.understood = s.understood || s.word.Understood
		r.UnnamedAgent = s.word.Unnamed
		if c := s.word.Claims; c != 0 && s.wordFam >= 0 {
			r.Claimed |= Claims(c) << rd.reg.claimBase[s.wordFam]
		}
	}
	if r.s.handoffOverride {
		r.Handoff, r.HandoffTo = true, r.s.handoffOverrideTo
	} else {
		r.Handoff, r.HandoffTo = r.readHandoff(sp)
	}
	if r.Op == OpInvoke || r.s.ct == CallAgent {
		if r.s.override {
			r.AgentName, r.AgentRank = r.s.overrideName, r.s.overrideRank
		} else if r.s.name != "" {
			r.AgentName, r.AgentRank = r.s.name, r.s.nameRank
		} else {
			r.AgentRank = RankNone
		}
		r.AgentID = r.s.agentID
		if r.AgentName == "" && r.AgentID != "" {
			r.AgentName, r.AgentRank = r.AgentID, r.s.agentIDRank
		}
		if r.AgentName == "" && r.s.ct != CallAgent && r.Role != RoleClient {
			// An agent span that names no agent is the run of something
			// around agents, or an agent no rule can name: either way no
			// agent of its own, and no step.
			r.Op, r.Workflow, r.AgentLike = OpNone, true, true
		}
	} else if r.s.a2aAttr && r.Role == RoleClient && r.s.name != "" && rd.reg.tiers[r.s.nameRank] == NameStandard {
		// The client span of an A2A call names its callee.
		r.AgentName, r.AgentRank, r.AgentID = r.s.name, r.s.nameRank, r.s.agentID
	}
	if r.s.kindAgent && r.AgentName == "" {
		r.AgentLike = true
	}
	r.Agent = r.Op == OpInvoke || r.s.ct == CallAgent
	r.Marker = r.s.a2aAttr || r.Agent
	switch {
	case r.s.ct != CallNone:
		r.Step = r.s.ct
	case r.Agent:
		r.Step = CallAgent
	case r.Op == OpLLM || r.Op == OpTool:
		r.Step = CallTool
	}
	r.MCP = r.s.mcpMethod != ""
	r.ClientMethod = r.s.clientSDK
	if r.Handoff {
		r.HandoffFrom, r.HandoffFromRank = r.s.handoffFrom, r.s.handoffFromRank
	}
	if r.Workflow || r.s.notCall {
		r.Role = RoleInternal
	}
	if r.Ext && r.AgentName != "" {
		r.AgentRank = RankExtension
	}
	r.readLinks(sp)
	r.readMessagingKind(sp)
	if r.Claimed == 0 && containsFold(sp.Name, "agent") {
		r.AgentLike = true
	}
}

// readSpanName reads what this package reads from the span's name rather
// than its attributes. A name is read only where attributes left a
// question (the bytes of a span's name are a memory access of their own):
// the A2A SDK's spans carry no attribute any family recognizes, and a
// server names an agent-card route in its span name only when no URL
// attribute said it.
func (r *Reading) readSpanName(sp *otelmap.Span) {
	if r.Claimed == 0 {
		r.readA2AName(sp.Name)
	}
	if r.Role == RoleServer && !r.s.sawURL {
		r.readHTTPName(sp)
	}
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// toolName returns the tool a tool span calls, as the families name it
// (ToolName), else the span's name without the GenAI "execute_tool "
// prefix.
func (r *Reading) toolName(sp *otelmap.Span) string {
	if r.s.toolName != "" {
		return r.s.toolName
	}
	return strings.TrimPrefix(sp.Name, otelmap.SpanExecuteToolPrefix)
}

// Understood reports whether the families said what the span is: a step,
// an agent span, a handoff, an orchestration, a kind a family read
// (Understand, Word.Understood), coordbench.call_type, or a side of a call
// (messaging, HTTP, A2A, a span link). A span of no convention that only
// looks like an agent's by its name is not understood. Assembly counts
// the agent namespaces of a span not understood (docs/trace-assembly.md,
// "Spans no rule reads").
func (r *Reading) Understood() bool {
	const transport = 1<<claimMessaging | 1<<claimHTTP | 1<<claimA2A | 1<<claimLinks
	return r.Step != CallNone || r.Handoff || r.AgentName != "" || r.s.a2aAttr || r.s.ct != CallNone ||
		r.Workflow || r.s.understood || r.Claimed&transport != 0
}

// AgentNamespace returns the namespace of key ("entity.*") when a family
// that claimed the span says it is an agent's there though other
// libraries use its name too (Namespacer), "" otherwise. The namespaces
// that are an agent's on any span are package agentns's.
func (r *Reading) AgentNamespace(key string) string {
	rd := r.rd
	for t := rd.touched; t != 0; t &= t - 1 {
		f := bits.TrailingZeros64(t)
		if ns := rd.namespacers[f]; ns != nil && r.Claimed.Has(rd.reg.claimBase[f]) {
			if s := ns.Namespace(key); s != "" {
				return s
			}
		}
	}
	return ""
}
