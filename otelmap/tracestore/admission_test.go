package tracestore

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// Span admission (admission.go, ingest.go), over real OTLP/HTTP requests
// on loopback.

// otlptest.AdmissionTraceID is trace n of a test: distinct from otlptest.Traces' ids
// TestAdmissionReservationLifecycle: reservations are bounded, released
// after the task, and a released trace counts as unsolicited again.
func TestAdmissionReservationLifecycle(t *testing.T) {
	st := NewStore(Limits{MaxTraces: 2, Admission: AdmissionLimits{MaxReserved: 2}})
	r1, r2, r3 := otlptest.AdmissionTraceID(1), otlptest.AdmissionTraceID(2), otlptest.AdmissionTraceID(3)
	if err := st.Reserve(r1, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Reserve(r2, ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Reserve(r3, ""); !errors.Is(err, ErrReservationsFull) {
		t.Fatalf("third reservation: %v, want ErrReservationsFull", err)
	}
	spans := func(id trace.TraceID, salt byte) []otelmap.Span {
		sp, _ := otlpdecode.SpansFromTraces(otlptest.AdmissionTraces([]trace.TraceID{id}, 1, salt), otelmap.SourceOTLP)
		return sp
	}
	// Two unsolicited traces fill MaxTraces; the reserved ones still come in.
	for _, id := range []trace.TraceID{otlptest.AdmissionTraceID(10), otlptest.AdmissionTraceID(11), r1, r2} {
		if res := st.AddFrom("", spans(id, 1)); res.Accepted != 1 {
			t.Fatalf("trace %s: %+v", id, res)
		}
	}
	st.Release(r1)
	st.Release(r1) // harmless
	st.MarkAssessed(r2)
	stats := st.Stats().Admission
	if stats.Reserved != 0 || stats.Unsolicited != 3 || stats.ReservationsRefused != 1 {
		t.Fatalf("after release: %+v", stats)
	}
	// The released trace is held as an unsolicited one now, over the limit
	// until it expires; a new one is refused.
	if res := st.AddFrom("", spans(otlptest.AdmissionTraceID(12), 1)); res.Rejected != 1 {
		t.Fatalf("new trace over the limit: %+v", res)
	}
	if err := st.Reserve(r3, ""); err != nil {
		t.Fatalf("reservation after release: %v", err)
	}
}
