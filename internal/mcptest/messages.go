package mcptest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one JSON-RPC body to send, and what it is.
type Message struct {
	Name string
	Body string
}

// Methods are the methods the Go SDK's server (v1.8.0, mcp/server.go
// serverMethodInfos) serves, the client's methods it does not, and some it
// never heard of.
var Methods = []string{
	"initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
	"resources/unsubscribe", "logging/setLevel", "completion/complete", "server/discover",
	"subscriptions/listen",
	"notifications/initialized", "notifications/cancelled", "notifications/progress",
	"notifications/roots/list_changed",
	// The client's side, sent to the server.
	"sampling/createMessage", "roots/list", "elicitation/create", "notifications/message",
	// Nobody's.
	"", "nope", "tools/call/more", "TOOLS/LIST",
}

// deep is an array nested n deep.
func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// Params are the params every method is sent with: absent ("" here),
// null, {}, other JSON types, and _meta in shapes the conventions (the
// trace context, the progress token, SEP-2575's protocol version) do not
// expect.
var Params = []string{
	"", "null", "{}", "[]", `"text"`, "0", "-1.5e300", "true", `[{}]`,
	`{"_meta":null}`, `{"_meta":[]}`, `{"_meta":"x"}`, `{"_meta":{}}`,
	`{"_meta":{"traceparent":7,"tracestate":[],"baggage":{}}}`,
	`{"_meta":{"traceparent":"00-zz-zz-01"}}`,
	`{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"x"}}`,
	`{"_meta":{"progressToken":{}}}`, `{"_meta":{"progressToken":null}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}`,
	`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":7}}`,
	`{"cursor":5}`, `{"cursor":"not-a-cursor"}`, `{"cursor":null}`,
	`{"name":null}`, `{"name":5}`, `{"name":""}`, `{"name":"nope"}`, `{"name":{"a":1}}`,
	`{"uri":5}`, `{"uri":""}`, `{"uri":"file:///etc/passwd"}`, `{"uri":null}`,
	`{"level":"nope"}`, `{"level":5}`, `{"level":"debug"}`,
	`{"ref":null,"argument":null}`, `{"ref":{"type":5},"argument":[]}`,
	`{"ref":{"type":"ref/prompt","name":"x"},"argument":{"name":"a","value":"b"}}`,
	`{"ref":{"type":"ref/resource","uri":"x"},"argument":{"name":7}}`,
	`{"requestId":null}`, `{"requestId":{}}`, `{"requestId":1,"reason":5}`, `{"requestId":"list"}`,
	`{"progressToken":null,"progress":"x"}`, `{"progressToken":{},"progress":1,"total":"y"}`,
	`{"protocolVersion":5}`, `{"protocolVersion":"2025-06-18","capabilities":null,"clientInfo":null}`,
	`{"protocolVersion":"1999-01-01","capabilities":[],"clientInfo":"x"}`,
	`{"capabilities":{"roots":{"listChanged":"yes"},"sampling":7},"clientInfo":{"name":5}}`,
	`{"x":` + deep(2000) + `}`,
	`{"` + strings.Repeat("k", 10000) + `":1}`,
}

// ToolArguments are the arguments a tools/call of every tool is sent
// with: absent, null, of the wrong JSON type, empty, with unknown keys and
// with each of the tool's properties of every wrong type.
func ToolArguments(properties []string) []string {
	out := []string{"", "null", "[]", `"x"`, "5", "true", "{}", `{"unknown":1}`, `{"":null}`}
	for _, p := range properties {
		for _, v := range []string{"null", "5", "-1e309", "true", `""`, `"x"`, "[]", `[1,"a"]`, "{}", `{"a":{"b":[]}}`, deep(500)} {
			out = append(out, fmt.Sprintf(`{%q:%s}`, p, v))
		}
	}
	return out
}

