package a2acall

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/tracedata"
)

// This file: the agent card. A participant is known by its card, fetched
// from the well-known path under the participant URL on first use; the card
// names the agent (and so its spans), the interface to call and whether it
// streams.

const (
	// WellKnownCardPath is where an A2A agent serves its card, relative to
	// its URL (which may carry a path, as AgentBeats' gateway URLs do).
	WellKnownCardPath = "/.well-known/agent-card.json"
	// maxCardBytes bounds an agent card; real cards are a few KiB.
	maxCardBytes = 1 << 20
)

// AgentInfo describes a participant as its card does.
type AgentInfo struct {
	// Name is the card's name; it names the participant in spans and graphs.
	Name string
	// URL is the participant URL; Endpoint is where calls go.
	URL      string
	Endpoint string
	// Protocol is the A2A protocol version of the interface used ("1.0",
	// "0.3.0", ...).
	Protocol  string
	Streaming bool
	// Traceability is true when the card lists the Traceability Extension.
	Traceability bool
}

// participant is what the Messenger knows of one agent.
type participant struct {
	url       string // the participant URL as normalized
	name      string // the card's name
	id        string // gen_ai.agent.id: the card's URL, else its name
	endpoint  string // where calls go
	protocol  string // the interface's protocol version, e.g. "1.0", "0.3.0"
	legacy    bool   // a 0.x protocol
	streaming bool
	extension bool // the card lists the Traceability Extension
	client    *a2aclient.Client
}

// Agent returns what the participant's card says, fetching it (and creating
// the client) on first use.
func (m *Messenger) Agent(ctx context.Context, participantURL string) (AgentInfo, error) {
	tgt, err := m.target(participantURL)
	if err != nil {
		return AgentInfo{}, &CallError{URL: participantURL, Err: err}
	}
	ctx, cancel := m.callContext(ctx, m.opts.CallTimeout)
	defer cancel()
	p, err := m.participant(ctx, tgt.base)
	if err != nil {
		return AgentInfo{}, &CallError{URL: participantURL, Err: closedErr(ctx, err)}
	}
	return p.info(), nil
}

func (p *participant) info() AgentInfo {
	return AgentInfo{Name: p.name, URL: p.url, Endpoint: p.endpoint, Protocol: p.protocol,
		Streaming: p.streaming, Traceability: p.extension}
}

// connect fetches the card at base and creates a client for the interface
// the Messenger speaks best: A2A 1.0 before 0.x, JSON-RPC before HTTP+JSON.
func (m *Messenger) connect(ctx context.Context, base string) (*participant, error) {
	// Every call and card fetch of a participant goes through its client,
	// made here once per base: checking the base here holds every call to
	// the allowlist (the dialer checks the addresses again).
	if err := m.opts.Allow.CheckURL(base); err != nil {
		return nil, fmt.Errorf("participant URL %s: %w", base, err)
	}
	cctx, cancel := context.WithTimeout(ctx, m.opts.CardTimeout)
	defer cancel()
	resolver := &agentcard.Resolver{Client: m.cardHTTP, CardParser: parseAgentCard}
	card, err := resolver.Resolve(cctx, base)
	if err != nil {
		return nil, fmt.Errorf("agent card at %s%s: %w", base, WellKnownCardPath, err)
	}
	iface := selectInterface(card.SupportedInterfaces)
	if iface == nil {
		return nil, fmt.Errorf("agent card at %s%s: no JSON-RPC or HTTP+JSON interface of A2A 0.x or 1.x among %s",
			base, WellKnownCardPath, describeInterfaces(card.SupportedInterfaces))
	}
	chosen := *iface
	chosen.URL = m.endpointURL(base, iface.URL)
	if err := m.opts.Allow.CheckURL(chosen.URL); err != nil {
		return nil, fmt.Errorf("agent card at %s%s names the endpoint %s: %w", base, WellKnownCardPath, chosen.URL, err)
	}
	// The client is made from a copy of the card naming only the chosen
	// interface, so the protocol version used is the one the spans report.
	use := *card
	use.SupportedInterfaces = []*a2a.AgentInterface{&chosen}
	factory := m.factory
	if cred, ok := m.credentialFor(base, chosen.URL); ok {
		// This client alone carries the credential, on every call it makes.
		factory = a2aclient.WithAdditionalOptions(m.factory, a2aclient.WithCallInterceptors(credentialInterceptor{cred: cred}))
	}
	client, err := factory.CreateFromCard(ctx, &use)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", chosen.URL, err)
	}
	name := strings.TrimSpace(card.Name)
	if name == "" {
		name = hostPort(base)
	}
	id := iface.URL
	if id == "" {
		id = name
	}
	return &participant{
		url:       base,
		name:      name,
		id:        id,
		endpoint:  chosen.URL,
		protocol:  string(chosen.ProtocolVersion),
		legacy:    majorVersion(chosen.ProtocolVersion) == 0,
		streaming: card.Capabilities.Streaming,
		extension: slices.ContainsFunc(card.Capabilities.Extensions, func(x a2a.AgentExtension) bool { return x.URI == tracedata.ExtensionURI }),
		client:    client,
	}, nil
}

