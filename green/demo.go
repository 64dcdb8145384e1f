package green

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// The demo: `green demo` runs the whole span pipeline on loopback with
// nothing configured. A small simulated agent team (a coordinator and two
// reviewers, each a real HTTP server with its own tracer provider exporting
// real OTLP/HTTP protobuf to the green agent's receiver) reviews three
// built-in paper stubs; the green agent drives it from its own HOST spans
// (recorded in process), waits for each task's trace to settle, rebuilds it
// and runs the evaluators. So both roads of spans, W3C propagation across
// processes, CLIENT/SERVER pairing and the evaluators are exercised without
// a data set, an LLM or a collector.

// Names of the demo's services and agents.
const (
	DemoGreenService = "coordbench-green"
	DemoCoordinator  = "coordinator"
	DemoReviewer1    = "reviewer-1"
	DemoReviewer2    = "reviewer-2"
)

// Demo defaults.
const (
	DefaultDemoTimeout       = 60 * time.Second
	DefaultDemoSettleQuiet   = 300 * time.Millisecond
	DefaultDemoSettleMaxWait = 10 * time.Second
)

const (
	// reviewPath is where every demo agent takes a review request.
	reviewPath = "/review"
	// maxDemoBody bounds what a demo agent reads from a peer; the messages
	// are a few hundred bytes.
	maxDemoBody = 1 << 20
	// demoChatModel is what the reviewers' rule "model" calls itself on
	// its chat span.
	demoChatModel = "rule-based"
	demoChatName  = "demo-rule"
	// callTimeout bounds one agent-to-agent call; shutdownTimeout one
	// component's shutdown, so a stuck one cannot hold the demo.
	callTimeout     = 15 * time.Second
	shutdownTimeout = 5 * time.Second
	flushTimeout    = 5 * time.Second
)

// DemoOptions configure RunDemo. The zero value runs the demo as
// `green demo` does.
type DemoOptions struct {
	// Evaluators default to evals.Default; Config switches them.
	Evaluators *evals.Registry
	Config     evals.Config
	// Timeout bounds the whole demo (default 60 s).
	Timeout time.Duration
	// SettleQuiet and SettleMaxWait say when a task's trace is complete:
	// no span for SettleQuiet after its root ended (default 300 ms), at
	// most SettleMaxWait (default 10 s).
	SettleQuiet   time.Duration
	SettleMaxWait time.Duration
	// Getenv reads the OpenTelemetry environment of the green agent's own
	// providers; nil means os.Getenv. Tests pin it so a developer's
	// OTEL_EXPORTER_OTLP_ENDPOINT does not change what they see.
	Getenv func(string) string
}

func (o DemoOptions) withDefaults() DemoOptions {
	if o.Evaluators == nil {
		o.Evaluators = evals.Default
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultDemoTimeout
	}
	if o.SettleQuiet <= 0 {
		o.SettleQuiet = DefaultDemoSettleQuiet
	}
	if o.SettleMaxWait <= 0 {
		o.SettleMaxWait = DefaultDemoSettleMaxWait
	}
	return o
}

// demoPaper is one built-in task. The stubs are written for the demo (no
// data set needed); Expected is the decision a program committee would
// have taken, which the team's answer is scored against.
type demoPaper struct {
	ID       string
	Title    string
	Abstract string
	Expected string
}

// demoPapers are the demo's tasks. The third is a deliberate trap: its
// abstract is modest in tone (many negative cue words) but Expected says the
// paper was accepted, so the rule-based team gets it wrong and the outcome
// evaluator has a failure to report.
var demoPapers = []demoPaper{
	{
		ID:    "paper-1",
		Title: "Sparse Routing for Mixture-of-Experts Translation",
		Abstract: "We present a novel sparse routing scheme that outperforms dense baselines on four language pairs, " +
			"with a rigorous ablation of every component. Results are reproducible and consistent across seeds, " +
			"and the method is simple to implement.",
		Expected: decisionAccept,
	},
	{
		ID:    "paper-2",
		Title: "A Preliminary Look at Prompt Length in Dialogue Agents",
		Abstract: "This preliminary study reports anecdotal evidence from a small pilot with a single model. " +
			"The contribution is incremental and the evaluation protocol is unclear.",
		Expected: decisionReject,
	},
	{
		ID:    "paper-3",
		Title: "Curriculum Ordering Revisited",
		Abstract: "We revisit a known curriculum heuristic in a narrow setting and find that it matters more than reported. " +
			"Although the study is limited to small models, the analysis is careful and the effect is significant.",
		Expected: decisionAccept,
	},
}

