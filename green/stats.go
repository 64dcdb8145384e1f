package green

import (
	"encoding/json"
	"net/http"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// StatsPath serves the OTLP receiver's and the trace store's counters as
// JSON to a GET: what was received, accepted, rejected and why, and what
// the store holds now, and the push notifications delivered, retried,
// given up and dropped. An operator reads it to see whether the spans of a
// run arrived (and which limit dropped the ones that did not); `make
// bench-ingest` reads it to check that the server holds every span it was
// sent. It is read-only and behind the A2A token when one is set.
const StatsPath = "/stats"

// ServerStats is the body served at StatsPath.
type ServerStats struct {
	Receiver otlpreceiver.ReceiverStats `json:"receiver"`
	Store    tracestore.Stats           `json:"store"`
	Push     a2aserve.PushStats         `json:"push"`
}

// Stats returns the receiver's and the store's counters now.
func (s *Server) Stats() ServerStats {
	return ServerStats{Receiver: s.receiver.Stats(), Store: s.store.Stats(), Push: s.push.Stats()}
}

// serveStats answers a GET (or HEAD) at StatsPath with Stats as JSON.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := json.Marshal(s.Stats())
	if err != nil {
		http.Error(w, "stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
