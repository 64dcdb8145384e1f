package assemble

import (
	"fmt"
	"math/bits"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/convmap"
)

// This file is where spans are read. Every span is read once, through a
// table of recognizers, one per family of span conventions, each in a file
// of its own (recognize_<family>.go). A recognizer writes what its
// conventions say into its own slots of a reading; decide then settles, by
// a fixed precedence, what the span is: its side of a call, its operation,
// the agent it names, whether it failed, whether it hands off to another
// agent. The later phases (calls.go, identity.go) decide by that and never
// look at attributes themselves.
//
// Precedence, when a span carries several conventions (documented in
// docs/trace-assembly.md, "When a span carries several conventions"):
//
//  1. coordbench.call_type is the span's own statement of its call type
//     and wins for the step's call type.
//  2. A rule of the user's convention map (package convmap) that matches
//     the span says its operation, agent name and handoff target,
//     whatever the built-in families say: the user's word on their own
//     framework.
//  3. The operation: the Vercel AI SDK's ai.operationId, Genkit's
//     genkit:type / genkit:metadata:subtype and VoltAgent's entity.type /
//     span.type, then OpenLLMetry's
//     traceloop.span.kind, then gen_ai.operation.name, then OpenInference's
//     openinference.span.kind, then the previous GenAI shapes (an operation
//     read from the other gen_ai.* attributes). A framework's own
//     namespace comes first because it is the framework's own word on what
//     its span is, where instrumentations layered on it translate it
//     approximately (OpenInference's and OpenLLMetry's AI SDK span
//     processors add their kinds to the ai.* spans; the AI SDK's model
//     calls carry gen_ai.* attributes of the previous shape); the two
//     namespaces never meet on one span. OpenLLMetry comes before GenAI
//     because it is the instrumentation's own word on what the span is
//     where its gen_ai.operation.name is approximate (CrewAI's tasks and
//     crew are invoke_agent spans); OpenInference comes after GenAI because
//     its kinds are coarser (AGENT is set for any run with "agent" in its
//     name).
//  4. The agent's name, only on an agent span (or on the client span of
//     an A2A call, where it names the callee): gen_ai.agent.name, then
//     OpenInference agent.name, then graph.node.id, then
//     traceloop.entity.name, then the AI SDK's ai.telemetry.functionId,
//     then Genkit's genkit:name, then VoltAgent's subagent.name (else
//     entity.name, which on a sub-agent's spans names the root agent), then
//     gen_ai.agent.id, then a name read from the span name (smolagents).
//     The AI SDK, Genkit and VoltAgent copy their names onto every span of
//     a call: read only on their agent spans. A
//     gen_ai.agent.name on any other span (an LLM or tool span, where
//     frameworks copy the caller's name) names nothing.
//  5. Not a call side: an agent-card fetch (plain HTTP) and the A2A SDK's
//     method spans are read as INTERNAL whatever their kind, and so is an
//     orchestration span (a workflow, a swarm, a crew, a task).
//
// The steps' details (model, tokens, messages: steps.go) are read
// separately, only for the spans that are steps.

// Recognizer families, in the order of their bits in reading.claimed and
// of recognizerNames.
const (
	famGenAI uint8 = iota
	famGenAIPrevious
	famOpenInference
	famOpenLLMetry
	famMessaging
	famLinks
	famA2A
	famHTTP
	famCoordbench
	famConventions
	famVercelAI
	famGenkit
	famVoltAgent
	famMCP
	numFamilies
)

// recognizerNames are the names Coverage.Recognized reports.
var recognizerNames = [numFamilies]string{
	famGenAI:         "genai",
	famGenAIPrevious: "genai_previous",
	famOpenInference: "openinference",
	famOpenLLMetry:   "openllmetry",
	famMessaging:     "messaging",
	famLinks:         "links",
	famA2A:           "a2a",
	famHTTP:          "http",
	famCoordbench:    "coordbench",
	famConventions:   "conventions",
	famVercelAI:      "vercel_ai",
	famGenkit:        "genkit",
	famVoltAgent:     "voltagent",
	famMCP:           "mcp",
}

