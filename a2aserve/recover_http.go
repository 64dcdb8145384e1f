package a2aserve

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
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
