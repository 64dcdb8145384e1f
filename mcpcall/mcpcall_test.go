package mcpcall

import (
	"testing"
)

// TestFindEndpoint: the endpoint is read from its data part among others,
// decoded from JSON or built in process; a part of another kind, or one
// without a URL or a token, is no endpoint.
func TestFindEndpoint(t *testing.T) {
	ep := Endpoint{URL: "http://127.0.0.1:9009/mcp/ab", Token: "t0k", Tools: []string{"read_step", "submit_step"}}
	step := map[string]any{"kind": "coordbench.scicode_step/v1", "url": "http://elsewhere/", "token": "no"}
	got, ok := FindEndpoint([]map[string]any{step, ep.Data()})
	if !ok || got.URL != ep.URL || got.Token != ep.Token || len(got.Tools) != 2 || got.Tools[1] != "submit_step" {
		t.Errorf("found %+v %v", got, ok)
	}
	native := map[string]any{"kind": Kind, "url": ep.URL, "token": ep.Token, "tools": []string{"x"}}
	if got, ok := FindEndpoint([]map[string]any{native}); !ok || len(got.Tools) != 1 {
		t.Errorf("in-process tools list: %+v %v", got, ok)
	}
	for name, d := range map[string]map[string]any{
		"other kind": step,
		"no token":   {"kind": Kind, "url": ep.URL},
		"no url":     {"kind": Kind, "token": "t"},
		"url number": {"kind": Kind, "url": 3, "token": "t"},
	} {
		if got, ok := FindEndpoint([]map[string]any{d}); ok {
			t.Errorf("%s: found %+v", name, got)
		}
	}
	if _, ok := FindEndpoint(nil); ok {
		t.Error("found an endpoint in no data")
	}
}
