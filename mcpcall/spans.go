package mcpcall

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The OpenTelemetry MCP semantic conventions (status Development;
// https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/, in
// open-telemetry/semantic-conventions-genai docs/gen-ai/mcp.md v0.1.0):
// a CLIENT span on the caller and a SERVER span on the callee for each
// request, named "{mcp.method.name} {target}" where the target is the tool
// name of a tools/call, with these attributes; the trace context travels in
// the request's params._meta (keys traceparent, tracestate), since HTTP
// headers cover the HTTP request, not each JSON-RPC message.
const (
	AttrMethodName      = "mcp.method.name"
	AttrSessionID       = "mcp.session.id"
	AttrProtocolVersion = "mcp.protocol.version"
	AttrRequestID       = "jsonrpc.request.id"
	AttrToolName        = "gen_ai.tool.name"
	AttrOperationName   = "gen_ai.operation.name"
	AttrErrorType       = "error.type"
	AttrNetworkTrans    = "network.transport"
	AttrNetworkProto    = "network.protocol.name"
	AttrServerAddress   = "server.address"
	AttrServerPort      = "server.port"
	// OperationExecuteTool is gen_ai.operation.name of a tools/call.
	OperationExecuteTool = "execute_tool"
	// ErrorTypeTool is error.type of a tool result marked isError.
	ErrorTypeTool = "tool_error"
	// MethodToolsCall is the method of a tool call.
	MethodToolsCall = "tools/call"
)

// instrumentationName names the tracer of the client spans.
const instrumentationName = "github.com/coordbench/coordbench/mcpcall"

// SpanName is the conventions' span name: "{method} {tool}" for a tool
// call, else the method.
func SpanName(method string, p mcp.Params) string {
	if t := ToolName(p); t != "" {
		return method + " " + t
	}
	return method
}

// ToolName is the tool a request's params name, or "".
func ToolName(p mcp.Params) string {
	switch v := p.(type) {
	case *mcp.CallToolParams:
		if v != nil {
			return v.Name
		}
	case *mcp.CallToolParamsRaw:
		if v != nil {
			return v.Name
		}
	}
	return ""
}

// MethodAttributes are the attributes every MCP span of a request carries.
func MethodAttributes(method string, p mcp.Params) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(AttrMethodName, method),
		attribute.String(AttrNetworkTrans, "tcp"),
		attribute.String(AttrNetworkProto, "http"),
	}
	if t := ToolName(p); t != "" {
		attrs = append(attrs, attribute.String(AttrToolName, t), attribute.String(AttrOperationName, OperationExecuteTool))
	}
	return attrs
}

// EndSpan records a request's end on its span: a JSON-RPC error or a tool
// result marked isError is an error (error.type, status Error).
func EndSpan(span trace.Span, res mcp.Result, err error) {
	switch {
	case err != nil:
		span.SetAttributes(attribute.String(AttrErrorType, errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			span.SetAttributes(attribute.String(AttrErrorType, ErrorTypeTool))
			span.SetStatus(codes.Error, "the tool reported an error")
		}
	}
	span.End()
}

// errorType is the JSON-RPC error code when there is one (the conventions'
// rpc.response.status_code is that code too), else the Go type.
func errorType(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return strconv.FormatInt(we.Code, 10)
	}
	return fmt.Sprintf("%T", err)
}

// metaCarrier reads and writes trace context in params._meta.
type metaCarrier map[string]any

func (m metaCarrier) Get(k string) string { s, _ := m[k].(string); return s }
func (m metaCarrier) Set(k, v string)     { m[k] = v }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// traceContext is the W3C propagator the conventions name.
var traceContext = propagation.TraceContext{}

// Absent reports whether a request carries no params: a nil interface, or
// the typed nil pointer the SDK hands middleware when a message has no
// "params" member (the MCP TypeScript and Python SDKs send
// notifications/initialized, tools/list and ping that way), which p == nil
// does not catch.
func Absent(p mcp.Params) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Inject writes ctx's trace context into the params' _meta.
func Inject(ctx context.Context, p mcp.Params) {
	if Absent(p) {
		return
	}
	meta := p.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	traceContext.Inject(ctx, metaCarrier(meta))
	p.SetMeta(meta)
}

// Extract reads the trace context a request carries in its _meta into ctx.
func Extract(ctx context.Context, p mcp.Params) context.Context {
	if Absent(p) {
		return ctx
	}
	meta := p.GetMeta()
	if meta == nil {
		return ctx
	}
	return traceContext.Extract(ctx, metaCarrier(meta))
}

// ClientSpans is the sending middleware that makes the client span of each
// request (kind CLIENT) and propagates its context in params._meta.
// endpoint gives server.address and server.port.
func ClientSpans(tp trace.TracerProvider, endpoint string) mcp.Middleware {
	tracer := tp.Tracer(instrumentationName)
	var host, port string
	if u, err := url.Parse(endpoint); err == nil {
		host, port = u.Hostname(), u.Port()
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := req.GetParams()
			attrs := MethodAttributes(method, p)
			if host != "" {
				attrs = append(attrs, attribute.String(AttrServerAddress, host))
			}
			if n, err := strconv.Atoi(port); err == nil {
				attrs = append(attrs, attribute.Int(AttrServerPort, n))
			}
			if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
				if id := cs.ID(); id != "" {
					attrs = append(attrs, attribute.String(AttrSessionID, id))
				}
				if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
					attrs = append(attrs, attribute.String(AttrProtocolVersion, ir.ProtocolVersion))
				}
			}
			ctx, span := tracer.Start(ctx, SpanName(method, p), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			Inject(ctx, p)
			res, err := next(ctx, method, req)
			EndSpan(span, res, err)
			return res, err
		}
	}
}
