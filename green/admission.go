package green

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/report"
)

// Span admission on the assessor's side (docs/span-admission.md): every
// task trace is reserved in the store before a participant is called, so
// that no flood of unsolicited spans can crowd it out; each assessment has
// an ingest token, handed to the participants in every message's metadata,
// that ties their exports to its traces; and spans a task's trace was
// refused anyway are reported with the task, not passed over.

// MetadataIngest is the key of the message metadata that carries the
// assessment's ingest token to participants: an object with "token" and
// "otlp_header", the HTTP header an OTLP export sends the token in.
const MetadataIngest = otelmap.IngestMetadataKey

// newIngestToken returns a fresh random ingest token (130 bits).
func newIngestToken() string { return rand.Text() }

// withIngest adds the assessment's ingest token to the metadata of the
// messages the Messenger sends.
func withIngest(opts a2acall.Options, token string) a2acall.Options {
	md := make(map[string]any, len(opts.Metadata)+1)
	for k, v := range opts.Metadata {
		md[k] = v
	}
	md[MetadataIngest] = map[string]any{"token": token, "otlp_header": otelmap.IngestTokenHeader}
	opts.Metadata = md
	return opts
}

// reserved warns when task's trace could not be reserved in the store
// (openTrace.Reserved): the task still runs, and its trace then competes
// with unsolicited ones, as every trace did before reservations.
func (a *assessment) reserved(tt *openTrace, taskID string) {
	err := tt.Reserved
	if err == nil {
		return
	}
	if errors.Is(err, tracestore.ErrReservationsFull) {
		a.e.log.Warn("task trace not reserved", "assessment", a.id, "task", taskID, "err", err)
	}
	a.warn(fmt.Sprintf("task %s: trace %s not reserved in the span store (%v): its spans may be refused when the store is full", taskID, tt.id, err))
}

// refusedSpans returns a warning when the span store refused spans of
// some task's trace (TaskResult.RefusedSpans, set by traceAssessor.assess).
func refusedSpans(res *report.Result) string {
	spans, tasks := 0, 0
	for _, t := range res.Tasks {
		if t.RefusedSpans > 0 {
			spans += t.RefusedSpans
			tasks++
		}
	}
	if spans == 0 {
		return ""
	}
	return fmt.Sprintf("the span store refused %d spans of %d of %d tasks' traces, and the verdicts were made without them "+
		"(refused_spans per task): a trace over the span limit per trace, or exports refused by the ingest token rules; see docs/span-admission.md",
		spans, tasks, len(res.Tasks))
}
