package otlpreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// The receiver's limits: sizes at their boundaries, gzip bombs, the caller's context, concurrency, stats.

// TestReceiverLimitBoundaries: a body exactly at a limit passes; one byte
// over is refused.
func TestReceiverLimitBoundaries(t *testing.T) {
	raw := otlptest.Proto(t, otlptest.Traces(5, 5, 1))
	gz := otlptest.Gzip(t, raw)
	for _, tc := range []struct {
		name     string
		limits   ReceiverLimits
		encoding string
		body     []byte
		want     int
	}{
		{"raw at the wire limit", ReceiverLimits{MaxBodyBytes: int64(len(raw))}, "", raw, 200},
		{"raw one over the wire limit", ReceiverLimits{MaxBodyBytes: int64(len(raw)) - 1}, "", raw, 413},
		{"raw one over the decompressed limit", ReceiverLimits{MaxDecompressedBytes: int64(len(raw)) - 1}, "", raw, 413},
		{"gzip at the decompressed limit", ReceiverLimits{MaxDecompressedBytes: int64(len(raw))}, "gzip", gz, 200},
		{"gzip one over the decompressed limit", ReceiverLimits{MaxDecompressedBytes: int64(len(raw)) - 1}, "gzip", gz, 413},
		{"gzip at the wire limit", ReceiverLimits{MaxBodyBytes: int64(len(gz))}, "gzip", gz, 200},
		{"gzip one over the wire limit", ReceiverLimits{MaxBodyBytes: int64(len(gz)) - 1}, "gzip", gz, 413},
	} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s chunked=%v", tc.name, chunked), func(t *testing.T) {
				_, _, srv := rcvServer(t, tracestore.Limits{}, tc.limits)
				resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, encoding: tc.encoding, body: tc.body, chunked: chunked})
				if resp.StatusCode != tc.want {
					t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tc.want, out)
				}
			})
		}
	}
}

// gzipBombMember is one gzip member holding 1 MiB of zeros (about 1 KiB).
// Members may be concatenated (RFC 1952, and Go's gzip.Reader reads them
// as one stream), so repeating it makes a bomb of any size at almost no
// cost to build: compressing a gibibyte in one member takes minutes under
// the race detector.
func gzipBombMember(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	if _, err := zw.Write(zeros); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// repeatReader streams chunk n times, counting what was read, so a bomb
// never exists in memory whole.
type repeatReader struct {
	chunk []byte
	n     int
	off   int
	read  int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	c := copy(p, r.chunk[r.off:])
	r.off += c
	r.read += int64(c)
	if r.off == len(r.chunk) {
		r.off = 0
		r.n--
	}
	return c, nil
}

const bombMiB = 1024 // 1 GiB of zeros, about 1 MB on the wire

// TestReceiverGzipBomb sends 1 GiB of zeros gzip-compressed to about 1 MB
// over real HTTP: 413, counted, nothing stored.
func TestReceiverGzipBomb(t *testing.T) {
	member := gzipBombMember(t)
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxDecompressedBytes: 8 << 20})
	resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: otlptest.Proto(t, otlptest.Traces(3, 3, 1))})
	rcvExportResponse(t, resp, out)
	before := rcvSnapshot(st)

	bomb := &repeatReader{chunk: member, n: bombMiB}
	req, err := http.NewRequest(http.MethodPost, srv.URL+TracesPath, bomb)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(member)) * bombMiB
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	req.Header.Set("Content-Encoding", "gzip")
	t.Logf("bomb: %d bytes on the wire, %d MiB inflated", req.ContentLength, bombMiB)
	resp, err = srv.Client().Do(req)
	if err != nil {
		t.Fatalf("send bomb: %v", err)
	}
	out, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413 (%q)", resp.StatusCode, out)
	}
	rcvStatus(t, resp, out)
	if got := rcv.Stats().RequestsRejected; got.TooLarge != 1 || got.Total() != 1 {
		t.Fatalf("rejections = %+v", got)
	}
	if got := rcvSnapshot(st); got != before {
		t.Fatalf("store changed by the bomb")
	}
}

