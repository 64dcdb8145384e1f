// Package extension is the codec between the A2A Traceability Extension's
// steps (tracedata.ResponseTrace) and spans: SpansFromResponseTrace turns
// the steps a participant returned into spans of the caller's trace (the
// third road of spans), and ResponseTraceFromSteps writes the steps an
// agent returns. It knows no store and no wire format.
package extension
