package green

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/jaegerquery"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// Defaults of a Jaeger search (JaegerSource).
const (
	DefaultJaegerLimit    = 100
	DefaultJaegerPageSize = 20
)

// JaegerSource selects the traces AssessJaeger reads from a Jaeger query
// service: TraceIDs, each fetched by id, or else the traces Search selects.
type JaegerSource struct {
	Client   *jaegerquery.Client
	TraceIDs []pcommon.TraceID
	// Search is by service (and operation) and span start time; its
	// NumTraces is ignored.
	Search jaegerquery.Query
	// PageSize is the most traces one search request asks for (default
	// DefaultJaegerPageSize); Limit the most traces assessed (default
	// DefaultJaegerLimit).
	PageSize int
	Limit    int
}

// JaegerOptions configure AssessJaeger: the offline options, and how many
// traces are fetched and assessed at once (default GOMAXPROCS).
type JaegerOptions struct {
	OfflineOptions
	Workers int
}

// AssessJaeger reads traces from Jaeger's query API and assesses each as
// AssessOTLPFiles assesses a file's: the same decoder (otlpdecode's OTLP
// JSON reader), the same store admission, assembly and evaluators, the
// tasks in the same order (by trace id). So a trace assessed here and the
// same answer saved to a file and assessed with AssessOTLPFiles give the
// same task.
//
// Traces are fetched and assembled by Workers goroutines, each holding
// one trace's spans at a time; a search fetches its next page while the
// workers assemble the previous one, and hands a page's traces out before
// it fetches another. So the spans held at once are at most one page being
// read, and Workers (plus one waiting) traces of the page before: never
// the selection. What is kept of each trace is its assembly (the steps,
// agents and interactions its task reports anyway), and once all are
// assembled the evaluators run on them, Workers at a time, as on a
// file's traces: with what the traces say of each other (a conversation
// split across them).
//
// Ids that Jaeger does not hold are reported together, after the others
// were fetched, as an InputError (jaegerquery.ErrNotFound); so is a search
// that selects nothing. Any other failure (Jaeger unreachable, a malformed
// answer) stops the run and is returned.
func AssessJaeger(ctx context.Context, src JaegerSource, opts JaegerOptions) (*report.Result, error) {
	if src.Client == nil {
		return nil, errors.New("assess jaeger: no client")
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	a := &jaegerRun{
		opts:     opts.OfflineOptions,
		registry: opts.registry(),
		client:   src.Client,
		res:      &report.Result{Schema: report.Schema, Domain: "otlp", Tasks: []report.TaskResult{}},
	}
	var search *jaegerquery.Search
	if len(src.TraceIDs) > 0 {
		// An id named twice is one trace, assessed once.
		var ids []pcommon.TraceID
		named := make(map[pcommon.TraceID]bool, len(src.TraceIDs))
		for _, id := range src.TraceIDs {
			if !named[id] {
				named[id] = true
				ids = append(ids, id)
			}
		}
		src.TraceIDs = ids
		for _, id := range src.TraceIDs {
			a.res.Inputs = append(a.res.Inputs, src.Client.TraceURL(id))
		}
	} else {
		var err error
		search, err = src.Client.NewSearch(src.Search, cmpDefault(src.PageSize, DefaultJaegerPageSize), cmpDefault(src.Limit, DefaultJaegerLimit))
		if err != nil {
			return nil, &InputError{Err: err}
		}
		a.res.Inputs = []string{search.URL()}
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan jaegerJob)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				if err := a.assemble(ctx, j); err != nil {
					cancel(err)
				}
			}
		})
	}
	send := func(j jaegerJob) bool {
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if search == nil {
		for _, id := range src.TraceIDs {
			if !send(jaegerJob{id: trace.TraceID(id), fetch: true}) {
				break
			}
		}
	} else {
		a.produceSearch(ctx, search, send, cancel)
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("assess jaeger: %w", err)
	}
	// The evaluators run once every trace is assembled, as a file's do,
	// since what the traces say of each other (a conversation split across
	// them) weighs in each one's verdict; in trace id order, as a file's.
	slices.SortFunc(a.traces, func(x, y assembledTrace) int { return strings.Compare(x.td.TraceID, y.td.TraceID) })
	tasks, err := a.opts.evaluateTraces(ctx, a.registry, a.traces, workers)
	if err != nil {
		return nil, err
	}
	a.traces = nil
	a.res.Tasks = tasks
	return a.finish(src, search)
}

// jaegerJob is one trace to assemble: its spans, or only its id when the
// worker fetches it.
type jaegerJob struct {
	id    trace.TraceID
	spans []otelmap.Span
	from  string // where the spans came from, for warnings
	fetch bool
}

// jaegerRun is the state of one AssessJaeger call shared by its workers.
type jaegerRun struct {
	opts     OfflineOptions
	registry *evals.Registry
	client   *jaegerquery.Client

	mu      sync.Mutex
	res     *report.Result
	traces  []assembledTrace
	missing []string
}

