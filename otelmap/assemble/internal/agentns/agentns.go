// Package agentns is the registry behind assembly's never-silent rule: it
// says which attribute keys belong to an agent framework's or a GenAI
// instrumentation's namespace (Of), and counts the spans carrying such
// keys that no recognizer could read, one warning per namespace (Counter).
// Which spans are unread is assembly's to say (otelmap/assemble,
// namespaces.go, and docs/trace-assembly.md, "Spans no rule reads").
package agentns

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// agentNamespaces are the namespaces agent frameworks and GenAI
// instrumentations write, longest first where one is inside another.
var agentNamespaces = []string{
	"gcp.vertex.agent",     // Google ADK
	"langfuse.observation", // Langfuse: its other keys (langfuse.environment, langfuse.trace.*) go on every span
	"graph.node",           // OpenInference
	"gen_ai", "ai", "llm", "mastra", "genkit", "langsmith", "langchain", "langgraph", "lc",
	"agent", "agents", "crewai", "voltagent", "strands", "beeai", "traceloop", "openinference",
	"mcp", "smolagents", "autogen", "semantic_kernel", "llama_index", "llamaindex", "haystack",
	"dspy", "pydantic_ai", "openai", "anthropic", "gemini", "vertex_ai", "bedrock", "ollama",
	"mistral", "cohere", "groq", "tool", "tool_call", "prompt", "embedding", "retrieval",
	"reranker", "kagent", "adk", "letta", "agno", "camel", "swarm", "subagent",
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

// Of returns the namespace of key, as reported ("ai.*",
// "genkit:*", or a key without separator as it is), when it is an agent or
// GenAI namespace; else "".
func Of(key string) string {
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

// Counter counts unread spans by namespace. The zero value is ready.
type Counter struct {
	m map[string]*unread
}

// unread is what was noted of one namespace on spans assembly could not
// read.
type unread struct {
	spans int
	first uint64 // the smallest span id among them
	name  string // that span's name
}

// Note counts one unread span, its id and name, for namespace ns.
func (c *Counter) Note(ns string, id uint64, name string) {
	if c.m == nil {
		c.m = map[string]*unread{}
	}
	u := c.m[ns]
	if u == nil {
		u = &unread{first: id, name: name}
		c.m[ns] = u
	}
	u.spans++
	if id < u.first {
		u.first, u.name = id, name
	}
}

// Warnings returns the counts by namespace and one warning per namespace,
// sorted; nil, nil when nothing was noted.
func (c *Counter) Warnings() (map[string]int, []string) {
	if len(c.m) == 0 {
		return nil, nil
	}
	counts := make(map[string]int, len(c.m))
	var w []string
	for ns, u := range c.m {
		counts[ns] = u.spans
		w = append(w, fmt.Sprintf("%d %s `%s` attributes no rule reads (the first: span %016x %q); what they did may be missing from the graph",
			u.spans, Plural(u.spans, "span carries", "spans carry"), ns, u.first, u.name))
	}
	slices.SortFunc(w, cmp.Compare)
	return counts, w
}

// Plural returns one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
