package recognize

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/convmap"
)

// This file is where spans are read. Every span is read once, through a
// table of recognizers, one per family of span conventions, each in a file
// of its own (<family>.go in this package). A recognizer writes what its
// conventions say into its own slots of a Reading; decide then settles, by
// a fixed precedence, what the span is (the Verdict): its side of a call,
// its operation, the agent it names, whether it failed, whether it hands
// off to another agent. Assembly decides by the Verdict and never looks at
// the attributes the families read.
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
//     genkit:type / genkit:metadata:subtype, VoltAgent's entity.type /
//     span.type and Langfuse's langfuse.observation.type, then OpenLLMetry's
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
//     gen_ai.agent.id, then a name read from the span name (smolagents,
//     and a Langfuse agent observation, which is named by its span).
//     The AI SDK, Genkit and VoltAgent copy their names onto every span of
//     a call: read only on their agent spans. A
//     gen_ai.agent.name on any other span (an LLM or tool span, where
//     frameworks copy the caller's name) names nothing.
//  5. Not a call side: an agent-card fetch (plain HTTP) and the A2A SDK's
//     method spans are read as INTERNAL whatever their kind, and so is an
//     orchestration span (a workflow, a swarm, a crew, a task).
//
// The steps' details (model, tokens, messages) are read separately, by
// otelmap/assemble/steps.go, only for the spans that are steps.

// A Reader reads spans one at a time into the one Reading it reuses, so
// that reading a span allocates nothing. The zero Reader reads with every
// built-in family and no convention map.
type Reader struct {
	// Conventions is a user's convention map, read before the built-in
	// families; nil for none.
	Conventions *convmap.Map
	// Without turns families of a framework's own namespace off
	// (FrameworkFamily): what a capture reads as when no built-in family
	// knows its framework. For tests.
	Without Families

	r Reading
}

// Read reads sp through the families and settles its Verdict. id is the
// span's id, for the warnings. The Reading is the Reader's and is valid
// until the next call.
func (rd *Reader) Read(sp *otelmap.Span, id uint64) *Reading {
	r := &rd.r
	w := r.warnings
	*r = Reading{Verdict: Verdict{Role: SpanKindRole(sp.Kind)}, conv: rd.Conventions, id: id, warnings: w}
	r.read(sp)
	r.turnOff(rd.Without)
	r.decide(sp)
	return r
}

// Warnings returns the attributes of the wrong type or value on every span
// read so far, in the order read.
func (rd *Reader) Warnings() []Warning { return rd.r.warnings }

// Reading is one span as the families read it: the Verdict, and behind it
// each family's slots, which decide and the methods below use.
type Reading struct {
	Verdict

	gen genaiSlots
	oi  oiSlots
	tl  traceloopSlots
	ai  aiSlots     // the Vercel AI SDK (vercelai.go)
	gk  genkitSlots // Genkit (genkit.go)
	vo  voltSlots   // VoltAgent (voltagent.go)
	ax  axSlots     // Ax (ax.go)
	mcp mcpSlots    // MCP (mcp.go)
	lf  uint8       // Langfuse's observation kind (langfuse.go)

	conv   *convmap.Map  // the user's convention map, nil for none
	mapped *convmap.Rule // the map's rule that matched the span

	// Read by the smaller families directly.
	ct       CallType // coordbench.call_type: CallNone if absent
	a2aAttr  bool     // any a2a.* attribute
	sawURL   bool     // a URL, path or route attribute (http.go)
	notCall  bool     // not a side of a call: an agent-card fetch, an SDK method span
	metadata string   // OpenInference metadata JSON that holds langgraph_node or lc_agent_name
	// kindRead: a framework's own family read what the span is, even if
	// it is neither step nor call (a Genkit flowStep, the AI SDK's
	// ai.embed): the span is understood (Understood).
	kindRead bool

	id       uint64    // the span id, for warnings
	warnings []Warning // kept across the spans a Reader reads
}

func (r *Reading) claim(fam Family) { r.Claimed |= 1 << fam }

