package purple

import (
	"container/list"
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// This file: the ingest token an assessor hands the agent with a call
// (docs/span-admission.md). The green agent puts its per-assessment token
// in every message's metadata under otelmap.IngestMetadataKey; the agent
// remembers it for the call's trace, sends the spans of that trace with
// the token as an HTTP header on its OTLP exports (ingestexport.go), and
// hands it on to the peers it calls about that request, so that the whole
// team's spans are tied to the assessment. With the green agent's
// --otlp-strict-ingest, spans of a running assessment's trace without the
// token are refused.

// ingestTokenMaxLen bounds the token the agent accepts: the green agent's
// are 26 characters (crypto/rand.Text); a longer one is not an assessor's.
const ingestTokenMaxLen = 256

// ingest is one assessor's token and the header that carries it.
type ingest struct {
	Token  string
	Header string
}

// metadata is the ingest as the message metadata that hands it on.
func (in ingest) metadata() map[string]any {
	return map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": in.Token, "otlp_header": in.Header}}
}

// reservedHeader reports whether an assessor may not name header
// (canonical) for its token: it belongs to the HTTP exchange or to the
// exporter's credentials.
func reservedHeader(header string) bool {
	switch header {
	case "Authorization", "Connection", "Content-Encoding", "Content-Length", "Content-Type",
		"Host", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "User-Agent", "X-Api-Key":
		return true
	}
	return false
}

// ingestFromMetadata reads the ingest token from a message's metadata. ok
// is false when there is none or it is malformed (a token that could not
// be a header value, a header that is not a header name or is one of the
// exchange's own): the agent then exports as if none was given.
func ingestFromMetadata(md map[string]any) (in ingest, ok bool) {
	v, _ := md[otelmap.IngestMetadataKey].(map[string]any)
	if v == nil {
		return ingest{}, false
	}
	token, _ := v["token"].(string)
	header, _ := v["otlp_header"].(string)
	if header == "" {
		header = otelmap.IngestTokenHeader
	}
	if !validHeaderValue(token) || !validHeaderName(header) {
		return ingest{}, false
	}
	header = http.CanonicalHeaderKey(header)
	if reservedHeader(header) {
		return ingest{}, false
	}
	return ingest{Token: token, Header: header}, true
}

// validHeaderValue: 1 to ingestTokenMaxLen visible ASCII characters.
func validHeaderValue(s string) bool {
	if s == "" || len(s) > ingestTokenMaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// validHeaderName: an RFC 9110 token of at most 64 characters.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// ingestTokens remembers the ingest token of each trace the agent was
// called in, for its exports. It is bounded like the agent's span store:
// at most max traces (the least recently used go first), each forgotten
// once unused for maxAge, after which the trace's spans go without a
// token, as any exporter's do.
type ingestTokens struct {
	max    int
	maxAge time.Duration
	now    func() time.Time

	mu    sync.Mutex
	order *list.List // of *ingestEntry, least recent first
	at    map[trace.TraceID]*list.Element
}

type ingestEntry struct {
	trace trace.TraceID
	in    ingest
	at    time.Time
}

func newIngestTokens(max int, maxAge time.Duration) *ingestTokens {
	return &ingestTokens{max: max, maxAge: maxAge, now: time.Now, order: list.New(), at: map[trace.TraceID]*list.Element{}}
}

// remember ties in to trace id (a later call in the same trace replaces
// it), forgetting the least recently used trace beyond max.
func (t *ingestTokens) remember(id trace.TraceID, in ingest) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.at[id]; e != nil {
		ent := e.Value.(*ingestEntry)
		ent.in, ent.at = in, now
		t.order.MoveToBack(e)
		return
	}
	t.expire(now)
	for t.order.Len() >= t.max {
		delete(t.at, t.order.Remove(t.order.Front()).(*ingestEntry).trace)
	}
	t.at[id] = t.order.PushBack(&ingestEntry{trace: id, in: in, at: now})
}

// lookup returns the ingest of trace id, if one is remembered and not
// expired. A trace whose token is used stays remembered: maxAge counts
// from the last use, so a long task keeps its token.
func (t *ingestTokens) lookup(id trace.TraceID) (ingest, bool) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(now)
	e := t.at[id]
	if e == nil {
		return ingest{}, false
	}
	ent := e.Value.(*ingestEntry)
	ent.at = now
	t.order.MoveToBack(e)
	return ent.in, true
}

// len is how many traces have a token, for tests.
func (t *ingestTokens) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// expire forgets the entries unused for maxAge; the list is in the order
// of their last use, so the old ones are at its front. t.mu is held.
func (t *ingestTokens) expire(now time.Time) {
	for e := t.order.Front(); e != nil; e = t.order.Front() {
		ent := e.Value.(*ingestEntry)
		if now.Sub(ent.at) < t.maxAge {
			return
		}
		t.order.Remove(e)
		delete(t.at, ent.trace)
	}
}

// ingestMetadata is the message metadata that hands the ingest token of
// ctx's trace on to a peer; nil when the trace has none.
func (s *Server) ingestMetadata(ctx context.Context) map[string]any {
	if s.tel.tokens == nil {
		return nil
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	in, ok := s.tel.tokens.lookup(sc.TraceID())
	if !ok {
		return nil
	}
	return in.metadata()
}
