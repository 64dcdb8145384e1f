package green

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
)

// Authentication (docs/green-agent.md, "Authentication"): with
// ServerOptions.A2AToken, every A2A request needs the token, and the card
// declares it; with ServerOptions.OTLPToken, every OTLP export needs its
// own token, on the main listener and on the OTLP listener alike. The card
// and the health check stay public. Without tokens the server is open, as
// AgentBeats runs it, and serves exactly what it served before.

// Realms of the two tokens, as the 401 challenges name them.
const (
	realmA2A  = "coordbench-green"
	realmOTLP = "coordbench-green-otlp"
)

// newAuth builds the two authentications; a nil one is off.
func (s *Server) newAuth() error {
	var err error
	if s.opts.A2AToken != "" {
		if s.a2aAuth, err = a2aserve.NewTokenAuth(s.opts.A2AToken, realmA2A); err != nil {
			return fmt.Errorf("server: A2A token: %w", err)
		}
	}
	if s.opts.OTLPToken != "" {
		if s.otlpAuth, err = a2aserve.NewTokenAuth(s.opts.OTLPToken, realmOTLP); err != nil {
			return fmt.Errorf("server: OTLP token: %w", err)
		}
	}
	return nil
}

// otlpHandler is the receiver behind the OTLP token, if any.
func (s *Server) otlpHandler() http.Handler { return s.otlpAuth.Require(s.receiver) }

// protect puts the A2A token in front of mux (a2aserve's, which serves the
// card, the health check and JSON-RPC) and routes the OTLP path to the
// receiver behind its own token. Without an A2A token, mux gets the OTLP
// route and is returned as it is.
func (s *Server) protect(mux *http.ServeMux) http.Handler {
	if s.a2aAuth == nil {
		mux.Handle(otlpreceiver.TracesPath, s.otlpHandler())
		s.mountMCP(mux)
		return mux
	}
	root := http.NewServeMux()
	root.Handle(otlpreceiver.TracesPath, s.otlpHandler())
	// The MCP endpoints check their own per-task token (docs/mcp.md).
	s.mountMCP(root)
	root.Handle("/", s.a2aAuth.RequireA2A(mux))
	return root
}

// Rejected counts the requests answered 401 for want of the A2A token and
// of the OTLP token.
func (s *Server) Rejected() (a2a, otlp uint64) {
	return s.a2aAuth.Rejected(), s.otlpAuth.Rejected()
}

// mountMCP serves the tasks' MCP endpoints at mcpserve.DefaultPath and at
// the path of the MCP URL, for a gateway that keeps its prefix.
func (s *Server) mountMCP(mux *http.ServeMux) {
	mux.Handle(s.mcp.Path(), s.mcp)
	if u, err := url.Parse(s.mcpURL); err == nil && u.Path != s.mcp.Path() && strings.HasSuffix(u.Path, "/") {
		mux.Handle(u.Path, s.mcp)
	}
}
