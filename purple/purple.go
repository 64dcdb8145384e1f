// Package purple is coordbench's base purple agent: an A2A agent (1.0 and
// the 0.3 wire format, on one URL) that answers review requests alone or
// by delegating to peers, instrumented as DESIGN §3 describes, so that a
// green agent can rebuild who called whom from its spans. It serves as the
// test fixture of coordbench's end-to-end benchmark and the demo, and as a
// starting point for participants: docs/purple-agent.md explains how to
// write an agent that coordbench can see fully.
//
// An agent has a role (what it does with a request: "coordinator",
// "reviewer", or any role registered with RegisterRole), peers (the agents
// it may call, by name and URL) and a delegation mode (how it calls them).
// Its spans leave by OTLP/HTTP (an explicit endpoint, or the standard
// OpenTelemetry environment) and, when the caller activates the A2A
// Traceability Extension, as steps in its answers. Its answers are
// deterministic (ReviewByRule) unless an LLM is configured through the
// same AGENTBEATS_LLM_* variables as the green agent's judge.
//
// purple imports otelmap and a2acall, never green or evals.
package purple

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Built-in roles.
const (
	// RoleCoordinator asks its peers and decides from their reviews; with
	// no peer to ask (or when it is consulted) it reads the paper itself.
	RoleCoordinator = "coordinator"
	// RoleReviewer reads the paper and reviews it; peers it has are
	// consulted and their recommendations averaged with its own.
	RoleReviewer = "reviewer"
)

// Delegation modes: how an agent calls its peers.
const (
	// DelegateFanOut sends the task to every peer at once (the default of
	// a coordinator).
	DelegateFanOut = "fan_out"
	// DelegateChain sends the task to the peers one after another, each
	// passing it on to its own peers: a pipeline.
	DelegateChain = "chain"
	// DelegateConsult asks every peer for its opinion only; a consulted
	// agent answers by itself and calls nobody (the default of a
	// reviewer).
	DelegateConsult = "consult"
	// DelegateHub consults the first peer only, the hub that everything is
	// routed through.
	DelegateHub = "hub"
)

// Delegations lists the delegation modes.
var Delegations = []string{DelegateFanOut, DelegateChain, DelegateConsult, DelegateHub}

// Role is what an agent does with a request. A role gets the agent's
// environment (its peers, its LLM, its tracer) through env and answers
// with text and, optionally, a data part. An error fails the A2A task with
// the error's text.
//
// A new role is one type and one registration: a file in this package (or
// any package that imports it) calls RegisterRole in an init function, or
// a program sets Options.Handler directly. A role must be safe for
// concurrent use: an agent answers requests in parallel.
type Role interface {
	Answer(ctx context.Context, env *Env, req *Request) (*Answer, error)
}

// RoleFunc adapts a function to Role.
type RoleFunc func(ctx context.Context, env *Env, req *Request) (*Answer, error)

// Answer implements Role.
func (f RoleFunc) Answer(ctx context.Context, env *Env, req *Request) (*Answer, error) {
	return f(ctx, env, req)
}

// Answer is a role's answer: a text part and an optional data part, sent
// as one artifact of the completed task.
type Answer struct {
	Text string
	Data map[string]any
}

var (
	rolesMu sync.RWMutex
	roles   = map[string]Role{}
)

// RegisterRole makes a role available under name (the --role flag,
// Options.Role). It panics on an empty name, a nil role or a name taken
// twice, as registering is done at init time by the program's own code.
func RegisterRole(name string, r Role) {
	if name == "" || r == nil {
		panic("purple: RegisterRole needs a name and a role")
	}
	rolesMu.Lock()
	defer rolesMu.Unlock()
	if _, dup := roles[name]; dup {
		panic(fmt.Sprintf("purple: role %q registered twice", name))
	}
	roles[name] = r
}

// LookupRole returns the role registered under name.
func LookupRole(name string) (Role, bool) {
	rolesMu.RLock()
	defer rolesMu.RUnlock()
	r, ok := roles[name]
	return r, ok
}

// Roles returns the registered role names, sorted.
func Roles() []string {
	rolesMu.RLock()
	defer rolesMu.RUnlock()
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func init() {
	RegisterRole(RoleCoordinator, RoleFunc(coordinate))
	RegisterRole(RoleReviewer, RoleFunc(review))
}
