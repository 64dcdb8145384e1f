package a2aserve

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// The net/http boundary (docs/operations.md#code-we-hand-a-library).
// net/http runs each request's handler in a goroutine of its own and
// recovers a panic there, but it only writes a line to the server's
// ErrorLog and cuts the connection: the client sees a reset, not an
// answer. ContainHTTPPanics is the one place that does better, for every
// listener Serve serves: the panic is logged with slog, with the request
// and the stack, and the client gets 500 if nothing was written yet; a
// response already under way is cut, as net/http would (the status is
// gone).

// ContainHTTPPanics wraps h so that a panic in it fails only its request.
// http.ErrAbortHandler, the sanctioned way to cut a response, passes on
// to net/http unlogged.
func ContainHTTPPanics(h http.Handler, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			rec := recover()
			if rec == nil {
				return
			}
			if rec == http.ErrAbortHandler { //nolint:errorlint // net/http compares it so too
				panic(rec)
			}
			log.Error("HTTP handler panicked", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
				"answered", !tw.wrote, "panic", fmt.Sprint(rec), "stack", string(debug.Stack()))
			if tw.wrote {
				panic(http.ErrAbortHandler) // cut the response under way, quietly: it is logged above
			}
			http.Error(w, "internal error: the server failed on this request (it is logged)", http.StatusInternalServerError)
		}()
		h.ServeHTTP(tw, r)
	})
}

// trackingWriter notes whether a response was started. It keeps the
// writer's optional interfaces reachable: Flush directly (a2a-go's event
// streams assert http.Flusher), the rest through Unwrap
// (http.ResponseController).
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= 200 { // 1xx answers are informational: the response is still to come
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Flush() {
	w.wrote = true
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// DefaultBodyReadTimeout bounds the reading of one request's body.
const DefaultBodyReadTimeout = time.Minute

// BoundBodyRead wraps h so that a request's body must arrive within d of
// the request's start: a client that sends its headers and then trickles
// its body, or none, held a goroutine and a connection of the server for
// as long as it liked (ReadHeaderTimeout covers only the headers), and a
// few thousand such clients stop everyone else. A body that does not
// arrive in time reads as an i/o timeout error, which the handler answers
// as a bad request. net/http lifts the deadline itself once the body has
// been read to its end (connReader.startBackgroundRead, net/http
// server.go, Go 1.26), so an answer streamed afterwards may last as long
// as it needs; the deadline is not set for a request without a body (an
// event stream opened with a GET), whose background read has already
// begun and would take the deadline for the client gone.
func BoundBodyRead(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && d > 0 {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}
