package green

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap/jaegerquery"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
)

// AssessJaeger by trace id over the framework captures (spans of fifteen
// agent frameworks actually run): each trace served as Jaeger's API v3
// serves one (GET /api/v3/traces/{id}, the OTLP JSON in its {"result":
// ...} envelope, http_gateway.go returnTrace), fetched and assessed by a
// pool of workers under the race detector, must equal AssessOTLPFiles on
// the very bytes served, saved to files. A real Jaeger serves them in
// stack/jaeger_source_test.go; this one runs wherever go test does.

// servedTraces splits the captures into one answer per trace.
func servedTraces(t *testing.T) map[pcommon.TraceID][]byte {
	t.Helper()
	paths, err := filepath.Glob("../otelmap/assemble/testdata/frameworks/*.otlp.json")
	if err != nil || len(paths) < 10 {
		t.Fatalf("framework captures: %v, %d files", err, len(paths))
	}
	out := map[pcommon.TraceID][]byte{}
	for _, path := range paths {
		docs, err := otlpdecode.ReadOTLPJSONFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range jaegerquery.TraceIDs(docs) {
			one := ptrace.NewTraces()
			for _, td := range docs {
				for _, rs := range td.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						var keep []ptrace.Span
						for _, sp := range ss.Spans().All() {
							if sp.TraceID() == id {
								keep = append(keep, sp)
							}
						}
						if len(keep) == 0 {
							continue
						}
						nrs := one.ResourceSpans().AppendEmpty()
						rs.Resource().CopyTo(nrs.Resource())
						nss := nrs.ScopeSpans().AppendEmpty()
						ss.Scope().CopyTo(nss.Scope())
						for _, sp := range keep {
							sp.CopyTo(nss.Spans().AppendEmpty())
						}
					}
				}
			}
			doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(one)
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := out[id]; dup {
				t.Fatalf("trace %v in two captures", id)
			}
			out[id] = append(append([]byte(`{"result":`), doc...), '}')
		}
	}
	return out
}

// jaegerV3 serves answers by trace id, and Jaeger's 404 for the rest; it
// counts the requests in flight at once. With gate > 1, the first
// requests are held until gate of them are in flight together (or a
// generous minute passed), which proves that many are sent at once.
func jaegerV3(t *testing.T, answers map[pcommon.TraceID][]byte, gate int) (*jaegerquery.Client, func() int) {
	t.Helper()
	var mu sync.Mutex
	inFlight, most := 0, 0
	open := make(chan struct{})
	var once sync.Once
	if gate <= 1 {
		once.Do(func() { close(open) })
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight >= gate {
			once.Do(func() { close(open) })
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-open:
		case <-time.After(time.Minute):
		case <-r.Context().Done():
			return
		}
		hexID, ok := strings.CutPrefix(r.URL.Path, "/api/v3/traces/")
		var id pcommon.TraceID
		for want := range answers {
			if want.String() == hexID {
				id = want
			}
		}
		if !ok || id.IsEmpty() {
			http.Error(w, `{"error":{"httpCode":404,"message":"trace not found"}}`, http.StatusNotFound)
			return
		}
		w.Write(answers[id])
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	c, err := jaegerquery.New(srv.URL, jaegerquery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() int { mu.Lock(); defer mu.Unlock(); return most }
}

func TestAssessJaegerEqualsFiles(t *testing.T) {
	before := runtime.NumGoroutine()
	// Registered first, so it runs after the server and its connections
	// are closed.
	t.Cleanup(func() { testenv.CheckNoGoroutineLeak(t, before) })
	answers := servedTraces(t)
	client, mostInFlight := jaegerV3(t, answers, 3)
	dir := t.TempDir()
	var ids []pcommon.TraceID
	var files []string
	for id, body := range answers {
		ids = append(ids, id)
		path := filepath.Join(dir, id.String()+".json")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	// Each id twice: named twice, assessed once.
	fromJaeger, err := AssessJaeger(t.Context(), JaegerSource{Client: client, TraceIDs: append(ids, ids...)}, JaegerOptions{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	fromFiles, err := AssessOTLPFiles(t.Context(), files, OfflineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJaeger.Tasks) != len(ids) {
		t.Fatalf("%d tasks for %d traces", len(fromJaeger.Tasks), len(ids))
	}
	a, _ := json.Marshal(fromJaeger.Tasks)
	b, _ := json.Marshal(fromFiles.Tasks)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("tasks from Jaeger and from files differ:\n%s\n%s", a, b)
	}
	if len(fromJaeger.Inputs) != len(ids) || !strings.Contains(fromJaeger.Inputs[0], "/api/v3/traces/") {
		t.Errorf("inputs %q", fromJaeger.Inputs)
	}
	if most := mostInFlight(); most != 3 {
		t.Errorf("at most %d requests at once with 3 workers, want 3", most)
	}
	t.Logf("%d traces of %d captures; at most %d requests at once", len(ids), len(files), mostInFlight())
}

func TestAssessJaegerNamesEveryMissingTrace(t *testing.T) {
	answers := servedTraces(t)
	client, _ := jaegerV3(t, answers, 1)
	var ids []pcommon.TraceID
	for id := range answers {
		ids = append(ids, id)
	}
	missing := []pcommon.TraceID{{0xaa, 1}, {0xbb, 2}}
	_, err := AssessJaeger(t.Context(), JaegerSource{Client: client, TraceIDs: append([]pcommon.TraceID{missing[1]}, append(ids, missing[0])...)}, JaegerOptions{Workers: 2})
	var inputErr *InputError
	if !errors.As(err, &inputErr) || !errors.Is(err, jaegerquery.ErrNotFound) {
		t.Fatalf("err %v, want an InputError of ErrNotFound", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, missing[0].String()+", "+missing[1].String()) || !strings.Contains(msg, "2 of") {
		t.Errorf("err %q does not name both missing traces", msg)
	}
	for _, id := range ids {
		if strings.Contains(msg, id.String()) {
			t.Errorf("err %q names %s, which Jaeger holds", msg, id)
		}
	}
}

func TestAssessJaegerStopsOnMalformedAnswer(t *testing.T) {
	answers := servedTraces(t)
	var ids []pcommon.TraceID
	for id := range answers {
		ids = append(ids, id)
	}
	answers[ids[len(ids)/2]] = []byte("<html>not Jaeger</html>")
	client, _ := jaegerV3(t, answers, 1)
	_, err := AssessJaeger(t.Context(), JaegerSource{Client: client, TraceIDs: ids}, JaegerOptions{Workers: 4})
	if !errors.Is(err, jaegerquery.ErrMalformed) {
		t.Fatalf("err %v, want ErrMalformed", err)
	}
	var inputErr *InputError
	if errors.As(err, &inputErr) {
		t.Errorf("err %v is an InputError; Jaeger's answer is no fault of the user's flags", err)
	}
}
