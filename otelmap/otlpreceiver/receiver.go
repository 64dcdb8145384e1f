package otlpreceiver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// TracesPath is where OTLP/HTTP exporters send traces by default
// (otelmap.OTLPTracesPath); the Receiver answers only there.
const TracesPath = otelmap.OTLPTracesPath

// Default receiver limits. The wire limit is what a sender may push at us;
// the decompressed limit is what we agree to hold in memory once it is
// unpacked, so that a small gzip body cannot become gigabytes.
const (
	DefaultMaxBodyBytes            = 16 << 20
	DefaultMaxDecompressedBytes    = 64 << 20
	DefaultMaxSpansPerRequest      = 200_000
	DefaultMaxAttributesPerRequest = 2_000_000
)

// ReceiverLimits bound one request, the requests in flight together, and
// the receiver's logging. Zero fields take the defaults.
type ReceiverLimits struct {
	// MaxBodyBytes bounds the request body as it arrives on the wire,
	// compressed or not.
	MaxBodyBytes int64
	// MaxDecompressedBytes bounds the body after gzip decompression. An
	// uncompressed body is held to the smaller of the two limits.
	MaxDecompressedBytes int64
	// MaxSpansPerRequest bounds the spans of one request (413 beyond). The
	// byte limits alone do not bound what a request takes once decoded: an
	// empty span is 2 bytes on the wire and 184 in memory, so 64 MiB of
	// them would be 5.9 GB. A protobuf body's spans are counted before it
	// is decoded; a JSON body's once pdata has decoded it.
	MaxSpansPerRequest int
	// MaxAttributesPerRequest bounds the attribute values of one protobuf
	// request (the KeyValues of resources, spans, events and links, and
	// the elements of array and map values; 413 beyond), which the
	// decoder counts as it goes: an attribute takes 6 bytes on the wire at
	// the least and 64 decoded.
	MaxAttributesPerRequest int
	// MaxInflightBytes bounds the bytes of request bodies held at once,
	// across all requests (default DefaultMaxInflightBytesFactor times
	// MaxDecompressedBytes; never less than twice the larger per-request
	// limit, so that a request at the limit can pass alone). A request
	// that would pass it is answered 503 with Retry-After; exporters
	// retry it.
	MaxInflightBytes int64
	// ReclaimAfterBytes: once the receiver is idle after a burst that held
	// at least this many bytes at once, it returns memory to the OS
	// (debug.FreeOSMemory, at most every 10 s). Default MaxInflightBytes/4;
	// negative never.
	ReclaimAfterBytes int64
	// LogBurst rejections of each reason are logged per LogInterval
	// (defaults DefaultLogBurst, DefaultLogInterval); the rest are
	// counted in the stats and summed up in the next line logged.
	LogBurst    int
	LogInterval time.Duration
}

func (l ReceiverLimits) withDefaults() ReceiverLimits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxDecompressedBytes <= 0 {
		l.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if l.MaxSpansPerRequest <= 0 {
		l.MaxSpansPerRequest = DefaultMaxSpansPerRequest
	}
	if l.MaxAttributesPerRequest <= 0 {
		l.MaxAttributesPerRequest = DefaultMaxAttributesPerRequest
	}
	if l.MaxInflightBytes <= 0 {
		l.MaxInflightBytes = DefaultMaxInflightBytesFactor * l.MaxDecompressedBytes
	}
	// A buffer grows by doubling: while the last growth copies, a body at
	// the limit holds about 1.5 times the limit.
	l.MaxInflightBytes = max(l.MaxInflightBytes, 2*(max(l.MaxBodyBytes, l.MaxDecompressedBytes)+1))
	if l.ReclaimAfterBytes == 0 {
		l.ReclaimAfterBytes = l.MaxInflightBytes / 4
	}
	if l.LogBurst <= 0 {
		l.LogBurst = DefaultLogBurst
	}
	if l.LogInterval <= 0 {
		l.LogInterval = DefaultLogInterval
	}
	return l
}

