package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/coordbench/coordbench/internal/tracegen"
)

// payloadShape is what the generated payload holds (tracegen.Shape, with
// the flags' names).
type payloadShape struct {
	requests        int // export requests
	spansPerRequest int
	spansPerTrace   int
	// openTraces is how many traces are under way at once, whose spans
	// interleave over several requests.
	openTraces int
}

func (s payloadShape) gen() tracegen.Shape {
	return tracegen.Shape{Requests: s.requests, SpansPerRequest: s.spansPerRequest, SpansPerTrace: s.spansPerTrace, OpenTraces: s.openTraces}
}

func (s payloadShape) spans() int  { return s.gen().Spans() }
func (s payloadShape) traces() int { return s.gen().Traces() }

// payload is the generated export requests, the same bytes for every
// server.
type payload struct {
	shape    payloadShape
	bodies   [][]byte
	bytes    int
	sha256   string
	services int
}

// generate builds the export requests of shape, deterministically
// (internal/tracegen): OTLP protobuf ExportTraceServiceRequest bodies, made
// with pdata (the Collector's own types, which Jaeger decodes with).
func generate(shape payloadShape) (*payload, error) {
	p := &payload{shape: shape, bodies: make([][]byte, shape.requests), services: len(tracegen.ServiceNames)}
	h := sha256.New()
	for r := range shape.requests {
		body, err := ptraceotlp.NewExportRequestFromTraces(tracegen.Request(shape.gen(), r)).MarshalProto()
		if err != nil {
			return nil, fmt.Errorf("payload: request %d: %w", r, err)
		}
		p.bodies[r] = body
		p.bytes += len(body)
		h.Write(body)
	}
	p.sha256 = hex.EncodeToString(h.Sum(nil))
	return p, nil
}

func traceID(trace int) pcommon.TraceID { return tracegen.TraceID(trace) }
