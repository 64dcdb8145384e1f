package a2acall_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
)

func TestParseAllowList(t *testing.T) {
	for spec, want := range map[string]string{
		"":                                "",
		" , ":                             "",
		"purple-agent":                    "purple-agent",
		" 10.0.0.0/8 , *.Example.com,::1": "10.0.0.0/8,*.Example.com,::1",
		"[::1],green_1,127.0.0.1":         "[::1],green_1,127.0.0.1",
	} {
		a, err := a2acall.ParseAllowList(spec)
		if err != nil || a.String() != want {
			t.Errorf("%q: %q, %v; want %q", spec, a.String(), err, want)
		}
		if (a == nil) != (want == "") {
			t.Errorf("%q: nil is %v", spec, a == nil)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "http://host/", "host:9009", "*.", "a..b", "bad host", "*"} {
		if a, err := a2acall.ParseAllowList(bad); err == nil {
			t.Errorf("%q accepted: %v", bad, a)
		}
	}
}

func TestAllowListCheckURL(t *testing.T) {
	names, _ := a2acall.ParseAllowList("purple, *.agents.example")
	ranges, _ := a2acall.ParseAllowList("10.0.0.0/8, fd00::/8")
	for _, tc := range []struct {
		list *a2acall.AllowList
		url  string
		ok   bool
	}{
		{nil, "http://anything:1/", true},
		{names, "http://purple:9009/", true},
		{names, "http://PURPLE.:9009/", true},
		{names, "http://x.agents.example/", true},
		{names, "http://agents.example/", false},
		{names, "http://purple.evil/", false},
		{names, "http://127.0.0.1:9009/", false},
		{ranges, "http://10.1.2.3:9009/", true},
		{ranges, "http://[fd00::1]:9009/", true},
		{ranges, "http://[::ffff:10.0.0.1]:9009/", true},
		{ranges, "http://11.0.0.1/", false},
		{ranges, "http://127.0.0.1/", false},
		// A name is left to the connection, where its addresses are checked.
		{ranges, "http://purple:9009/", true},
	} {
		err := tc.list.CheckURL(tc.url)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, a2acall.ErrNotAllowed)) {
			t.Errorf("%v %s: %v, want ok=%v", tc.list, tc.url, err, tc.ok)
		}
	}
}

// countingServer counts the requests it receives.
func countingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	url := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.NotFound(w, nil)
	}))
	return url, &n
}

// TestAllowListRefusesAlike: a disallowed target is refused before any
// connection is made, so an open port and a closed one give the same
// error, and the open one sees no request; a host name is refused on the
// address it resolves to.
func TestAllowListRefusesAlike(t *testing.T) {
	allow, err := a2acall.ParseAllowList("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	m := newMessenger(t, a2acall.Options{Allow: allow})
	open, hits := countingServer(t)
	closed := a2atest.RefusedURL(t)
	for _, rewrite := range []func(string) string{
		func(u string) string { return u },
		// By name: allowed by the URL check (the list holds ranges), refused
		// on connecting, when localhost resolves to loopback.
		func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) },
	} {
		texts := map[string]string{}
		for what, u := range map[string]string{"open": rewrite(open), "closed": rewrite(closed)} {
			_, err := m.Agent(t.Context(), u)
			if !errors.Is(err, a2acall.ErrNotAllowed) {
				t.Fatalf("%s port %s: %v, want ErrNotAllowed", what, u, err)
			}
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
			text := strings.ReplaceAll(err.Error(), port, "PORT")
			if strings.Contains(text, "refused") {
				t.Errorf("%s port: the error tells the port is closed: %s", what, text)
			}
			texts[what] = text
		}
		if texts["open"] != texts["closed"] {
			t.Errorf("an open and a closed port are told apart:\n open:   %s\n closed: %s", texts["open"], texts["closed"])
		}
		c := newCaller(t, a2acall.Options{Allow: allow})
		_, traceID, err := c.send(t, a2acall.SendRequest{URL: rewrite(open), Text: "x"})
		var ce *a2acall.CallError
		if !errors.As(err, &ce) || !errors.Is(err, a2acall.ErrNotAllowed) {
			t.Errorf("Send %s: %v, want a *CallError wrapping ErrNotAllowed", rewrite(open), err)
		}
		// The refused call's span says why, apart from a failed connection.
		var errTypes []string
		for _, sp := range c.store.Spans(traceID) {
			if v, ok := sp.Attr(otelmap.AttrErrorType); ok {
				errTypes = append(errTypes, sp.Name+"="+v.AsString())
			}
		}
		if len(errTypes) != 1 || !strings.HasSuffix(errTypes[0], "=not_allowed") {
			t.Errorf("Send %s: error.type on the spans %v, want one not_allowed", rewrite(open), errTypes)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the disallowed server received %d requests", hits.Load())
	}
}

