package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/otelmap"
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

// runAssessment is `green run`: one assessment against live participants,
// through the same executor the A2A server uses, without a server. The
// Markdown summary goes to stderr and the JSON result to stdout; --output
// also writes the results file AgentBeats collects.
func runAssessment(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("green run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	participants := participantList{}
	fs.Var(participants, "participant", "a participant as ROLE=URL (repeatable)")
	configArg := fs.String("config", "", `the request's config as JSON or @file, e.g. {"num_tasks": 2, "entry_role": "coordinator"}`)
	output := fs.String("output", "", `also write the AgentBeats results file {"participants": ..., "results": [...]} here`)
	otlpAddr := fs.String("otlp-addr", "", "serve the OTLP/HTTP receiver (/v1/traces) on this address while the assessment runs, for participants that export spans, e.g. 127.0.0.1:4318")
	progress := fs.Duration("progress-interval", green.DefaultProgressInterval, "longest silence before a progress line")
	var sf scenarioFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "green run: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	if len(participants) == 0 {
		fmt.Fprintf(stderr, "green run: no --participant ROLE=URL given\n")
		fs.Usage()
		return 2
	}
	config, err := readConfigArg(*configArg)
	if err != nil {
		fmt.Fprintf(stderr, "green run: %v\n", err)
		return 2
	}
	// The request goes through the same parser as an A2A request, so the
	// command accepts and rejects exactly what the server does.
	raw, err := json.Marshal(map[string]any{"participants": participants, "config": config})
	if err != nil {
		fmt.Fprintf(stderr, "green run: encode request: %v\n", err)
		return 1
	}
	req, err := green.ParseRequest(string(raw))
	if err != nil {
		fmt.Fprintf(stderr, "green run: %v\n", err)
		return 2
	}

	res, code := assessInProcess(ctx, req, &sf, *otlpAddr, *progress, stderr)
	if res == nil {
		return code
	}
	fmt.Fprint(stderr, green.Summary(res))
	if err := writeJSON(res, "", stdout); err != nil {
		fmt.Fprintf(stderr, "green run: %v\n", err)
		return 1
	}
	if *output != "" {
		file := green.AgentBeatsResults{Participants: req.Participants, Results: []*green.Result{res}}
		if err := writeJSON(file, *output, stdout); err != nil {
			fmt.Fprintf(stderr, "green run: %v\n", err)
			return 1
		}
		slog.Info("run: results file written", "path", *output)
	}
	return 0
}

// assessInProcess builds the store, the green agent's providers (spans
// recorded in process; exported too when the OTLP environment says so),
// the optional receiver and the executor, and runs req. It returns the
// result, or nil and the exit code.
func assessInProcess(ctx context.Context, req *scenario.Request, sf *scenarioFlags, otlpAddr string, progress time.Duration, stderr io.Writer) (*green.Result, int) {
	store := otelmap.NewStore(otelmap.Limits{})
	providers, err := otelmap.NewProviders(ctx, otelmap.ProviderOptions{
		ServiceName: green.DefaultServiceName,
		Attributes:  []attribute.KeyValue{otelmap.AttrRole.String(otelmap.RoleAssessor)},
	})
	if err != nil {
		fmt.Fprintf(stderr, "green run: telemetry: %v\n", err)
		return nil, 1
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

	if otlpAddr != "" {
		ln, err := net.Listen("tcp", otlpAddr)
		if err != nil {
			fmt.Fprintf(stderr, "green run: OTLP listen: %v\n", err)
			return nil, 1
		}
		mux := http.NewServeMux()
		mux.Handle(otelmap.TracesPath, otelmap.NewReceiver(store, otelmap.ReceiverLimits{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
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
		slog.Info("run: OTLP receiver listening", "url", "http://"+ln.Addr().String()+otelmap.TracesPath)
	} else {
		slog.Info("run: no --otlp-addr: participants' spans reach the assessment only as Traceability Extension steps")
	}

	scenarios, unavailable := sf.build()
	exec, err := green.NewExecutor(green.ExecutorOptions{
		Scenarios:        scenarios,
		Unavailable:      unavailable,
		Store:            store,
		TracerProvider:   providers.Tracer,
		Recorder:         recorder,
		MeterProvider:    providers.Meter,
		Judge:            judgeFromEnv("green run"),
		ProgressInterval: progress,
	})
	if err != nil {
		fmt.Fprintf(stderr, "green run: %v\n", err)
		return nil, 1
	}
	res, err := exec.Assess(ctx, req, func(text string) { slog.Info("run: " + text) })
	if err != nil {
		fmt.Fprintf(stderr, "green run: %v\n", err)
		var reqErr *scenario.RequestError
		if errors.As(err, &reqErr) {
			return nil, 2
		}
		return nil, 1
	}
	return res, 0
}

// readConfigArg reads --config: a JSON object, or @file holding one.
func readConfigArg(arg string) (json.RawMessage, error) {
	if arg == "" {
		return json.RawMessage("{}"), nil
	}
	raw := []byte(arg)
	if arg[0] == '@' {
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		raw = b
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("config must be a JSON object: %w", err)
	}
	return raw, nil
}
