package a2aserve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	legacy "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/errordetails"
)

// JSON-RPC error codes answered before a request reaches a2a-go.
const (
	codeParseError          = -32700
	codeInvalidRequest      = -32600
	codeMethodNotFound      = -32601
	codeInvalidParams       = -32602
	codeVersionNotSupported = -32009
)

// rpcError is a JSON-RPC error this layer answers itself, in the shape
// a2a-go gives its own: a message and a google.rpc.ErrorInfo naming the
// reason in the a2a-protocol.org domain.
type rpcError struct {
	code   int
	reason string
	msg    string
}

// envelope is the JSON-RPC request object, as far as routing needs it.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      any             `json:"id"`
}

// validID is a2a-go's rule for request ids: a string, a number or null.
func validID(id any) bool {
	switch id.(type) {
	case nil, string, float64:
		return true
	}
	return false
}

// streamingMethods answer with an event stream, errors included.
var streamingMethods = map[string]bool{
	"SendStreamingMessage": true, "SubscribeToTask": true,
	"message/stream": true, "tasks/resubscribe": true,
}

// paramDecoders decode the params of each method the way a2a-go's JSON-RPC
// handlers do (a2asrv/jsonrpc.go, a2acompat/a2av0/jsonrpc_server.go), so a
// request whose params do not decode is answered here.
//
// a2a-go v2.3.1 maps every params decoding error that is not a
// json.UnmarshalTypeError to -32700 Parse error (handleUnmarshalError in
// both handlers): well-formed JSON with an unknown part kind, a missing
// params object or a 0.3 message that does not convert was answered "Parse
// error", which JSON-RPC 2.0 reserves for "Invalid JSON was received by the
// server". The body decoded, so these are -32602 Invalid params.
var paramDecoders = map[string]func(json.RawMessage) error{
	"SendMessage":                         decodeInto[a2a.SendMessageRequest],
	"SendStreamingMessage":                decodeInto[a2a.SendMessageRequest],
	"GetTask":                             decodeInto[a2a.GetTaskRequest],
	"ListTasks":                           decodeInto[a2a.ListTasksRequest],
	"CancelTask":                          decodeInto[a2a.CancelTaskRequest],
	"SubscribeToTask":                     decodeInto[a2a.SubscribeToTaskRequest],
	"GetTaskPushNotificationConfig":       decodeInto[a2a.GetTaskPushConfigRequest],
	"CreateTaskPushNotificationConfig":    decodeInto[a2a.PushConfig],
	"ListTaskPushNotificationConfigs":     decodeInto[a2a.ListTaskPushConfigRequest],
	"DeleteTaskPushNotificationConfig":    decodeInto[a2a.DeleteTaskPushConfigRequest],
	"GetExtendedAgentCard":                decodeInto[a2a.GetExtendedAgentCardRequest],
	"message/send":                        decodeLegacySend,
	"message/stream":                      decodeLegacySend,
	"tasks/get":                           decodeInto[legacy.TaskQueryParams],
	"tasks/cancel":                        decodeInto[legacy.TaskIDParams],
	"tasks/resubscribe":                   decodeInto[legacy.TaskIDParams],
	"tasks/pushNotificationConfig/set":    decodeInto[legacy.TaskPushConfig],
	"tasks/pushNotificationConfig/get":    decodeInto[legacy.GetTaskPushConfigParams],
	"tasks/pushNotificationConfig/list":   decodeInto[legacy.ListTaskPushConfigParams],
	"tasks/pushNotificationConfig/delete": decodeInto[legacy.DeleteTaskPushConfigParams],
}

func decodeInto[T any](raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("params are required")
	}
	var v T
	return json.Unmarshal(raw, &v)
}

func decodeLegacySend(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("params are required")
	}
	var p legacy.MessageSendParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	_, err := a2av0.ToV1SendMessageRequest(&p)
	return err
}

// checkParams answers nil when the params of a known method decode, else
// the Invalid params error to answer. Methods it does not know go on to
// a2a-go, which answers them.
func checkParams(method string, raw json.RawMessage) *rpcError {
	decode, ok := paramDecoders[method]
	if !ok {
		return nil
	}
	if err := decode(raw); err != nil {
		return &rpcError{code: codeInvalidParams, reason: "INVALID_PARAMS", msg: "invalid params: " + err.Error()}
	}
	return nil
}

// body is the JSON-RPC error response of e for the request id.
func (e *rpcError) body(id any) []byte {
	info := errordetails.NewErrorInfo(e.reason, a2a.ProtocolDomain,
		map[string]string{"timestamp": time.Now().UTC().Format(time.RFC3339)})
	b, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": e.code, "message": e.msg, "data": []*errordetails.Typed{info}},
	})
	if err != nil { // a string id and plain values always encode
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return b
}

// write answers e to the request id. A streaming method gets it as the one
// event of an event stream, as a2a-go answers its own errors on those
// methods, so a client that reads the stream finds it; others get a JSON
// body. JSON-RPC errors travel with 200 OK, as a2a-go's do.
func (e *rpcError) write(w http.ResponseWriter, method string, id any) {
	b := e.body(id)
	if streamingMethods[method] {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// pushProtoNames are the multi-word fields of the 1.0 push config methods'
// params, by their proto names and their JSON names.
var pushProtoNames = map[string]string{"task_id": "taskId", "page_size": "pageSize", "page_token": "pageToken"}

// withJSONNames gives the params of a 1.0 push config method their JSON
// field names where a client used the proto ones ("task_id" for
// "taskId"), as the A2A conformance suite's JSON-RPC client does. 1.0 §5.5
// says serializations "MUST use camelCase" and that this "follows the
// ProtoJSON specification", whose parsers "accept both the lowerCamelCase
// name (or the one specified by the json_name option) and the original
// proto field name" (protobuf.dev/programming-guides/json); a2a-go decodes
// with encoding/json, which knows only the first, and read such a request
// as one for task "". Only the top level of params is renamed: deeper keys
// may be a client's own (metadata). Other bodies pass unchanged.
func withJSONNames(body []byte) []byte {
	if !bytes.Contains(body, []byte("PushNotificationConfig")) || !bytes.Contains(body, []byte("_")) {
		return body // not decoded twice: most bodies are messages
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var method string
	if json.Unmarshal(req["method"], &method) != nil || !strings.HasSuffix(method, "TaskPushNotificationConfig") && method != "ListTaskPushNotificationConfigs" {
		return body
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req["params"], &params) != nil {
		return body
	}
	renamed := false
	for proto, name := range pushProtoNames {
		if v, ok := params[proto]; ok {
			if _, both := params[name]; !both {
				params[name] = v
			}
			delete(params, proto)
			renamed = true
		}
	}
	if !renamed {
		return body
	}
	var err error
	if req["params"], err = json.Marshal(params); err != nil {
		return body
	}
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}