// reading is what the recognizers read from one span: first each family's
// slots, then (decide) the verdict the later phases use.
type reading struct {
	gen genaiSlots
	oi  oiSlots
	tl  traceloopSlots
	ai  aiSlots     // the Vercel AI SDK (recognize_vercelai.go)
	gk  genkitSlots // Genkit (recognize_genkit.go)
	vo  voltSlots   // VoltAgent (recognize_voltagent.go)
	mcp mcpSlots    // MCP (recognize_mcp.go)

	conv   *Conventions  // the user's convention map, nil for none
	mapped *convmap.Rule // the map's rule that matched the span

	// Read by the smaller families directly.
	ct       uint8  // coordbench.call_type: ctNone if absent
	ext      bool   // coordbench.source=extension
	a2aAttr  bool   // any a2a.* attribute
	failed   bool   // error.type, a failed A2A task state
	hasAddr  bool   // server.address
	sawURL   bool   // a URL, path or route attribute (recognize_http.go)
	notCall  bool   // not a side of a call: an agent-card fetch, an SDK method span
	metadata string // OpenInference metadata JSON that holds langgraph_node

	// The verdict (decide).
	role      uint8
	op        uint8
	agentName string
	agentRank uint8
	agentID   string
	marker    bool
	workflow  bool // an orchestration: never an agent, not a step
	agentLike bool // looks like an agent's work but names no agent
	// unnamedAgent: an agent run by its framework's own word whose name no
	// attribute records (an AI SDK call without ai.telemetry.functionId, a
	// Genkit generate no prompt or agent ran): counted as unread even
	// inside another agent's work, where it is a sub-agent.
	unnamedAgent bool
	// kindRead: a framework's own family read what the span is, even if
	// it is neither step nor call (a Genkit flowStep, the AI SDK's
	// ai.embed): the span is understood (namespaces.go).
	kindRead  bool
	handoff   bool
	handoffTo string
	callerBy  string // a caller named on the callee's span (graph.node.parent_id)
	claimed   uint16

	id       uint64         // the span id, for warnings
	warnings *[]attrWarning // where warnings go
}

func (r *reading) claim(fam uint8) { r.claimed |= 1 << fam }

// str returns a string attribute's value, noting a value of another type.
func (r *reading) str(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		r.warn(string(kv.Key), fmt.Sprintf("is %s, want string", kv.Value.Type()))
		return ""
	}
	return kv.Value.AsString()
}

// quiet returns a string attribute's value, or "" for another type,
// without a warning: for attributes of other conventions whose types
// coordbench does not police.
func quiet(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		return ""
	}
	return kv.Value.AsString()
}

// warn notes an attribute of the wrong type or value.
func (r *reading) warn(key, what string) {
	*r.warnings = append(*r.warnings, attrWarning{id: r.id, key: key, msg: what})
}