// endpointURL decides where calls go: the card's URL, made absolute against
// the participant URL, unless it names no usable host.
func (m *Messenger) endpointURL(base, cardURL string) string {
	if m.opts.UseParticipantURL || strings.TrimSpace(cardURL) == "" {
		return base
	}
	bu, err := url.Parse(base)
	if err != nil {
		return base
	}
	u, err := url.Parse(cardURL)
	if err != nil {
		return base
	}
	u = bu.ResolveReference(u)
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "" || (ip != nil && ip.IsUnspecified()) {
		return base
	}
	return u.String()
}

// parseAgentCard reads a card of either generation: a 1.0 card with
// supportedInterfaces, or a 0.3 card with url, protocolVersion and
// preferredTransport (JSON-RPC when absent, as 0.3 specifies).
func parseAgentCard(body []byte) (*a2a.AgentCard, error) {
	if len(body) > maxCardBytes {
		return nil, fmt.Errorf("agent card of %d bytes exceeds the limit of %d", len(body), maxCardBytes)
	}
	card, err := a2av0.NewAgentCardParser()(body)
	if err != nil {
		// a2av0's parser knows both forms; a card it refuses may still be
		// a plain 1.0 card with something it does not expect.
		var plain a2a.AgentCard
		if err2 := json.Unmarshal(body, &plain); err2 != nil {
			return nil, fmt.Errorf("not an A2A agent card: %w", err)
		}
		card = &plain
	}
	if len(card.SupportedInterfaces) == 0 {
		var legacy struct {
			URL             string `json:"url"`
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(body, &legacy) == nil && legacy.URL != "" {
			v := a2a.ProtocolVersion(legacy.ProtocolVersion)
			if v == "" {
				v = a2av0.Version
			}
			card.SupportedInterfaces = []*a2a.AgentInterface{{URL: legacy.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: v}}
		}
	}
	return card, nil
}

// selectInterface picks the interface to use, nil when none is spoken.
func selectInterface(ifaces []*a2a.AgentInterface) *a2a.AgentInterface {
	var best *a2a.AgentInterface
	rank := func(i *a2a.AgentInterface) int {
		r := 0
		if majorVersion(i.ProtocolVersion) == 1 {
			r += 2
		}
		if i.ProtocolBinding == a2a.TransportProtocolJSONRPC {
			r++
		}
		return r
	}
	for _, i := range ifaces {
		if i == nil || (i.ProtocolBinding != a2a.TransportProtocolJSONRPC && i.ProtocolBinding != a2a.TransportProtocolHTTPJSON) {
			continue
		}
		if mv := majorVersion(i.ProtocolVersion); mv != 0 && mv != 1 {
			continue
		}
		if best == nil || rank(i) > rank(best) {
			best = i
		}
	}
	return best
}

// majorVersion reads "1.0", "v0.3.0"; -1 when unreadable. An empty version
// is taken as 1.0, the version a card without one is written against.
func majorVersion(v a2a.ProtocolVersion) int {
	s := strings.TrimPrefix(strings.TrimSpace(string(v)), "v")
	if s == "" {
		return 1
	}
	major, _, _ := strings.Cut(s, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return -1
	}
	return n
}

func describeInterfaces(ifaces []*a2a.AgentInterface) string {
	if len(ifaces) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ifaces))
	for _, i := range ifaces {
		if i != nil {
			out = append(out, fmt.Sprintf("%s %s at %q", i.ProtocolBinding, i.ProtocolVersion, i.URL))
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// normalizeURL checks a participant URL and returns its base: an absolute
// http(s) URL without a trailing slash, query or fragment, and without a
// trailing /.well-known/agent-card.json should the card's own URL have been
// given.
func normalizeURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("participant URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("participant URL %q: want an absolute http or https URL", raw)
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimSuffix(u.Path, WellKnownCardPath)
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

func hostPort(base string) string {
	if u, err := url.Parse(base); err == nil {
		return u.Host
	}
	return base
}