// TestReceiverGzipBombBoundedMemory calls the handler in process to
// measure what a bomb costs: the receiver stops after reading a small part
// of the wire body and allocates on the order of the decompressed limit,
// not of the gibibyte.
func TestReceiverGzipBombBoundedMemory(t *testing.T) {
	const limit = 8 << 20
	member := gzipBombMember(t)
	rcv := NewReceiver(tracestore.NewStore(tracestore.Limits{}), ReceiverLimits{MaxDecompressedBytes: limit})
	bomb := &repeatReader{chunk: member, n: bombMiB}
	req := httptest.NewRequest(http.MethodPost, TracesPath, bomb)
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	req.Header.Set("Content-Encoding", "gzip")
	rec := httptest.NewRecorder()

	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	rcv.ServeHTTP(rec, req)
	runtime.ReadMemStats(&m1)

	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", rec.Code)
	}
	total := int64(len(member)) * bombMiB
	if bomb.read > total/16 {
		t.Errorf("read %d of %d wire bytes; the receiver should stop near the limit", bomb.read, total)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4*limit {
		t.Errorf("allocated %d bytes for a bomb with a %d-byte limit", alloc, limit)
	} else {
		t.Logf("bomb: read %d wire bytes, allocated %d bytes (limit %d)", bomb.read, alloc, limit)
	}
}

// TestReceiverHonoursContext: a request whose context has ended stores
// nothing.
func TestReceiverHonoursContext(t *testing.T) {
	st := tracestore.NewStore(tracestore.Limits{})
	rcv := NewReceiver(st, ReceiverLimits{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, TracesPath, bytes.NewReader(otlptest.Proto(t, otlptest.Traces(3, 3, 1))))
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	rec := httptest.NewRecorder()
	rcv.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
	if got := rcv.Stats(); got.RequestsRejected.Canceled != 1 || got.SpansReceived != 0 {
		t.Fatalf("stats = %+v", got)
	}
	if st.Stats().Spans != 0 {
		t.Fatal("a canceled request stored spans")
	}
}

// TestReceiverConcurrent: concurrent senders, in every encoding, all land.
func TestReceiverConcurrent(t *testing.T) {
	st, rcv, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
	const senders, perSender, spansPer = 4, 5, 20
	type request struct {
		ct, enc string
		body    []byte
	}
	var reqs [senders][perSender]request
	for s := range senders {
		for i := range perSender {
			td := otlptest.Traces(spansPer, 10, 2)
			// Give each request trace ids of its own.
			rss := td.ResourceSpans()
			for r := 0; r < rss.Len(); r++ {
				ss := rss.At(r).ScopeSpans().At(0).Spans()
				for k := 0; k < ss.Len(); k++ {
					id := ss.At(k).TraceID()
					id[8], id[9] = byte(s), byte(i)
					ss.At(k).SetTraceID(id)
				}
			}
			rq := request{ct: otlpdecode.ContentTypeProtobuf, body: otlptest.Proto(t, td)}
			if i%2 == 1 {
				rq.ct, rq.body = otlpdecode.ContentTypeJSON, otlptest.JSON(t, td)
			}
			if s%2 == 1 {
				rq.enc, rq.body = "gzip", otlptest.Gzip(t, rq.body)
			}
			reqs[s][i] = rq
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for s := range senders {
		wg.Go(func() {
			for _, rq := range reqs[s] {
				req, err := http.NewRequest(http.MethodPost, srv.URL+TracesPath, bytes.NewReader(rq.body))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Content-Type", rq.ct)
				if rq.enc != "" {
					req.Header.Set("Content-Encoding", rq.enc)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := uint64(senders * perSender * spansPer)
	if got := rcv.Stats(); got.SpansAccepted != total || got.Requests != senders*perSender {
		t.Fatalf("stats = %+v, want %d spans accepted", got, total)
	}
	if got := st.Stats(); got.Spans != int(total) || got.Traces != senders*perSender*spansPer/10 {
		t.Fatalf("store = %+v", got)
	}
}

// TestReceiverStatsJSON pins the counters' JSON names, which reports and
// dashboards read.
func TestReceiverStatsJSON(t *testing.T) {
	b, err := json.Marshal(NewReceiver(tracestore.NewStore(tracestore.Limits{}), ReceiverLimits{}).Stats())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"requests":0,"requests_rejected":{"malformed":0,"too_large":0,"unsupported_media_type":0,"method":0,"not_found":0,"canceled":0,"overloaded":0},"spans_received":0,"spans_accepted":0,"spans_duplicate":0,"spans_rejected":0,"bytes_in_flight":0,"bytes_in_flight_peak":0,"memory_reclaims":0,"logs_suppressed":0}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestReceiverDefaultLimits(t *testing.T) {
	got := NewReceiver(tracestore.NewStore(tracestore.Limits{}), ReceiverLimits{}).Limits()
	if got.MaxBodyBytes != 16<<20 || got.MaxDecompressedBytes != 64<<20 {
		t.Fatalf("defaults = %+v", got)
	}
}

// TestReceiverSpansPerRequest: a request with more spans than
// MaxSpansPerRequest is refused whole with 413 and a message that says
// so, protobuf before it is decoded, JSON once pdata has; one at the limit
// is stored. A 16 MB protobuf body of eight million empty spans (2 bytes
// each on the wire, 184 decoded: 1.5 GB) is refused under the default
// limit without being decoded.
func TestReceiverSpansPerRequest(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxSpansPerRequest: 10})
	for _, tc := range []struct {
		name  string
		ct    string
		spans int
		want  int
	}{
		{"protobuf at the limit", otlpdecode.ContentTypeProtobuf, 10, http.StatusOK},
		{"protobuf over it", otlpdecode.ContentTypeProtobuf, 11, http.StatusRequestEntityTooLarge},
		{"JSON at the limit", otlpdecode.ContentTypeJSON, 10, http.StatusOK},
		{"JSON over it", otlpdecode.ContentTypeJSON, 11, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			td := otlptest.TracesFrom(len(tc.name)*1000, tc.spans, 100, 1)
			body := otlptest.Proto(t, td)
			if tc.ct == otlpdecode.ContentTypeJSON {
				body = otlptest.JSON(t, td)
			}
			before := storedSpans(st)
			resp, out := rcvDo(t, srv, rcvRequest{contentType: tc.ct, body: body})
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, out)
			}
			stored := storedSpans(st) - before
			if tc.want == http.StatusOK && stored != tc.spans {
				t.Fatalf("stored %d spans, want %d", stored, tc.spans)
			}
			if tc.want != http.StatusOK {
				if stored != 0 {
					t.Fatalf("a refused request stored %d spans", stored)
				}
				if s := rcvStatus(t, resp, out); !strings.Contains(s.Message, "11 spans, over the limit of 10 spans per request") {
					t.Fatalf("message %q", s.Message)
				}
			}
		})
	}

	t.Run("eight million empty spans", func(t *testing.T) {
		const n = 8<<20 - 16
		scope := protowire.AppendTag(nil, 2, protowire.BytesType) // ResourceSpans.scope_spans
		scope = protowire.AppendVarint(scope, 2*n)
		scope = append(scope, bytes.Repeat([]byte{0x12, 0x00}, n)...) // ScopeSpans.spans, empty
		body := protowire.AppendTag(nil, 1, protowire.BytesType)      // resource_spans
		body = protowire.AppendVarint(body, uint64(len(scope)))
		body = append(body, scope...)
		_, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{})
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		resp, out := rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: body})
		runtime.ReadMemStats(&m1)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413: %.200s", resp.StatusCode, out)
		}
		// The body itself is read into a buffer of its size; decoding it
		// would have taken 1.5 GB.
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 200<<20 {
			t.Fatalf("refusing the request allocated %d MB", alloc>>20)
		}
	})
}

