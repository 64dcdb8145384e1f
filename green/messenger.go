package green

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
)

// The green agent's A2A client is a2acall's Messenger, shared with the base
// purple agent so that both make calls of one span shape (DESIGN §3). The
// names below keep the green package's API as it was before the Messenger
// moved; see package a2acall for the documentation.

type (
	// Messenger talks A2A to the participants (a2acall.Messenger).
	Messenger = a2acall.Messenger
	// MessengerOptions configure a Messenger (a2acall.Options).
	MessengerOptions = a2acall.Options
	// SendRequest is one message to a participant.
	SendRequest = a2acall.SendRequest
	// Reply is what a participant answered.
	Reply = a2acall.Reply
	// CallError is the error of a failed call; it names the participant.
	CallError = a2acall.CallError
	// AgentInfo describes a participant as its card does.
	AgentInfo = a2acall.AgentInfo
)

// Messenger defaults and wire names (see package a2acall).
const (
	DefaultCallTimeout = a2acall.DefaultCallTimeout
	DefaultCardTimeout = a2acall.DefaultCardTimeout
	HeaderExtensions   = a2acall.HeaderExtensions
	Protocol10         = a2acall.Protocol10
	Protocol03         = a2acall.Protocol03
)

// Errors a Send can wrap; the same values as a2acall's, so errors.Is works
// with either name.
var (
	ErrMessengerClosed = a2acall.ErrClosed
	ErrTaskFailed      = a2acall.ErrTaskFailed
	ErrNoResult        = a2acall.ErrNoResult
)

// NewMessenger returns a Messenger whose spans are made by tp; store, when
// not nil, receives the spans rebuilt from the Traceability Extension steps
// participants return (a2acall.New).
func NewMessenger(tp trace.TracerProvider, store *otelmap.Store, opts MessengerOptions) *Messenger {
	return a2acall.New(tp, store, opts)
}

// wellKnownCardPath and genAIContent are the names the package's test
// agents use.
const wellKnownCardPath = a2acall.WellKnownCardPath

func genAIContent(role, text string, data []map[string]any, finishReason string) string {
	return a2acall.GenAIContent(role, text, data, finishReason)
}
