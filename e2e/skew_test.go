package e2e

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// TestSkewBody: the clock-skew proxy shifts a span's start, end and event
// times by the offset and keeps everything else; a body that is not
// OTLP protobuf is refused.
func TestSkewBody(t *testing.T) {
	req := ptraceotlp.NewExportRequest()
	span := req.Traces().ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	span.SetName("invoke_agent reviewer-1")
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	span.Events().AppendEmpty().SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
	raw, err := req.MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/v1/traces", bytes.NewReader(raw))
	r.Header.Set("Content-Type", "application/x-protobuf")
	out, err := skewBody(r, 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := ptraceotlp.NewExportRequest()
	if err := got.UnmarshalProto(out); err != nil {
		t.Fatal(err)
	}
	s := got.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if s.Name() != "invoke_agent reviewer-1" || !s.StartTimestamp().AsTime().Equal(start.Add(90*time.Second)) ||
		!s.EndTimestamp().AsTime().Equal(start.Add(91*time.Second)) ||
		!s.Events().At(0).Timestamp().AsTime().Equal(start.Add(90*time.Second+time.Millisecond)) {
		t.Errorf("span %s %v..%v event %v", s.Name(), s.StartTimestamp().AsTime(), s.EndTimestamp().AsTime(), s.Events().At(0).Timestamp().AsTime())
	}
	r = httptest.NewRequest("POST", "/v1/traces", bytes.NewReader([]byte("{}")))
	r.Header.Set("Content-Type", "application/json")
	if _, err := skewBody(r, time.Second); err == nil {
		t.Error("a JSON body was accepted")
	}
}
