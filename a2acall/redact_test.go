package a2acall

import (
	"strings"
	"testing"
)

// TestGenAIContentRedactsTokens: an MCP endpoint's token never reaches the
// content attributes, and the rest of the part does.
func TestGenAIContentRedactsTokens(t *testing.T) {
	secret := "d3adb33fd3adb33f"
	ep := map[string]any{"kind": "coordbench.mcp/v1", "url": "http://127.0.0.1:1/mcp/x", "token": secret}
	got := GenAIContent("user", "hello", dataParts(map[string]any{"kind": "step"}, []map[string]any{ep}), "")
	if strings.Contains(got, secret) || !strings.Contains(got, "[redacted]") || !strings.Contains(got, "/mcp/x") {
		t.Errorf("content %s", got)
	}
	if ep["token"] != secret {
		t.Errorf("the caller's part was changed: %v", ep)
	}
}
