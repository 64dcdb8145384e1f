package green

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/mcpserve"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// The A2A server (docs/green-agent.md#running-it): one listener serves the agent
// card, JSON-RPC in both A2A 1.0 and 0.3 (told apart by the method name each
// request carries: "SendMessage" is 1.0, "message/send" is 0.3), and the
// OTLP/HTTP receiver at /v1/traces. The green agent's own spans are recorded in
// process into the same store the receiver fills.

// Server defaults.
const (
	DefaultHost            = "127.0.0.1"
	DefaultPort            = 9009
	DefaultServiceName     = "coordbench-green"
	DefaultShutdownTimeout = 10 * time.Second
	// maxRPCBody bounds one JSON-RPC request; an assessment request is a
	// few hundred bytes, a follow-up message a few kilobytes.
	maxRPCBody = 4 << 20
	// sweepInterval is how often the store drops traces nobody assesses
	// (the server spans of the A2A requests themselves, spans that arrive
	// after their task was assessed); they go once older than the store's
	// MaxAge.
	sweepInterval = time.Minute
)

// ServerOptions configure NewServer. The zero value serves on
// 127.0.0.1:9009 with every default.
type ServerOptions struct {
	// Host and Port to listen on; Port 0 picks a free port.
	Host string
	Port int
	// CardURL is the URL the card advertises; default http://host:port/
	// (with 127.0.0.1 for an unspecified host such as 0.0.0.0).
	CardURL string
	// OTLPAddr, when set, is a second listener that serves only the OTLP
	// receiver (the receiver is on the main listener in any case).
	OTLPAddr string
	// Card sets the card's name, description and version.
	Card CardOptions
	// Scenarios, Unavailable, Evaluators, ProgressInterval and Messenger
	// are the executor's (see ExecutorOptions).
	Scenarios   map[string]scenario.Scenario
	Unavailable map[string]string
	Evaluators  *evals.Registry
	// Judge configures the LLM judge (ExecutorOptions.Judge); nil reads it
	// once, at NewServer, through Getenv (llmconfig.FromEnv).
	Judge            *llmconfig.Config
	ProgressInterval time.Duration
	Messenger        a2acall.Options
	// StoreLimits and ReceiverLimits bound the trace store and the OTLP
	// receiver.
	StoreLimits    tracestore.Limits
	ReceiverLimits otlpreceiver.ReceiverLimits
	// TaskLimits bound the A2A tasks kept after they finish (an
	// assessment's task holds its result: about 130 KB); zero values are
	// a2aserve's defaults.
	TaskLimits a2aserve.TaskStoreLimits
	// Push bounds the push notifications (timeout per attempt, attempts,
	// backoff, configs per task, queue); zero values are a2aserve's
	// defaults. Its CheckURL and Transport, when nil, are
	// Messenger.Allow's: a webhook is held to the participant allow-list
	// (docs/push-notifications.md).
	Push a2aserve.PushOptions
	// ServiceName is the green agent's service.name (default
	// coordbench-green; OTEL_SERVICE_NAME overrides it).
	ServiceName string
	// Getenv reads the OpenTelemetry environment, and the judge's when
	// Judge is nil; nil means os.Getenv.
	Getenv func(string) string
	// A2AToken, when set, is required on every A2A request, as a bearer
	// token or an X-API-Key (a2aserve.TokenAuth), and the card declares
	// both schemes; the card and the health check stay public. OTLPToken,
	// when set, is required likewise on the OTLP receiver, on the main
	// listener and on OTLPAddr. Empty means open (AgentBeats runs the
	// agent unauthenticated). The participants' credentials are
	// Messenger.Credentials. See docs/green-agent.md.
	A2AToken  string
	OTLPToken string
	// ShutdownTimeout bounds the graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// SSEKeepAlive, when positive, writes an SSE comment on a silent
	// stream this often (the working updates already come every
	// ProgressInterval).
	SSEKeepAlive time.Duration
	// Conventions, when set, is a user's convention map for trace
	// assembly (docs/trace-assembly.md).
	Conventions *assemble.Conventions
	// MCPURL is the URL participants reach the per-task MCP endpoints at
	// (docs/mcp.md); default the card URL's base with mcpserve.DefaultPath.
	MCPURL string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Server is the green agent's A2A server.
type Server struct {
	opts      ServerOptions
	log       *slog.Logger
	store     *tracestore.Store
	receiver  *otlpreceiver.Receiver
	providers *sdkbridge.Providers
	executor  *Executor
	card      *a2a.AgentCard
	tasks     *a2aserve.TaskStore
	push      *a2aserve.Push
	handler   http.Handler
	// mcp serves the tasks' MCP servers, reached at mcpURL.
	mcp    *mcpserve.Host
	mcpURL string
	// a2aAuth and otlpAuth are nil when off (auth.go).
	a2aAuth, otlpAuth *a2aserve.TokenAuth

	ln     net.Listener
	otlpLn net.Listener

	serveOnce sync.Once
}

// NewServer opens the listeners (so the address is known before Serve,
// also for port 0) and builds the store, the telemetry, the executor and
// the handlers. Serve runs it; if Serve is never called, Close releases it.
func NewServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	if opts.Host == "" {
		opts.Host = DefaultHost
	}
	if opts.ServiceName == "" {
		opts.ServiceName = DefaultServiceName
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("server: port %d out of range", opts.Port)
	}
	if opts.CardURL != "" {
		if _, err := checkParticipantURL(opts.CardURL); err != nil {
			return nil, fmt.Errorf("server: card URL: %w", err)
		}
	}
	s := &Server{opts: opts, log: opts.Logger}

	ln, err := net.Listen("tcp", net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	s.ln = ln
	if opts.OTLPAddr != "" {
		if s.otlpLn, err = net.Listen("tcp", opts.OTLPAddr); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("server: OTLP listen: %w", err)
		}
	}
	if err := s.build(ctx); err != nil {
		s.closeListeners()
		return nil, err
	}
	return s, nil
}