const (
	decisionAccept = "accept"
	decisionReject = "reject"
)

// lexicon is a reviewer's rule: the cue words it counts. The decision rule
// of the demo team, documented here because the outcome depends on it:
//
//   - a reviewer lower-cases the title and abstract, splits them into words
//     (runs of letters), and counts the words in its positive and its
//     negative list;
//   - its recommendation is 3 + positives - negatives, clamped to 1..5, and
//     it recommends accept at 4 or more;
//   - the coordinator asks both reviewers, averages their recommendations,
//     and answers accept when the mean is at least 3.5.
//
// reviewer-1 reads for soundness, reviewer-2 for novelty and clarity, so the
// two can disagree.
type lexicon struct {
	Focus    string
	Positive []string
	Negative []string
}

var demoLexicons = map[string]lexicon{
	DemoReviewer1: {
		Focus:    "soundness",
		Positive: []string{"rigorous", "ablation", "reproducible", "consistent", "significant", "proof"},
		Negative: []string{"anecdotal", "preliminary", "small", "single", "unverified"},
	},
	DemoReviewer2: {
		Focus:    "novelty and clarity",
		Positive: []string{"novel", "first", "outperforms", "simple", "clear", "general"},
		Negative: []string{"incremental", "unclear", "known", "narrow", "limited"},
	},
}

// score applies the rule to text.
func (l lexicon) score(text string) (pos, neg int, rec float64) {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	in := func(list []string, w string) bool {
		for _, x := range list {
			if x == w {
				return true
			}
		}
		return false
	}
	for _, w := range words {
		switch {
		case in(l.Positive, w):
			pos++
		case in(l.Negative, w):
			neg++
		}
	}
	rec = math.Max(1, math.Min(5, float64(3+pos-neg)))
	return pos, neg, rec
}

// reviewRequest is what the green agent sends the coordinator and the
// coordinator sends each reviewer.
type reviewRequest struct {
	TaskID   string `json:"task_id"`
	Title    string `json:"title"`
	Abstract string `json:"abstract"`
}

// prompt is the request as message text, for the GenAI content attributes.
func (r reviewRequest) prompt() string {
	return fmt.Sprintf("Review this paper and answer accept or reject with a recommendation from 1 to 5.\nTitle: %s\nAbstract: %s",
		r.Title, r.Abstract)
}

// reviewAnswer is an agent's answer: a reviewer's own review, or the
// coordinator's decision with the reviews it was built from.
type reviewAnswer struct {
	Agent          string         `json:"agent"`
	Decision       string         `json:"decision"`
	Recommendation float64        `json:"recommendation"`
	Focus          string         `json:"focus,omitempty"`
	Positive       int            `json:"positive_cues,omitempty"`
	Negative       int            `json:"negative_cues,omitempty"`
	Reviews        []reviewAnswer `json:"reviews,omitempty"`
}

// genAIMessage is the GenAI semantic conventions' JSON message form, used
// for gen_ai.input.messages and gen_ai.output.messages.
type genAIMessage struct {
	Role         string      `json:"role"`
	Parts        []genAIPart `json:"parts"`
	FinishReason string      `json:"finish_reason,omitempty"`
}

type genAIPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// genAIMessages encodes one text message. The text is truncated before
// encoding so the attribute stays valid JSON.
func genAIMessages(role, text, finishReason string) string {
	b, err := json.Marshal([]genAIMessage{{
		Role:         role,
		Parts:        []genAIPart{{Type: "text", Content: otelmap.TruncateContent(text)}},
		FinishReason: finishReason,
	}})
	if err != nil { // cannot happen for strings
		return ""
	}
	return string(b)
}

// demoPropagator carries W3C trace context between the demo's processes.
// It is set on every otelhttp handler and transport rather than globally,
// so the demo changes nothing in the process that runs it.
var demoPropagator = propagation.TraceContext{}

// httpMethodName names otelhttp client spans after the method ("POST"), as
// the HTTP semantic conventions do for spans without a route.
func httpMethodName(_ string, r *http.Request) string { return r.Method }

// newTracedClient returns an HTTP client whose requests are CLIENT spans of
// tp and carry traceparent. Its transport is its own, so closing its idle
// connections at the end leaves no goroutine behind.
func newTracedClient(tp trace.TracerProvider) (*http.Client, *http.Transport) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{
		Transport: otelhttp.NewTransport(base,
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(demoPropagator),
			otelhttp.WithSpanNameFormatter(httpMethodName)),
		Timeout: callTimeout,
	}, base
}

