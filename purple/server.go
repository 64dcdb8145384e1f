package purple

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// Server defaults.
const (
	DefaultHost            = "127.0.0.1"
	DefaultPort            = 9009
	DefaultPeerTimeout     = 120 * time.Second
	DefaultShutdownTimeout = 10 * time.Second
	// maxRPCBody bounds one JSON-RPC request; a review request with its
	// reviews is tens of kilobytes.
	maxRPCBody = 4 << 20
	// sweepInterval is how often the agent's span store drops old traces.
	sweepInterval = time.Minute
	// flushTimeout bounds a flush on response.
	flushTimeout = 5 * time.Second
)

// Version is the base purple agent's version on its card.
const Version = "0.1.0"

// Options configure an agent. The zero value is a reviewer named
// "reviewer" on 127.0.0.1:9009 that exports nothing unless the
// OpenTelemetry environment says so, and returns its steps to callers that
// ask for them.
type Options struct {
	// Name is the card's name, gen_ai.agent.name and service.name of its
	// spans (default: the role).
	Name string
	// Role names the agent's role in Roles (default "reviewer"); Handler,
	// when set, is used instead, and Role only names it.
	Role    string
	Handler Role
	// Roles are the roles Role may name (default StandardRoles with the
	// zero SolverOptions).
	Roles map[string]Role
	// Description is the card's description.
	Description string
	// Peers are the agents it may call; Delegation says how (default
	// fan_out for a coordinator, consult for others).
	Peers      []Peer
	Delegation string
	// Host and Port to listen on (Port 0 picks one), or Listener to serve
	// on (then Host and Port are ignored).
	Host     string
	Port     int
	Listener net.Listener
	// CardURL is the URL the card advertises (default http://host:port/).
	CardURL string
	// OTLPEndpoint, when set, receives the agent's spans by OTLP/HTTP (a
	// base URL such as http://127.0.0.1:9009 gets /v1/traces appended). The
	// standard OpenTelemetry environment adds its own endpoint.
	OTLPEndpoint string
	// ExportInterval is the batcher's timeout: the longest an ended span
	// waits before it is exported. Default: OTEL_BSP_SCHEDULE_DELAY (in
	// milliseconds, read through Getenv) when set, else 100 ms, shorter
	// than the OpenTelemetry SDK's own 5 s default so that traces reach the
	// green agent promptly (it waits for them either way).
	ExportInterval time.Duration
	// FlushOnResponse exports a request's spans before its response ends,
	// so that when a caller has the answer, the assessor has the spans:
	// no settle interval can race the batcher. It adds the export to the
	// caller's latency; in-process systems (the demo, the benchmark) set
	// it, a deployed agent need not.
	FlushOnResponse bool
	// NoExtension: never return steps through the Traceability Extension
	// (and do not list it on the card).
	NoExtension bool
	// LLM configures the agent's LLM; nil reads AGENTBEATS_LLM_* through
	// Getenv. An empty APIKey means the rule answers.
	LLM *llmconfig.Config
	// Getenv reads the OpenTelemetry and LLM environment; nil means the
	// process's own (os.Getenv, and OTEL_RESOURCE_ATTRIBUTES on the
	// resource). Tests and in-process systems set it.
	Getenv func(string) string
	// PeerTimeout bounds one call to a peer (default 120 s).
	PeerTimeout time.Duration
	// A2AToken, when set, is required on every A2A request, as a bearer
	// token or an X-API-Key (a2aserve.TokenAuth); the card declares both
	// schemes and stays public. Empty means open.
	A2AToken string
	// PeerCredentials give the calls to peers that require them a header
	// (a bearer token, an API key), by peer URL prefix.
	PeerCredentials *a2acall.Credentials
	// OTLPHeaders are sent with every export to OTLPEndpoint (e.g.
	// Authorization: Bearer <token> for a green agent whose receiver
	// requires its OTLP token). Without them that exporter, like the
	// environment's, sends the headers of OTEL_EXPORTER_OTLP_HEADERS.
	OTLPHeaders map[string]string
	// NoIngestToken: ignore the ingest token an assessor hands the agent
	// in a message's metadata (ingest.go): its exports then carry none and
	// its peers are not handed it. A green agent with strict ingest refuses
	// such spans; the option is for tests and for exporters that must not
	// send extra headers.
	NoIngestToken bool
	// Faults make the agent misbehave on purpose.
	Faults Faults
	// ShutdownTimeout bounds the graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// TaskLimits bound the A2A tasks kept after they finish; zero values
	// are a2aserve's defaults.
	TaskLimits a2aserve.TaskStoreLimits
	// Logger receives the agent's logs; nil discards them.
	Logger *slog.Logger

	// storedTraces bounds the traces kept for extension answers (default
	// storeMaxTraces); the package's tests lower it to reach the bound in
	// few calls.
	storedTraces int
}

