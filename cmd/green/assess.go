package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/jaegerquery"
	"github.com/coordbench/coordbench/report"
)

// fileList collects repeated --otlp flags (and --trace-id flags).
type fileList []string

func (f *fileList) String() string     { return fmt.Sprint(*f) }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// defaultJaegerSince is the time range of a search given no --since,
// --start or --end: the last hour, as Jaeger's UI searches by default.
const defaultJaegerSince = time.Hour

// assessOptions are `green assess`'s flags and arguments, read. Either
// files or jaeger is set.
type assessOptions struct {
	files  []string
	jaeger *jaegerOptions
	config evals.Config
	output string
	conv   *assemble.Conventions
}

// jaegerOptions are the flags of the Jaeger source, read and checked.
type jaegerOptions struct {
	url      string
	timeout  time.Duration
	traceIDs []pcommon.TraceID
	search   jaegerquery.Query
	limit    int
	pageSize int
	workers  int
}

// jaegerFlags are the Jaeger source's flags as registered.
type jaegerFlags struct {
	url, service, operation, since, start, end *string
	traceIDs                                   fileList
	limit, pageSize, workers                   *int
	timeout                                    *time.Duration
}

func registerJaegerFlags(fs *flag.FlagSet) *jaegerFlags {
	f := &jaegerFlags{
		url:       fs.String("jaeger", "", "read traces from this Jaeger query service (its UI and API address, e.g. http://127.0.0.1:16686) instead of files"),
		service:   fs.String("service", "", "with --jaeger: assess the traces that hold a span of this service"),
		operation: fs.String("operation", "", "with --service: only traces with a span of this operation"),
		since:     fs.String("since", "", "with --service: spans started within this long before now, e.g. 30m, 24h (default 1h)"),
		start:     fs.String("start", "", "with --service: spans started at or after this time (RFC 3339, e.g. 2026-01-02T15:04:05Z)"),
		end:       fs.String("end", "", "with --service: spans started at or before this time (RFC 3339; default now)"),
		limit:     fs.Int("limit", green.DefaultJaegerLimit, "with --service: assess at most this many traces"),
		pageSize:  fs.Int("page-size", green.DefaultJaegerPageSize, "with --service: traces per Jaeger request (at most Jaeger's max_traces)"),
		workers:   fs.Int("workers", 0, "with --jaeger: traces fetched and assessed at once (default: the number of CPUs)"),
		timeout:   fs.Duration("jaeger-timeout", jaegerquery.DefaultRequestTimeout, "with --jaeger: the deadline of each request to Jaeger"),
	}
	fs.Var(&f.traceIDs, "trace-id", "with --jaeger: assess this trace (hex id; repeatable)")
	return f
}

// assess is `green assess`: OTLP JSON files, or traces stored in Jaeger,
// assessed offline.
func assess(ctx context.Context, c *cli.Command, args []string) int {
	o, code, ok := assessFlags(c, args)
	if !ok {
		return code
	}
	return runAssess(ctx, c, o)
}

func assessFlags(c *cli.Command, args []string) (assessOptions, int, bool) {
	var o assessOptions
	var files fileList
	c.Flags.Var(&files, "otlp", "an OTLP JSON file to assess (repeatable; the files may also be given as arguments)")
	configArg := c.Flags.String("config", "", `evaluator config as JSON or @file, e.g. {"evaluators": {"judge": false}}`)
	c.Flags.StringVar(&o.output, "output", "", "write the JSON result to this file instead of stdout")
	registerConventionsFlag(c.Flags, &o.conv)
	jf := registerJaegerFlags(c.Flags)
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	o.files = append(files, positional...)
	set := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *jf.url == "" {
		for _, name := range []string{"trace-id", "service", "operation", "since", "start", "end", "limit", "page-size", "workers", "jaeger-timeout"} {
			if set[name] {
				return o, c.UsageError("--%s reads from Jaeger: give --jaeger URL too", name), false
			}
		}
		if len(o.files) == 0 {
			return o, c.UsageError("no OTLP files given (or --jaeger URL to read traces from Jaeger)"), false
		}
	} else {
		if len(o.files) > 0 {
			return o, c.UsageError("give OTLP files or --jaeger, not both"), false
		}
		jo, err := jf.read(set, time.Now())
		if err != nil {
			return o, c.UsageError("%v", err), false
		}
		o.jaeger = jo
	}
	cfg, err := parseEvalConfig(*configArg)
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	o.config = cfg
	return o, 0, true
}

