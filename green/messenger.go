package green

import (
	"context"
	"errors"
	"time"
)

// MessengerOptions configure a Messenger.
type MessengerOptions struct {
	// CallTimeout bounds one call (default 300 s).
	CallTimeout time.Duration
}

// Messenger talks A2A to the participants: one client per participant URL,
// reused across calls and closed by Close.
type Messenger struct {
	opts MessengerOptions
}

// SendRequest is one message to a participant.
type SendRequest struct {
	// URL is the participant's A2A URL (may carry a path).
	URL string
	// Text is the message's text part; Data, when set, adds a data part.
	Text string
	Data map[string]any
	// ContextID keeps several messages in one A2A context; empty starts one.
	ContextID string
}

// Reply is what a participant answered.
type Reply struct {
	// AgentName is the participant's name from its agent card.
	AgentName string
	// Text joins the text parts of the final message or artifacts; Data
	// holds their data parts.
	Text string
	Data []map[string]any
	// State is the final A2A task state ("completed", "failed", ...).
	State     string
	ContextID string
	TaskID    string
	// ExtensionSteps counts the Traceability Extension steps the participant
	// returned, turned into spans of the caller's trace.
	ExtensionSteps int
}

// Send delivers one message and waits for the final answer.
func (m *Messenger) Send(ctx context.Context, req SendRequest) (*Reply, error) {
	return nil, errors.New("messenger: not implemented yet")
}

// Close closes every client.
func (m *Messenger) Close() error { return nil }