// str returns a string attribute's value, noting a value of another type.
func (r *Reading) str(kv *attribute.KeyValue) string {
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
func (r *Reading) warn(key, what string) {
	r.warnings = append(r.warnings, Warning{Span: r.id, Key: key, Msg: what})
}

// read dispatches each attribute to the family that owns its namespace, by
// the key's first byte: every span goes through here, so it is one loop.
func (r *Reading) read(sp *otelmap.Span) {
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
			case strings.HasPrefix(key, "ax."):
				r.readAx(kv, key)
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
					r.Failed = true
				}
			case strings.HasPrefix(key, "entity."):
				r.readVoltAgent(kv, key)
			}
		case 's':
			switch {
			case kv.Key == otelmap.AttrServerAddress:
				r.HasAddr = r.str(kv) != ""
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
				r.readAx(kv, key)
			case key == "tool.mode":
				r.readAx(kv, key)
			}
		case 'l':
			switch key {
			case "llm.request.type":
				r.readTraceloop(kv, key)
			case "langfuse.observation.type":
				r.readLangfuse(kv)
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
func (r *Reading) decide(sp *otelmap.Span) {
	r.readSpanName(sp)
	if r.gen.op == "" && r.gen.loopCycle {
		r.gen.op = "execute_agent_loop_cycle"
	}
	if r.mapped = r.conv.Match(sp); r.mapped != nil {
		r.claim(famConventions)
	}
	switch {
	case r.mapped != nil:
		r.Op, r.Workflow = mappedOperation(r.mapped.Is)
	case r.mcp.method != "":
		r.Op = r.mcp.operation()
	case r.ai.op != aiNone:
		r.Op, r.Workflow = r.ai.operation(r)
	case r.gk.typ != gkNone:
		r.Op, r.Workflow = r.gk.operation(r)
	case r.vo.entity != voNone:
		r.Op, r.Workflow = r.vo.operation(r)
	case r.lf != lfNone:
		r.Op = r.langfuseOperation(sp.Name)
	case (r.ax.programType != "" || r.ax.native) && r.decideAx(sp):
		// decideAx set the operation.
	case r.tl.kind != tlNone:
		r.Op, r.Workflow = r.tl.operation()
	case r.gen.op != "":
		r.Op, r.Workflow = r.gen.operation()
	case r.oi.kind != oiNone:
		r.Op = r.oi.operation()
	default:
		r.Op = r.previousOperation(sp)
	}
	if m := r.mapped; m != nil && m.Is == convmap.Handoff {
		r.Handoff, r.HandoffTo = true, m.Target.Read(sp)
	} else {
		r.Handoff, r.HandoffTo = r.readHandoff(sp)
	}
	if r.Op == OpInvoke || r.ct == CallAgent {
		if m := r.mapped; m != nil && m.Agent != nil {
			r.AgentName, r.AgentRank = m.Agent.Read(sp), RankConventions
		} else {
			r.AgentName, r.AgentRank = r.nameOfAgent(sp)
		}
		r.AgentID = r.gen.agentID
		if r.AgentName == "" && r.AgentID != "" {
			r.AgentName, r.AgentRank = r.AgentID, RankAgentID
		}
		if r.AgentName == "" && r.ct != CallAgent && r.Role != RoleClient {
			// An agent span that names no agent is the run of something
			// around agents (CrewAI's crew and tasks, OpenInference's
			// OpenAI Agents workflow), or an agent no rule can name: either
			// way no agent of its own, and no step.
			r.Op, r.Workflow, r.AgentLike = OpNone, true, true
		}
	} else if r.a2aAttr && r.Role == RoleClient && r.gen.agentName != "" {
		// The client span of an A2A call names its callee.
		r.AgentName, r.AgentRank, r.AgentID = r.gen.agentName, RankAgentName, r.gen.agentID
	}
	if r.oi.kind == oiAgent && r.AgentName == "" {
		r.AgentLike = true
	}
	if r.tl.kind == tlAgent && r.AgentName == "" {
		r.AgentLike = true
	}
	r.Agent = r.Op == OpInvoke || r.ct == CallAgent
	r.Marker = r.a2aAttr || r.Agent
	switch {
	case r.ct != CallNone:
		r.Step = r.ct
	case r.Agent:
		r.Step = CallAgent
	case r.Op == OpLLM || r.Op == OpTool:
		r.Step = CallTool
	}
	r.MCP = r.mcp.method != ""
	if r.Handoff {
		r.HandoffFrom = r.gen.handoffFrom
	}
	r.GenkitGenerate = r.gk.generate
	if r.Workflow || r.notCall {
		r.Role = RoleInternal
	}
	if r.Ext && r.AgentName != "" {
		r.AgentRank = RankExtension
	}
	r.CallerBy = r.oi.parentID
	r.readLinks(sp)
	r.readMessagingKind(sp)
	if r.Claimed == 0 && containsFold(sp.Name, "agent") {
		r.AgentLike = true
	}
}

// readSpanName reads what the families read from the span's name rather
// than its attributes. A name is read only where attributes left a
// question (the bytes of a span's name are a memory access of their own):
// the A2A SDK's spans carry no attribute any family recognizes, and a
// server names an agent-card route in its span name only when no URL
// attribute said it.
func (r *Reading) readSpanName(sp *otelmap.Span) {
	if r.Claimed == 0 {
		r.readA2AName(sp.Name)
	}
	if r.Role == RoleServer && !r.sawURL {
		r.readHTTPName(sp)
	}
}

// nameOfAgent returns the name an agent span gives its agent, and the rank
// of the rule that read it, by the precedence in this file's comment
// (gen_ai.agent.id is taken by decide, after these).
func (r *Reading) nameOfAgent(sp *otelmap.Span) (string, Rank) {
	switch {
	case r.gen.agentName != "":
		return r.gen.agentName, RankAgentName
	case r.oi.agentName != "":
		return r.oi.agentName, RankOpenInference
	case r.oi.nodeID != "":
		return r.oi.nodeID, RankOpenInference
	case r.tl.kind == tlAgent && r.tl.entity != "":
		return r.tl.entity, RankTraceloop
	case r.ai.op == aiAgent && r.ai.functionID != "":
		return r.ai.functionID, RankVercelAI
	case r.gk.agent() && r.gk.name != "":
		return r.gk.name, RankGenkit
	case r.vo.agent() && r.vo.name() != "":
		if r.vo.subagent {
			return r.vo.name(), RankVoltAgentSub
		}
		return r.vo.name(), RankVoltAgent
	case r.gen.agentID != "":
		return "", RankNone
	}
	if name := r.oi.smolagentsName(sp.Name); name != "" {
		return name, RankSpanName
	}
	if r.lf == lfAgent && sp.Name != "" {
		return sp.Name, RankSpanName
	}
	return "", RankNone
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
// (GenAI, OpenInference, the AI SDK), else the span's name without the
// GenAI "execute_tool " prefix.
func (r *Reading) toolName(sp *otelmap.Span) string {
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

// turnOff forgets what the families of a framework's own namespace in
// mask read from the span, as if they did not exist (Reader.Without).
func (r *Reading) turnOff(mask Families) {
	if mask == 0 {
		return
	}
	if mask.Has(famVercelAI) {
		r.ai = aiSlots{}
	}
	if mask.Has(famGenkit) {
		r.gk = genkitSlots{}
	}
	if mask.Has(famVoltAgent) {
		r.vo = voltSlots{}
	}
	if mask.Has(famLangfuse) {
		r.lf = lfNone
	}
	if mask.Has(famAx) {
		r.ax = axSlots{}
	}
	r.Claimed &^= mask
}

// Understood reports whether the families said what the span is: a step,
// an agent span, a handoff, an orchestration, a kind a GenAI family read
// (gen_ai.operation.name, openinference.span.kind, traceloop.span.kind,
// coordbench.call_type, a framework's own kind: kindRead), a rule of the
// user's convention map, or a side of a call (messaging, HTTP, A2A, a span
// link). A span of no convention that only looks like an agent's by its
// name is not understood. Assembly counts the agent namespaces of a span
// not understood (docs/trace-assembly.md, "Spans no rule reads").
func (r *Reading) Understood() bool {
	const transport = 1<<famMessaging | 1<<famHTTP | 1<<famA2A | 1<<famLinks
	return r.Step != CallNone || r.mapped != nil || r.Handoff || r.AgentName != "" || r.a2aAttr || r.ct != CallNone ||
		r.Workflow || r.gen.op != "" || r.oi.kind != oiNone || r.tl.kind != tlNone ||
		r.kindRead || r.Claimed&transport != 0
}

// AgentNamespace returns the namespace ("entity.*") of key when it is an
// agent framework's only on a span the framework's family claimed:
// VoltAgent's entity.* and span.* are generic names (another library's
// entity.name may be a database table's), "" otherwise. The namespaces
// that are an agent's on any span are package agentns's.
func (r *Reading) AgentNamespace(key string) string {
	if !r.Claimed.Has(famVoltAgent) {
		return ""
	}
	return voltAgentNamespace(key)
}
