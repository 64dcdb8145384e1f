package a2aserve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
			//lint:ignore SA5000 the panic under test
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

// TestServeBoundsBodyReads: a client that sends its headers and then
// trickles its body gets an answer once BodyReadTimeout passes (before,
// the handler waited as long as the client liked), while a request whose
// body came in time, and a GET, may stream their answer for longer than
// that without their context being canceled.
func TestServeBoundsBodyReads(t *testing.T) {
	ln := listen(t)
	const bound = 300 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
			return
		}
		// Answer after the bound has passed, as a stream does.
		select {
		case <-time.After(3 * bound):
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "streamed")
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, ServeOptions{BodyReadTimeout: bound}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()

	// The trickler: headers, one byte of a promised thousand, then nothing.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the trickling client got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "timeout") {
		t.Errorf("the trickling client: %d %q", resp.StatusCode, b)
	}

	// A body in time, and a GET: their answers come after the bound.
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		var body io.Reader = strings.NewReader("{}")
		if method == http.MethodGet {
			body = nil
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, "http://"+addr+"/", body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "streamed" {
			t.Errorf("%s answered after the bound: %d %q", method, resp.StatusCode, b)
		}
	}
}