// read dispatches each attribute to the family that owns its namespace, by
// the key's first byte: every span goes through here, so it is one loop.
func (r *reading) read(sp *otelmap.Span) {
	attrs := sp.Attrs
	for k := range attrs {
		kv := &attrs[k]
		key := string(kv.Key)
		if len(key) < 4 {
			continue
		}
		switch key[0] {
		case 'g':
			switch {
			case strings.HasPrefix(key, "gen_ai."):
				r.readGenAI(kv, key)
			case strings.HasPrefix(key, "graph.node."):
				r.readOpenInference(kv, key)
			case strings.HasPrefix(key, "genkit:"):
				r.readGenkit(kv, key)
			}
		case 'c':
			if strings.HasPrefix(key, "coordbench.") {
				r.readCoordbench(kv)
			}
		case 'a':
			switch {
			case strings.HasPrefix(key, "a2a."):
				r.readA2A(kv)
			case strings.HasPrefix(key, "ai."):
				r.readVercelAI(kv, key)
			case key == string(otelmap.AttrOIAgentName):
				r.readOpenInference(kv, key)
			case key == string(otelmap.AttrPydanticAgentName):
				r.gen.pydanticAgent = quiet(kv)
			case strings.HasPrefix(key, "agent_loop."):
				// Strands TS's execute_agent_loop_cycle: one turn of an
				// agent's loop, its work, neither step nor call.
				r.gen.loopCycle = true
				r.claim(famGenAI)
			case strings.HasPrefix(key, "asgi."):
				r.claim(famHTTP)
			}
		case 'e':
			switch {
			case kv.Key == otelmap.AttrErrorType:
				if r.str(kv) != "" {
					r.failed = true
				}
			case strings.HasPrefix(key, "entity."):
				r.readVoltAgent(kv, key)
			}
		case 's':
			switch {
			case kv.Key == otelmap.AttrServerAddress:
				r.hasAddr = r.str(kv) != ""
			case strings.HasPrefix(key, "smolagents."):
				r.oi.smolagents = true
			case strings.HasPrefix(key, "subagent.") || key == "span.type":
				r.readVoltAgent(kv, key)
			}
		case 'o':
			if strings.HasPrefix(key, "openinference.") || key == "output.value" {
				r.readOpenInference(kv, key)
			}
		case 't':
			switch {
			case strings.HasPrefix(key, "traceloop."):
				r.readTraceloop(kv, key)
			case key == "tool.name":
				r.readOpenInference(kv, key)
			}
		case 'l':
			if key == "llm.request.type" {
				r.readTraceloop(kv, key)
			}
		case 'm':
			switch {
			case strings.HasPrefix(key, "mcp."):
				r.readMCP(kv, key)
			case isMessagingKey(key):
				r.claim(famMessaging)
			case key == "metadata":
				r.readOpenInference(kv, key)
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
	}
}

// decide settles the verdict from the families' slots, by the precedence
// in this file's comment.
func (r *reading) decide(sp *otelmap.Span) {
	r.readSpanName(sp)
	if r.gen.op == "" && r.gen.loopCycle {
		r.gen.op = "execute_agent_loop_cycle"
	}
	if r.mapped = r.conv.Match(sp); r.mapped != nil {
		r.claim(famConventions)
	}
	switch {
	case r.mapped != nil:
		r.op, r.workflow = mappedOperation(r.mapped.Is)
	case r.mcp.method != "":
		r.op = r.mcp.operation()
	case r.ai.op != aiNone:
		r.op, r.workflow = r.ai.operation(r)
	case r.gk.typ != gkNone:
		r.op, r.workflow = r.gk.operation(r)
	case r.vo.entity != voNone:
		r.op, r.workflow = r.vo.operation(r)
	case r.tl.kind != tlNone:
		r.op, r.workflow = r.tl.operation()
	case r.gen.op != "":
		r.op, r.workflow = r.gen.operation()
	case r.oi.kind != oiNone:
		r.op = r.oi.operation()
	default:
		r.op = r.previousOperation(sp)
	}
	if m := r.mapped; m != nil && m.Is == convmap.Handoff {
		r.handoff, r.handoffTo = true, m.Target.Read(sp)
	} else {
		r.handoff, r.handoffTo = r.readHandoff(sp)
	}
	if r.op == opInvoke || r.ct == ctAgent {
		if m := r.mapped; m != nil && m.Agent != nil {
			r.agentName, r.agentRank = m.Agent.Read(sp), rankConventions
		} else {
			r.agentName, r.agentRank = r.nameOfAgent(sp)
		}
		r.agentID = r.gen.agentID
		if r.agentName == "" && r.agentID != "" {
			r.agentName, r.agentRank = r.agentID, rankAgentID
		}
		if r.agentName == "" && r.ct != ctAgent && r.role != roleClient {
			// An agent span that names no agent is the run of something
			// around agents (CrewAI's crew and tasks, OpenInference's
			// OpenAI Agents workflow), or an agent no rule can name: either
			// way no agent of its own, and no step.
			r.op, r.workflow, r.agentLike = opNone, true, true
		}
	} else if r.a2aAttr && r.role == roleClient && r.gen.agentName != "" {
		// The client span of an A2A call names its callee.
		r.agentName, r.agentRank, r.agentID = r.gen.agentName, rankAgentName, r.gen.agentID
	}
	if r.oi.kind == oiAgent && r.agentName == "" {
		r.agentLike = true
	}
	if r.tl.kind == tlAgent && r.agentName == "" {
		r.agentLike = true
	}
	r.marker = r.a2aAttr || r.op == opInvoke || r.ct == ctAgent
	if r.workflow || r.notCall {
		r.role = roleInternal
	}
	if r.ext && r.agentName != "" {
		r.agentRank = rankExtension
	}
	r.callerBy = r.oi.parentID
	r.readLinks(sp)
	r.readMessagingKind(sp)
	if r.claimed == 0 && containsFold(sp.Name, "agent") {
		r.agentLike = true
	}
}

// readSpanName reads what the families read from the span's name rather
// than its attributes. A name is read only where attributes left a
// question (the bytes of a span's name are a memory access of their own):
// the A2A SDK's spans carry no attribute any family recognizes, and a
// server names an agent-card route in its span name only when no URL
// attribute said it.
func (r *reading) readSpanName(sp *otelmap.Span) {
	if r.claimed == 0 {
		r.readA2AName(sp.Name)
	}
	if r.role == roleServer && !r.sawURL {
		r.readHTTPName(sp)
	}
}

// nameOfAgent returns the name an agent span gives its agent, and the rank
// of the rule that read it, by the precedence in this file's comment
// (gen_ai.agent.id is taken by decide, after these).
func (r *reading) nameOfAgent(sp *otelmap.Span) (string, uint8) {
	switch {
	case r.gen.agentName != "":
		return r.gen.agentName, rankAgentName
	case r.oi.agentName != "":
		return r.oi.agentName, rankOpenInference
	case r.oi.nodeID != "":
		return r.oi.nodeID, rankOpenInference
	case r.tl.kind == tlAgent && r.tl.entity != "":
		return r.tl.entity, rankTraceloop
	case r.ai.op == aiAgent && r.ai.functionID != "":
		return r.ai.functionID, rankVercelAI
	case r.gk.agent() && r.gk.name != "":
		return r.gk.name, rankGenkit
	case r.vo.agent() && r.vo.name() != "":
		if r.vo.subagent {
			return r.vo.name(), rankVoltAgentSub
		}
		return r.vo.name(), rankVoltAgent
	case r.gen.agentID != "":
		return "", rankNone
	}
	if name := r.oi.smolagentsName(sp.Name); name != "" {
		return name, rankSpanName
	}
	return "", rankNone
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

// scan reads node i's span through the recognizers and keeps what
// structure and identity depend on.
func (a *assembler) scan(i int32) {
	n := &a.nodes[i]
	sp := a.span(i)
	r := &a.reading
	*r = reading{role: spanKindRole(sp.Kind), id: n.id, warnings: &a.attrWarnings, conv: a.conv}
	r.read(sp)
	r.turnOff(a.without)
	r.decide(sp)
	n.role, n.op = r.role, r.op
	if (n.flags&fFailed != 0 || r.failed) && a.conv.ControlFlow(sp) {
		// An error status that moves control (a handoff's ParentCommand)
		// is no failure of the span, its step or its call.
		r.failed = false
		n.flags = n.flags&^fFailed | fControlFlow
	}
	if r.marker {
		n.flags |= fMarker
	}
	if r.mcp.method != "" {
		n.flags |= fMCP
	}
	if r.failed {
		n.flags |= fFailed
	}
	if r.ext {
		n.flags |= fExt
	}
	if r.hasAddr {
		n.flags |= fHasAddr
	}
	if r.agentLike {
		n.flags |= fAgentLike
		a.agentLike++
		if r.unnamedAgent {
			n.flags |= fUnnamedAgent
		}
	}
	if r.workflow {
		n.flags |= fWorkflow
	}
	ct := r.ct
	if n.op == opInvoke || ct == ctAgent {
		n.flags |= fAgent | fMarker
	}
	switch {
	case ct != ctNone:
		n.callType = ct
	case n.flags&fAgent != 0:
		n.callType = ctAgent
	case n.op == opLLM || n.op == opTool:
		n.callType = ctTool
	}
	if n.callType != ctNone {
		n.flags |= fStep
	}
	if r.agentName != "" {
		n.selfIdent = a.intern(r.agentName)
		a.note(n.selfIdent, r.agentRank, false)
		if id := r.agentID; id != "" {
			if x := &a.idents[n.selfIdent]; x.id == "" || id < x.id {
				x.id = id
			}
		}
	}
	if r.claimed == 0 {
		a.unrecognized++
	}
	if !r.understood(n) {
		a.noteUnreadNamespaces(i, sp)
	}
	for c := r.claimed; c != 0; c &= c - 1 {
		a.recognized[bits.TrailingZeros16(c)]++
	}
	// What later rules read from a few spans only is kept aside.
	if r.handoff {
		a.handoffs = append(a.handoffs, handoff{span: i, to: r.handoffTo, from: r.gen.handoffFrom})
	}
	if r.callerBy != "" && n.flags&fAgent != 0 {
		a.callerNames = append(a.callerNames, namedCaller{span: i, name: r.callerBy})
	}
	if n.flags&fAgent != 0 && r.gen.op == otelmap.OpInvokeAgent && len(sp.Events()) > 0 {
		for _, src := range strandsGraphSources(sp) {
			a.callerNames = append(a.callerNames, namedCaller{span: i, name: src})
		}
	}
	if r.metadata != "" {
		a.langGraphNode(i, sp, r.metadata)
	}
	if r.gk.generate {
		a.gkGenerates = append(a.gkGenerates, i)
	}
	if len(sp.Links()) > 0 {
		a.keepLink(i, sp)
	}
}

// a2aFailed reports an A2A task state that ends a call in error, in the 0.3
// ("failed") and the 1.0 ("TASK_STATE_FAILED") spellings.
func a2aFailed(state string) bool {
	if len(state) > len("TASK_STATE_") && strings.EqualFold(state[:len("TASK_STATE_")], "TASK_STATE_") {
		state = state[len("TASK_STATE_"):]
	}
	return strings.EqualFold(state, "failed") || strings.EqualFold(state, "rejected")
}

// toolName returns the tool a tool span calls, as the families name it
// (GenAI, OpenInference, the AI SDK), else the span's name without the
// GenAI "execute_tool " prefix.
func (r *reading) toolName(sp *otelmap.Span) string {
	switch {
	case r.gen.tool != "":
		return r.gen.tool
	case r.oi.tool != "":
		return r.oi.tool
	case r.ai.tool != "":
		return r.ai.tool
	}
	return strings.TrimPrefix(sp.Name, otelmap.SpanExecuteToolPrefix)
}
