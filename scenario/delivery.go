package scenario

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coordbench/coordbench/mcpcall"
)

// Deliveries: how a task reaches the participant and its answer comes back
// (config.delivery; docs/mcp.md).
const (
	// DeliveryText is the A2A message and an answer in the reply's text or
	// data part, the default: AgentBeats participants that know nothing of
	// MCP work as before.
	DeliveryText = "text"
	// DeliveryMCP adds a per-task MCP server whose tools read the task and
	// take the answer; the reply's text is not read for an answer.
	DeliveryMCP = "mcp"
	// DeliveryBoth offers the tools and still reads the reply's text.
	DeliveryBoth = "both"
	keyDelivery  = "delivery"
)

// Delivery is a request's delivery: which ways of answering count.
type Delivery struct {
	Text, MCP bool
}

// String is the config value.
func (d Delivery) String() string {
	switch {
	case d.Text && d.MCP:
		return DeliveryBoth
	case d.MCP:
		return DeliveryMCP
	}
	return DeliveryText
}

// ParseDelivery reads config.delivery: "text" (the default), "mcp",
// "both", or a list of "text" and "mcp". Anything else is a bad request
// that names the choices.
func ParseDelivery(req *Request) (Delivery, error) {
	raw, ok := req.Config.Raw[keyDelivery]
	if !ok || string(raw) == "null" {
		return Delivery{Text: true}, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return Delivery{}, BadRequest("config.%s must be %q, %q or %q, not %s", keyDelivery, DeliveryText, DeliveryMCP, DeliveryBoth, raw)
	}
	var d Delivery
	for _, v := range list {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case DeliveryText:
			d.Text = true
		case DeliveryMCP:
			d.MCP = true
		case DeliveryBoth:
			d.Text, d.MCP = true, true
		default:
			return Delivery{}, BadRequest("config.%s must be %q, %q or %q, not %q", keyDelivery, DeliveryText, DeliveryMCP, DeliveryBoth, v)
		}
	}
	return d, nil
}

// ToolHost serves a task's MCP server while the task runs (the green
// agent's mcpserve.Host): Open returns the endpoint to hand the
// participant and the function that closes it. ctx is the task's (the
// context Scenario.Run was given): its span is the task's, and the server
// spans of the endpoint's requests stay in that span's trace
// (docs/mcp.md#spans).
type ToolHost interface {
	Open(ctx context.Context, s *mcp.Server, tools []string) (mcpcall.Endpoint, func(), error)
}
