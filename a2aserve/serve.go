package a2aserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultShutdownTimeout bounds a graceful shutdown when ServeOptions say
// nothing.
const DefaultShutdownTimeout = 10 * time.Second

// readHeaderTimeout bounds the reading of a request's headers.
const readHeaderTimeout = 10 * time.Second

// Endpoint is one more listener that Serve serves, with its own handler
// (the green agent's separate OTLP listener).
type Endpoint struct {
	Listener net.Listener
	Handler  http.Handler
}

// ServeOptions configure Serve. The zero value shuts down within
// DefaultShutdownTimeout and logs nothing.
type ServeOptions struct {
	// Also are more listeners served, and shut down, with the first.
	Also []Endpoint
	// ShutdownTimeout bounds the graceful shutdown: the open requests and
	// AfterShutdown together (default DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// BodyReadTimeout bounds the reading of a request's body
	// (BoundBodyRead; default DefaultBodyReadTimeout).
	BodyReadTimeout time.Duration
	// Tick, when set, runs every TickInterval while serving (a trace
	// store's sweep); it is not running any more when the shutdown starts.
	Tick         func()
	TickInterval time.Duration
	// BeforeShutdown runs once serving ends (ctx ended, or a listener
	// failed), before the servers stop: the place to end work that holds
	// open requests, so they finish instead of being cut.
	BeforeShutdown func() error
	// AfterShutdown runs after the servers stopped, with the rest of the
	// shutdown's time: the place to flush telemetry.
	AfterShutdown func(ctx context.Context) error
	// Logger receives the HTTP servers' own errors (a failed TLS
	// handshake) at ErrorLevel, and a panicking handler's panic and stack
	// at error level (ContainHTTPPanics); nil discards them.
	Logger     *slog.Logger
	ErrorLevel slog.Level
}

// Serve serves h on ln, and every endpoint of opts.Also, until ctx ends or
// a listener fails; then it shuts down gracefully: BeforeShutdown, the
// servers stop accepting and wait for open requests, AfterShutdown, all
// within ShutdownTimeout. It returns nil after a shutdown that ctx asked
// for and nothing failed, else every error of the serving and the
// shutdown. The green agent and the base purple agent serve through it.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	if ln == nil || h == nil {
		return errors.New("a2aserve: Serve needs a listener and a handler")
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	endpoints := append([]Endpoint{{Listener: ln, Handler: h}}, opts.Also...)
	servers := make([]*http.Server, len(endpoints))
	served := make(chan error, len(endpoints))
	for i, ep := range endpoints {
		handler := ContainHTTPPanics(BoundBodyRead(ep.Handler, opts.BodyReadTimeout), logger)
		servers[i] = &http.Server{Handler: handler, ReadHeaderTimeout: readHeaderTimeout,
			ErrorLog: slog.NewLogLogger(logger.Handler(), opts.ErrorLevel)}
		go func() { served <- servers[i].Serve(ep.Listener) }()
	}

	tickCtx, stopTick := context.WithCancel(ctx)
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		if opts.Tick == nil || opts.TickInterval <= 0 {
			return
		}
		t := time.NewTicker(opts.TickInterval)
		defer t.Stop()
		for {
			select {
			case <-tickCtx.Done():
				return
			case <-t.C:
				opts.Tick()
			}
		}
	}()

	select {
	case <-ctx.Done():
	case err := <-served:
		// A listener failed: shut the rest down and report it.
		served <- err
	}
	stopTick()
	<-tickDone

	var errs []error
	if opts.BeforeShutdown != nil {
		errs = append(errs, opts.BeforeShutdown())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	shutdownErrs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, hs := range servers {
		wg.Go(func() {
			if err := hs.Shutdown(sctx); err != nil {
				shutdownErrs[i] = fmt.Errorf("shutdown: %w", err)
				_ = hs.Close()
			}
		})
	}
	wg.Wait()
	errs = append(errs, shutdownErrs...)
	for range servers {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	if opts.AfterShutdown != nil {
		errs = append(errs, opts.AfterShutdown(sctx))
	}
	return errors.Join(errs...)
}