// read checks the Jaeger flags (set names those given) and turns them
// into options; now ends a --since range.
func (f *jaegerFlags) read(set map[string]bool, now time.Time) (*jaegerOptions, error) {
	o := &jaegerOptions{url: *f.url, timeout: *f.timeout, limit: *f.limit, pageSize: *f.pageSize, workers: *f.workers}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("--jaeger-timeout %v: want a positive duration", o.timeout)
	}
	if set["workers"] && o.workers < 1 {
		return nil, fmt.Errorf("--workers %d: want at least 1", o.workers)
	}
	searchFlags := []string{"service", "operation", "since", "start", "end", "limit", "page-size"}
	switch {
	case len(f.traceIDs) > 0:
		for _, name := range searchFlags {
			if set[name] {
				return nil, fmt.Errorf("--trace-id and --%s: give trace ids or a search (--service), not both", name)
			}
		}
		for _, s := range f.traceIDs {
			id, err := parseTraceID(s)
			if err != nil {
				return nil, err
			}
			o.traceIDs = append(o.traceIDs, id)
		}
		return o, nil
	case *f.service == "":
		for _, name := range searchFlags {
			if set[name] {
				return nil, fmt.Errorf("--%s is part of a search: give --service too", name)
			}
		}
		return nil, errors.New("--jaeger needs --trace-id ID or --service NAME")
	}
	if o.limit < 1 {
		return nil, fmt.Errorf("--limit %d: want at least 1", o.limit)
	}
	if o.pageSize < 1 {
		return nil, fmt.Errorf("--page-size %d: want at least 1", o.pageSize)
	}
	q := jaegerquery.Query{Service: *f.service, Operation: *f.operation, End: now}
	if set["since"] && (set["start"] || set["end"]) {
		return nil, errors.New("--since and --start/--end: give one time range")
	}
	if set["end"] && !set["start"] {
		return nil, errors.New("--end needs --start")
	}
	switch {
	case set["start"]:
		start, err := parseTime("--start", *f.start)
		if err != nil {
			return nil, err
		}
		q.Start = start
		if set["end"] {
			if q.End, err = parseTime("--end", *f.end); err != nil {
				return nil, err
			}
		}
		if q.End.Before(q.Start) {
			return nil, fmt.Errorf("--end %s is before --start %s", q.End.Format(time.RFC3339Nano), q.Start.Format(time.RFC3339Nano))
		}
	default:
		since := defaultJaegerSince
		if set["since"] {
			d, err := time.ParseDuration(*f.since)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("--since %q: want a positive duration, e.g. 30m or 24h", *f.since)
			}
			since = d
		}
		q.Start = now.Add(-since)
	}
	o.search = q
	return o, nil
}

// parseTraceID reads a trace id as Jaeger shows it: hex, 32 digits, or
// fewer for the 64-bit ids of older tracers (padded on the left with
// zeros, as Jaeger pads them).
func parseTraceID(s string) (pcommon.TraceID, error) {
	var id pcommon.TraceID
	h := strings.ToLower(strings.TrimSpace(s))
	if h == "" || len(h) > 32 {
		return id, fmt.Errorf("--trace-id %q: want 1 to 32 hex digits", s)
	}
	b, err := hex.DecodeString(strings.Repeat("0", 32-len(h)) + h)
	if err != nil {
		return id, fmt.Errorf("--trace-id %q: want 1 to 32 hex digits", s)
	}
	copy(id[:], b)
	if id.IsEmpty() {
		return id, fmt.Errorf("--trace-id %q: the all-zero id names no trace", s)
	}
	return id, nil
}

func parseTime(flagName, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", flagName, s)
	}
	return t, nil
}

func runAssess(ctx context.Context, c *cli.Command, o assessOptions) int {
	offline := green.OfflineOptions{
		Judge:       judgeFromEnv(c.Name),
		Config:      o.config,
		Logger:      slog.Default(),
		Conventions: o.conv,
	}
	var res *report.Result
	var err error
	if o.jaeger != nil {
		res, err = assessJaeger(ctx, o.jaeger, offline)
	} else {
		res, err = green.AssessOTLPFiles(ctx, o.files, offline)
	}
	if err != nil {
		var inputErr *green.InputError
		if errors.As(err, &inputErr) {
			return c.Fail(cli.ExitUsage, err)
		}
		return c.Fail(cli.ExitFailure, err)
	}
	if err := writeJSON(res, o.output, c.Stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	return cli.ExitOK
}

func assessJaeger(ctx context.Context, o *jaegerOptions, offline green.OfflineOptions) (*report.Result, error) {
	client, err := jaegerquery.New(o.url, jaegerquery.Options{RequestTimeout: o.timeout})
	if err != nil {
		return nil, &green.InputError{Err: err}
	}
	return green.AssessJaeger(ctx, green.JaegerSource{
		Client:   client,
		TraceIDs: o.traceIDs,
		Search:   o.search,
		PageSize: o.pageSize,
		Limit:    o.limit,
	}, green.JaegerOptions{OfflineOptions: offline, Workers: o.workers})
}