// Envelopes are bodies that are no JSON-RPC request, or barely one.
var Envelopes = []Message{
	{"empty body", ``},
	{"not JSON", `not json`},
	{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"`},
	{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"ping"} x`},
	{"a JSON string", `"ping"`},
	{"a number", `7`},
	{"null", `null`},
	{"empty batch", `[]`},
	{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`},
	{"batch of notifications", `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`},
	{"batch of garbage", `[1,"a",null,[]]`},
	{"no jsonrpc", `{"id":1,"method":"ping"}`},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"ping"}`},
	{"jsonrpc a number", `{"jsonrpc":2,"id":1,"method":"ping"}`},
	{"method a number", `{"jsonrpc":"2.0","id":1,"method":5}`},
	{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`},
	{"id null", `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
	{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`},
	{"id an array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`},
	{"id a bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`},
	{"id a float", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`},
	{"id huge", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`},
	{"id a long string", `{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 100000) + `","method":"ping"}`},
	{"a response, not a request", `{"jsonrpc":"2.0","id":1,"result":{}}`},
	{"an error response", `{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`},
	{"a response to nothing, malformed", `{"jsonrpc":"2.0","id":99,"result":7,"error":null}`},
	{"duplicate keys", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list","params":null,"params":{}}`},
	{"unicode method", `{"jsonrpc":"2.0","id":1,"method":"tools/\u006cist"}`},
	{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"_meta\":{\"traceparent\":\"\xff\xfe\"}}}"},
	{"NUL bytes", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000\"}"},
}

// SDKShapes are messages in the shapes the official SDKs send them, the
// shapes no Go SDK client sends. The MCP TypeScript SDK 1.32.2 puts the
// method first and the id last, and sends ping, tools/list and
// notifications/initialized with no params member at all
// (dist/esm/client/index.js lines 283–305, 445, 555; shared/protocol.js
// 666: {...request, jsonrpc, id}); a progress callback adds
// params._meta.progressToken. The MCP Python SDK (mcp 2.3.0,
// mcp/client/session.py lines 671, 849, 1285) sends its initialized
// notification and tools/list without params and ping with empty params
// (its pydantic models are dumped without None fields: read from the
// source, not captured).
var SDKShapes = []Message{
	{"TS initialize", `{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts-client","version":"1.0.0"}},"jsonrpc":"2.0","id":0}`},
	{"TS initialized", `{"method":"notifications/initialized","jsonrpc":"2.0"}`},
	{"TS ping", `{"method":"ping","jsonrpc":"2.0","id":1}`},
	{"TS tools/list", `{"method":"tools/list","jsonrpc":"2.0","id":2}`},
	{"TS tools/call", `{"method":"tools/call","params":{"name":"read_step","arguments":{}},"jsonrpc":"2.0","id":3}`},
	{"TS tools/call with progress", `{"method":"tools/call","params":{"name":"read_step","arguments":{},"_meta":{"progressToken":4}},"jsonrpc":"2.0","id":4}`},
	{"TS cancel", `{"method":"notifications/cancelled","params":{"requestId":4,"reason":"AbortError: This operation was aborted"},"jsonrpc":"2.0"}`},
	{"Python initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp","version":"0.1.0"}}}`},
	{"Python initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
	{"Python ping", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`},
	{"Python tools/list", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
	{"Python tools/call", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_paper","arguments":{}}}`},
	{"Go tools/call", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"submit_step","arguments":{"step_number":"1.1","code":"x = 1"}}}`},
}

// Malformed is every method with every params, as a request (with a
// numeric id) and as a notification (without), then tools/call of each
// named tool with every argument shape, then the envelopes. tools maps a
// tool's name to its input properties.
func Malformed(tools map[string][]string) []Message {
	var out []Message
	id := 100
	for _, method := range Methods {
		for _, params := range Params {
			for _, call := range []bool{true, false} {
				m := map[string]json.RawMessage{"jsonrpc": json.RawMessage(`"2.0"`)}
				m["method"], _ = json.Marshal(method)
				if params != "" {
					m["params"] = json.RawMessage(params)
				}
				kind := "notification"
				if call {
					id++
					m["id"] = json.RawMessage(fmt.Sprint(id))
					kind = "request"
				}
				b, err := json.Marshal(m)
				if err != nil {
					panic(fmt.Sprintf("mcptest: %s %s: %v", method, params, err))
				}
				out = append(out, Message{Name: fmt.Sprintf("%s %q, params %s", kind, method, short(params)), Body: string(b)})
			}
		}
	}
	for name, props := range tools {
		for _, args := range ToolArguments(props) {
			id++
			params := `{"name":` + quote(name)
			if args != "" {
				params += `,"arguments":` + args
			}
			params += "}"
			out = append(out, Message{Name: fmt.Sprintf("tools/call %s, arguments %s", name, short(args)),
				Body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)})
		}
	}
	return append(out, Envelopes...)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func short(s string) string {
	if s == "" {
		return "absent"
	}
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
