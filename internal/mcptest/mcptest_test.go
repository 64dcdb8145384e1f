package mcptest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCheck: Check takes the answers a client can act on and refuses the
// rest.
func TestCheck(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	msg := func(s string) []json.RawMessage { return []json.RawMessage{json.RawMessage(s)} }
	for _, c := range []struct {
		name, body string
		a          Answer
		bad        string
	}{
		{"result", req, Answer{Status: 200, Messages: msg(`{"jsonrpc":"2.0","id":7,"result":{}}`)}, ""},
		{"error", req, Answer{Status: 200, Messages: msg(`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x"}}`)}, ""},
		{"refused", req, Answer{Status: 400, Body: []byte("bad")}, ""},
		{"accepted", note, Answer{Status: 202}, ""},
		{"5xx", req, Answer{Status: 500, Body: []byte("boom")}, "HTTP 500"},
		{"internal error", req, Answer{Status: 200, Messages: msg(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}`)}, "internal error"},
		{"wrong id", req, Answer{Status: 200, Messages: msg(`{"jsonrpc":"2.0","id":1,"result":{}}`)}, "id 1"},
		{"no response", req, Answer{Status: 200}, "0 responses"},
		{"two responses", req, Answer{Status: 200, Messages: append(msg(`{"id":7,"result":{}}`), msg(`{"id":7,"result":{}}`)...)}, "2 responses"},
		{"result and error", req, Answer{Status: 200, Messages: msg(`{"id":7,"result":{},"error":{"code":1}}`)}, "both"},
		{"202 to a request", req, Answer{Status: 202}, "HTTP 202"},
		{"a notification answered 204", note, Answer{Status: 204}, "HTTP 204"},
	} {
		err := Check(c.body, c.a)
		if (err != nil) != (c.bad != "") || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.bad)
		}
	}
}

// TestMalformedIsJSON: every message of the battery that is meant to be
// JSON is (Malformed builds them; a typo would test the parser, not the
// server), and ids are unique.
func TestMalformedIsJSON(t *testing.T) {
	ids := map[string]bool{}
	for _, m := range Malformed(map[string][]string{"t": {"a", "b"}}) {
		if strings.HasPrefix(m.Name, "request") || strings.HasPrefix(m.Name, "tools/call") {
			if !json.Valid([]byte(m.Body)) {
				t.Errorf("%s: not JSON", m.Name)
			}
			id, _ := requestID(m.Body)
			if ids[string(id)] {
				t.Errorf("%s: id %s again", m.Name, id)
			}
			ids[string(id)] = true
		}
	}
	if len(ids) < 1000 {
		t.Errorf("%d requests in the battery", len(ids))
	}
}
