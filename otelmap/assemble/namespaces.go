package assemble

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
)

// Never silent about what was not understood (docs/trace-assembly.md,
// "Spans no rule reads"). A span that carries attributes of an agent or
// GenAI namespace, yet that no recognizer could say anything of in agent
// terms (it is no step, names no agent, is no handoff, no orchestration,
// and no family read its kind), is evidence the trace holds agent work the
// graph does not show. Assembly counts such spans by namespace
// (Coverage.UnreadNamespaces), warns about each namespace, and a trace with
// any is never complete evidence (evals/evidence.go).
//
// Which namespaces are an agent's or GenAI's is decided by a principle,
// not by a list hoped complete:
//
//  1. a registry of the namespaces agent frameworks and GenAI
//     instrumentations are known to write (agentNamespaces), matched first
//     so that a framework's namespace inside a standard one
//     (gcp.vertex.agent, Google ADK's) is found;
//  2. otherwise, a namespace that is not one of OpenTelemetry's standard
//     ones (standardNamespaces: http, db, user_agent, ...) and whose key
//     speaks of agents, models' prompts and completions or tools: one of
//     its words (split at dots, colons, underscores, dashes and camelCase)
//     is in agentWords. So "zeta.agent.id" of a framework nobody listed is
//     an agent namespace, "zeta.cache.hits" is not.
//
// A span a recognizer did read is not counted for the extra keys it
// carries: a GenAI agent span with a gen_ai.* key no rule looks at is
// still read, and what is unread is detail, not a missing part of the
// team.

// agentNamespaces are the namespaces agent frameworks and GenAI
// instrumentations write, longest first where one is inside another.
var agentNamespaces = []string{
	"gcp.vertex.agent", // Google ADK
	"graph.node",       // OpenInference
	"gen_ai", "ai", "llm", "mastra", "genkit", "langsmith", "langchain", "langgraph", "lc",
	"agent", "agents", "crewai", "voltagent", "strands", "beeai", "traceloop", "openinference",
	"mcp", "smolagents", "autogen", "semantic_kernel", "llama_index", "llamaindex", "haystack",
	"dspy", "pydantic_ai", "openai", "anthropic", "gemini", "vertex_ai", "bedrock", "ollama",
	"mistral", "cohere", "groq", "tool", "tool_call", "prompt", "embedding", "retrieval",
	"reranker", "kagent", "adk", "letta", "agno", "camel", "swarm",
}

// standardNamespaces are OpenTelemetry's own namespaces (semantic
// conventions), plus coordbench's: a key in them is never an agent
// namespace's, whatever its words (user_agent.original, http.request.header.x_agent).
var standardNamespaces = map[string]bool{
	"http": true, "url": true, "server": true, "client": true, "network": true, "net": true,
	"db": true, "rpc": true, "messaging": true, "code": true, "thread": true, "exception": true,
	"error": true, "user_agent": true, "otel": true, "telemetry": true, "service": true,
	"process": true, "host": true, "k8s": true, "cloud": true, "container": true, "os": true,
	"enduser": true, "peer": true, "faas": true, "aws": true, "azure": true, "gcp": true,
	"user": true, "event": true, "log": true, "browser": true, "device": true, "deployment": true,
	"feature_flag": true, "file": true, "dns": true, "tls": true, "system": true, "hw": true,
	"jvm": true, "dotnet": true, "go": true, "nodejs": true, "v8js": true, "cpython": true,
	"graphql": true, "source": true, "destination": true, "vcs": true, "cicd": true,
	"artifact": true, "test": true, "webengine": true, "geo": true, "session": true,
	"signalr": true, "aspnetcore": true, "kestrel": true, "cassandra": true, "elasticsearch": true,
	"heroku": true, "android": true, "ios": true, "zos": true, "linux": true,
	"coordbench": true, "a2a": true, "asgi": true, "wsgi": true, "sentry": true, "logfire": true,
}

// agentWords are the words that make a key of an unlisted namespace an
// agent's or GenAI's.
var agentWords = map[string]bool{
	"agent": true, "agents": true, "subagent": true, "llm": true, "llms": true, "genai": true,
	"prompt": true, "prompts": true, "completion": true, "completions": true, "tool": true,
	"tools": true, "toolcall": true, "handoff": true, "handoffs": true, "swarm": true,
	"crew": true, "chatbot": true, "assistant": true,
}

