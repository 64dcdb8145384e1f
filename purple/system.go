package purple

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/coordbench/coordbench/a2aserve"
)

// A System is several agents started together in one process, each a real
// HTTP server on its own port with its own tracer provider, as separate
// processes would be: the shape of the demo's team and of every topology
// of the end-to-end benchmark.

// AgentSpec is one agent of a System: its options, with its peers named by
// the other agents' names rather than by URLs (which are not known before
// the System starts).
type AgentSpec struct {
	Options
	// PeerNames are agents of the same System this one may call, in order.
	PeerNames []string
}

// System is a set of agents serving on loopback.
type System struct {
	agents  []*Server
	byName  map[string]*Server
	cancel  context.CancelFunc
	served  []chan error
	stopped sync.Once
	stopErr error
}

// StartSystem starts every agent on host (default 127.0.0.1) on a free
// port, wires the peers, and serves them until Stop. Names must be unique.
func StartSystem(ctx context.Context, host string, specs []AgentSpec) (*System, error) {
	if host == "" {
		host = DefaultHost
	}
	sys := &System{byName: map[string]*Server{}}
	names := map[string]int{}
	for i, sp := range specs {
		name := sp.Name
		if name == "" {
			return nil, fmt.Errorf("purple system: agent %d has no name", i+1)
		}
		if _, dup := names[name]; dup {
			return nil, fmt.Errorf("purple system: agent %q named twice", name)
		}
		names[name] = i
	}
	// Listen first, so every peer's URL is known before any agent is built.
	lns := make([]net.Listener, len(specs))
	closeAll := func() {
		for _, ln := range lns {
			if ln != nil {
				_ = ln.Close()
			}
		}
	}
	for i := range specs {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("purple system: listen: %w", err)
		}
		lns[i] = ln
	}
	built := make([]*Server, 0, len(specs))
	fail := func(err error) (*System, error) {
		for _, s := range built {
			_ = s.Close(context.WithoutCancel(ctx))
		}
		for _, ln := range lns[len(built):] {
			_ = ln.Close()
		}
		return nil, err
	}
	for i, sp := range specs {
		opts := sp.Options
		opts.Listener = lns[i]
		opts.Peers = slices.Clone(opts.Peers)
		for _, peer := range sp.PeerNames {
			j, ok := names[peer]
			if !ok {
				return fail(fmt.Errorf("purple system: agent %q: peer %q is not in the system", sp.Name, peer))
			}
			opts.Peers = append(opts.Peers, Peer{Name: peer, URL: a2aserve.BaseURL(lns[j].Addr())})
		}
		s, err := NewServer(ctx, opts)
		if err != nil {
			return fail(fmt.Errorf("purple system: %w", err))
		}
		built = append(built, s)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sys.cancel = cancel
	for _, s := range built {
		sys.agents = append(sys.agents, s)
		sys.byName[s.Name()] = s
		done := make(chan error, 1)
		sys.served = append(sys.served, done)
		go func() { done <- s.Serve(sctx) }()
	}
	return sys, nil
}

// Agents returns the agents in the order they were specified.
func (sys *System) Agents() []*Server { return slices.Clone(sys.agents) }

// Agent returns the agent called name, nil if none.
func (sys *System) Agent(name string) *Server { return sys.byName[name] }

// URLs maps every agent's name to its URL: the participants of an
// assessment request.
func (sys *System) URLs() map[string]string {
	out := make(map[string]string, len(sys.agents))
	for _, s := range sys.agents {
		out[s.Name()] = s.URL()
	}
	return out
}

// ForceFlush exports what every agent's batchers hold.
func (sys *System) ForceFlush(ctx context.Context) error {
	var errs []error
	for _, s := range sys.agents {
		errs = append(errs, s.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

// Stop shuts every agent down (each flushing its spans) and waits for
// them; later calls return the first call's result.
func (sys *System) Stop() error {
	sys.stopped.Do(func() {
		sys.cancel()
		var errs []error
		for _, done := range sys.served {
			errs = append(errs, <-done)
		}
		sys.stopErr = errors.Join(errs...)
	})
	return sys.stopErr
}
