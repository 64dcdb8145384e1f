package tracedata

// SetAside is what a task's trace lost to provenance
// (docs/trace-assembly.md#provenance): spans that reached the assessor by
// OTLP or the Traceability Extension and that it could not vouch for. The
// trace store's Vouch fills it; the result reports it as it is.
type SetAside struct {
	// Spans counts the spans set aside: Impersonating + Outside.
	Spans int `json:"spans"`
	// Impersonating spans came by OTLP or the Traceability Extension and
	// claimed the assessor's identity: its service.name or
	// coordbench.role=assessor on their resource, an attribute only the
	// assessor sets (coordbench.role, coordbench.assessment.id,
	// coordbench.evaluator), or the assessor's name as an agent name (in
	// an attribute that names agents, or as a word of the span's name).
	Impersonating int `json:"impersonating,omitempty"`
	// Outside spans do not descend from any call the assessor made.
	// ParentMissing counts those of them whose parent is not in the trace
	// at all: most often a participant's span whose parent its process
	// never exported (a server span of another tracer provider, or not
	// sampled), which breaks the chain back to the assessor's call.
	Outside       int `json:"outside,omitempty"`
	ParentMissing int `json:"parent_missing,omitempty"`
	// Claimed are the service and agent names the set-aside spans carried,
	// sorted and clipped (the store keeps at most 20, each cut to 80
	// bytes); ClaimedMore counts the names left off.
	Claimed     []string `json:"claimed,omitempty"`
	ClaimedMore int      `json:"claimed_more,omitempty"`
}