func (o *Options) withDefaults() error {
	if o.Role == "" {
		o.Role = RoleReviewer
	}
	if o.Name == "" {
		o.Name = o.Role
	}
	if strings.TrimSpace(o.Name) != o.Name || strings.ContainsAny(o.Name, "\n\t") {
		return fmt.Errorf("name %q: want no surrounding spaces or control characters", o.Name)
	}
	if o.Handler == nil {
		if o.Roles == nil {
			o.Roles = StandardRoles(SolverOptions{})
		}
		r, ok := o.Roles[o.Role]
		if !ok || r == nil {
			return fmt.Errorf("unknown role %q; known roles: %s", o.Role, strings.Join(RoleNames(o.Roles), ", "))
		}
		o.Handler = r
	}
	if o.Delegation == "" {
		o.Delegation = DelegateConsult
		if o.Role == RoleCoordinator {
			o.Delegation = DelegateFanOut
		}
	}
	if !slices.Contains(Delegations(), o.Delegation) {
		return fmt.Errorf("delegation %q, want one of %s", o.Delegation, strings.Join(Delegations(), ", "))
	}
	for _, p := range o.Peers {
		if p.URL == "" {
			return fmt.Errorf("peer %q has no URL", p.Name)
		}
	}
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("port %d out of range", o.Port)
	}
	if o.ExportInterval <= 0 {
		o.ExportInterval = DefaultExportInterval
		if ms, err := strconv.Atoi(strings.TrimSpace(o.getenv()("OTEL_BSP_SCHEDULE_DELAY"))); err == nil && ms > 0 {
			o.ExportInterval = time.Duration(ms) * time.Millisecond
		}
	}
	if o.PeerTimeout <= 0 {
		o.PeerTimeout = DefaultPeerTimeout
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := o.PeerCredentials.Validate(); err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	if o.Description == "" {
		o.Description = fmt.Sprintf("coordbench base purple agent %q, role %s: answers review requests "+
			"in the coordination scenario's JSON form, alone or with its peers.", o.Name, o.Role)
	}
	return o.Faults.validate()
}

// Server is one purple agent: its A2A server, its telemetry and its client
// to its peers.
type Server struct {
	opts      Options
	log       *slog.Logger
	tel       *telemetry
	tracer    trace.Tracer
	messenger *a2acall.Messenger
	llm       *LLM
	card      *a2a.AgentCard
	tasks     *a2aserve.TaskStore
	push      *a2aserve.Push // push notifications (a2aserve/push.go)
	handler   http.Handler
	a2aAuth   *a2aserve.TokenAuth // nil when open
	faults    *faultState
	ln        net.Listener

	// stop ends work that waits (a hang, a delay) when the agent shuts
	// down: a2a-go runs executions detached from the request's context.
	stop      chan struct{}
	stopOnce  sync.Once
	serveOnce sync.Once
}

// NewServer opens the listener (so the URL is known before Serve, also for
// port 0) and builds the agent. Serve runs it; if Serve is never called,
// Close releases it.
func NewServer(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.withDefaults(); err != nil {
		return nil, fmt.Errorf("purple: %w", err)
	}
	s := &Server{opts: opts, log: opts.Logger.With("agent", opts.Name), stop: make(chan struct{}), faults: newFaultState(opts.Faults.Seed)}
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))); err != nil {
			return nil, fmt.Errorf("purple %s: listen: %w", opts.Name, err)
		}
	}
	s.ln = ln
	if err := s.build(ctx); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("purple %s: %w", opts.Name, err)
	}
	return s, nil
}