// agentNamespace returns the namespace of key, as reported ("ai.*",
// "genkit:*", or a key without separator as it is), when it is an agent or
// GenAI namespace; else "".
func agentNamespace(key string) string {
	for _, ns := range agentNamespaces {
		if len(key) > len(ns) && strings.HasPrefix(key, ns) && (key[len(ns)] == '.' || key[len(ns)] == ':') {
			return key[:len(ns)+1] + "*"
		}
	}
	end := strings.IndexAny(key, ".:")
	if end < 0 {
		end = len(key)
	}
	if standardNamespaces[key[:end]] {
		return ""
	}
	for w := range keyWords(key) {
		if agentWords[w] {
			if end == len(key) {
				return key
			}
			return key[:end+1] + "*"
		}
	}
	return ""
}

// keyWords yields the words of an attribute key, lower case: split at
// anything but letters and digits, and where a lower-case letter or digit
// is followed by an upper-case one (camelCase).
func keyWords(key string) func(func(string) bool) {
	return func(yield func(string) bool) {
		var buf [64]byte
		w := buf[:0]
		flush := func() bool {
			if len(w) == 0 {
				return true
			}
			ok := yield(string(w))
			w = w[:0]
			return ok
		}
		for i := 0; i < len(key); i++ {
			c := key[i]
			switch {
			case 'A' <= c && c <= 'Z':
				if i > 0 && ('a' <= key[i-1] && key[i-1] <= 'z' || '0' <= key[i-1] && key[i-1] <= '9') {
					if !flush() {
						return
					}
				}
				w = append(w, c+'a'-'A')
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				w = append(w, c)
			default:
				if !flush() {
					return
				}
			}
		}
		flush()
	}
}

// unreadNamespace is what assembly noted of one namespace on spans it
// could not read.
type unreadNamespace struct {
	spans int
	first uint64 // the smallest span id among them
	name  string // that span's name
}

// understood reports whether the recognizers said what the span is: a
// step, an agent span, a handoff, an orchestration, a kind a GenAI family
// read (gen_ai.operation.name, openinference.span.kind,
// traceloop.span.kind, coordbench.call_type, a framework's own kind:
// reading.kindRead), a rule of the user's convention map, or a side of a
// call (messaging, HTTP, A2A, a span link). A span of no convention that
// only looks like an agent's by its name is not read: inside a read agent
// the unread-agent rule (build.go) takes it for that agent's work, so it
// is counted here.
func (r *reading) understood(n *node) bool {
	const transport = 1<<famMessaging | 1<<famHTTP | 1<<famA2A | 1<<famLinks
	return n.flags&fStep != 0 || r.mapped != nil || r.handoff || r.agentName != "" || r.a2aAttr || r.ct != ctNone ||
		r.workflow || r.gen.op != "" || r.oi.kind != oiNone || r.tl.kind != tlNone ||
		r.kindRead || r.claimed&transport != 0
}

// noteUnreadNamespaces counts node i's span once for each agent or GenAI
// namespace among its attributes.
func (a *assembler) noteUnreadNamespaces(i int32, sp *otelmap.Span) {
	var seen [8]string
	nSeen := 0
attrs:
	for k := range sp.Attrs {
		ns := agentNamespace(string(sp.Attrs[k].Key))
		if ns == "" {
			continue
		}
		for _, s := range seen[:nSeen] {
			if s == ns {
				continue attrs
			}
		}
		if nSeen < len(seen) {
			seen[nSeen] = ns
			nSeen++
		}
		if a.unreadNS == nil {
			a.unreadNS = map[string]*unreadNamespace{}
		}
		u := a.unreadNS[ns]
		if u == nil {
			u = &unreadNamespace{first: a.nodes[i].id, name: sp.Name}
			a.unreadNS[ns] = u
		}
		u.spans++
		if id := a.nodes[i].id; id < u.first {
			u.first, u.name = id, sp.Name
		}
	}
}

// unreadNamespaceWarnings returns the counts by namespace and one warning
// per namespace, sorted.
func (a *assembler) unreadNamespaceWarnings() (map[string]int, []string) {
	if len(a.unreadNS) == 0 {
		return nil, nil
	}
	counts := make(map[string]int, len(a.unreadNS))
	var w []string
	for ns, u := range a.unreadNS {
		counts[ns] = u.spans
		w = append(w, fmt.Sprintf("%d %s `%s` attributes no rule reads (the first: span %016x %q); what they did may be missing from the graph",
			u.spans, plural(u.spans, "span carries", "spans carry"), ns, u.first, u.name))
	}
	slices.SortFunc(w, cmp.Compare)
	return counts, w
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