// Receiver is the OTLP/HTTP trace receiver (POST /v1/traces, protobuf or
// JSON, optionally gzip), the second road by which spans reach the store.
// It follows https://opentelemetry.io/docs/specs/otlp/#otlphttp: 200 with an
// ExportTraceServiceResponse (carrying partial_success when the store
// turned spans away), 400 with a google.rpc.Status for a body that does not
// decode, 413 over a size limit, 415 for other media types or encodings,
// 405 for other methods, 503 with Retry-After while the bytes of the
// requests in flight are at their limit (receiver_inflight.go). A request
// is decoded in full before anything is stored, so a malformed one leaves
// the store as it was. Rejections are counted in Stats and logged at Warn,
// at most LogBurst per reason per LogInterval (ratelog.go).
//
// A Receiver is safe for concurrent use.
type Receiver struct {
	next   Consumer
	limits ReceiverLimits
	logger atomic.Pointer[slog.Logger]
	budget *byteBudget
	bodies bodyPool // protobuf bodies' buffers, once their spans are stored (receiver_bodies.go)
	// decoders are decoders whose memory is reused between requests
	// (Decoder).
	decoders sync.Pool
	logLimit *logLimiter

	requests       atomic.Uint64
	rejMalformed   atomic.Uint64
	rejTooLarge    atomic.Uint64
	rejMediaType   atomic.Uint64
	rejMethod      atomic.Uint64
	rejNotFound    atomic.Uint64
	rejCanceled    atomic.Uint64
	rejOverloaded  atomic.Uint64
	spansReceived  atomic.Uint64
	spansAccepted  atomic.Uint64
	spansDuplicate atomic.Uint64
	spansRejected  atomic.Uint64
}

// Consumer takes the spans of one export request, as the Collector's
// consumer.Traces takes a receiver's data: the receiver knows nothing of
// what stands behind it. source is the exporter's identity (for quotas per
// source), ingestToken the request's ingest token ("" when it has none).
// The consumer copies what it keeps: spans and what they point at are the
// receiver's again once ConsumeSpans returns. The result's Rejected and
// Reason become the answer's partial success.
type Consumer interface {
	ConsumeSpans(ctx context.Context, source, ingestToken string, spans []otelmap.Span) otelmap.AddResult
}

// PackedConsumer is a Consumer that also takes spans whose attributes are
// packed (otelmap.PackedAttrs), as the trace store keeps them: for
// protobuf bodies the receiver then decodes with
// otlpdecode.Decoder.DecodePacked and hands the spans so, which spares
// building a KeyValue for every attribute only for the store to pack it.
// What the consumer keeps it copies, as ConsumeSpans.
type PackedConsumer interface {
	Consumer
	ConsumePackedSpans(ctx context.Context, source, ingestToken string, spans []otelmap.Span, attrs *otelmap.PackedAttrs) otelmap.AddResult
}

// NewReceiver returns a receiver that hands what it decodes to next.
func NewReceiver(next Consumer, limits ReceiverLimits) *Receiver {
	limits = limits.withDefaults()
	return &Receiver{next: next, limits: limits,
		budget:   &byteBudget{limit: limits.MaxInflightBytes, reclaimAt: limits.ReclaimAfterBytes},
		logLimit: newLogLimiter(limits.LogBurst, limits.LogInterval),
		decoders: sync.Pool{New: func() any { return otlpdecode.NewDecoder() }}}
}

// Limits returns the limits in force.
func (r *Receiver) Limits() ReceiverLimits { return r.limits }

// SetLogger sets where rejections are logged; nil restores the default,
// slog.Default() at the time of each message.
func (r *Receiver) SetLogger(l *slog.Logger) { r.logger.Store(l) }