// TestReceiverAttributesPerRequest: a protobuf request with more attribute
// values than MaxAttributesPerRequest (resources' and spans' attributes,
// and the elements of an array value, all count) is refused whole with
// 413 and a message that says so; one at the limit is stored.
func TestReceiverAttributesPerRequest(t *testing.T) {
	st, _, srv := rcvServer(t, tracestore.Limits{}, ReceiverLimits{MaxAttributesPerRequest: 20})
	post := func(td ptrace.Traces) (*http.Response, []byte) {
		t.Helper()
		return rcvDo(t, srv, rcvRequest{contentType: otlpdecode.ContentTypeProtobuf, body: otlptest.Proto(t, td)})
	}
	// One resource of 2 attributes and 3 spans of 6: 20 values.
	if resp, out := post(otlptest.TracesFrom(0, 3, 10, 1)); resp.StatusCode != http.StatusOK || storedSpans(st) != 3 {
		t.Fatalf("at the limit: status %d, %d spans stored: %s", resp.StatusCode, storedSpans(st), out)
	}
	// 20 KeyValues again, one of them an array of one element: 21 values.
	over := otlptest.TracesFrom(100, 3, 10, 1)
	attrs := over.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	if !attrs.Remove(string(otelmap.AttrCallType)) {
		t.Fatal("no attribute to replace")
	}
	attrs.PutEmptySlice("ids").AppendEmpty().SetInt(1)
	for _, td := range []ptrace.Traces{otlptest.TracesFrom(200, 4, 10, 1), over} {
		resp, out := post(td)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("over the limit: status %d, want 413: %s", resp.StatusCode, out)
		}
		if s := rcvStatus(t, resp, out); !strings.Contains(s.Message, "more than 20 attribute values") {
			t.Fatalf("message %q", s.Message)
		}
	}
	if got := storedSpans(st); got != 3 {
		t.Fatalf("%d spans stored, want only the first request's 3", got)
	}
}
