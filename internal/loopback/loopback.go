// Package loopback starts a green agent and purple teams on loopback, each
// agent a real HTTP server with its own tracer provider as separate
// processes would be, and asks the green agent for assessments through a
// plain A2A client, as AgentBeats does. It is the one harness of the demo
// (RunDemo, `green demo`) and of the end-to-end benchmark (package e2e).
//
// The green agent (the assessor) never imports the base purple agent (the
// system under test): this package is where the two meet.
package loopback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
)

// Host is the loopback address every agent listens on.
const Host = "127.0.0.1"

// DefaultCallTimeout bounds one assessment as the client waits for it.
const DefaultCallTimeout = 3 * time.Minute

// Options configure Start.
type Options struct {
	// Green configures the green agent; Host and Port are set to Host and
	// a free port.
	Green green.ServerOptions
	// CallTimeout bounds one assessment as the client waits for it
	// (default DefaultCallTimeout).
	CallTimeout time.Duration
	// Logger receives the harness's and the client's logs; nil discards
	// them. (The agents log where their own options say.)
	Logger *slog.Logger
	// ClientCredentials are the client's, for a green agent that requires
	// a token (Green.A2AToken).
	ClientCredentials *a2acall.Credentials
}

// Harness is a green agent serving on loopback, the A2A client that asks
// it for assessments, and the purple teams started through it.
type Harness struct {
	srv    *green.Server
	client *a2acall.Messenger
	cancel context.CancelFunc
	served chan error
	log    *slog.Logger

	mu    sync.Mutex
	teams []*Team

	stopOnce sync.Once
	stopErr  error
}

// Start starts the green agent. Stop stops it, and every team still
// running.
func Start(ctx context.Context, opts Options) (*Harness, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	gopts := opts.Green
	gopts.Host, gopts.Port = Host, 0
	srv, err := green.NewServer(ctx, gopts)
	if err != nil {
		return nil, fmt.Errorf("green agent: %w", err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &Harness{srv: srv, cancel: cancel, served: make(chan error, 1), log: opts.Logger,
		// The client plays AgentBeats: a plain A2A client whose spans go
		// nowhere.
		client: a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{CallTimeout: opts.CallTimeout, Logger: opts.Logger, Credentials: opts.ClientCredentials})}
	go func() { h.served <- srv.Serve(sctx) }()
	return h, nil
}

// Green is the green agent.
func (h *Harness) Green() *green.Server { return h.srv }

// URL is the green agent's URL (its A2A endpoint, and its OTLP receiver's
// base URL).
func (h *Harness) URL() string { return h.srv.URL() }

// Team is a purple team started by a Harness.
type Team struct {
	*purple.System
	h *Harness
}

// Stop shuts the team down (each agent flushing its spans) and waits for
// it; later calls return the first call's result.
func (t *Team) Stop() error {
	t.h.mu.Lock()
	t.h.teams = slices.DeleteFunc(t.h.teams, func(o *Team) bool { return o == t })
	t.h.mu.Unlock()
	return t.System.Stop()
}

// StartTeam starts a purple team on loopback (purple.StartSystem): each
// agent on a free port, peers wired by name. Stop the team when done with
// it; Harness.Stop stops those still running.
func (h *Harness) StartTeam(ctx context.Context, specs []purple.AgentSpec) (*Team, error) {
	sys, err := purple.StartSystem(ctx, Host, specs)
	if err != nil {
		return nil, fmt.Errorf("purple team: %w", err)
	}
	t := &Team{System: sys, h: h}
	h.mu.Lock()
	h.teams = append(h.teams, t)
	h.mu.Unlock()
	return t, nil
}

// Assess asks the green agent for one assessment, an AgentBeats request
// {"participants": ..., "config": ...}, and returns the JSON of its result
// (the Result artifact's data part, report.Schema).
func (h *Harness) Assess(ctx context.Context, participants map[string]string, config map[string]any) (json.RawMessage, error) {
	req, err := json.Marshal(map[string]any{"participants": participants, "config": config})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	reply, err := h.client.Send(ctx, a2acall.SendRequest{URL: h.srv.URL(), Text: string(req)})
	if err != nil {
		return nil, fmt.Errorf("assessment: %w", err)
	}
	for _, d := range reply.Data {
		if d["schema"] != report.Schema {
			continue
		}
		raw, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("the assessment ended %s without a %s result: %q", reply.State, report.Schema, reply.Text)
}

// Stop stops the teams still running (each flushing its spans), closes the
// client and shuts the green agent down; later calls return the first
// call's result.
func (h *Harness) Stop() error {
	h.stopOnce.Do(func() {
		h.mu.Lock()
		teams := h.teams
		h.teams = nil
		h.mu.Unlock()
		var errs []error
		for _, sys := range teams {
			if err := sys.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("purple team: %w", err))
			}
		}
		_ = h.client.Close()
		h.cancel()
		if err := <-h.served; err != nil {
			errs = append(errs, fmt.Errorf("green agent: %w", err))
		}
		h.stopErr = errors.Join(errs...)
	})
	return h.stopErr
}
