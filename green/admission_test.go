package green

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// The ingest token through a served green agent: the participant finds
// the assessment's token in the message metadata and, while the task
// runs, exports spans with it over OTLP to the green agent's receiver.

// tokenExport is what a participant saw and was answered.
type tokenExport struct {
	token              string
	withToken, without int64 // spans rejected
}

// exportWithToken posts one span of trace task and one of an unrelated
// trace, with token when not empty, and returns the spans rejected.
func exportWithToken(ctx context.Context, url string, task trace.TraceID, token string, salt byte) (int64, error) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "accepter")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	now := pcommon.NewTimestampFromTime(time.Now())
	for i, id := range []pcommon.TraceID{pcommon.TraceID(task), {0xfe, 15: salt}} {
		sp := spans.AppendEmpty()
		sp.SetTraceID(id)
		sp.SetSpanID(pcommon.SpanID{0xfe, salt, byte(i), 7: 1})
		sp.SetName("tool lookup")
		sp.SetKind(ptrace.SpanKindInternal)
		sp.SetStartTimestamp(now)
		sp.SetEndTimestamp(now + 1000)
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+otlpreceiver.TracesPath, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", otlpdecode.ContentTypeProtobuf)
	if token != "" {
		req.Header.Set(otelmap.IngestTokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("export: status %d, %q, %v", resp.StatusCode, out, err)
	}
	er := ptraceotlp.NewExportResponse()
	if err := er.UnmarshalProto(out); err != nil {
		return 0, err
	}
	return er.PartialSuccess().RejectedSpans(), nil
}

// TestIngestTokenThroughServer: with and without strict ingest, a
// participant's export with the token adds to its task's trace and has
// its span of another trace refused; without the token, the task's span
// is admitted unless the server is strict, and then the task reports it
// refused.
func TestIngestTokenThroughServer(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			g := startGreen(t, ServerOptions{Scenarios: newCoordinationForServer(t), ProgressInterval: time.Minute,
				StoreLimits: tracestore.Limits{Admission: tracestore.AdmissionLimits{StrictIngest: strict}}})
			var mu sync.Mutex
			var seen tokenExport
			var exportErr error
			p := a2atest.Start(t, a2atest.Options{Name: "accepter", Store: g.srv.Store(),
				ReplyFunc: func(ctx context.Context, in a2atest.Input) (string, error) {
					md, _ := in.Metadata[MetadataIngest].(map[string]any)
					token, _ := md["token"].(string)
					task := trace.SpanContextFromContext(ctx).TraceID()
					with, err1 := exportWithToken(ctx, g.url, task, token, 1)
					without, err2 := exportWithToken(ctx, g.url, task, "", 2)
					mu.Lock()
					seen, exportErr = tokenExport{token, with, without}, firstErr(err1, err2)
					mu.Unlock()
					return coordinationAnswer("accept")(ctx, in)
				}})
			s := summarize(streamAll(t, t.Context(), g.client10(t),
				fmt.Sprintf(`{"participants": {"reviewer": %q}, "config": {"num_tasks": 1, "settle_quiet_ms": 100}}`, p.URL)))
			if s.final != a2a.TaskStateCompleted {
				t.Fatalf("final state %s: %s", s.final, s.text)
			}
			mu.Lock()
			defer mu.Unlock()
			if exportErr != nil {
				t.Fatal(exportErr)
			}
			if len(seen.token) < 20 {
				t.Fatalf("participant found ingest token %q in the metadata", seen.token)
			}
			wantWithout := int64(0)
			if strict {
				wantWithout = 1
			}
			if seen.withToken != 1 || seen.without != wantWithout {
				t.Fatalf("rejected with token %d (want 1: the other trace), without %d (want %d)", seen.withToken, seen.without, wantWithout)
			}
			task := resultOf(t, s.artifact)["tasks"].([]any)[0].(map[string]any)
			refused, _ := task["refused_spans"].(float64)
			if int64(refused) != wantWithout {
				t.Errorf("task refused_spans %v, want %d", task["refused_spans"], wantWithout)
			}
			st := g.srv.Store().Stats().Admission
			if st.Reserved != 0 || st.RefusedToken != 1 || st.RefusedStrict != uint64(wantWithout) {
				t.Errorf("admission stats %+v", st)
			}
		})
	}
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