func (s *Server) build(ctx context.Context) error {
	opts := &s.opts
	if opts.A2AToken != "" {
		auth, err := a2aserve.NewTokenAuth(opts.A2AToken, "coordbench-purple")
		if err != nil {
			return fmt.Errorf("A2A token: %w", err)
		}
		s.a2aAuth = auth
	}
	tel, err := newTelemetry(ctx, opts)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	s.tel = tel
	s.tracer = tel.tp.Tracer(instrumentationName)
	llmCfg := llmconfig.FromEnv(opts.getenv())
	if opts.LLM != nil {
		llmCfg = *opts.LLM
	}
	if s.llm, err = newLLM(llmCfg, s.tracer); err != nil {
		_ = tel.shutdown(ctx)
		return err
	}
	// Only an agent that reports its work as steps alone makes no transport
	// spans: its callees must find their parent among its steps.
	stepsOnly := !tel.exporting() && tel.store != nil
	var extStore a2acall.SpanStore // a nil interface when the agent keeps no store
	if tel.store != nil {
		extStore = tel.store
	}
	s.messenger = a2acall.New(tel.tp, extStore, a2acall.Options{
		CallTimeout:      opts.PeerTimeout,
		NoTransportSpans: stepsOnly,
		OnExtensionSpans: func(_ context.Context, spans []otelmap.Span) { tel.forward(spans) },
		Credentials:      opts.PeerCredentials,
		Logger:           s.log,
	})
	cardURL := opts.CardURL
	if cardURL == "" {
		cardURL = a2aserve.BaseURL(s.ln.Addr()) + "/"
	}
	s.card = s.newCard(cardURL)
	s.a2aAuth.Declare(s.card)
	if s.handler, err = s.newHandler(); err != nil {
		_ = s.messenger.Close()
		_ = tel.shutdown(ctx)
		return err
	}
	return nil
}

// returnsSteps reports whether the agent answers the extension with steps.
func (s *Server) returnsSteps() bool { return s.tel.store != nil }

// newCard describes the agent: one JSON-RPC interface per protocol version
// at the same URL, as the green agent's card does, so that 1.0 clients and
// AgentBeats' 0.3 Python clients both find theirs.
func (s *Server) newCard(u string) *a2a.AgentCard {
	if !strings.HasSuffix(u, "/") && !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), "/") {
		u += "/"
	}
	card := &a2a.AgentCard{
		Name:        s.opts.Name,
		Description: s.opts.Description,
		Version:     Version,
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{{
			ID:   "review-" + s.opts.Role,
			Name: "Paper review (" + s.opts.Role + ")",
			Description: "Answers a coordbench review request with {\"decision\", \"recommendation\", \"scores\", " +
				"\"rationale\"}; delegation to peers: " + s.opts.Delegation + ".",
			Tags: []string{"coordbench", "purple", s.opts.Role},
		}},
	}
	if s.returnsSteps() {
		card.Capabilities.Extensions = []a2a.AgentExtension{{
			URI:         tracedata.ExtensionURI,
			Description: "Returns the steps of its work on a call (its LLM and tool calls, its calls to peers) when the caller activates the extension.",
		}}
	}
	return card
}

// newHandler serves the card and JSON-RPC of both protocol versions
// (a2aserve), behind the A2A token when one is set; only the JSON-RPC
// POSTs are traced. The crash fault strikes before a request is routed.
func (s *Server) newHandler() (http.Handler, error) {
	tasks, err := a2aserve.NewTaskStore(s.opts.TaskLimits)
	if err != nil {
		return nil, fmt.Errorf("purple: %w", err)
	}
	s.tasks = tasks
	// The same push notifications as the green agent's, so one
	// implementation answers the conformance suites' push tests on the
	// agent whose tasks complete (docs/push-notifications.md).
	if s.push, err = a2aserve.NewPush(a2aserve.PushOptions{Logger: s.log}); err != nil {
		return nil, fmt.Errorf("purple: %w", err)
	}
	mux, err := a2aserve.NewHandler(a2aserve.Options{
		Card:           s.card,
		Executor:       &executor{s: s},
		TaskStore:      tasks,
		Push:           s.push,
		TracerProvider: s.tel.tp,
		Logger:         s.log,
		MaxBodyBytes:   maxRPCBody,
		Intercept: func(w http.ResponseWriter, _ *http.Request, body []byte) bool {
			if f := &s.opts.Faults; f.Crash && f.applies(bodyTaskID(body)) {
				s.log.Info("purple: crash fault: cutting the connection")
				crash(w)
				return true
			}
			return false
		},
	})
	if err != nil {
		return nil, fmt.Errorf("purple: %w", err)
	}
	var h http.Handler = mux
	if s.opts.FlushOnResponse {
		h = s.flushAfter(mux)
	}
	// The token is checked before anything else; the card stays public.
	return s.a2aAuth.RequireA2A(h), nil
}

