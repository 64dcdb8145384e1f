package a2acall

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestParseAgentCard reads cards as agents of both generations write them.
func TestParseAgentCard(t *testing.T) {
	cases := []struct {
		name, card, url, version string
		binding                  a2a.TransportProtocol
	}{
		{"1.0", `{"name":"a","supportedInterfaces":[{"url":"http://h/a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "http://h/a", "1.0", a2a.TransportProtocolJSONRPC},
		{"0.3", `{"name":"a","url":"http://h/a","protocolVersion":"0.3.0","preferredTransport":"JSONRPC"}`, "http://h/a", "0.3.0", a2a.TransportProtocolJSONRPC},
		{"0.3 without preferredTransport", `{"name":"a","url":"http://h/a","protocolVersion":"0.2.6"}`, "http://h/a", "0.2.6", a2a.TransportProtocolJSONRPC},
		{"1.0 and 0.3: 1.0 wins", `{"name":"a","supportedInterfaces":[{"url":"http://h/old","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://h/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},{"url":"http://h/new","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, "http://h/new", "1.0", a2a.TransportProtocolJSONRPC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			card, err := parseAgentCard([]byte(tc.card))
			if err != nil {
				t.Fatal(err)
			}
			i := selectInterface(card.SupportedInterfaces)
			if i == nil || i.URL != tc.url || string(i.ProtocolVersion) != tc.version || i.ProtocolBinding != tc.binding {
				t.Errorf("interface %+v", i)
			}
		})
	}
	if _, err := parseAgentCard([]byte("<html>")); err == nil {
		t.Error("garbage parsed as a card")
	}
	card, err := parseAgentCard([]byte(`{"name":"g","supportedInterfaces":[{"url":"h:1","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`))
	if err != nil || selectInterface(card.SupportedInterfaces) != nil {
		t.Errorf("a gRPC-only card has no usable interface: %v", err)
	}
}

// TestEndpointURL: the card's URL is used unless it names no host to reach.
func TestEndpointURL(t *testing.T) {
	m := &Messenger{}
	for card, want := range map[string]string{
		"http://10.1.2.3:9009/": "http://10.1.2.3:9009/",
		"http://0.0.0.0:9009/":  "http://gw:8080/role",
		"http://[::]:9009":      "http://gw:8080/role",
		"":                      "http://gw:8080/role",
		"/role/rpc":             "http://gw:8080/role/rpc",
	} {
		if got := m.endpointURL("http://gw:8080/role", card); got != want {
			t.Errorf("card url %q: got %q, want %q", card, got, want)
		}
	}
	m.opts.UseParticipantURL = true
	if got := m.endpointURL("http://gw:8080/role", "http://10.1.2.3:9009/"); got != "http://gw:8080/role" {
		t.Errorf("UseParticipantURL: %q", got)
	}
}

// TestNormalizeURL checks participant URLs.
func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1/":      "http://h:1",
		"http://h:1/role/": "http://h:1/role",
		" http://h:1/role/.well-known/agent-card.json": "http://h:1/role",
		"https://h/x?y=1#z":                            "https://h/x",
	} {
		if got, err := normalizeURL(in); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "h:1", "ftp://h/", "http:///x", "::"} {
		if _, err := normalizeURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
