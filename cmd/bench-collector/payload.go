package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/tracegen"
)

// payloadShape is what the benchmark posts: copies of every framework
// capture, and generated traces.
type payloadShape struct {
	capturesDir string
	copies      int // of each capture, each copy a trace id of its own
	generated   tracegen.Shape
}

// payload is the export requests, the same bytes for every collector.
type payload struct {
	bodies        [][]byte
	bytes         int
	sha256        string
	spans, traces int
	// namedSpans are the spans whose resource has a service.name: what
	// span_metrics counts (it skips the others).
	namedSpans int
	// pairs are the calls servicegraph pairs: a CLIENT or PRODUCER span
	// and a SERVER or CONSUMER span whose parent it is, both of resources
	// with a service.name (it skips the others), counted once per client
	// span however many servers name it.
	pairs         int
	captures      int // capture files
	captureSpans  int // spans of one copy of every capture
	captureTraces int // traces of all copies
	kinds         map[string]int
	// agentsPerTrace are the distinct service.name of each trace, sorted.
	agentsPerTrace []int
}

// capture is one framework capture, decoded.
type capture struct {
	name string
	td   ptrace.Traces
}

func loadCaptures(dir string) ([]capture, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.otlp.json"))
	if err != nil {
		return nil, fmt.Errorf("captures: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("captures: no *.otlp.json in %s", dir)
	}
	sort.Strings(files)
	var out []capture
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("captures: %w", err)
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			return nil, fmt.Errorf("captures: %s: %w", f, err)
		}
		out = append(out, capture{name: filepath.Base(f), td: td})
	}
	return out, nil
}

// copyID is the trace id of copy k of a capture's trace id: distinct for
// every copy and capture, the same on every run.
func copyID(file string, k int, id pcommon.TraceID) pcommon.TraceID {
	h := sha256.Sum256(fmt.Appendf(nil, "%s/%d/%s", file, k, id))
	var out pcommon.TraceID
	copy(out[:], h[:16])
	return out
}

// buildPayload makes the export requests: one per copy round, holding a
// copy of every capture, spread evenly among the generated requests (a
// collector sees both kinds throughout a run).
func buildPayload(shape payloadShape) (*payload, error) {
	caps, err := loadCaptures(shape.capturesDir)
	if err != nil {
		return nil, err
	}
	p := &payload{captures: len(caps), kinds: map[string]int{}}
	for _, c := range caps {
		p.captureSpans += c.td.SpanCount()
	}
	var captureReqs, genReqs []ptrace.Traces
	for k := range shape.copies {
		td := ptrace.NewTraces()
		for _, c := range caps {
			cp := ptrace.NewTraces()
			c.td.CopyTo(cp)
			for _, rs := range cp.ResourceSpans().All() {
				for _, ss := range rs.ScopeSpans().All() {
					for _, s := range ss.Spans().All() {
						s.SetTraceID(copyID(c.name, k, s.TraceID()))
					}
				}
			}
			cp.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		}
		captureReqs = append(captureReqs, td)
	}
	for r := range shape.generated.Requests {
		genReqs = append(genReqs, tracegen.Request(shape.generated, r))
	}
	// Interleave: a capture request after every len(gen)/len(captures)
	// generated ones.
	var reqs []ptrace.Traces
	every := 1
	if len(captureReqs) > 0 {
		every = max(1, len(genReqs)/len(captureReqs))
	}
	for i, g := range genReqs {
		reqs = append(reqs, g)
		if (i+1)%every == 0 && len(captureReqs) > 0 {
			reqs, captureReqs = append(reqs, captureReqs[0]), captureReqs[1:]
		}
	}
	reqs = append(reqs, captureReqs...)

	agents := map[pcommon.TraceID]map[string]bool{}
	captureTrace := map[pcommon.TraceID]bool{}
	generated := map[pcommon.TraceID]bool{}
	for t := range shape.generated.Traces() {
		generated[tracegen.TraceID(t)] = true
	}
	type spanKey struct {
		trace pcommon.TraceID
		span  pcommon.SpanID
	}
	clients, servers := map[spanKey]bool{}, map[spanKey]bool{}
	h := sha256.New()
	for i, td := range reqs {
		for _, rs := range td.ResourceSpans().All() {
			svc := "(none)"
			if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
				svc = v.AsString()
				for _, ss := range rs.ScopeSpans().All() {
					p.namedSpans += ss.Spans().Len()
					for _, s := range ss.Spans().All() {
						switch s.Kind() {
						case ptrace.SpanKindClient, ptrace.SpanKindProducer:
							clients[spanKey{s.TraceID(), s.SpanID()}] = true
						case ptrace.SpanKindServer, ptrace.SpanKindConsumer:
							servers[spanKey{s.TraceID(), s.ParentSpanID()}] = true
						}
					}
				}
			}
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					if agents[s.TraceID()] == nil {
						agents[s.TraceID()] = map[string]bool{}
					}
					agents[s.TraceID()][svc] = true
					p.kinds[s.Kind().String()]++
					if !generated[s.TraceID()] {
						captureTrace[s.TraceID()] = true
					}
				}
			}
		}
		p.spans += td.SpanCount()
		body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
		if err != nil {
			return nil, fmt.Errorf("payload: request %d: %w", i, err)
		}
		p.bodies = append(p.bodies, body)
		p.bytes += len(body)
		h.Write(body)
	}
	for k := range clients {
		if servers[k] {
			p.pairs++
		}
	}
	p.traces = len(agents)
	p.captureTraces = len(captureTrace)
	for _, a := range agents {
		p.agentsPerTrace = append(p.agentsPerTrace, len(a))
	}
	sort.Ints(p.agentsPerTrace)
	p.sha256 = hex.EncodeToString(h.Sum(nil))
	return p, nil
}
