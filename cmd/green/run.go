package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// participantList collects repeated --participant ROLE=URL flags.
type participantList map[string]string

func (p participantList) String() string { return fmt.Sprint(map[string]string(p)) }

func (p participantList) Set(v string) error {
	role, u, ok := strings.Cut(v, "=")
	role = strings.TrimSpace(role)
	if !ok || role == "" || strings.TrimSpace(u) == "" {
		return fmt.Errorf("want ROLE=URL, got %q", v)
	}
	if _, dup := p[role]; dup {
		return fmt.Errorf("role %q given twice", role)
	}
	p[role] = strings.TrimSpace(u)
	return nil
}

// runOptions are `green run`'s flags, read: the request as the A2A server
// would parse it, and how to run it.
type runOptions struct {
	req       *scenario.Request
	scenarios scenarioFlags
	otlpAddr  string
	progress  time.Duration
	output    string
	auth      authConfig
	allow     *a2acall.AllowList
	conv      *assemble.Conventions
}

// runAssessment is `green run`: one assessment against live participants,
// through the same executor the A2A server uses, without a server. The
// Markdown summary goes to stderr and the JSON result to stdout; --output
// also writes the results file AgentBeats collects.
func runAssessment(ctx context.Context, c *cli.Command, args []string) int {
	o, code, ok := runFlags(c, args)
	if !ok {
		return code
	}
	return runRequest(ctx, c, &o)
}

func runFlags(c *cli.Command, args []string) (runOptions, int, bool) {
	var o runOptions
	participants := participantList{}
	c.Flags.Var(participants, "participant", "a participant as ROLE=URL (repeatable)")
	configArg := c.Flags.String("config", "", `the request's config as JSON or @file, e.g. {"num_tasks": 2, "entry_role": "coordinator"}`)
	c.Flags.StringVar(&o.output, "output", "", `also write the AgentBeats results file {"participants": ..., "results": [...]} here`)
	c.Flags.StringVar(&o.otlpAddr, "otlp-addr", "", "serve the OTLP/HTTP receiver (/v1/traces) on this address while the assessment runs, for participants that export spans, e.g. 127.0.0.1:4318")
	c.Flags.DurationVar(&o.progress, "progress-interval", green.DefaultProgressInterval, "longest silence before a progress line")
	o.scenarios.register(c.Flags)
	registerAllowFlag(c.Flags, &o.allow)
	registerConventionsFlag(c.Flags, &o.conv)
	var af authFlags
	af.register(c.Flags, false)
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	if len(participants) == 0 {
		return o, c.UsageError("no --participant ROLE=URL given"), false
	}
	var err error
	if o.auth, err = af.load(false); err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	config, err := readConfigArg(*configArg)
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	// The request goes through the same parser as an A2A request, so the
	// command accepts and rejects exactly what the server does.
	raw, err := json.Marshal(map[string]any{"participants": participants, "config": config})
	if err != nil {
		return o, c.Fail(cli.ExitFailure, fmt.Errorf("encode request: %w", err)), false
	}
	if o.req, err = green.ParseRequest(string(raw)); err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	return o, 0, true
}

// runRequest runs o's request, prints the summary to stderr and the JSON
// result to stdout, and writes the results file.
func runRequest(ctx context.Context, c *cli.Command, o *runOptions) int {
	res, code := assessInProcess(ctx, c, o)
	if res == nil {
		return code
	}
	fmt.Fprint(c.Stderr, report.Summary(res))
	if err := writeJSON(res, "", c.Stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if o.output != "" {
		file := green.AgentBeatsResults{Participants: o.req.Participants, Results: []*report.Result{res}}
		if err := writeJSON(file, o.output, c.Stdout); err != nil {
			return c.Fail(cli.ExitFailure, err)
		}
		slog.Info("run: results file written", "path", o.output)
	}
	return cli.ExitOK
}

// assessInProcess builds the store, the green agent's providers (spans
// recorded in process; exported too when the OTLP environment says so),
// the optional receiver and the executor, and runs o's request. It returns
// the result, or nil and the exit code.
func assessInProcess(ctx context.Context, c *cli.Command, o *runOptions) (*report.Result, int) {
	store := tracestore.NewStore(tracestore.Limits{})
	providers, err := sdkbridge.NewProviders(ctx, sdkbridge.ProviderOptions{
		ServiceName: green.DefaultServiceName,
		Attributes:  []attribute.KeyValue{otelmap.AttrRole.String(otelmap.RoleAssessor)},
	})
	if err != nil {
		return nil, c.Fail(cli.ExitFailure, fmt.Errorf("telemetry: %w", err))
	}
	recorder := green.NewTaskTraceRecorder(store)
	providers.Tracer.RegisterSpanProcessor(recorder)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), green.DefaultShutdownTimeout)
		defer cancel()
		if err := providers.Shutdown(sctx); err != nil {
			slog.Warn("run: telemetry shutdown", "err", err)
		}
	}()

	if o.otlpAddr != "" {
		ln, err := net.Listen("tcp", o.otlpAddr)
		if err != nil {
			return nil, c.Fail(cli.ExitFailure, fmt.Errorf("OTLP listen: %w", err))
		}
		var otlpAuth *a2aserve.TokenAuth
		if o.auth.otlpToken != "" {
			if otlpAuth, err = a2aserve.NewTokenAuth(o.auth.otlpToken, "coordbench-green-otlp"); err != nil {
				_ = ln.Close()
				return nil, c.Fail(cli.ExitUsage, fmt.Errorf("OTLP token: %w", err))
			}
		}
		mux := http.NewServeMux()
		mux.Handle(otlpreceiver.TracesPath, otlpAuth.Require(otlpreceiver.NewReceiver(store, otlpreceiver.ReceiverLimits{})))
		srv := &http.Server{Handler: a2aserve.ContainHTTPPanics(a2aserve.BoundBodyRead(mux, a2aserve.DefaultBodyReadTimeout), slog.Default()), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), green.DefaultShutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Warn("run: OTLP receiver", "err", err)
			}
		}()
		slog.Info("run: OTLP receiver listening", "url", "http://"+ln.Addr().String()+otlpreceiver.TracesPath)
	} else {
		slog.Info("run: no --otlp-addr: participants' spans reach the assessment only as Traceability Extension steps")
	}

	scenarios, unavailable := o.scenarios.build()
	defer closeScenarios(scenarios)
	exec, err := green.NewExecutor(green.ExecutorOptions{
		Scenarios:        scenarios,
		Unavailable:      unavailable,
		Store:            store,
		TracerProvider:   providers.Tracer,
		Recorder:         recorder,
		MeterProvider:    providers.Meter,
		Judge:            judgeFromEnv(c.Name),
		ProgressInterval: o.progress,
		Messenger:        a2acall.Options{Credentials: o.auth.participants, Allow: o.allow},
		Conventions:      o.conv,
	})
	if err != nil {
		return nil, c.Fail(cli.ExitFailure, err)
	}
	res, err := exec.Assess(ctx, o.req, func(text string) { slog.Info("run: " + text) })
	if err != nil {
		var reqErr *scenario.RequestError
		if errors.As(err, &reqErr) {
			return nil, c.Fail(cli.ExitUsage, err)
		}
		return nil, c.Fail(cli.ExitFailure, err)
	}
	return res, cli.ExitOK
}
