package green

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
)

// getStats reads StatsPath of the server at base with the headers given.
func getStats(t *testing.T, base string, headers map[string]string) (int, ServerStats) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+strings.TrimPrefix(StatsPath, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st ServerStats
	if resp.StatusCode == http.StatusOK {
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("stats body: %v", err)
		}
	}
	return resp.StatusCode, st
}

// TestServerStats: the stats endpoint counts an export's spans as received,
// accepted and held, and is behind the A2A token when one is set.
func TestServerStats(t *testing.T) {
	g := startGreen(t, ServerOptions{A2AToken: testA2AToken})
	auth := map[string]string{"Authorization": "Bearer " + testA2AToken}
	if status, _ := getStats(t, g.url, nil); status != http.StatusUnauthorized {
		t.Errorf("stats without the token: %d, want 401", status)
	}
	status, before := getStats(t, g.url, auth)
	if status != http.StatusOK {
		t.Fatalf("stats: %d", status)
	}
	spans := testSpans(t)
	if err := exportSpans(t, g.url+strings.TrimPrefix(otlpreceiver.TracesPath, "/"), nil, spans); err != nil {
		t.Fatalf("export: %v", err)
	}
	_, after := getStats(t, g.url, auth)
	n := uint64(len(spans))
	if after.Receiver.Requests != before.Receiver.Requests+1 ||
		after.Receiver.SpansAccepted != before.Receiver.SpansAccepted+n ||
		after.Store.SpansAccepted != before.Store.SpansAccepted+n ||
		after.Store.Spans != before.Store.Spans+len(spans) {
		t.Errorf("stats went from %+v to %+v after an export of %d spans", before, after, n)
	}
	if st := g.srv.Stats(); st.Store.Spans != after.Store.Spans {
		t.Errorf("Stats() %+v, served %+v", st, after)
	}
	resp, err := http.Post(g.url+strings.TrimPrefix(StatsPath, "/"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("a POST to the stats answered 200")
	}
}