func (s *Server) build(ctx context.Context) error {
	opts := s.opts
	if err := s.newAuth(); err != nil {
		return err
	}
	s.store = tracestore.NewStore(opts.StoreLimits)
	s.receiver = otlpreceiver.NewReceiver(s.store, opts.ReceiverLimits)
	s.receiver.SetLogger(s.log)
	// The provider records into the store through a TaskTraceRecorder, so
	// only the task traces under assessment are held: a server that runs
	// for days must not fill its store with the traces of its requests.
	providers, err := sdkbridge.NewProviders(ctx, sdkbridge.ProviderOptions{
		ServiceName: opts.ServiceName,
		Attributes:  []attribute.KeyValue{otelmap.AttrRole.String(otelmap.RoleAssessor)},
		Getenv:      opts.Getenv,
	})
	if err != nil {
		return fmt.Errorf("server: telemetry: %w", err)
	}
	s.providers = providers
	recorder := NewTaskTraceRecorder(s.store)
	providers.Tracer.RegisterSpanProcessor(recorder)
	cardURL := opts.CardURL
	if cardURL == "" {
		cardURL = a2aserve.BaseURL(s.ln.Addr()) + "/"
	}
	mcpURL := opts.MCPURL
	if mcpURL == "" {
		mcpURL = strings.TrimSuffix(cardURL, "/") + mcpserve.DefaultPath
	} else if _, err := checkParticipantURL(mcpURL); err != nil {
		_ = providers.Shutdown(ctx)
		return fmt.Errorf("server: MCP URL: %w", err)
	}
	s.mcpURL = mcpURL
	if s.mcp, err = mcpserve.New(mcpserve.Options{BaseURL: mcpURL, TracerProvider: providers.Tracer, OwnSpan: recorder.Started, Logger: s.log}); err != nil {
		_ = providers.Shutdown(ctx)
		return fmt.Errorf("server: %w", err)
	}
	judge := opts.Judge
	if judge == nil {
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		cfg := llmconfig.FromEnv(getenv)
		judge = &cfg
	}
	s.executor, err = NewExecutor(ExecutorOptions{
		Scenarios:        opts.Scenarios,
		Unavailable:      opts.Unavailable,
		Store:            s.store,
		TracerProvider:   providers.Tracer,
		Recorder:         recorder,
		MeterProvider:    providers.Meter,
		Evaluators:       opts.Evaluators,
		Judge:            *judge,
		ProgressInterval: opts.ProgressInterval,
		Messenger:        opts.Messenger,
		Conventions:      opts.Conventions,
		Tools:            s.mcp,
		Logger:           opts.Logger,
	})
	if err != nil {
		_ = providers.Shutdown(ctx)
		return fmt.Errorf("server: %w", err)
	}
	cardOpts := opts.Card
	cardOpts.URL = cardURL
	s.card = NewAgentCard(cardOpts)
	if s.tasks, err = a2aserve.NewTaskStore(opts.TaskLimits); err != nil {
		_ = providers.Shutdown(ctx)
		return fmt.Errorf("server: %w", err)
	}
	if s.push, err = newPush(opts); err != nil {
		_ = providers.Shutdown(ctx)
		return fmt.Errorf("server: %w", err)
	}
	s.a2aAuth.Declare(s.card)
	s.handler, err = s.newHandler()
	if err != nil {
		_ = s.push.Close(ctx)
		_ = providers.Shutdown(ctx)
		return err
	}
	return nil
}

