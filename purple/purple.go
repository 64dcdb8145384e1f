// Package purple is coordbench's base purple agent: an A2A agent (1.0 and the
// 0.3 wire format, on one URL) that answers review requests alone or by
// delegating to peers, instrumented as docs/design.md#one-call-in-spans
// describes, so that a green agent can rebuild who called whom from its spans.
// It serves as the test fixture of coordbench's end-to-end benchmark and the
// demo, and as a starting point for participants: docs/purple-agent.md explains
// how to write an agent that coordbench can see fully.
//
// An agent has a role (what it does with a request: "coordinator",
// "reviewer", a solver, or any role the program passes in Options.Roles),
// peers (the agents
// it may call, by name and URL) and a delegation mode (how it calls them).
// Its spans leave by OTLP/HTTP (an explicit endpoint, or the standard
// OpenTelemetry environment) and, when the caller activates the A2A
// Traceability Extension, as steps in its answers. Its answers are
// deterministic (ReviewByRule) unless an LLM is configured through the
// same AGENTBEATS_LLM_* variables as the green agent's judge.
//
// The package holds no mutable state of its own: roles, the logger and the
// environment reader arrive through Options (cmd/purple reads the process's
// environment and flags and passes them in).
//
// purple imports otelmap (and its packages), a2acall and a2aserve, never
// green, evals or a scenario.
package purple

import (
	"context"
	"maps"
	"slices"
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
func Delegations() []string {
	return []string{DelegateFanOut, DelegateChain, DelegateConsult, DelegateHub}
}

// Role is what an agent does with a request. A role gets the agent's
// environment (its peers, its LLM, its tracer) through env and answers
// with text and, optionally, a data part. An error fails the A2A task with
// the error's text.
//
// A new role is one type, passed in: a program adds it to the roles it
// gives Options.Roles (StandardRoles plus its own, under a name of its
// choosing), or sets Options.Handler directly. A role must be safe for
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

// StandardRoles returns the built-in roles by name, each a new value: the
// coordinator, the reviewer, and the solver roles ("solver" with
// solver's mode, "solver-oracle", "solver-repair" and "solver-llm" with
// theirs fixed, all with solver's data directory). A program that adds its
// own roles adds them to this map and passes it as Options.Roles.
func StandardRoles(solver SolverOptions) map[string]Role {
	fixed := func(m SolverMode) SolverOptions {
		o := solver
		o.Mode = m
		return o
	}
	return map[string]Role{
		RoleCoordinator:  RoleFunc(coordinate),
		RoleReviewer:     RoleFunc(review),
		RoleSolver:       NewSolver(solver),
		RoleSolverOracle: NewSolver(fixed(SolverOracle)),
		RoleSolverRepair: NewSolver(fixed(SolverRepair)),
		RoleSolverLLM:    NewSolver(fixed(SolverLLM)),
	}
}

// RoleNames returns the names of roles, sorted.
func RoleNames(roles map[string]Role) []string {
	return slices.Sorted(maps.Keys(roles))
}
