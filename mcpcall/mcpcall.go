// Package mcpcall is the participant's side of the green agent's tool
// delivery over MCP (docs/mcp.md): the data part that hands a participant an
// MCP endpoint in an A2A message, and a client that connects to it with the
// task's token. It imports nothing of ours but otelmap, so a participant
// written in Go can use it without the assessor; the base purple agent does.
package mcpcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is the data part's kind.
const Kind = "coordbench.mcp/v1"

// TransportStreamableHTTP is the only transport the green agent serves.
const TransportStreamableHTTP = "streamable-http"

// Endpoint is one task's MCP server as a participant receives it.
type Endpoint struct {
	// URL is the server's streamable HTTP endpoint.
	URL string
	// Token is the task's bearer token: every request must carry it as
	// "Authorization: Bearer <token>"; it is good for this task only.
	Token string
	// Tools names the tools the server offers (for a participant that
	// wants to decide before connecting; tools/list is authoritative).
	Tools []string
}

// Data is the endpoint as the A2A message's data part.
func (e Endpoint) Data() map[string]any {
	tools := make([]any, len(e.Tools))
	for i, t := range e.Tools {
		tools[i] = t
	}
	return map[string]any{
		"kind":      Kind,
		"url":       e.URL,
		"token":     e.Token,
		"transport": TransportStreamableHTTP,
		"auth":      "bearer",
		"tools":     tools,
	}
}

// FindEndpoint reads the endpoint from a message's data parts; ok is false
// when none of them is of Kind or the one that is lacks a URL or a token.
func FindEndpoint(data []map[string]any) (Endpoint, bool) {
	for _, d := range data {
		if k, _ := d["kind"].(string); k != Kind {
			continue
		}
		var e Endpoint
		e.URL, _ = d["url"].(string)
		e.Token, _ = d["token"].(string)
		if list, ok := d["tools"].([]any); ok {
			for _, t := range list {
				if s, ok := t.(string); ok {
					e.Tools = append(e.Tools, s)
				}
			}
		}
		if list, ok := d["tools"].([]string); ok {
			e.Tools = append(e.Tools, list...)
		}
		if e.URL == "" || e.Token == "" {
			return Endpoint{}, false
		}
		return e, true
	}
	return Endpoint{}, false
}

// Options configure Connect.
type Options struct {
	// Name and Version name the client in the MCP handshake.
	Name, Version string
	// HTTPClient makes the requests (default a client with no timeout of
	// its own: the calls' contexts bound them, and a tool call may take as
	// long as a sandboxed run).
	HTTPClient *http.Client
	// Middleware is added to the client's sending middleware (spans).
	Middleware []mcp.Middleware
}

// Connect opens an MCP session with the endpoint, the token on every
// request. The caller closes the session.
func Connect(ctx context.Context, e Endpoint, opts Options) (*mcp.ClientSession, error) {
	if e.URL == "" || e.Token == "" {
		return nil, errors.New("mcpcall: the endpoint has no URL or no token")
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	hc := *base
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = bearer{token: e.Token, next: next}
	name := opts.Name
	if name == "" {
		name = "coordbench-mcpcall"
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: opts.Version}, nil)
	if len(opts.Middleware) > 0 {
		c.AddSendingMiddleware(opts.Middleware...)
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL, HTTPClient: &hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpcall: connect to %s: %w", e.URL, err)
	}
	return cs, nil
}

// bearer adds the task's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// ToolText is the text of a tool result's content, joined; a result marked
// as an error becomes an error with that text.
func ToolText(res *mcp.CallToolResult) (string, error) {
	if res == nil {
		return "", errors.New("mcpcall: no result")
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		return text, fmt.Errorf("tool error: %s", text)
	}
	return text, nil
}
