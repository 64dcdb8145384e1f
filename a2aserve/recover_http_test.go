package a2aserve

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestServeContainsHandlerPanics: a handler that panics before answering
// gets its client a 500, one that panics in the middle of a response cuts
// only that response, http.ErrAbortHandler passes unlogged, and each
// panic is logged with slog and its stack; the listener serves on, and
// the other listener too.
func TestServeContainsHandlerPanics(t *testing.T) {
	ln, other := listen(t), listen(t)
	logs := &syncBuffer{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/early":
			var m map[string]int
			m["early"]++
		case "/late":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: one\n\n")
			http.NewResponseController(w).Flush()
			panic("late bug")
		case "/abort":
			panic(http.ErrAbortHandler)
		default:
			_, _ = io.WriteString(w, "agent")
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, h, ServeOptions{Also: []Endpoint{{Listener: other, Handler: h}},
			Logger: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	fetch := func(base, path string) (int, string, error) {
		resp, err := client.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	for round := range 3 {
		for _, base := range []string{BaseURL(ln.Addr()), BaseURL(other.Addr())} {
			if code, body, err := fetch(base, "/early"); err != nil || code != http.StatusInternalServerError || !strings.Contains(body, "internal error") {
				t.Errorf("round %d %s/early: %d %q %v", round, base, code, body, err)
			}
			if _, body, err := fetch(base, "/late"); err == nil {
				t.Errorf("round %d %s/late: the cut response read whole: %q", round, base, body)
			}
			if _, _, err := fetch(base, "/abort"); err == nil {
				t.Errorf("round %d %s/abort: not cut", round, base)
			}
			if code, body, err := fetch(base, "/"); err != nil || code != http.StatusOK || body != "agent" {
				t.Errorf("round %d %s/: %d %q %v", round, base, code, body, err)
			}
		}
	}
	out := logs.String()
	if n := strings.Count(out, `msg="HTTP handler panicked"`); n != 12 {
		t.Errorf("%d panics logged, want 12 (early and late, 3 rounds, 2 listeners):\n%s", n, out)
	}
	for _, want := range []string{"path=/early", "answered=true", "path=/late", "answered=false", "late bug",
		"assignment to entry in nil map", "recover_http_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(out, "path=/abort") {
		t.Error("http.ErrAbortHandler was logged as a panic")
	}
}