// TestAllowListAllows: a participant inside the list is called as before,
// by address range or by name.
func TestAllowListAllows(t *testing.T) {
	agent := a2atest.Start(t, a2atest.Options{Name: "solver", Path: "/solver"})
	byName := strings.Replace(agent.URL, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		spec, url      string
		useParticipant bool
	}{
		{"127.0.0.0/8", agent.URL, false},
		{"127.0.0.1", agent.URL, false},
		// The card names 127.0.0.1, which the name alone does not cover.
		{"localhost", byName, true},
		{"localhost, 127.0.0.1", byName, false},
	} {
		allow, err := a2acall.ParseAllowList(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		reply, _, err := newCaller(t, a2acall.Options{Allow: allow, UseParticipantURL: tc.useParticipant}).send(t, a2acall.SendRequest{URL: tc.url, Text: "hello"})
		if err != nil || !strings.Contains(reply.Text, "hello") {
			t.Errorf("allow %q, %s: %+v, %v", tc.spec, tc.url, reply, err)
		}
	}
}

// TestAllowListCardEndpoint: the URL inside a participant's card is held
// to the list too.
func TestAllowListCardEndpoint(t *testing.T) {
	allow, _ := a2acall.ParseAllowList("127.0.0.1")
	base := serveCard(t, `{"name":"a","supportedInterfaces":[{"url":"http://192.0.2.1:9009/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
	_, err := newMessenger(t, a2acall.Options{Allow: allow}).Agent(t.Context(), base)
	if !errors.Is(err, a2acall.ErrNotAllowed) || !strings.Contains(err.Error(), "names the endpoint http://192.0.2.1:9009/") {
		t.Errorf("card naming a disallowed endpoint: %v", err)
	}
	// Without a list the same card is taken as it is.
	if info, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), base); err != nil || info.Endpoint != "http://192.0.2.1:9009/" {
		t.Errorf("without a list: %+v, %v", info, err)
	}
}

// TestAllowListRedirect: a card fetch redirected outside the list stops at
// the redirect; the target sees nothing.
func TestAllowListRedirect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var hits atomic.Int64
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"elsewhere","supportedInterfaces":[{"url":"http://127.0.0.2/","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`))
	}))
	target.Listener = ln
	target.Start()
	t.Cleanup(target.Close)
	redirector := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))

	allow, _ := a2acall.ParseAllowList("127.0.0.1")
	_, err = newMessenger(t, a2acall.Options{Allow: allow}).Agent(t.Context(), redirector)
	if !errors.Is(err, a2acall.ErrNotAllowed) || !strings.Contains(err.Error(), "redirect to") {
		t.Errorf("redirected card fetch: %v", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the redirect target received %d requests", hits.Load())
	}
	// Without a list the redirect is followed, as before.
	if info, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), redirector); err != nil || info.Name != "elsewhere" {
		t.Errorf("without a list: %+v, %v", info, err)
	}
}

// TestRedirectBound: with or without a list, a card fetch stops at the
// 5th redirect it is answered with (Go's default is the 10th), counted as
// net/http counts them.
func TestRedirectBound(t *testing.T) {
	var hits atomic.Int64
	var loop string
	loop = startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, loop+r.URL.Path, http.StatusFound)
	}))
	_, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), loop)
	if err == nil || !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Errorf("redirect loop: %v", err)
	}
	if n := hits.Load(); n != 5 {
		t.Errorf("%d requests, want 5 (each answered with a redirect)", n)
	}
}
