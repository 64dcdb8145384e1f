package a2aserve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func get(t *testing.T, ln net.Listener) string {
	t.Helper()
	resp, err := http.Get(BaseURL(ln.Addr()) + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServe serves two listeners, lets a request that is open when the
// shutdown starts finish, and runs the hooks in their order.
func TestServe(t *testing.T) {
	ln, otlp := listen(t), listen(t)
	entered := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("slow") {
			close(entered)
			<-release
		}
		_, _ = io.WriteString(w, "agent")
	})
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, h, ServeOptions{
			Also:            []Endpoint{{Listener: otlp, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "otlp") })}},
			ShutdownTimeout: 30 * time.Second,
			BeforeShutdown: func() error {
				note("before")
				close(release) // the work holding the open request ends
				return nil
			},
			AfterShutdown: func(ctx context.Context) error {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("AfterShutdown's context has no deadline")
				}
				note("after")
				return nil
			},
		})
	}()
	if got := get(t, ln); got != "agent" {
		t.Errorf("agent listener answered %q", got)
	}
	if got := get(t, otlp); got != "otlp" {
		t.Errorf("second listener answered %q", got)
	}
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(BaseURL(ln.Addr()) + "/?slow")
		if err != nil {
			slow <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		slow <- string(b)
	}()
	<-entered
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if got := <-slow; got != "agent" {
		t.Errorf("the open request got %q, want its answer", got)
	}
	if !slices.Equal(order, []string{"before", "after"}) {
		t.Errorf("hooks ran %v", order)
	}
	if _, err := http.Get(BaseURL(ln.Addr()) + "/"); err == nil {
		t.Error("the listener still answers after Serve returned")
	}
}

// TestServeErrors: a listener that fails ends serving, and its error and
// the hooks' errors come back.
func TestServeErrors(t *testing.T) {
	ln := listen(t)
	_ = ln.Close()
	err := Serve(t.Context(), ln, http.NotFoundHandler(), ServeOptions{
		BeforeShutdown: func() error { return errors.New("before failed") },
		AfterShutdown:  func(context.Context) error { return errors.New("after failed") },
	})
	for _, want := range []string{"serve: ", "before failed", "after failed"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	if err := Serve(t.Context(), nil, nil, ServeOptions{}); err == nil {
		t.Error("Serve without a listener returned nil")
	}
}

// TestServeTick: the tick runs while serving and not after.
func TestServeTick(t *testing.T) {
	ln := listen(t)
	ticked := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	var stopped sync.Mutex
	stop := false
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.NotFoundHandler(), ServeOptions{
			TickInterval: time.Millisecond,
			Tick: func() {
				stopped.Lock()
				defer stopped.Unlock()
				if stop {
					t.Error("tick after the shutdown started")
				}
				select {
				case ticked <- struct{}{}:
				default:
				}
			},
			BeforeShutdown: func() error {
				stopped.Lock()
				defer stopped.Unlock()
				stop = true
				return nil
			},
		})
	}()
	<-ticked
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
