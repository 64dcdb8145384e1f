package otlpdecode

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/otelmap"
)

// The media types of the two encodings, as OTLP/HTTP names them.
const (
	ContentTypeProtobuf = "application/x-protobuf"
	ContentTypeJSON     = "application/json"
)

// Format is the encoding of an OTLP/HTTP export request body.
type Format int

// The two encodings OTLP/HTTP speaks.
const (
	FormatProtobuf Format = iota + 1
	FormatJSON
)

// ErrOverLimit is what Decode's error wraps when a body holds more spans
// or attribute values than the Decoder's bounds.
var ErrOverLimit = errors.New("over the decoder's limit")

// Decoder decodes whole OTLP ExportTraceServiceRequest bodies into spans:
// protobuf straight from the wire (SpansFromProto's decoder), JSON through
// pdata (SpansFromTraces). It is made to be reused, one request after
// another (a sync.Pool of them serves the OTLP receiver): its memory is
// kept from one Decode to the next, and the strings of the spans it
// decodes from protobuf point into the body. What a Decode returns is
// therefore valid only while the body is unchanged and until the next
// Decode: a caller copies what it keeps (the trace store packs every span
// it accepts). A Decoder is not safe for concurrent use.
type Decoder struct {
	// MaxSpans bounds the spans of one body, MaxValues the attribute
	// values of a protobuf body (every KeyValue, and each element of an
	// array or map value); zero means no bound. A body over either is
	// refused with an error that wraps ErrOverLimit, a protobuf body's
	// spans before it is decoded.
	MaxSpans, MaxValues int
	// Source is the road the spans came by (Span.Source); "" means
	// SourceOTLP.
	Source string

	wire wireDecoder
}

// NewDecoder returns a Decoder ready for reuse.
func NewDecoder() *Decoder { return &Decoder{wire: wireDecoder{reuse: true, alias: true}} }

// maxPooledSpans bounds the decoders worth reusing: one that decoded a
// larger request is let go, so a rare huge request does not stay in
// memory.
const maxPooledSpans = 1 << 16

// Reusable tells whether d is worth keeping for another body (a pool
// lets go of one that decoded a very large request).
func (d *Decoder) Reusable() bool {
	return cap(d.wire.spans) <= maxPooledSpans && cap(d.wire.packed.Buf) <= maxPooledPacked
}

// maxPooledPacked bounds the packed attributes (DecodePacked) of the
// decoders worth reusing, as maxPooledSpans bounds their spans.
const maxPooledPacked = 16 << 20

// Decode decodes body, in format, into spans, with warnings about what
// was dropped (invalid ids, say). An empty body is an empty request.
func (d *Decoder) Decode(body []byte, format Format) ([]otelmap.Span, []string, error) {
	source := d.Source
	if source == "" {
		source = otelmap.SourceOTLP
	}
	maxSpans := d.MaxSpans
	if maxSpans <= 0 {
		maxSpans = int(^uint(0) >> 1)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, nil
	}
	if format == FormatProtobuf {
		n := countSpans(body)
		if n > maxSpans {
			return nil, nil, &errTooManySpans{n, maxSpans}
		}
		d.wire.maxValues = d.MaxValues
		return d.wire.decodeCounted(body, n, source, false)
	}
	td, err := decodeTraces(body, format)
	if err != nil {
		return nil, nil, err
	}
	if n := td.SpanCount(); n > maxSpans {
		return nil, nil, &errTooManySpans{n, maxSpans}
	}
	spans, warnings := SpansFromTraces(td, source)
	return spans, warnings, nil
}

// DecodePacked is Decode for a protobuf body whose spans go to a consumer
// that keeps their attributes packed, as the trace store does
// (otelmap.PackedAttrs): the spans have no Attrs, and their attributes
// are returned packed instead, span i's attrs.Of(i), which spares
// building a KeyValue for each only for the store to pack it. The spans
// are otherwise Decode's, attribute for attribute (FuzzProtoDecodersAgree
// holds the two to that). What it returns is valid as Decode's is.
func (d *Decoder) DecodePacked(body []byte) (spans []otelmap.Span, attrs *otelmap.PackedAttrs, warnings []string, err error) {
	d.wire.packAttrs = true
	defer func() { d.wire.packAttrs = false }()
	spans, warnings, err = d.Decode(body, FormatProtobuf)
	if err != nil || spans == nil {
		return nil, nil, warnings, err
	}
	return spans, &d.wire.packed, warnings, nil
}

// errTooManySpans: a request holds more spans than MaxSpansPerRequest.
type errTooManySpans struct{ spans, limit int }

func (e *errTooManySpans) Is(target error) bool { return target == ErrOverLimit }

func (e *errTooManySpans) Error() string {
	return fmt.Sprintf("the request holds %d spans, over the limit of %d spans per request; send smaller batches", e.spans, e.limit)
}

// decodeTraces decodes a whole ExportTraceServiceRequest. Both paths apply
// pdata's migration of deprecated fields (instrumentationLibrarySpans). An
// empty body is an empty request in either encoding, as it is in protobuf:
// the specification asks that an empty request succeed.
func decodeTraces(body []byte, format Format) (ptrace.Traces, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return ptrace.NewTraces(), nil
	}
	if format == FormatProtobuf {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			return ptrace.Traces{}, fmt.Errorf("decode protobuf ExportTraceServiceRequest: %s", cleanDecodeError(err))
		}
		return req.Traces(), nil
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(body)
	if err != nil {
		return ptrace.Traces{}, fmt.Errorf("decode JSON ExportTraceServiceRequest: %s", cleanDecodeError(err))
	}
	return td, nil
}

// cleanDecodeError drops the excerpt of the input that pdata's JSON decoder
// (json-iterator) appends to its errors: it is up to a hundred bytes of the
// sender's data, which has no place in logs or in the answer.
func cleanDecodeError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ", error found in #"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
