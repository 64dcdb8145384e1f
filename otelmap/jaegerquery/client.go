package jaegerquery

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// Defaults of Options.
const (
	// DefaultRequestTimeout bounds one request, answer read and decoded.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultMaxResponseBytes bounds one answer's body. Jaeger builds a
	// search's answer whole before it sends it (http_gateway.go:
	// returnTraces), so a page of traces is one body.
	DefaultMaxResponseBytes = 128 << 20
)

// The kinds of failure, for errors.Is. Every error says more in its text.
var (
	// ErrUnreachable: no answer from Jaeger (refused, no route, a DNS
	// failure, or no answer before the request's deadline).
	ErrUnreachable = errors.New("jaeger unreachable")
	// ErrNotFound: Jaeger answered 404 in its own error form, "trace not
	// found" or "No traces found". A 404 in any other form (a proxy, a
	// wrong base path) is not this.
	ErrNotFound = errors.New("not found in jaeger")
	// ErrMalformed: Jaeger answered 200 with a body that is not the OTLP
	// JSON asked for, or holds spans of another trace than asked for, or is
	// larger than the bound.
	ErrMalformed = errors.New("malformed answer from jaeger")
)

// Routes and parameters of Jaeger's HTTP API v3, as
// cmd/query/app/apiv3/http_gateway.go (jaeger v1.76.0) names them.
const (
	routeTraces       = "/api/v3/traces"
	paramService      = "query.service_name"
	paramOperation    = "query.operation_name"
	paramStartTimeMin = "query.start_time_min"
	paramStartTimeMax = "query.start_time_max"
	paramNumTraces    = "query.num_traces"
)

// Options configure a Client. The zero value uses the defaults.
type Options struct {
	// HTTPClient sends the requests; nil uses a client of its own. Its own
	// Timeout, if any, applies on top of RequestTimeout.
	HTTPClient *http.Client
	// RequestTimeout bounds each request (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MaxResponseBytes bounds each answer's body (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
}

// Client asks one Jaeger query service for traces. It is safe for
// concurrent use.
type Client struct {
	base     *url.URL
	hc       *http.Client
	timeout  time.Duration
	maxBytes int64
}

// New returns a client of the Jaeger query service at baseURL, the address
// of its UI and API (http://127.0.0.1:16686, with Jaeger's base path if it
// has one). A URL that already ends in /api/v3 or /api/v3/traces is taken
// as its base.
func New(baseURL string, opts Options) (*Client, error) {
	const want = "want http:// or https:// and the query service's host and port, e.g. http://127.0.0.1:16686"
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("jaeger URL %q: %s (%w)", baseURL, want, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("jaeger URL %q: %s", baseURL, want)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("jaeger URL %q: no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("jaeger URL %q: want the query service's address without a query or fragment", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, routeTraces)
	u.Path = strings.TrimSuffix(u.Path, "/api/v3")
	u.RawPath = ""
	c := &Client{base: u, hc: opts.HTTPClient, timeout: opts.RequestTimeout, maxBytes: opts.MaxResponseBytes}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultRequestTimeout
	}
	if c.maxBytes <= 0 {
		c.maxBytes = DefaultMaxResponseBytes
	}
	return c, nil
}

// BaseURL is the query service's address as the client uses it.
func (c *Client) BaseURL() string { return c.base.String() }

// TraceURL is the address of one trace, GET /api/v3/traces/{trace_id}.
func (c *Client) TraceURL(id pcommon.TraceID) string {
	return c.base.JoinPath(routeTraces, hex.EncodeToString(id[:])).String()
}

// Query selects traces by the spans they hold: a trace matches when one
// of its spans, of Service (and Operation, when set), starts between Start
// and End, both included (Jaeger's query.start_time_min/max).
type Query struct {
	Service   string
	Operation string
	Start     time.Time
	End       time.Time
	// NumTraces is query.num_traces, the most traces one answer holds.
	// Jaeger's in-memory store refuses 0 and more than its max_traces.
	NumTraces int
}

// Validate says what is wrong with q as a search, or nil.
func (q Query) Validate() error {
	switch {
	case q.Service == "":
		return errors.New("a search needs a service name")
	case q.Start.IsZero() || q.End.IsZero():
		return errors.New("a search needs a start and an end time")
	case q.End.Before(q.Start):
		return fmt.Errorf("the search's end %s is before its start %s", q.End.Format(time.RFC3339Nano), q.Start.Format(time.RFC3339Nano))
	case q.NumTraces < 1:
		return fmt.Errorf("num_traces %d: want at least 1", q.NumTraces)
	}
	return nil
}

// FindURL is the address of a search, GET /api/v3/traces?query....
func (c *Client) FindURL(q Query) string {
	v := url.Values{}
	v.Set(paramService, q.Service)
	if q.Operation != "" {
		v.Set(paramOperation, q.Operation)
	}
	v.Set(paramStartTimeMin, q.Start.UTC().Format(time.RFC3339Nano))
	v.Set(paramStartTimeMax, q.End.UTC().Format(time.RFC3339Nano))
	v.Set(paramNumTraces, strconv.Itoa(q.NumTraces))
	u := c.base.JoinPath(routeTraces)
	u.RawQuery = v.Encode()
	return u.String()
}

// Trace fetches one trace by id. The answer holds only spans of that trace
// (else ErrMalformed); a trace Jaeger does not hold is ErrNotFound.
func (c *Client) Trace(ctx context.Context, id pcommon.TraceID) ([]ptrace.Traces, error) {
	if id.IsEmpty() {
		return nil, errors.New("jaeger: the all-zero trace id names no trace")
	}
	u := c.TraceURL(id)
	traces, err := c.get(ctx, u)
	if err != nil {
		return nil, err
	}
	for _, other := range TraceIDs(traces) {
		if other != id {
			return nil, fmt.Errorf("GET %s: %w: it holds spans of trace %s", u, ErrMalformed, other)
		}
	}
	return traces, nil
}

// Found is one search's answer.
type Found struct {
	// Traces are the answer's OTLP documents (Jaeger sends one).
	Traces []ptrace.Traces
	// TraceIDs are the distinct traces in Traces, in the order of the
	// answer.
	TraceIDs []pcommon.TraceID
}

// Find runs one search. A search that matches nothing is an empty Found,
// not an error: Jaeger's 404 "No traces found" is read as that.
func (c *Client) Find(ctx context.Context, q Query) (Found, error) {
	if err := q.Validate(); err != nil {
		return Found{}, fmt.Errorf("jaeger search: %w", err)
	}
	traces, err := c.get(ctx, c.FindURL(q))
	if errors.Is(err, ErrNotFound) {
		return Found{}, nil
	}
	if err != nil {
		return Found{}, err
	}
	return Found{Traces: traces, TraceIDs: TraceIDs(traces)}, nil
}

// TraceIDs lists the distinct trace ids of the spans in traces, in order
// of appearance.
func TraceIDs(traces []ptrace.Traces) []pcommon.TraceID {
	var ids []pcommon.TraceID
	seen := map[pcommon.TraceID]bool{}
	for _, td := range traces {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if id := sp.TraceID(); !seen[id] {
						seen[id] = true
						ids = append(ids, id)
					}
				}
			}
		}
	}
	return ids
}