// invokeAgent calls the agent callee at baseURL inside an `invoke_agent
// callee` CLIENT span, the GenAI conventions' agent invocation span; the
// HTTP CLIENT span that otelhttp adds under it carries the traceparent that
// pairs it with the callee's SERVER span.
func invokeAgent(ctx context.Context, tracer trace.Tracer, client *http.Client, callee, baseURL string, req reviewRequest) (ans reviewAnswer, err error) {
	attrs := []attribute.KeyValue{
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrGenAIAgentName.String(callee),
		otelmap.AttrGenAIConversationID.String(req.TaskID),
		otelmap.AttrCallType.String(string(tracedata.CallAgent)),
		otelmap.AttrGenAIInputMessages.String(genAIMessages("user", req.prompt(), "")),
	}
	if u, perr := url.Parse(baseURL); perr == nil {
		attrs = append(attrs, otelmap.AttrServerAddress.String(u.Hostname()))
		if port, aerr := strconv.Atoi(u.Port()); aerr == nil {
			attrs = append(attrs, otelmap.AttrServerPort.Int(port))
		}
	}
	ctx, span := tracer.Start(ctx, otelmap.SpanInvokeAgentPrefix+callee,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	// errType is error.type: low-cardinality, the HTTP status code when
	// the callee answered with one, as the HTTP conventions do.
	errType := "_OTHER"
	defer func() {
		if err != nil {
			recordSpanError(span, err, errType)
		}
		span.End()
	}()

	body, err := json.Marshal(req)
	if err != nil {
		return ans, fmt.Errorf("invoke %s: encode request: %w", callee, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+reviewPath, bytes.NewReader(body))
	if err != nil {
		return ans, fmt.Errorf("invoke %s: %w", callee, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			errType = "timeout"
		}
		return ans, fmt.Errorf("invoke %s: %w", callee, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxDemoBody))
	if err != nil {
		return ans, fmt.Errorf("invoke %s: read answer: %w", callee, err)
	}
	if resp.StatusCode != http.StatusOK {
		errType = strconv.Itoa(resp.StatusCode)
		return ans, fmt.Errorf("invoke %s: HTTP %d: %s", callee, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return ans, fmt.Errorf("invoke %s: decode answer: %w", callee, err)
	}
	span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(genAIMessages("assistant", string(raw), "stop")))
	return ans, nil
}

// demoAgent is one member of the simulated team: a real HTTP server on
// loopback with its own tracer provider, as a separate process would have.
type demoAgent struct {
	name     string
	url      string
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	srv      *http.Server
	served   chan error
	client   *http.Client    // the coordinator's, to call its peers
	clientTr *http.Transport // its transport, to close idle connections
	peers    []*demoAgent    // the coordinator's reviewers
	lex      lexicon         // a reviewer's rule
}

// startDemoAgent starts agent name: its exporters, its tracer provider, and
// its server. exporterClient carries its spans to the receiver at
// receiverURL; when external is set its spans also go to the OTLP endpoint
// the environment names, so a backend such as Jaeger shows whole traces.
func startDemoAgent(ctx context.Context, name, receiverURL string, exporterClient *http.Client, external bool) (*demoAgent, error) {
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(receiverURL+otelmap.TracesPath),
		otlptracehttp.WithHTTPClient(exporterClient))
	if err != nil {
		return nil, fmt.Errorf("agent %s: OTLP exporter: %w", name, err)
	}
	// The resource is built from the agent's name alone, not from the
	// environment, so OTEL_SERVICE_NAME cannot rename every agent at once.
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(otelmap.AttrServiceName.String(name))),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)),
	}
	if external {
		ext, err := otlptracehttp.New(ctx)
		if err != nil {
			_ = exp.Shutdown(ctx)
			return nil, fmt.Errorf("agent %s: external OTLP exporter: %w", name, err)
		}
		opts = append(opts, sdktrace.WithBatcher(ext))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	a := &demoAgent{name: name, tp: tp, tracer: tp.Tracer(instrumentationName + "/demo"), served: make(chan error, 1)}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("agent %s: listen: %w", name, err), tp.Shutdown(ctx))
	}
	a.url = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+reviewPath, a.serveReview)
	a.srv = &http.Server{
		Handler: otelhttp.NewHandler(mux, name,
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(demoPropagator)),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { a.served <- a.srv.Serve(ln) }()
	return a, nil
}

