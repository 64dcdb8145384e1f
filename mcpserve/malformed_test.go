package mcpserve_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/internal/mcptest"
)

// TestMalformedMessages sends every method the SDK's server serves (and
// some it does not) with params absent, null, {} and malformed, as
// requests and as notifications, every tool with arguments of every wrong
// shape, broken envelopes and the SDKs' own shapes, inside an initialized
// session and outside any: each gets an answer a client can act on
// (mcptest.Check), nothing panics, and the session still works.
func TestMalformedMessages(t *testing.T) {
	h, logs, _ := loggedHost(t)
	ep, closeEp, err := h.Open(t.Context(), fuzzServer(), []string{"echo", "typed", "untyped", "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeEp()
	session := &mcptest.Client{URL: ep.URL, Token: ep.Token}
	if err := session.Initialize(t.Context()); err != nil {
		t.Fatal(err)
	}
	msgs := append(mcptest.Malformed(map[string][]string{"echo": {"text"}, "typed": {"code", "expression", "steps", "n"}, "untyped": {"decision"}, "none": nil}), mcptest.SDKShapes...)
	for _, c := range []*mcptest.Client{session, {URL: ep.URL, Token: ep.Token}} {
		for _, m := range msgs {
			a, err := c.Post(context.WithoutCancel(t.Context()), m.Body)
			if err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			if err := mcptest.Check(m.Body, a); err != nil {
				t.Errorf("%s (session %t): %v", m.Name, c.Session != "", err)
			}
		}
	}
	if tools, err := session.Tools(t.Context()); err != nil || len(tools) != 4 {
		t.Errorf("after %d messages the session lists %v (%v)", len(msgs), tools, err)
	}
	if strings.Contains(logs.String(), "panicked") {
		t.Errorf("panics were recovered:\n%s", logs.String())
	}
}
