package a2atest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
)

// TestAgent: the options other packages' tests rely on do what they say,
// over real loopback HTTP with the Messenger that calls participants.
func TestAgent(t *testing.T) {
	c := NewCaller(t, a2acall.Options{CallTimeout: 30 * time.Second})
	send := func(url, text string, data map[string]any) (*a2acall.Reply, error) {
		return c.Messenger.Send(t.Context(), a2acall.SendRequest{URL: url, Text: text, Data: data})
	}

	plain := Start(t, Options{Name: "plain"})
	if r, err := send(plain.URL, "hi", nil); err != nil || r.Text != "plain answers: hi" || r.State != "completed" {
		t.Errorf("default answer: %+v, %v", r, err)
	}
	if n := len(plain.Calls()); n < 1 || plain.CardFetches() != 1 {
		t.Errorf("plain saw %d calls, %d card fetches", n, plain.CardFetches())
	}

	var seen Input
	computed := Start(t, Options{Name: "computed", Legacy: true, Path: "solver", ReplyFunc: func(_ context.Context, in Input) (string, error) {
		seen = in
		return "computed", nil
	}})
	if !strings.HasSuffix(computed.URL, "/solver") {
		t.Errorf("URL %s does not carry the path", computed.URL)
	}
	if r, err := send(computed.URL, "x", map[string]any{"step": "1.1"}); err != nil || r.Text != "computed" || len(seen.Data) != 1 || seen.Data[0]["step"] != "1.1" {
		t.Errorf("ReplyFunc: %+v, %v; it saw %+v", r, err, seen)
	}
	if !strings.Contains(computed.Wire(), `"method":"message/send"`) {
		t.Errorf("a Legacy agent was not called with A2A 0.3: %.300s", computed.Wire())
	}
	resp, err := http.Get(computed.URL + a2acall.WellKnownCardPath)
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	err = json.NewDecoder(resp.Body).Decode(&card)
	_ = resp.Body.Close()
	if err != nil || card["protocolVersion"] != "0.3.0" || card["supportedInterfaces"] != nil {
		t.Errorf("Legacy card %v (%v), want a 0.3 card", card, err)
	}

	failing := Start(t, Options{Name: "failing", Fault: FaultFail})
	if r, err := send(failing.URL, "x", nil); err == nil || !strings.Contains(err.Error(), ErrDeliberate.Error()) ||
		r == nil || r.State != "failed" || !strings.Contains(r.Text, ErrDeliberate.Error()) {
		t.Errorf("FaultFail: %+v, %v", r, err)
	}
	for _, f := range []Fault{FaultGarbage, FaultCrash} {
		if r, err := send(Start(t, Options{Name: "broken", Fault: f}).URL, "x", nil); err == nil {
			t.Errorf("fault %d: no error, reply %+v", f, r)
		}
	}

	locked := Start(t, Options{Name: "locked", Token: "s3cret-token-of-enough-length"})
	req, _ := http.NewRequest(http.MethodPost, locked.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a call without the token got %s", resp.Status)
	}

	if _, err := send(RefusedURL(t), "x", nil); err == nil {
		t.Error("RefusedURL accepted a call")
	}
}