func (r *Receiver) log() *slog.Logger {
	if l := r.logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// ReceiverStats are the receiver's counters, for logs, reports and
// metrics. Spans counted here are those of requests that decoded; their
// fate in the store is split into accepted, duplicate and rejected.
type ReceiverStats struct {
	Requests         uint64           `json:"requests"`
	RequestsRejected RequestsRejected `json:"requests_rejected"`
	SpansReceived    uint64           `json:"spans_received"`
	SpansAccepted    uint64           `json:"spans_accepted"`
	SpansDuplicate   uint64           `json:"spans_duplicate"`
	SpansRejected    uint64           `json:"spans_rejected"`
	// BytesInFlight is what the requests being read and decoded hold now;
	// BytesInFlightPeak the most they ever held at once (at most
	// ReceiverLimits.MaxInflightBytes).
	BytesInFlight     int64 `json:"bytes_in_flight"`
	BytesInFlightPeak int64 `json:"bytes_in_flight_peak"`
	// MemoryReclaims counts the returns of memory to the OS after bursts.
	MemoryReclaims uint64 `json:"memory_reclaims"`
	// LogsSuppressed counts the Warn lines not written because their
	// reason's share of the log was spent (ReceiverLimits.LogBurst).
	LogsSuppressed uint64 `json:"logs_suppressed"`
}

// RequestsRejected counts requests turned away, by reason.
type RequestsRejected struct {
	// Malformed: the body did not decode (400).
	Malformed uint64 `json:"malformed"`
	// TooLarge: the body or its decompressed form was over a limit (413).
	TooLarge uint64 `json:"too_large"`
	// UnsupportedMediaType: a content type or encoding we do not speak
	// (415).
	UnsupportedMediaType uint64 `json:"unsupported_media_type"`
	// Method: not a POST (405).
	Method uint64 `json:"method"`
	// NotFound: a path other than TracesPath (404).
	NotFound uint64 `json:"not_found"`
	// Canceled: the request's context ended before its spans were stored
	// (503).
	Canceled uint64 `json:"canceled"`
	// Overloaded: the bytes in flight were at their limit (503 with
	// Retry-After; the sender retries).
	Overloaded uint64 `json:"overloaded"`
}

// Total is the number of rejected requests.
func (r RequestsRejected) Total() uint64 {
	return r.Malformed + r.TooLarge + r.UnsupportedMediaType + r.Method + r.NotFound + r.Canceled + r.Overloaded
}

// Stats returns the current counters.
func (r *Receiver) Stats() ReceiverStats {
	inflight, peak, reclaims := r.budget.stats()
	return ReceiverStats{
		Requests: r.requests.Load(),
		RequestsRejected: RequestsRejected{
			Malformed:            r.rejMalformed.Load(),
			TooLarge:             r.rejTooLarge.Load(),
			UnsupportedMediaType: r.rejMediaType.Load(),
			Method:               r.rejMethod.Load(),
			NotFound:             r.rejNotFound.Load(),
			Canceled:             r.rejCanceled.Load(),
			Overloaded:           r.rejOverloaded.Load(),
		},
		SpansReceived:     r.spansReceived.Load(),
		SpansAccepted:     r.spansAccepted.Load(),
		SpansDuplicate:    r.spansDuplicate.Load(),
		SpansRejected:     r.spansRejected.Load(),
		BytesInFlight:     inflight,
		BytesInFlightPeak: peak,
		MemoryReclaims:    reclaims,
		LogsSuppressed:    r.logLimit.total(),
	}
}

// wireFormat is the body's encoding: protobuf or JSON.
type wireFormat int

const (
	formatUnknown wireFormat = iota
	formatProtobuf
	formatJSON
)

// decodeFormat is f as the decoder names it.
func (f wireFormat) decodeFormat() otlpdecode.Format {
	if f == formatProtobuf {
		return otlpdecode.FormatProtobuf
	}
	return otlpdecode.FormatJSON
}

func (f wireFormat) contentType() string {
	if f == formatProtobuf {
		return otlpdecode.ContentTypeProtobuf
	}
	return otlpdecode.ContentTypeJSON
}

// rejection is a request turned away: the status to answer, the counter to
// bump, the reason to log, and the message for the sender.
type rejection struct {
	status  int
	code    codes.Code
	counter *atomic.Uint64
	reason  string
	msg     string
	// retryAfter, when positive, is sent as Retry-After (seconds).
	retryAfter int
}

func (r *Receiver) malformed(msg string) *rejection {
	return &rejection{http.StatusBadRequest, codes.InvalidArgument, &r.rejMalformed, "malformed", msg, 0}
}

func (r *Receiver) tooLarge(msg string) *rejection {
	return &rejection{http.StatusRequestEntityTooLarge, codes.InvalidArgument, &r.rejTooLarge, "too_large", msg, 0}
}

func (r *Receiver) canceled(err error) *rejection {
	return &rejection{http.StatusServiceUnavailable, codes.Unavailable, &r.rejCanceled, "canceled",
		"request ended before its spans were stored: " + err.Error(), 0}
}

func (r *Receiver) unsupported(msg string) *rejection {
	return &rejection{http.StatusUnsupportedMediaType, codes.InvalidArgument, &r.rejMediaType, "unsupported_media_type", msg, 0}
}

// ServeHTTP handles one export request.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	format, rej := r.check(w, req)
	if rej != nil {
		r.reject(w, req, format, rej)
		return
	}
	gz := isGzip(req.Header.Get("Content-Encoding"))
	// The body's buffers, and the spans decoded from them, are held
	// until the request ends.
	l := &lease{b: r.budget}
	defer r.endLease(w, l)
	body, err := r.readBody(w, req, gz, l)
	if err != nil {
		r.reject(w, req, format, r.classifyReadError(req.Context(), err))
		return
	}
	// The decoder's memory is reused from request to request, and the
	// spans it decodes point into the body: both stay the request's until
	// the store has copied what it keeps (packed.go), then go back to
	// their pools.
	dec := r.decoders.Get().(*otlpdecode.Decoder)
	dec.MaxSpans, dec.MaxValues = r.limits.MaxSpansPerRequest, r.limits.MaxAttributesPerRequest
	defer func() {
		if dec.Reusable() {
			r.decoders.Put(dec)
		}
		if format == formatProtobuf {
			r.bodies.put(body)
		}
	}()
	var (
		spans    []otelmap.Span
		attrs    *otelmap.PackedAttrs
		warnings []string
	)
	packed, _ := r.next.(PackedConsumer)
	if packed != nil && format == formatProtobuf {
		spans, attrs, warnings, err = dec.DecodePacked(body)
	} else {
		spans, warnings, err = dec.Decode(body, format.decodeFormat())
	}
	if errors.Is(err, otlpdecode.ErrOverLimit) {
		r.reject(w, req, format, r.tooLarge(err.Error()))
		return
	}
	if err != nil {
		r.reject(w, req, format, r.malformed(err.Error()))
		return
	}
	// The sender may have given up while we decoded; storing now would
	// record spans it will send again, or that a shutdown has disowned.
	if err := req.Context().Err(); err != nil {
		r.reject(w, req, format, r.canceled(err))
		return
	}
	received := len(spans)
	// The consumer (the trace store) applies span admission: the ingest
	// token's rules, then its own, with the request's source.
	var res otelmap.AddResult
	if attrs != nil {
		res = packed.ConsumePackedSpans(req.Context(), requestSource(req), req.Header.Get(otelmap.IngestTokenHeader), spans, attrs) // it keeps copies
	} else {
		res = r.next.ConsumeSpans(req.Context(), requestSource(req), req.Header.Get(otelmap.IngestTokenHeader), spans) // it keeps copies
	}
	spans, attrs = nil, nil
	r.spansReceived.Add(uint64(received))
	r.spansAccepted.Add(uint64(res.Accepted))
	r.spansDuplicate.Add(uint64(res.Duplicates))
	r.spansRejected.Add(uint64(res.Rejected))

	resp := ptraceotlp.NewExportResponse()
	if res.Rejected > 0 {
		msg := res.Reason
		if len(warnings) > 0 {
			msg += "; " + warnings[0]
		}
		resp.PartialSuccess().SetRejectedSpans(int64(res.Rejected))
		resp.PartialSuccess().SetErrorMessage(msg)
		r.warn(req.Context(), "spans_rejected", "otlp receiver: spans rejected",
			slog.Int("rejected", res.Rejected), slog.Int("received", received),
			slog.String("reason", msg), slog.String("remote", req.RemoteAddr))
	}
	if res.Late > 0 {
		// Not a rejection: the sender did nothing wrong, and sending again
		// would not help. The assessor reports the count with the task.
		r.log().LogAttrs(req.Context(), slog.LevelWarn, "otlp receiver: spans arrived after their trace was assessed; counted as late, not used",
			slog.Int("late", res.Late), slog.String("trace_id", res.LateTrace.String()), slog.String("remote", req.RemoteAddr))
	}
	var out []byte
	if format == formatProtobuf {
		out, err = resp.MarshalProto()
	} else {
		out, err = resp.MarshalJSON()
	}
	if err != nil {
		// The spans are stored; only the answer failed, which cannot
		// happen for a message this simple.
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", format.contentType())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// check validates everything but the body: path, method, content type,
// content encoding and declared length. format is known as soon as the
// content type is, so that a later rejection can answer in it.
func (r *Receiver) check(w http.ResponseWriter, req *http.Request) (wireFormat, *rejection) {
	format := parseContentType(req.Header.Get("Content-Type"))
	if req.URL.Path != TracesPath {
		return format, &rejection{http.StatusNotFound, codes.NotFound, &r.rejNotFound, "not_found",
			fmt.Sprintf("no OTLP endpoint at %q; traces go to %s", req.URL.Path, TracesPath), 0}
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return format, &rejection{http.StatusMethodNotAllowed, codes.Unimplemented, &r.rejMethod, "method",
			fmt.Sprintf("method %s not allowed; use POST", req.Method), 0}
	}
	if format == formatUnknown {
		return format, r.unsupported(fmt.Sprintf("unsupported content type %q; use %s or %s",
			req.Header.Get("Content-Type"), otlpdecode.ContentTypeProtobuf, otlpdecode.ContentTypeJSON))
	}
	if enc := req.Header.Get("Content-Encoding"); !isGzip(enc) && !isIdentity(enc) {
		w.Header().Set("Accept-Encoding", "gzip, identity")
		return format, r.unsupported(fmt.Sprintf("unsupported content encoding %q; use gzip or none", enc))
	}
	if req.ContentLength > r.limits.MaxBodyBytes {
		return format, r.tooLarge(fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes",
			req.ContentLength, r.limits.MaxBodyBytes))
	}
	return format, nil
}

// parseContentType accepts the two OTLP media types, with any parameters
// (e.g. "; charset=utf-8").
func parseContentType(ct string) wireFormat {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return formatUnknown
	}
	switch mt {
	case otlpdecode.ContentTypeProtobuf:
		return formatProtobuf
	case otlpdecode.ContentTypeJSON:
		return formatJSON
	}
	return formatUnknown
}

