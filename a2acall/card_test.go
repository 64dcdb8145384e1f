package a2acall_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
)

// startHTTP serves h on loopback for the test and returns its URL.
func startHTTP(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveCard serves one agent card, as written, at the well-known path below
// any prefix, and returns the server's URL. The interfaces it names are
// never called: Agent reads the card and makes a client, no more.
func serveCard(t testing.TB, card string) string {
	t.Helper()
	return startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, a2acall.WellKnownCardPath) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(card))
	}))
}

func newMessenger(t *testing.T, opts a2acall.Options) *a2acall.Messenger {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger
	}
	m := a2acall.New(noop.NewTracerProvider(), nil, opts)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// TestAgentCardGenerations reads cards as agents of both generations write
// them, and picks the interface the Messenger speaks best: A2A 1.0 before
// 0.x, JSON-RPC before HTTP+JSON.
func TestAgentCardGenerations(t *testing.T) {
	cases := []struct {
		name, card, endpoint, version string
	}{
		{"1.0", `{"name":"a","supportedInterfaces":[{"url":"http://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "http://h/a", "1.0"},
		{"0.3", `{"name":"a","url":"http://h/a","protocolVersion":"0.3.0","preferredTransport":"JSONRPC"}`, "http://h/a", "0.3.0"},
		{"0.3 without preferredTransport", `{"name":"a","url":"http://h/a","protocolVersion":"0.2.6"}`, "http://h/a", "0.2.6"},
		{"1.0 and 0.3: 1.0 wins", `{"name":"a","supportedInterfaces":[{"url":"http://h/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://h/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},{"url":"http://h/new","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "http://h/new", "1.0"},
		{"HTTP+JSON only", `{"name":"a","supportedInterfaces":[{"url":"http://h/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}]}`, "http://h/rest", "1.0"},
		{"a newer major version is skipped", `{"name":"a","supportedInterfaces":[{"url":"http://h/v2","protocolBinding":"JSONRPC","protocolVersion":"2.0"},{"url":"http://h/v1","protocolBinding":"JSONRPC","protocolVersion":"v1.0"}]}`, "http://h/v1", "v1.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), serveCard(t, tc.card))
			if err != nil {
				t.Fatal(err)
			}
			if info.Name != "a" || info.Endpoint != tc.endpoint || info.Protocol != tc.version {
				t.Errorf("agent %+v", info)
			}
		})
	}
}

// TestAgentCardUnusable: a card that is not one, names no interface the
// Messenger speaks, or is too large, is an error naming the participant.
func TestAgentCardUnusable(t *testing.T) {
	for name, tc := range map[string]struct{ card, msg string }{
		"garbage":   {"<html>", "not an A2A agent card"},
		"gRPC only": {`{"name":"g","supportedInterfaces":[{"url":"h:1","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`, "no JSON-RPC or HTTP+JSON interface"},
		"too large": {`{"name":"` + strings.Repeat("x", 1<<20) + `"}`, "exceeds the limit"},
	} {
		t.Run(name, func(t *testing.T) {
			url := serveCard(t, tc.card)
			_, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), url)
			var ce *a2acall.CallError
			if !errors.As(err, &ce) || ce.URL != url || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v, want a CallError for %s saying %q", err, url, tc.msg)
			}
		})
	}
}

// TestAgentCardName: a card without a name is named by the participant's
// host and port.
func TestAgentCardName(t *testing.T) {
	url := serveCard(t, `{"name":" ","supportedInterfaces":[{"url":"http://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
	info, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), url)
	if err != nil || info.Name != strings.TrimPrefix(url, "http://") {
		t.Errorf("agent %+v, %v", info, err)
	}
}

// TestAgentEndpoint: the card's URL is where calls go unless it names no
// host to reach, or UseParticipantURL says otherwise.
func TestAgentEndpoint(t *testing.T) {
	for cardURL, want := range map[string]string{
		"http://10.1.2.3:9009/": "http://10.1.2.3:9009/",
		"http://0.0.0.0:9009/":  "<participant>",
		"http://[::]:9009":      "<participant>",
		"":                      "<participant>",
		"/role/rpc":             "<base>/role/rpc",
	} {
		base := serveCard(t, `{"name":"a","supportedInterfaces":[{"url":"`+cardURL+`","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
		participant := base + "/role"
		want = strings.NewReplacer("<participant>", participant, "<base>", base).Replace(want)
		info, err := newMessenger(t, a2acall.Options{}).Agent(t.Context(), participant)
		if err != nil || info.Endpoint != want || info.URL != participant {
			t.Errorf("card url %q: got %+v, %v; want endpoint %q", cardURL, info, err, want)
		}
		info, err = newMessenger(t, a2acall.Options{UseParticipantURL: true}).Agent(t.Context(), participant)
		if err != nil || info.Endpoint != participant {
			t.Errorf("card url %q with UseParticipantURL: got %+v, %v", cardURL, info, err)
		}
	}
}

// TestAgentParticipantURL: a participant URL is taken without a trailing
// slash, query or fragment, and without the card's own path should that
// have been given; a URL that is not absolute http(s) is refused.
func TestAgentParticipantURL(t *testing.T) {
	base := serveCard(t, `{"name":"a","supportedInterfaces":[{"url":"http://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`)
	m := newMessenger(t, a2acall.Options{})
	for in, want := range map[string]string{
		base + "/":      base,
		base + "/role/": base + "/role",
		" " + base + "/role/.well-known/agent-card.json": base + "/role",
		base + "/x?y=1#z": base + "/x",
	} {
		if info, err := m.Agent(t.Context(), in); err != nil || info.URL != want {
			t.Errorf("%q: got %+v, %v; want %q", in, info, err, want)
		}
	}
	for _, bad := range []string{"", "h:1", "ftp://h/", "http:///x", "::"} {
		_, err := m.Agent(t.Context(), bad)
		var ce *a2acall.CallError
		if !errors.As(err, &ce) || ce.URL != bad {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}
