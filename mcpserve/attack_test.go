package mcpserve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/internal/mcptest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/mcpcall"
	"github.com/coordbench/coordbench/mcpserve"
)

// A participant that misbehaves through MCP costs only its own task
// (docs/mcp.md#what-a-participant-cannot-do). Each attack runs against
// one task's endpoint while another task's endpoint on the same host is
// used honestly before and after; the attacked endpoint must answer as
// the protocol says, the other must not notice, and when the tasks end
// nothing of theirs is left running.

// slowTool is a tool that works until its call's context ends or a
// minute passes, reporting when it started and whether it was canceled.
type slowTool struct {
	started  chan struct{}
	canceled chan struct{}
}

func newSlowTool() *slowTool {
	return &slowTool{started: make(chan struct{}, 100), canceled: make(chan struct{}, 100)}
}

func (s *slowTool) add(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "works for a minute"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, echoOut, error) {
		s.started <- struct{}{}
		select {
		case <-ctx.Done():
			s.canceled <- struct{}{}
			return nil, echoOut{}, ctx.Err()
		case <-time.After(time.Minute):
			return nil, echoOut{Echo: "done"}, nil
		}
	})
}

// victim is the other task: an honest session on its own endpoint.
type victim struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func newVictim(t *testing.T, h *mcpserve.Host) *victim {
	t.Helper()
	ep, closeEp, err := h.Open(t.Context(), echoServer(), []string{"echo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEp)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	cs, err := mcpcall.Connect(t.Context(), ep, mcpcall.Options{HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	v := &victim{t: t, cs: cs}
	v.works("before the attack")
	return v
}

// works checks the victim's tool answers.
func (v *victim) works(when string) {
	v.t.Helper()
	res, err := v.cs.CallTool(v.t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "victim"}})
	if txt, terr := mcpcall.ToolText(res); err != nil || terr != nil || !strings.Contains(txt, "victim") {
		v.t.Errorf("the other task %s: %q %v %v", when, txt, err, terr)
	}
}

// attacked opens an endpoint with the echo, slow and fuzz tools.
func attacked(t *testing.T, h *mcpserve.Host) (mcpcall.Endpoint, func(), *slowTool) {
	t.Helper()
	srv := fuzzServer()
	slow := newSlowTool()
	slow.add(srv)
	ep, closeEp, err := h.Open(t.Context(), srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEp)
	return ep, closeEp, slow
}