// produceSearch reads the search's pages and hands each new trace's spans
// to the workers; it returns when the search ends or ctx is done.
func (a *jaegerRun) produceSearch(ctx context.Context, search *jaegerquery.Search, send func(jaegerJob) bool, cancel context.CancelCauseFunc) {
	for page, err := range search.Pages(ctx) {
		if err != nil {
			cancel(err)
			return
		}
		from := "jaeger window " + page.Window.String()
		spans := a.spansOf(page.Traces, from)
		page.Traces = nil
		byTrace := make(map[trace.TraceID][]otelmap.Span, len(page.TraceIDs))
		for _, id := range page.TraceIDs {
			byTrace[trace.TraceID(id)] = nil
		}
		for _, sp := range spans {
			if group, ok := byTrace[sp.TraceID]; ok {
				byTrace[sp.TraceID] = append(group, sp)
			}
		}
		spans = nil
		for _, id := range page.TraceIDs {
			tid := trace.TraceID(id)
			if !send(jaegerJob{id: tid, spans: byTrace[tid], from: from}) {
				return
			}
			delete(byTrace, tid) // the worker holds them now
		}
	}
}

// assemble fetches the job's trace if it must, and assembles it. Only a
// failure that must stop the run is returned.
func (a *jaegerRun) assemble(ctx context.Context, j jaegerJob) error {
	if ctx.Err() != nil {
		return nil
	}
	if j.fetch {
		j.from = a.client.TraceURL(pcommon.TraceID(j.id))
		traces, err := a.client.Trace(ctx, pcommon.TraceID(j.id))
		if errors.Is(err, jaegerquery.ErrNotFound) {
			a.mu.Lock()
			a.missing = append(a.missing, j.id.String())
			a.mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
		j.spans = a.spansOf(traces, j.from)
	}
	// The store a file's spans go through, so admission (duplicate span
	// ids, per-trace bounds) is the same.
	store := tracestore.NewStore(a.opts.Limits)
	added := store.Add(j.spans)
	j.spans = nil
	if added.Rejected > 0 {
		a.warn(fmt.Sprintf("%s: %d spans rejected: %s", j.from, added.Rejected, added.Reason))
	}
	assembled := a.opts.assembleTrace(j.id, store.Spans(j.id))
	a.mu.Lock()
	a.traces = append(a.traces, assembled)
	a.mu.Unlock()
	return nil
}

// spansOf decodes traces into spans as a file's are (source otlp).
func (a *jaegerRun) spansOf(traces []ptrace.Traces, from string) []otelmap.Span {
	var spans []otelmap.Span
	for _, td := range traces {
		s, warnings := otlpdecode.SpansFromTraces(td, otelmap.SourceOTLP)
		for _, w := range warnings {
			a.warn(from + ": " + w)
		}
		spans = append(spans, s...)
	}
	return spans
}

func (a *jaegerRun) warn(w string) {
	a.mu.Lock()
	a.res.Warnings = append(a.res.Warnings, w)
	a.mu.Unlock()
}

// finish orders the tasks as AssessOTLPFiles does and reports what the
// selection left out.
func (a *jaegerRun) finish(src JaegerSource, search *jaegerquery.Search) (*report.Result, error) {
	res := a.res
	slices.Sort(res.Warnings)
	if len(a.missing) > 0 {
		slices.Sort(a.missing)
		return nil, &InputError{Err: fmt.Errorf("%w at %s: %d of %d traces: %s",
			jaegerquery.ErrNotFound, src.Client.BaseURL(), len(a.missing), len(src.TraceIDs), strings.Join(a.missing, ", "))}
	}
	if search == nil {
		return res, nil
	}
	q := src.Search
	if a.opts.Logger != nil {
		a.opts.Logger.Info("jaeger: search done", "service", q.Service, "traces", len(res.Tasks), "requests", search.Requests,
			"limit_reached", search.LimitReached, "saturated_windows", len(search.Saturated))
	}
	if len(res.Tasks) == 0 {
		return nil, &InputError{Err: fmt.Errorf("%w at %s: no trace of service %q%s has a span starting in %s",
			jaegerquery.ErrNotFound, src.Client.BaseURL(), q.Service, operationClause(q.Operation), jaegerquery.Window{Start: q.Start, End: q.End})}
	}
	if search.LimitReached {
		res.Warnings = append(res.Warnings, fmt.Sprintf("jaeger: the limit of %d traces was reached; more traces of service %q match (raise the limit or narrow the time range)",
			cmpDefault(src.Limit, DefaultJaegerLimit), q.Service))
	}
	for _, w := range search.Saturated {
		res.Warnings = append(res.Warnings, fmt.Sprintf("jaeger: the window %s held at least %d traces, the page size, and is too narrow to split: traces of it beyond those were not read (raise the page size)",
			w, cmpDefault(src.PageSize, DefaultJaegerPageSize)))
	}
	return res, nil
}

func operationClause(op string) string {
	if op == "" {
		return ""
	}
	return fmt.Sprintf(" and operation %q", op)
}

// cmpDefault is v, or def when v is not positive.
func cmpDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
