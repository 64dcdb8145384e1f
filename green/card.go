package green

import (
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/tracedata"
)

// Version is the green agent's version as its agent card states it.
var Version = "0.1.0"

// Card defaults.
const (
	DefaultAgentName        = "coordbench"
	DefaultAgentDescription = "OpenTelemetry-native assessor of multi-agent coordination. Send it an assessment " +
		"request naming the participants' A2A URLs; it drives them through the scenario's tasks, rebuilds who " +
		"called whom from the OpenTelemetry spans (in process, OTLP at /v1/traces, and the A2A Traceability " +
		"Extension), and scores the coordination (graph metrics, latency, an LLM judge, text) and the outcome."
	// ExampleRequest is the skill's example: an AgentBeats request.
	ExampleRequest = `{"participants": {"agent": "http://127.0.0.1:9019/"}, "config": {"scenario": "coordination", "num_tasks": 2}}`
	// ExampleLegacyRequest is the legacy tag format's example.
	ExampleLegacyRequest = "<white_agent_url>http://127.0.0.1:9019/</white_agent_url>\n<scicode_problem_id>13</scicode_problem_id>\n<split>dev</split>\n<max_num_steps>3</max_num_steps>"
)

// CardOptions configure the agent card.
type CardOptions struct {
	// URL is where clients reach the JSON-RPC endpoint (the --card-url
	// flag); both protocol versions are served there.
	URL string
	// Name, Description and Version default to DefaultAgentName,
	// DefaultAgentDescription and Version.
	Name        string
	Description string
	Version     string
}

// NewAgentCard describes the green agent. The card lists one JSON-RPC
// interface per protocol version at the same URL: a 1.0 client picks the
// 1.0 interface, and the 0.3 form of the card (which a2av0 derives from the
// 0.3 interface: url, preferredTransport, protocolVersion) is what the
// Python a2a-sdk 0.3 clients of AgentBeats read. Serve it with
// a2av0.NewStaticAgentCardProducer so one document carries both forms.
func NewAgentCard(opts CardOptions) *a2a.AgentCard {
	if opts.Name == "" {
		opts.Name = DefaultAgentName
	}
	if opts.Description == "" {
		opts.Description = DefaultAgentDescription
	}
	if opts.Version == "" {
		opts.Version = Version
	}
	u := opts.URL
	if !strings.HasSuffix(u, "/") && !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), "/") {
		u += "/"
	}
	return &a2a.AgentCard{
		Name:        opts.Name,
		Description: opts.Description,
		Version:     opts.Version,
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities: a2a.AgentCapabilities{
			Streaming: true,
			// Served by the server's a2aserve.Push: a client that sets a
			// webhook need not hold a stream for a long assessment.
			PushNotifications: true,
			Extensions: []a2a.AgentExtension{{
				URI: tracedata.ExtensionURI,
				Description: "Participants may return the steps of their work (LLM calls, tools, delegations) in " +
					"their responses' metadata; coordbench turns them into spans of the task's trace. It reads " +
					"W3C traceparent and OTLP (POST /v1/traces) as well.",
			}},
		},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/markdown", "application/json"},
		Skills: []a2a.AgentSkill{
			{
				ID:   "coordination-assessment",
				Name: "Multi-agent coordination assessment",
				Description: "Runs the participants through the requested scenario's tasks and returns one " +
					"artifact named Result: a Markdown summary with the coordination graph of each task " +
					"(Mermaid) and the JSON result (schema coordbench.result/v2). Progress arrives as " +
					"working status updates.",
				Tags:     []string{"assessment", "benchmark", "multi-agent", "coordination", "opentelemetry", "agentbeats"},
				Examples: []string{ExampleRequest},
			},
			{
				ID:   "legacy-tag-request",
				Name: "Legacy tag-format request",
				Description: "Accepts the tag format of the tau-bench and SciCode green agents: the white " +
					"agent's URL, the problem ids, the split and the step budget.",
				Tags:     []string{"assessment", "scicode", "legacy"},
				Examples: []string{ExampleLegacyRequest},
			},
		},
	}
}
