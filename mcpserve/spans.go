package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/mcpcall"
)

const instrumentationName = "github.com/coordbench/coordbench/mcpserve"

// requestIDHeader carries the JSON-RPC id of a POSTed request from the HTTP
// layer to the span middleware (the SDK keeps the id to itself), and
// hostHeader the request's host (server.address and server.port, which
// name the tool server in the graph). A client's own headers of those
// names are dropped first.
const (
	requestIDHeader = "X-Coordbench-Jsonrpc-Request-Id"
	hostHeader      = "X-Coordbench-Server-Host"
)

// withRequestInfo reads the JSON-RPC id of a POSTed message (a body within
// MaxBodyBytes, already bounded) for the server span.
func (h *Host) withRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestIDHeader)
		r.Header.Set(hostHeader, r.Host)
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "request body: "+err.Error(), http.StatusRequestEntityTooLarge)
				return
			}
			if reason := unanswerableID(body); reason != "" { // contain.go
				writeInvalidRequest(w, reason)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &msg) == nil && len(msg.ID) > 0 && string(msg.ID) != "null" {
				id := string(msg.ID)
				var s string
				if json.Unmarshal(msg.ID, &s) == nil {
					id = s
				}
				r.Header.Set(requestIDHeader, id)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// serverSpans is the receiving middleware that makes the server span of
// each request (kind SERVER) to the endpoint of the task whose span is
// task, in that task's trace (serverParent, parent.go).
func (h *Host) serverSpans(task trace.SpanContext) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			p := req.GetParams()
			attrs := mcpcall.MethodAttributes(method, p)
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				if id := ss.ID(); id != "" {
					attrs = append(attrs, attribute.String(mcpcall.AttrSessionID, id))
				}
				if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
					attrs = append(attrs, attribute.String(mcpcall.AttrProtocolVersion, ip.ProtocolVersion))
				}
			}
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				if id := extra.Header.Get(requestIDHeader); id != "" {
					attrs = append(attrs, attribute.String(mcpcall.AttrRequestID, id))
				}
				if host, port, err := net.SplitHostPort(extra.Header.Get(hostHeader)); err == nil {
					attrs = append(attrs, attribute.String(mcpcall.AttrServerAddress, host))
					if n, err := strconv.Atoi(port); err == nil {
						attrs = append(attrs, attribute.Int(mcpcall.AttrServerPort, n))
					}
				}
			}
			parent, how := serverParent(ctx, task, h.opts.OwnSpan, p)
			attrs = append(attrs, AttrTraceContext.String(how))
			ctx, span := h.tracer.Start(parent, mcpcall.SpanName(method, p), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			ended := false
			defer func() {
				if !ended { // next panicked: containPanics answers errInternal
					mcpcall.EndSpan(span, nil, errInternal)
				}
			}()
			res, err := next(ctx, method, req)
			ended = true
			mcpcall.EndSpan(span, res, err)
			return res, err
		}
	}
}
