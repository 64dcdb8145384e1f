package otlpreceiver

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// FuzzReceiverDecode feeds arbitrary bodies, as protobuf or JSON, plain or
// gzip, through the receiver's handler. Whatever the bytes, it must not
// panic, must answer 200, 400 or 413, and must store spans only on a 200,
// exactly as many as it says it accepted.
//
//	go test ./otelmap/otlpreceiver -run '^$' -fuzz FuzzReceiverDecode -fuzztime 1m
func FuzzReceiverDecode(f *testing.F) {
	seeds := []ptrace.Traces{otlptest.Traces(3, 3, 1), otlptest.Traces(4, 2, 2)}
	if pretty, err := os.ReadFile("../testdata/two_agents.otlp.json"); err == nil {
		if td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(pretty); err == nil {
			seeds = append(seeds, td)
		}
		f.Add(pretty, true, false)
	}
	for _, td := range seeds {
		pb := otlptest.Proto(f, td)
		js := otlptest.JSON(f, td)
		f.Add(pb, false, false)
		f.Add(js, true, false)
		f.Add(otlptest.Gzip(f, pb), false, true)
		f.Add(otlptest.Gzip(f, js), true, true)
		f.Add(pb[:len(pb)/2], false, false)
		f.Add(js[:len(js)/2], true, false)
	}
	f.Add([]byte{}, false, false)
	f.Add([]byte("{}"), true, false)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"","spanId":""}]}]}]}`), true, false)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, body []byte, isJSON, gz bool) {
		st := tracestore.NewStore(tracestore.Limits{MaxTraces: 64, MaxSpansPerTrace: 256})
		rcv := NewReceiver(st, ReceiverLimits{MaxBodyBytes: 1 << 20, MaxDecompressedBytes: 4 << 20})
		rcv.SetLogger(quiet)
		req := httptest.NewRequest(http.MethodPost, TracesPath, bytes.NewReader(body))
		ct := otlpdecode.ContentTypeProtobuf
		if isJSON {
			ct = otlpdecode.ContentTypeJSON
		}
		req.Header.Set("Content-Type", ct)
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		rcv.ServeHTTP(rec, req)

		stats := rcv.Stats()
		held := st.Stats().Spans
		switch rec.Code {
		case http.StatusOK:
			if got := rec.Header().Get("Content-Type"); got != ct {
				t.Fatalf("answer Content-Type %q, want %q", got, ct)
			}
			er := ptraceotlp.NewExportResponse()
			var err error
			if isJSON {
				err = er.UnmarshalJSON(rec.Body.Bytes())
			} else {
				err = er.UnmarshalProto(rec.Body.Bytes())
			}
			if err != nil {
				t.Fatalf("answer does not decode: %v", err)
			}
			if stats.SpansReceived != stats.SpansAccepted+stats.SpansDuplicate+stats.SpansRejected {
				t.Fatalf("span counters do not add up: %+v", stats)
			}
			if uint64(held) != stats.SpansAccepted || er.PartialSuccess().RejectedSpans() != int64(stats.SpansRejected) {
				t.Fatalf("store holds %d, stats %+v, partial success %d", held, stats, er.PartialSuccess().RejectedSpans())
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if held != 0 || stats.SpansReceived != 0 || stats.RequestsRejected.Total() != 1 {
				t.Fatalf("rejected request left spans %d, stats %+v", held, stats)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
	})
}