// get asks for u and decodes the answer as OTLP JSON.
func (c *Client) get(ctx context.Context, u string) ([]ptrace.Traces, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("jaeger: GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, rctx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.statusError(ctx, rctx, u, resp)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") {
		// Jaeger's UI answers every path it does not route, so a wrong base
		// path gets its page.
		return nil, fmt.Errorf("GET %s: %w: an HTML page (%s), not the API's OTLP JSON: is %s Jaeger's query service, with its base path?", u, ErrMalformed, ct, c.BaseURL())
	}
	body := http.MaxBytesReader(nil, resp.Body, c.maxBytes)
	traces, err := otlpdecode.ReadOTLPJSON(body, "GET "+u)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil:
		return traces, nil
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("GET %s: %w: the answer is larger than the limit of %d bytes (fetch fewer traces per request)", u, ErrMalformed, c.maxBytes)
	case rctx.Err() != nil:
		// The deadline passed while the body was read: the reader's error
		// says only that the connection closed.
		return nil, c.transportError(ctx, rctx, u, err)
	default:
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
}

// transportError words a failure to get an answer: the caller's own
// cancellation passes through as it is; anything else is ErrUnreachable.
func (c *Client) transportError(ctx, rctx context.Context, u string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("jaeger: GET %s: %w", u, context.Cause(ctx))
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("GET %s: %w: no answer within %v", u, ErrUnreachable, c.timeout)
	}
	return fmt.Errorf("GET %s: %w at %s: %w", u, ErrUnreachable, c.base.Host, err)
}

// statusError words an answer other than 200 with Jaeger's own message,
// which it sends as {"error": {"httpCode": N, "message": "..."}}
// (http_gateway.go: tryHandleError).
func (c *Client) statusError(ctx, rctx context.Context, u string, resp *http.Response) error {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil && rctx.Err() != nil {
		return c.transportError(ctx, rctx, u, err)
	}
	msg, fromJaeger := jaegerMessage(raw)
	switch {
	case resp.StatusCode == http.StatusNotFound && fromJaeger:
		return fmt.Errorf("GET %s: %w (%s)", u, ErrNotFound, msg)
	case fromJaeger:
		return fmt.Errorf("jaeger: GET %s: %s: %s", u, resp.Status, msg)
	default:
		// Not Jaeger's error form: a proxy, another server, or a wrong
		// base path. A 404 here says nothing of the trace.
		return fmt.Errorf("GET %s: %s: %s (is %s Jaeger's query service?)", u, resp.Status, msg, c.BaseURL())
	}
}

// jaegerMessage is the message of Jaeger's error answer, and true; or the
// start of whatever else the body holds, and false.
func jaegerMessage(raw []byte) (string, bool) {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return e.Error.Message, true
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "empty body", false
	}
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s), false
}