// send posts body with c, failing the test if it cannot.
func send(t *testing.T, c *mcptest.Client, body string) mcptest.Answer {
	t.Helper()
	a, err := c.Post(t.Context(), body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAttacksThroughMCP(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() { testenv.CheckNoGoroutineLeak(t, before) })
	h, logs, _ := loggedHost(t)
	v := newVictim(t, h)
	ctx := t.Context()

	t.Run("a session that never sends initialized", func(t *testing.T) {
		ep, _, _ := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		send(t, c, `{"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}},"jsonrpc":"2.0","id":0}`)
		for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"early"}}}`} {
			if err := mcptest.Check(body, send(t, c, body)); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("thousands of sessions", func(t *testing.T) {
		ep, closeEp, _ := attacked(t, h)
		var opened, refused int
		var c0 *mcptest.Client
		for range 2 * mcpserve.DefaultMaxSessionsPerTask {
			c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
			a := send(t, c, `{"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}},"jsonrpc":"2.0","id":0}`)
			switch a.Status {
			case http.StatusOK:
				opened++
				if c0 == nil {
					c0 = c
				}
			case http.StatusTooManyRequests:
				refused++
				if !strings.Contains(string(a.Body), "sessions open, the most it allows") {
					t.Errorf("the refusal does not say why: %s", a.Body)
				}
			default:
				t.Fatalf("initialize: %d %s", a.Status, a.Body)
			}
		}
		if opened != mcpserve.DefaultMaxSessionsPerTask || refused != mcpserve.DefaultMaxSessionsPerTask {
			t.Errorf("%d sessions opened, %d refused; want %d each", opened, refused, mcpserve.DefaultMaxSessionsPerTask)
		}
		v.works("beside the flood of sessions")
		// A session closed makes room for one more.
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, ep.URL, nil)
		req.Header.Set("Authorization", "Bearer "+ep.Token)
		req.Header.Set("Mcp-Session-Id", c0.Session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Errorf("a session after one was closed: %v", err)
		}
		if !strings.Contains(logs.String(), "max_sessions_per_task=64") {
			t.Error("the refusal was not logged")
		}
		closeEp()
	})

	t.Run("a huge body, a batch, a notification flood", func(t *testing.T) {
		ep, _, _ := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		if a := send(t, c, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`+strings.Repeat("a", mcpserve.DefaultMaxBodyBytes)+`"}}`); a.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("a body past the limit: %d %s", a.Status, a.Body)
		}
		batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
		if a := send(t, c, batch); a.Status != http.StatusBadRequest {
			t.Errorf("a batch in protocol 2025-06-18: %d %s", a.Status, a.Body)
		}
		g0 := runtime.NumGoroutine()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 250 {
					body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":%d}}`, w, i)
					if i%2 == 1 {
						body = fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i)
					}
					a, err := c.Post(ctx, body)
					if err != nil || a.Status != http.StatusAccepted {
						t.Errorf("notification %d: %d %v", i, a.Status, err)
						return
					}
				}
			})
		}
		wg.Wait()
		v.works("after 2000 notifications")
		if tools, err := c.Tools(ctx); err != nil || len(tools) != 5 {
			t.Errorf("the session after the flood: %v %v", tools, err)
		}
		if g := runtime.NumGoroutine(); g > g0+20 {
			t.Errorf("%d goroutines after the flood, %d before", g, g0)
		}
	})

	t.Run("another task's session id", func(t *testing.T) {
		a, _, _ := attacked(t, h)
		b, _, _ := attacked(t, h)
		ca := &mcptest.Client{URL: a.URL, Token: a.Token}
		if err := ca.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		ping := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"stolen"}}}`
		// A's session at B's endpoint, with B's token, then with A's.
		for _, c := range []*mcptest.Client{{URL: b.URL, Token: b.Token, Session: ca.Session}, {URL: b.URL, Token: a.Token, Session: ca.Session}} {
			ans := send(t, c, ping)
			if ans.Status != http.StatusNotFound && ans.Status != http.StatusUnauthorized {
				t.Errorf("A's session at B's endpoint (token of %s): %d %s", map[bool]string{true: "A", false: "B"}[c.Token == a.Token], ans.Status, ans.Body)
			}
		}
	})

	t.Run("closing mid-call", func(t *testing.T) {
		// A client that cancels its call (the Go SDK sends
		// notifications/cancelled) stops the tool's work.
		ep, closeEp, slow := attacked(t, h)
		cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
			done <- err
		}()
		<-slow.started
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the canceled call: %v", err)
		}
		select {
		case <-slow.canceled:
		case <-time.After(time.Minute):
			t.Error("the tool went on working for a call its client canceled")
		}
		// A client that drops the connection without a word: by the MCP
		// specification that is no cancellation, so the tool works on,
		// but no longer than its task.
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		dctx, drop := context.WithCancel(ctx)
		go func() {
			_, _ = c.Post(dctx, `{"jsonrpc":"2.0","id":"left","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		}()
		<-slow.started
		drop()
		v.works("after a client left mid-call")
		closeEp()
		select {
		case <-slow.canceled:
		case <-time.After(time.Minute):
			t.Error("the tool of a client that left outlived its task")
		}
	})

	t.Run("a call racing the task's end", func(t *testing.T) {
		ep, closeEp, slow := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		answered := make(chan mcptest.Answer, 1)
		go func() {
			a, _ := c.Post(ctx, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			answered <- a
		}()
		<-slow.started
		closeEp() // the task ends while its tool works
		select {
		case <-slow.canceled:
		case <-time.After(time.Minute):
			t.Error("the tool outlived its task")
		}
		select {
		case <-answered:
		case <-time.After(time.Minute):
			t.Error("the call in flight was never answered or cut")
		}
		if a := send(t, c, `{"jsonrpc":"2.0","id":10,"method":"ping"}`); a.Status != http.StatusNotFound {
			t.Errorf("after the task's end: %d", a.Status)
		}
		v.works("after another task ended mid-call")
	})

	t.Run("event streams left open", func(t *testing.T) {
		ep, closeEp, _ := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 10 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL, nil)
			req.Header.Set("Authorization", "Bearer "+ep.Token)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", c.Session)
			req.Header.Set("Mcp-Protocol-Version", mcptest.ProtocolVersion)
			wg.Go(func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body) // until the server ends it
					resp.Body.Close()
				}
			})
		}
		v.works("beside open event streams")
		closeEp()
		ended := make(chan struct{})
		go func() { wg.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(time.Minute):
			t.Error("event streams outlived their task")
		}
	})

	t.Run("headers nobody expects", func(t *testing.T) {
		ep, _, _ := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		for name, hdr := range map[string][2]string{
			"a huge session id":          {"Mcp-Session-Id", strings.Repeat("s", 60000)},
			"a session id of unicode":    {"Mcp-Session-Id", "ßéßßïøñ"},
			"a protocol version unknown": {"Mcp-Protocol-Version", "1999-01-01"},
			"a protocol version too new": {"Mcp-Protocol-Version", "2026-07-28"},
			"lowercase bearer":           {"Authorization", "bearer " + ep.Token},
			"basic":                      {"Authorization", "Basic " + ep.Token},
		} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+ep.Token)
			req.Header.Set("Mcp-Session-Id", c.Session)
			req.Header.Set("Mcp-Protocol-Version", mcptest.ProtocolVersion)
			req.Header.Set(hdr[0], hdr[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			resp.Body.Close()
			switch {
			case resp.StatusCode >= 500:
				t.Errorf("%s: %d", name, resp.StatusCode)
			case name == "lowercase bearer" && resp.StatusCode != http.StatusOK:
				t.Errorf("%s (RFC 9110 §11.1: the scheme is case-insensitive): %d", name, resp.StatusCode)
			case name == "basic" && resp.StatusCode != http.StatusUnauthorized:
				t.Errorf("%s: %d", name, resp.StatusCode)
			}
		}
	})

	t.Run("a hundred calls at once on one session", func(t *testing.T) {
		ep, _, _ := attacked(t, h)
		cs, err := mcpcall.Connect(ctx, ep, mcpcall.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprint("call ", i)}})
				if txt, terr := mcpcall.ToolText(res); err != nil || terr != nil || !strings.Contains(txt, fmt.Sprint("call ", i)) {
					t.Errorf("call %d: %q %v %v", i, txt, err, terr)
				}
			})
		}
		v.works("beside a hundred concurrent calls")
		wg.Wait()
	})

	t.Run("cancel a call in flight, initialize twice, reuse a closed session", func(t *testing.T) {
		ep, _, slow := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		answered := make(chan mcptest.Answer, 1)
		go func() {
			a, _ := c.Post(ctx, `{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			answered <- a
		}()
		<-slow.started
		if a := send(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"changed my mind"}}`); a.Status != http.StatusAccepted {
			t.Errorf("cancel: %d %s", a.Status, a.Body)
		}
		select {
		case <-slow.canceled:
		case <-time.After(time.Minute):
			t.Error("the canceled call went on")
		}
		select {
		case <-answered:
		case <-time.After(time.Minute):
			t.Error("the canceled call's request was never ended")
		}
		again := `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		if err := mcptest.Check(again, send(t, c, again)); err != nil {
			t.Errorf("initialize twice: %v", err)
		}
		if tools, err := c.Tools(ctx); err != nil || len(tools) != 5 {
			t.Errorf("the session after a cancel and a second initialize: %v %v", tools, err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, ep.URL, nil)
		req.Header.Set("Authorization", "Bearer "+ep.Token)
		req.Header.Set("Mcp-Session-Id", c.Session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if a := send(t, c, `{"jsonrpc":"2.0","id":4,"method":"ping"}`); a.Status != http.StatusNotFound {
			t.Errorf("a closed session reused: %d %s", a.Status, a.Body)
		}
	})

	t.Run("arguments of megabytes", func(t *testing.T) {
		ep, _, _ := attacked(t, h)
		c := &mcptest.Client{URL: ep.URL, Token: ep.Token}
		if err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", mcpserve.DefaultMaxBodyBytes/2) + `"}}}`
		if err := mcptest.Check(body, send(t, c, body)); err != nil {
			t.Errorf("a 2 MiB call: %v", err)
		}
	})

	v.works("after every attack")
	if strings.Contains(logs.String(), "panicked") {
		t.Errorf("a panic was recovered:\n%s", logs.String())
	}
}