// shutdown stops the server, then flushes and stops the tracer provider so
// the spans of its last requests still reach the receiver.
func (a *demoAgent) shutdown(ctx context.Context) error {
	var errs []error
	if err := a.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("agent %s: stop server: %w", a.name, err))
	}
	if err := <-a.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("agent %s: serve: %w", a.name, err))
	}
	if a.clientTr != nil {
		a.clientTr.CloseIdleConnections()
	}
	if err := a.tp.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("agent %s: stop tracing: %w", a.name, err))
	}
	return errors.Join(errs...)
}

// serveReview runs one review request inside the agent's INTERNAL
// `invoke_agent <self>` span, the agent's own work under the SERVER span
// that received the call.
func (a *demoAgent) serveReview(w http.ResponseWriter, r *http.Request) {
	var req reviewRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxDemoBody)).Decode(&req); err != nil {
		http.Error(w, "bad review request: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, span := a.tracer.Start(r.Context(), otelmap.SpanInvokeAgentPrefix+a.name,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
			otelmap.AttrGenAIAgentName.String(a.name),
			otelmap.AttrGenAIConversationID.String(req.TaskID),
			otelmap.AttrCallType.String(string(tracedata.CallAgent)),
			otelmap.AttrGenAIInputMessages.String(genAIMessages("user", req.prompt(), "")),
		))
	defer span.End()

	var ans reviewAnswer
	var err error
	if len(a.peers) > 0 {
		ans, err = a.coordinate(ctx, req)
	} else {
		ans = a.review(ctx, req)
	}
	if err != nil {
		recordSpanError(span, err, "peer_failed")
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := json.Marshal(ans)
	if err != nil {
		recordSpanError(span, err, "_OTHER")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	span.SetAttributes(otelmap.AttrGenAIOutputMessages.String(genAIMessages("assistant", string(out), "stop")))
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// coordinate fans the request out to every reviewer at once and decides by
// their mean recommendation (see lexicon).
func (a *demoAgent) coordinate(ctx context.Context, req reviewRequest) (reviewAnswer, error) {
	answers := make([]reviewAnswer, len(a.peers))
	errs := make([]error, len(a.peers))
	var wg sync.WaitGroup
	for i, p := range a.peers {
		wg.Go(func() {
			answers[i], errs[i] = invokeAgent(ctx, a.tracer, a.client, p.name, p.url, req)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return reviewAnswer{}, fmt.Errorf("coordinator: %w", err)
	}
	sum := 0.0
	for _, ans := range answers {
		sum += ans.Recommendation
	}
	mean := sum / float64(len(answers))
	decision := decisionReject
	if mean >= 3.5 {
		decision = decisionAccept
	}
	return reviewAnswer{Agent: a.name, Decision: decision, Recommendation: mean, Reviews: answers}, nil
}

// review applies the reviewer's rule inside a `chat demo-rule` TOOL span,
// standing where a real reviewer's LLM call would be.
func (a *demoAgent) review(ctx context.Context, req reviewRequest) reviewAnswer {
	_, span := a.tracer.Start(ctx, otelmap.SpanChatPrefix+demoChatName,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			otelmap.AttrGenAIOperationName.String(otelmap.OpChat),
			otelmap.AttrGenAIRequestModel.String(demoChatModel),
			otelmap.AttrGenAIProviderName.String("coordbench.demo"),
			otelmap.AttrCallType.String(string(tracedata.CallTool)),
			otelmap.AttrGenAIInputMessages.String(genAIMessages("user", req.Title+"\n"+req.Abstract, "")),
		))
	defer span.End()
	pos, neg, rec := a.lex.score(req.Title + " " + req.Abstract)
	decision := decisionReject
	if rec >= 4 {
		decision = decisionAccept
	}
	verdict := fmt.Sprintf("%s: %d positive and %d negative %s cues, recommendation %.0f", decision, pos, neg, a.lex.Focus, rec)
	span.SetAttributes(
		otelmap.AttrGenAIResponseModel.String(demoChatModel),
		otelmap.AttrGenAIOutputMessages.String(genAIMessages("assistant", verdict, "stop")),
	)
	return reviewAnswer{Agent: a.name, Decision: decision, Recommendation: rec, Focus: a.lex.Focus, Positive: pos, Negative: neg}
}

// demoRun is one run of the demo: the green side and the team.
type demoRun struct {
	opts      DemoOptions
	store     *otelmap.Store
	tracer    trace.Tracer
	client    *http.Client
	telemetry *EvalTelemetry
	assessor  *traceAssessor
	agents    []*demoAgent
	entry     *demoAgent
	assessID  string
	warnings  []string
	warned    map[string]bool
}

// warnOnce records a warning the first time key is seen, so that a fault
// that repeats every task (an external OTLP endpoint that is down) is
// reported once rather than per task and agent.
func (d *demoRun) warnOnce(key, msg string) {
	if d.warned[key] {
		return
	}
	if d.warned == nil {
		d.warned = map[string]bool{}
	}
	d.warned[key] = true
	slog.Warn("demo: " + msg)
	d.warnings = append(d.warnings, msg)
}

// RunDemo runs the demo end to end and returns its result (see the comment
// at the top of this file for what runs). Everything it starts is stopped
// before it returns. Only a failure to start, or the
// deadline, is an error: a task whose call fails is a recorded failure.
func RunDemo(ctx context.Context, opts DemoOptions) (*Result, error) {
	started := time.Now()
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	d := &demoRun{opts: opts}

	// Everything started is pushed here and stopped in reverse order, each
	// step with its own deadline so that a cancelled ctx still shuts down.
	var stops []func(context.Context) error
	stopAll := func() []error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			if err := stops[i](sctx); err != nil {
				errs = append(errs, err)
			}
			scancel()
		}
		stops = nil
		return errs
	}
	defer func() {
		for _, err := range stopAll() {
			slog.Warn("demo: shutdown", "err", err)
		}
	}()

	// The green side: the store, the OTLP receiver on loopback, and the
	// green agent's own providers recording into the store in process.
	d.store = otelmap.NewStore(otelmap.Limits{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: receiver listen: %w", err)
	}
	receiverURL := "http://" + ln.Addr().String()
	receiverSrv := &http.Server{Handler: otelmap.NewReceiver(d.store, otelmap.ReceiverLimits{}), ReadHeaderTimeout: 5 * time.Second}
	receiverDone := make(chan error, 1)
	go func() { receiverDone <- receiverSrv.Serve(ln) }()
	stops = append(stops, func(ctx context.Context) error {
		err := receiverSrv.Shutdown(ctx)
		if serr := <-receiverDone; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		if err != nil {
			return fmt.Errorf("stop OTLP receiver: %w", err)
		}
		return nil
	})

	providers, err := otelmap.NewProviders(ctx, otelmap.ProviderOptions{
		ServiceName: DemoGreenService,
		Attributes:  []attribute.KeyValue{otelmap.AttrRole.String(otelmap.RoleAssessor)},
		Store:       d.store,
		Getenv:      opts.Getenv,
	})
	if err != nil {
		return nil, fmt.Errorf("demo: green telemetry: %w", err)
	}
	stops = append(stops, providers.Shutdown)
	d.tracer = providers.Tracer.Tracer(instrumentationName)
	if d.telemetry, err = NewEvalTelemetry(providers.Tracer, providers.Meter); err != nil {
		return nil, fmt.Errorf("demo: evaluator telemetry: %w", err)
	}
	d.assessor = &traceAssessor{store: d.store, evaluators: opts.Evaluators, telemetry: d.telemetry}
	// The judge's LLM calls, when a key is set, become chat spans of this
	// run's provider.
	evals.SetChatObserver(d.telemetry.ChatObserver())
	stops = append(stops, func(context.Context) error { evals.SetChatObserver(nil); return nil })
	var greenTr *http.Transport
	d.client, greenTr = newTracedClient(providers.Tracer)
	stops = append(stops, func(context.Context) error { greenTr.CloseIdleConnections(); return nil })

	// The team. Its exporters share one transport, closed after every
	// agent has flushed.
	exportTr := http.DefaultTransport.(*http.Transport).Clone()
	exportClient := &http.Client{Transport: exportTr, Timeout: 10 * time.Second}
	stops = append(stops, func(context.Context) error { exportTr.CloseIdleConnections(); return nil })
	for _, name := range []string{DemoReviewer1, DemoReviewer2, DemoCoordinator} {
		a, err := startDemoAgent(ctx, name, receiverURL, exportClient, providers.ExportingTraces)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		stops = append(stops, a.shutdown)
		d.agents = append(d.agents, a)
		if name == DemoCoordinator {
			a.peers = slices.Clone(d.agents[:len(d.agents)-1])
			a.client, a.clientTr = newTracedClient(a.tp)
			d.entry = a
		} else {
			a.lex = demoLexicons[name]
		}
	}
	slog.Info("demo: team up", "receiver", receiverURL+otelmap.TracesPath,
		"coordinator", d.entry.url, "tasks", len(demoPapers))

	res := &Result{Schema: ResultSchema, Domain: "demo", Tasks: []TaskResult{}}
	for _, a := range d.agents {
		res.Inputs = append(res.Inputs, a.name+"="+a.url)
	}

	// The assessment root span; every task is a trace of its own, linked
	// to it, so each task's trace id opens exactly that task in a backend.
	actx, assessment := d.tracer.Start(ctx, otelmap.SpanAssessment,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(otelmap.AttrCallType.String(string(tracedata.CallHost))))
	d.assessID = "demo-" + assessment.SpanContext().TraceID().String()
	assessment.SetAttributes(otelmap.AttrAssessmentID.String(d.assessID))

	for _, p := range demoPapers {
		tr, err := d.runTask(actx, p)
		if err != nil {
			recordSpanError(assessment, err, "_OTHER")
			assessment.End()
			return nil, fmt.Errorf("demo: %w", err)
		}
		res.Tasks = append(res.Tasks, tr)
	}
	scoreResult(res, started)
	assessment.SetAttributes(attribute.Float64("coordbench.score", *res.Score))
	assessment.End()

	res.Warnings = append(res.Warnings, d.warnings...)
	for _, err := range stopAll() {
		slog.Warn("demo: shutdown", "err", err)
		res.Warnings = append(res.Warnings, err.Error())
	}
	return res, nil
}

// runTask runs one paper: the task span (a new root, linked to the
// assessment), the call to the coordinator, the wait for the trace to
// settle, assembly, the outcome and the evaluators. The returned error is
// only ctx ending; anything else is recorded in the task.
func (d *demoRun) runTask(ctx context.Context, p demoPaper) (TaskResult, error) {
	tctx, task := startTaskSpan(ctx, d.tracer, p.ID, d.assessID)
	req := reviewRequest{TaskID: p.ID, Title: p.Title, Abstract: p.Abstract}
	ans, callErr := invokeAgent(tctx, d.tracer, d.client, d.entry.name, d.entry.url, req)
	if callErr != nil {
		recordSpanError(task, callErr, "agent_failed")
	}
	task.End()

	// The agents batch their spans; flushing them now means the settle
	// wait only has to cover the quiet interval.
	for _, a := range d.agents {
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		if err := a.tp.ForceFlush(fctx); err != nil {
			d.warnOnce(fmt.Sprintf("flush %s: %v", a.name, err), fmt.Sprintf("task %s: flush %s: %v", p.ID, a.name, err))
		}
		cancel()
	}
	outcome := demoOutcome(p, ans, callErr)
	in := evals.Inputs{Outcome: outcome, Config: d.opts.Config, Participants: []string{DemoCoordinator, DemoReviewer1, DemoReviewer2}}
	tr, warning, err := d.assessor.assess(ctx, task, p.ID,
		settleOptions{Quiet: d.opts.SettleQuiet, MaxWait: d.opts.SettleMaxWait}, in)
	if err != nil {
		return TaskResult{}, err
	}
	if warning != "" {
		d.warnOnce(warning, warning)
	}
	slog.Info("demo: task assessed", "task", p.ID, "trace_id", tr.TraceID,
		"success", outcome.Success, "spans", tr.Coverage.Spans, "interactions", tr.Coverage.Interactions)
	return tr, nil
}

// demoOutcome compares the team's decision with the paper's expected one.
func demoOutcome(p demoPaper, ans reviewAnswer, callErr error) *evals.Outcome {
	if callErr != nil {
		return &evals.Outcome{
			Success: false,
			Summary: fmt.Sprintf("expected %s; the team did not answer: %v", p.Expected, callErr),
			Details: map[string]any{"expected": p.Expected, "error": callErr.Error()},
		}
	}
	ok := ans.Decision == p.Expected
	o := &evals.Outcome{
		Success: ok,
		Summary: fmt.Sprintf("expected %s, the team answered %s (mean recommendation %.1f of 5)", p.Expected, ans.Decision, ans.Recommendation),
		Details: map[string]any{
			"expected":            p.Expected,
			"decision":            ans.Decision,
			"mean_recommendation": ans.Recommendation,
		},
	}
	if ok {
		o.Score = 1
	}
	return o
}
