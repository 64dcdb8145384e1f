// Package mcptest speaks MCP's streamable HTTP transport raw, byte for
// byte, as any client could: the tests that send the green agent's MCP
// endpoints what a careless or hostile participant would (params absent,
// null, {} or of the wrong shape; the shapes the MCP TypeScript and Python
// SDKs send; broken envelopes) use its Client to post them and Check to
// judge each answer, and the MCP endpoint's fuzz target takes Messages as
// its seeds.
//
// Tests only: mcpserve's and green's tests import it.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ProtocolVersion is the MCP version the Client asks for.
const ProtocolVersion = "2025-06-18"

// Client posts raw JSON-RPC bodies to one MCP endpoint, with its bearer
// token and, once it has one, its session id.
type Client struct {
	URL, Token string
	HTTP       *http.Client
	// Session is the Mcp-Session-Id the server gave at initialize, ""
	// before.
	Session string
}

// Answer is what the server said to one POST.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
	// Messages are the JSON-RPC messages of the body: the body itself
	// when it is JSON, each event's data when it is an event stream.
	Messages []json.RawMessage
}

// Post sends body and reads the whole answer.
func (c *Client) Post(ctx context.Context, body string) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, strings.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Session != "" {
		req.Header.Set("Mcp-Session-Id", c.Session)
		req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	}
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, fmt.Errorf("read the answer: %w", err)
	}
	a := Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}
	switch {
	case strings.HasPrefix(a.ContentType, "text/event-stream"):
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(d) != "" {
				a.Messages = append(a.Messages, json.RawMessage(strings.TrimSpace(d)))
			}
		}
	case strings.HasPrefix(a.ContentType, "application/json") && json.Valid(b):
		a.Messages = append(a.Messages, json.RawMessage(b))
	}
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" && c.Session == "" {
		c.Session = s
	}
	return a, nil
}

// Initialize opens a session as the MCP TypeScript SDK does (initialize,
// then notifications/initialized without params).
func (c *Client) Initialize(ctx context.Context) error {
	a, err := c.Post(ctx, `{"method":"initialize","params":{"protocolVersion":"`+ProtocolVersion+`","capabilities":{},"clientInfo":{"name":"mcptest","version":"1"}},"jsonrpc":"2.0","id":0}`)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK || c.Session == "" {
		return fmt.Errorf("initialize: %d %s", a.Status, a.Body)
	}
	a, err = c.Post(ctx, `{"method":"notifications/initialized","jsonrpc":"2.0"}`)
	if err != nil {
		return err
	}
	if a.Status != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized: %d %s", a.Status, a.Body)
	}
	return nil
}

// Tools lists the session's tools (tools/list without params, as the
// TypeScript SDK sends it).
func (c *Client) Tools(ctx context.Context) ([]string, error) {
	a, err := c.Post(ctx, `{"method":"tools/list","jsonrpc":"2.0","id":"list"}`)
	if err != nil {
		return nil, err
	}
	if len(a.Messages) != 1 {
		return nil, fmt.Errorf("tools/list: %d %s", a.Status, a.Body)
	}
	var r struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal(a.Messages[0], &r); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range r.Result.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

// Check judges the answer to body: an answer a client can act on, never
// a server failure. A request with an id gets 200 and exactly one
// response with that id and either a result or an error, or an HTTP
// refusal (4xx) of the whole message; a notification, or anything that is
// no request, gets 202 or a 4xx. Never 5xx, and never an internal error
// (-32603): that is what a panic in our code becomes (mcpserve's
// containPanics), so it is a bug here.
func Check(body string, a Answer) error {
	if a.Status >= 500 {
		return fmt.Errorf("HTTP %d: %s", a.Status, clip(a.Body))
	}
	for _, m := range a.Messages {
		var r struct {
			Error *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &r) == nil && r.Error != nil && r.Error.Code == -32603 {
			return fmt.Errorf("an internal error: %s", clip(m))
		}
	}
	id, isCall := requestID(body)
	switch {
	case a.Status >= 400:
		return nil // refused as a whole, by HTTP
	case !isCall:
		if a.Status != http.StatusAccepted && a.Status != http.StatusOK {
			return fmt.Errorf("HTTP %d to a message with no id: %s", a.Status, clip(a.Body))
		}
		return nil
	case a.Status != http.StatusOK:
		return fmt.Errorf("HTTP %d to a request: %s", a.Status, clip(a.Body))
	}
	var answers int
	for _, m := range a.Messages {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(m, &r); err != nil {
			return fmt.Errorf("a message that is no JSON-RPC object: %s", clip(m))
		}
		if r.Result == nil && r.Error == nil {
			continue // a notification or request of the server's on the stream
		}
		if (r.Result == nil) == (r.Error == nil) {
			return fmt.Errorf("a response with both a result and an error: %s", clip(m))
		}
		if !sameJSON(r.ID, id) {
			return fmt.Errorf("a response with id %s to the request with id %s", r.ID, id)
		}
		answers++
	}
	if answers != 1 {
		return fmt.Errorf("%d responses to one request: %s", answers, clip(a.Body))
	}
	return nil
}

// requestID is the id of a JSON-RPC request body, and whether it is a
// request (an object with a method and a string or number id).
func requestID(body string) (json.RawMessage, bool) {
	var m struct {
		Method *string          `json:"method"`
		ID     *json.RawMessage `json:"id"`
	}
	if json.Unmarshal([]byte(body), &m) != nil || m.Method == nil || m.ID == nil {
		return nil, false
	}
	var v any
	if json.Unmarshal(*m.ID, &v) != nil {
		return nil, false
	}
	switch v.(type) {
	case string, float64:
		return *m.ID, true
	}
	return nil, false
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