// flushAfter exports the spans of each A2A request (its server spans ended
// when the traced handler returned) before the response is complete.
func (s *Server) flushAfter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method != http.MethodPost {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), flushTimeout)
		defer cancel()
		if err := s.tel.tp.ForceFlush(ctx); err != nil {
			s.log.Debug("purple: flush on response", "err", err)
		}
	})
}

// URL is the agent's base URL, http://host:port (no trailing slash).
func (s *Server) URL() string { return a2aserve.BaseURL(s.ln.Addr()) }

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Name is the agent's name.
func (s *Server) Name() string { return s.opts.Name }

// Card is the agent card served.
func (s *Server) Card() *a2a.AgentCard { return s.card }

// Tasks is the agent's A2A task store.
func (s *Server) Tasks() *a2aserve.TaskStore { return s.tasks }

// Handler is the agent's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// ForceFlush exports the spans the agent's batchers hold.
func (s *Server) ForceFlush(ctx context.Context) error {
	if err := s.tel.tp.ForceFlush(ctx); err != nil {
		return fmt.Errorf("purple %s: flush spans: %w", s.opts.Name, err)
	}
	return nil
}

// Serve serves until ctx ends, then shuts down: the work that waits (a
// hang fault, a delay) ends, the server stops accepting and waits for open
// requests up to ShutdownTimeout, the client to the peers closes, and the
// spans are flushed. It returns nil after a shutdown that ctx asked for.
func (s *Server) Serve(ctx context.Context) error {
	err := errors.New("purple: Serve called twice")
	s.serveOnce.Do(func() { err = s.serve(ctx) })
	return err
}

func (s *Server) serve(ctx context.Context) error {
	peers := make([]string, len(s.opts.Peers))
	for i, p := range s.opts.Peers {
		peers[i] = p.Name + "=" + p.URL
	}
	s.log.Info("purple agent serving", "url", s.card.SupportedInterfaces[0].URL, "role", s.opts.Role,
		"delegation", s.opts.Delegation, "peers", peers, "otlp", s.opts.OTLPEndpoint, "steps", s.returnsSteps(),
		"llm", s.llm != nil, "a2a_auth", s.a2aAuth != nil)
	var sweep func()
	if s.tel.store != nil {
		sweep = s.tel.store.Sweep
	}
	err := a2aserve.Serve(ctx, s.ln, s.handler, a2aserve.ServeOptions{
		ShutdownTimeout: s.opts.ShutdownTimeout,
		Tick:            sweep,
		TickInterval:    sweepInterval,
		// Work in progress ends first (hangs, delays, calls to peers), so
		// the open requests it holds can finish with a failed status.
		BeforeShutdown: func() error {
			s.stopWork()
			return s.messenger.Close()
		},
		AfterShutdown: func(ctx context.Context) error {
			err := s.tel.shutdown(ctx)
			_ = s.push.Close(ctx) // a webhook that does not answer is not a failed shutdown
			return err
		},
		Logger:     s.log,
		ErrorLevel: slog.LevelDebug,
	})
	if err != nil {
		return fmt.Errorf("purple %s: %w", s.opts.Name, err)
	}
	return nil
}

// stopWork ends the work that waits for the agent to stop.
func (s *Server) stopWork() { s.stopOnce.Do(func() { close(s.stop) }) }

// Close releases an agent that was never served.
func (s *Server) Close(ctx context.Context) error {
	s.stopWork()
	_ = s.ln.Close()
	var pushErr error
	if s.push != nil {
		pushErr = s.push.Close(ctx)
	}
	return errors.Join(s.messenger.Close(), s.tel.shutdown(ctx), pushErr)
}

// ListenAndServe is NewServer and Serve.
func ListenAndServe(ctx context.Context, opts Options) error {
	s, err := NewServer(ctx, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}