// newPush builds the push notifications: webhooks are held to the
// participant allow-list, both when a config is set (CheckURL) and when
// connecting (the allow-list's transport checks the addresses a name
// resolves to), so a client cannot make the green agent reach a host the
// operator did not allow.
func newPush(opts ServerOptions) (*a2aserve.Push, error) {
	po := opts.Push
	allow := opts.Messenger.Allow
	if po.CheckURL == nil && allow != nil {
		po.CheckURL = allow.CheckURL
	}
	if po.Transport == nil {
		po.Transport = allow.Transport()
	}
	if po.Logger == nil {
		po.Logger = opts.Logger
	}
	return a2aserve.NewPush(po)
}

// newHandler serves the card, a health check and JSON-RPC of both protocol
// versions (a2aserve), the receiver's and store's counters (StatsPath), and the
// OTLP receiver, each behind its token when one is set (auth.go). Only the
// JSON-RPC requests are traced: a span per OTLP export would be a trace per
// export.
func (s *Server) newHandler() (http.Handler, error) {
	mux, err := a2aserve.NewHandler(a2aserve.Options{
		Card:           s.card,
		Executor:       s.executor,
		TaskStore:      s.tasks,
		Push:           s.push,
		TracerProvider: s.providers.Tracer,
		Logger:         s.log,
		SSEKeepAlive:   s.opts.SSEKeepAlive,
		MaxBodyBytes:   maxRPCBody,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	mux.HandleFunc(StatsPath, s.serveStats)
	return s.protect(mux), nil
}

// Addr is the main listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// OTLPAddr is the OTLP listener's address, nil without one.
func (s *Server) OTLPAddr() net.Addr {
	if s.otlpLn == nil {
		return nil
	}
	return s.otlpLn.Addr()
}

// URL is the base URL of the main listener, http://host:port/.
func (s *Server) URL() string { return a2aserve.BaseURL(s.ln.Addr()) + "/" }

// Card is the agent card served.
func (s *Server) Card() *a2a.AgentCard { return s.card }

// MCP is the host of the tasks' MCP endpoints.
func (s *Server) MCP() *mcpserve.Host { return s.mcp }

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Executor is the server's executor.
func (s *Server) Executor() *Executor { return s.executor }

// Tasks is the server's A2A task store.
func (s *Server) Tasks() *a2aserve.TaskStore { return s.tasks }

// Push is the server's push notifications (their Stats count deliveries).
func (s *Server) Push() *a2aserve.Push { return s.push }

// Store is the server's trace store.
func (s *Server) Store() *tracestore.Store { return s.store }

// Receiver is the OTLP/HTTP receiver (its Stats count what it took and
// turned away).
func (s *Server) Receiver() *otlpreceiver.Receiver { return s.receiver }

// Serve serves until ctx ends, then shuts down gracefully: it stops
// accepting connections, ends the assessments under way (their tasks end
// failed, saying the green agent is shutting down), waits for open
// requests up to ShutdownTimeout, and flushes the telemetry. It returns
// nil after a shutdown that ctx asked for.
func (s *Server) Serve(ctx context.Context) error {
	err := errors.New("server: Serve called twice")
	s.serveOnce.Do(func() { err = s.serve(ctx) })
	return err
}

func (s *Server) serve(ctx context.Context) error {
	var also []a2aserve.Endpoint
	if s.otlpLn != nil {
		otlpMux := http.NewServeMux()
		otlpMux.Handle(otlpreceiver.TracesPath, s.otlpHandler())
		also = append(also, a2aserve.Endpoint{Listener: s.otlpLn, Handler: otlpMux})
	}
	attrs := []any{"url", s.card.SupportedInterfaces[0].URL, "listen", s.ln.Addr().String(),
		"scenarios", s.executor.Scenarios(), "otlp", s.URL() + strings.TrimPrefix(otlpreceiver.TracesPath, "/")}
	if s.otlpLn != nil {
		attrs = append(attrs, "otlp_listener", s.otlpLn.Addr().String())
	}
	attrs = append(attrs, "a2a_auth", s.a2aAuth != nil, "otlp_auth", s.otlpAuth != nil)
	adm := s.store.AdmissionLimits()
	attrs = append(attrs, "otlp_traces_per_source", adm.MaxTracesPerSource, "otlp_reserved_traces", adm.MaxReserved, "otlp_strict_ingest", adm.StrictIngest)
	s.log.Info("green agent serving", attrs...)

	err := a2aserve.Serve(ctx, s.ln, s.handler, a2aserve.ServeOptions{
		Also:            also,
		ShutdownTimeout: s.opts.ShutdownTimeout,
		Tick:            s.store.Sweep,
		TickInterval:    sweepInterval,
		BeforeShutdown: func() error {
			s.log.Info("green agent shutting down", "running_assessments", s.executor.Running(), "timeout", s.opts.ShutdownTimeout)
			// Running assessments end now, so their streams close with a
			// failed status rather than being cut.
			s.executor.Shutdown(ErrShuttingDown)
			return nil
		},
		// The telemetry is flushed first; the last notifications (the
		// final status of the assessments ended above, under way since)
		// get what is left of the shutdown's time.
		AfterShutdown: func(ctx context.Context) error {
			err := s.providers.Shutdown(ctx)
			if perr := s.push.Close(ctx); perr != nil {
				// A webhook that does not answer is the client's
				// problem, not a failed shutdown.
				s.log.Warn("green agent shutting down", "err", perr, "push", s.push.Stats())
			}
			return err
		},
		Logger:     s.log,
		ErrorLevel: slog.LevelWarn,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// Close releases a server that was never served.
func (s *Server) Close(ctx context.Context) error {
	s.closeListeners()
	return errors.Join(s.push.Close(ctx), s.providers.Shutdown(ctx))
}

func (s *Server) closeListeners() {
	_ = s.ln.Close()
	if s.otlpLn != nil {
		_ = s.otlpLn.Close()
	}
}

// ListenAndServe is NewServer and Serve: it serves until ctx ends.
func ListenAndServe(ctx context.Context, opts ServerOptions) error {
	s, err := NewServer(ctx, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// DefaultScenarios builds the scenarios a green agent serves: coordination
// (from the ground truth and PeerRead, as opts locate them) and scicode
// (from sciOpts.DataDir, else the data scicode.DefaultDir finds, with the
// sandbox's defaults unless sciOpts says otherwise; see docs/scicode.md).
// A scenario
// that cannot be built is listed in unavailable with the reason, so a
// request for it is rejected saying why rather than failing later.
func DefaultScenarios(opts coordination.Options, sciOpts scicode.Options) (scenarios map[string]scenario.Scenario, unavailable map[string]string) {
	scenarios, unavailable = map[string]scenario.Scenario{}, map[string]string{}
	if c, err := coordination.New(opts); err != nil {
		slog.Warn("scenario coordination is not available", "err", err)
		unavailable[scenario.Coordination] = err.Error()
	} else {
		scenarios[scenario.Coordination] = c
	}
	if sc, err := scicode.New(context.Background(), sciOpts); err != nil {
		slog.Warn("scenario scicode is not available", "err", err)
		unavailable[scenario.SciCode] = err.Error()
	} else {
		scenarios[scenario.SciCode] = sc
	}
	return scenarios, unavailable
}