func isGzip(enc string) bool {
	return strings.EqualFold(strings.TrimSpace(enc), "gzip")
}

func isIdentity(enc string) bool {
	enc = strings.TrimSpace(enc)
	return enc == "" || strings.EqualFold(enc, "identity") || strings.EqualFold(enc, "none")
}

// reject answers a rejected request with a google.rpc.Status in the
// request's own encoding (JSON when it has none we speak), counts it and
// logs why — never the body.
func (r *Receiver) reject(w http.ResponseWriter, req *http.Request, format wireFormat, rej *rejection) {
	rej.counter.Add(1)
	r.warn(req.Context(), rej.reason, "otlp receiver: request rejected",
		slog.String("reason", rej.reason), slog.Int("status", rej.status), slog.String("error", rej.msg),
		slog.String("remote", req.RemoteAddr), slog.String("content_type", req.Header.Get("Content-Type")),
		slog.String("content_encoding", req.Header.Get("Content-Encoding")))
	var body []byte
	var err error
	if format == formatProtobuf {
		body, err = proto.Marshal(&spb.Status{Code: int32(rej.code), Message: rej.msg})
	} else {
		format = formatJSON
		body, err = json.Marshal(struct {
			Code    int32  `json:"code"`
			Message string `json:"message"`
		}{int32(rej.code), rej.msg})
	}
	if err != nil {
		http.Error(w, rej.msg, rej.status)
		return
	}
	w.Header().Set("Content-Type", format.contentType())
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if rej.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rej.retryAfter))
	}
	w.WriteHeader(rej.status)
	_, _ = w.Write(body)
}
