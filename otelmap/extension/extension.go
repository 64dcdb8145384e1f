package extension

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// AttrOriginalTraceID keeps the trace id a participant's steps carried when
// it differs from the caller's trace they were attached to: a participant
// that does not propagate W3C context starts traces of its own.
const AttrOriginalTraceID = attribute.Key(otelmap.AttrExtraPrefix + "original_trace_id")

// maxStepDuration bounds the duration read from a step's latency, so that
// adding it to a time cannot overflow.
const maxStepDuration = 100 * 365 * 24 * time.Hour

// SpansFromResponseTrace turns the steps a participant returned through the
// Traceability Extension into spans of the caller's trace, the third road of
// spans (docs/design.md#three-roads-into-one-store). responder is the
// participant's agent name (from its card); parent is the caller-side span of
// the call (the caller's CLIENT invoke_agent span), under which the steps' roots
// are attached. The spans take parent's trace id whatever trace id the steps
// carry, and their Source is SourceExtension, so that the same span arriving
// later by OTLP replaces them in the store.
//
// The spans are shaped as trace assembly reads spans its participants
// recorded themselves: an AGENT step that is the participant's own handling
// of a call is a SERVER span, an AGENT step that calls another agent a
// CLIENT span, TOOL and HOST steps INTERNAL spans; each executing agent gets
// one Resource whose service.name it is.
//
// The input is untrusted: a trace over tracedata.MaxExtensionSteps, a step
// without an id or with an unknown call type is an error; duplicate step ids
// keep the first step; parent links that form a cycle are cut, the cut step
// attached to parent; steps without times are placed at their parent's start.
func SpansFromResponseTrace(rt *tracedata.ResponseTrace, parent trace.SpanContext, responder string) ([]otelmap.Span, error) {
	if rt == nil || len(rt.Steps) == 0 {
		return nil, nil
	}
	if len(rt.Steps) > tracedata.MaxExtensionSteps {
		return nil, fmt.Errorf("spans from response trace: %d steps exceeds the limit of %d", len(rt.Steps), tracedata.MaxExtensionSteps)
	}
	traceID := parent.TraceID()
	if !traceID.IsValid() {
		// No caller span: the steps can only stand in a trace of their own,
		// if they name one that OpenTelemetry can hold.
		id, err := trace.TraceIDFromHex(rt.TraceID)
		if err != nil {
			return nil, fmt.Errorf("spans from response trace: no valid parent span context and trace id %q: %w", rt.TraceID, err)
		}
		traceID = id
	}
	c := &stepConverter{rt: rt, traceID: traceID, parent: parent, responder: responder}
	if err := c.index(); err != nil {
		return nil, fmt.Errorf("spans from response trace: %w", err)
	}
	c.assignIDs()
	c.link()
	c.cutCycles()
	c.shape()
	return c.spans(), nil
}

// stepConverter holds the working state of SpansFromResponseTrace. Steps are
// referred to by their position in steps; -1 is none.
type stepConverter struct {
	rt        *tracedata.ResponseTrace
	traceID   trace.TraceID
	parent    trace.SpanContext
	responder string

	steps  []*tracedata.Step // unique by step id, in input order
	byStep map[string]int
	ids    []trace.SpanID
	par    []int

	// Filled by shape, parents first.
	kind     []trace.SpanKind
	agent    []string // gen_ai.agent.name of AGENT steps
	owner    []string // the agent whose work the step's descendants are
	executor []string // service.name of the step's resource
	start    []time.Time
	end      []time.Time
}

// index keeps one step per step id and checks what conversion needs.
func (c *stepConverter) index() error {
	c.byStep = make(map[string]int, len(c.rt.Steps))
	for i := range c.rt.Steps {
		s := &c.rt.Steps[i]
		if s.StepID == "" {
			return fmt.Errorf("step %d has no step_id", i)
		}
		if !s.CallType.Valid() {
			return fmt.Errorf("step %d (%s): call_type %q is not AGENT, TOOL or HOST", i, s.StepID, s.CallType)
		}
		if _, dup := c.byStep[s.StepID]; dup {
			continue
		}
		c.byStep[s.StepID] = len(c.steps)
		c.steps = append(c.steps, s)
	}
	return nil
}

// assignIDs gives every step a span id. A step_id that is a span id in its
// canonical (lower-case hex) form is kept, so that a step coordbench itself
// encoded comes back as the same span and the store can match it against
// the span exported by OTLP. Other step ids are hashed with the trace id;
// collisions, zero and the caller's own span id are hashed again.
func (c *stepConverter) assignIDs() {
	n := len(c.steps)
	c.ids = make([]trace.SpanID, n)
	used := make(map[trace.SpanID]struct{}, n+1)
	used[c.parent.SpanID()] = struct{}{}
	var derive []int
	for i, s := range c.steps {
		id, err := trace.SpanIDFromHex(s.StepID)
		if err != nil || id.String() != s.StepID || id == c.parent.SpanID() {
			derive = append(derive, i)
			continue
		}
		c.ids[i] = id
		used[id] = struct{}{}
	}
	for _, i := range derive {
		for salt := 0; ; salt++ {
			id := DeriveSpanID(c.traceID, c.steps[i].StepID, salt)
			if _, taken := used[id]; !taken {
				c.ids[i] = id
				used[id] = struct{}{}
				break
			}
		}
	}
}

// DeriveSpanID returns the span id of a step whose step_id is not a span id:
// 8 bytes of FNV-64a over the trace id and the step id (and salt, when not
// zero, to step past a collision), never the invalid zero id. The same step
// of the same trace always gets the same id, so a participant's answer seen
// twice yields the same spans.
func DeriveSpanID(traceID trace.TraceID, stepID string, salt int) trace.SpanID {
	h := fnv.New64a()
	h.Write(traceID[:])
	h.Write([]byte(stepID))
	if salt != 0 {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(salt))
		h.Write([]byte{0})
		h.Write(b[:])
	}
	v := h.Sum64()
	if v == 0 {
		v = 1
	}
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], v)
	return id
}

// link resolves parent_step_id within the set; a parent outside it (or the
// step itself) leaves the step a root, attached to the caller's span.
func (c *stepConverter) link() {
	c.par = make([]int, len(c.steps))
	for i, s := range c.steps {
		c.par[i] = -1
		if s.ParentStepID == "" || s.ParentStepID == s.StepID {
			continue
		}
		if p, ok := c.byStep[s.ParentStepID]; ok {
			c.par[i] = p
		}
	}
}

// cutCycles breaks every cycle of parent links at its step with the
// smallest span id, as trace assembly does, so the result does not depend on
// the order of the steps. Each step has at most one parent, so a walk up
// from any step meets at most one cycle; the walk is iterative and visits
// each step once.
func (c *stepConverter) cutCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(c.steps))
	var path []int
	for u := range c.steps {
		if state[u] != unseen {
			continue
		}
		path = path[:0]
		x := u
		for x >= 0 && state[x] == unseen {
			state[x] = onPath
			path = append(path, x)
			x = c.par[x]
		}
		if x >= 0 && state[x] == onPath {
			cyc := path[slices.Index(path, x):]
			cut := cyc[0]
			for _, y := range cyc {
				if bytes.Compare(c.ids[y][:], c.ids[cut][:]) < 0 {
					cut = y
				}
			}
			c.par[cut] = -1
		}
		for _, y := range path {
			state[y] = done
		}
	}
}

// topoOrder returns the steps parents first.
func (c *stepConverter) topoOrder() []int {
	n := len(c.steps)
	kids := make([][]int, n)
	order := make([]int, 0, n)
	for i := range c.steps {
		if p := c.par[i]; p >= 0 {
			kids[p] = append(kids[p], i)
		} else {
			order = append(order, i)
		}
	}
	for h := 0; h < len(order); h++ {
		order = append(order, kids[order[h]]...)
	}
	return order
}

// shape decides, parents first, each step's kind, agents and times.
func (c *stepConverter) shape() {
	n := len(c.steps)
	c.kind = make([]trace.SpanKind, n)
	c.agent = make([]string, n)
	c.owner = make([]string, n)
	c.executor = make([]string, n)
	c.start = make([]time.Time, n)
	c.end = make([]time.Time, n)
	rootStart := c.earliestStart()
	for _, i := range c.topoOrder() {
		s := c.steps[i]
		p := c.par[i]
		parentOwner := c.responder
		if p >= 0 {
			parentOwner = c.owner[p]
		}
		switch s.CallType {
		case tracedata.CallAgent:
			callee := calleeName(s)
			switch {
			case p < 0:
				// The participant's (or the named agent's) handling of the
				// call the caller made.
				c.kind[i] = trace.SpanKindServer
				c.agent[i] = firstNonEmpty(s.Agent, c.responder)
				c.owner[i], c.executor[i] = c.agent[i], c.agent[i]
			case c.steps[p].CallType == tracedata.CallAgent && callee != "" && callee == c.agent[p]:
				// The callee of the enclosing call, or the agent itself,
				// handling it.
				c.kind[i] = trace.SpanKindServer
				c.agent[i] = callee
				c.owner[i], c.executor[i] = callee, callee
			default:
				// A call the enclosing agent made to another.
				c.kind[i] = trace.SpanKindClient
				c.agent[i] = callee
				c.executor[i] = parentOwner
				c.owner[i] = firstNonEmpty(callee, parentOwner)
			}
		default:
			c.kind[i] = trace.SpanKindInternal
			c.owner[i], c.executor[i] = parentOwner, parentOwner
		}
		c.start[i], c.end[i] = c.times(s, p, rootStart)
	}
}

// earliestStart is where steps without times and without a timed parent
// are placed: the earliest time any step gives, else now.
func (c *stepConverter) earliestStart() time.Time {
	var first time.Time
	for _, s := range c.steps {
		t := s.StartTime
		if t.IsZero() && !s.EndTime.IsZero() {
			t = s.EndTime.Add(-stepLatency(s))
		}
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	if first.IsZero() {
		return time.Now().UTC()
	}
	return first
}

// times returns a step's start and end: its own where it has them, the
// missing one derived from the latency, and its parent's start when it has
// neither. The end is never before the start.
func (c *stepConverter) times(s *tracedata.Step, p int, rootStart time.Time) (time.Time, time.Time) {
	start, end := s.StartTime, s.EndTime
	lat := stepLatency(s)
	switch {
	case !start.IsZero() && !end.IsZero():
	case !start.IsZero():
		end = start.Add(lat)
	case !end.IsZero():
		start = end.Add(-lat)
	default:
		start = rootStart
		if p >= 0 {
			start = c.start[p]
		}
		end = start.Add(lat)
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

// stepLatency is the step's latency as a duration, within [0,
// maxStepDuration].
func stepLatency(s *tracedata.Step) time.Duration {
	ms := s.LatencyMS
	if ms <= 0 || math.IsNaN(ms) {
		ms = float64(s.Latency)
	}
	if ms <= 0 || math.IsNaN(ms) {
		return 0
	}
	if ms >= float64(maxStepDuration/time.Millisecond) {
		return maxStepDuration
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// calleeName is the agent an AGENT step invoked: Agent, else the step's name
// without the "invoke_agent " prefix, else the Python sample's and the
// proto's agent_name and agent_url.
func calleeName(s *tracedata.Step) string {
	if s.Agent != "" {
		return s.Agent
	}
	if name := strings.TrimSpace(strings.TrimPrefix(s.Name, otelmap.SpanInvokeAgentPrefix)); name != "" && name != otelmap.OpInvokeAgent {
		return name
	}
	for _, k := range []string{"agent_name", "agent_url"} {
		if v, ok := s.AdditionalAttributes[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// ResponseTraceFromSteps wraps steps as the extension's payload: the steps
// are copied, a step without a trace id takes traceID, and at most
// tracedata.MaxExtensionSteps are kept (the first ones, which for assembled
// steps are the earliest) so that the caller's decoder accepts the answer.
func ResponseTraceFromSteps(traceID string, steps []tracedata.Step) *tracedata.ResponseTrace {
	truncated := len(steps) > tracedata.MaxExtensionSteps
	if truncated {
		steps = steps[:tracedata.MaxExtensionSteps]
	}
	out := &tracedata.ResponseTrace{TraceID: traceID, Steps: make([]tracedata.Step, len(steps))}
	for i := range steps {
		out.Steps[i] = steps[i]
		if out.Steps[i].TraceID == "" {
			out.Steps[i].TraceID = traceID
		}
	}
	if truncated {
		// A parent cut off by the limit would leave a dangling link; the
		// caller would attach such a step to its own span anyway, so say so.
		kept := make(map[string]struct{}, len(steps))
		for _, s := range steps {
			kept[s.StepID] = struct{}{}
		}
		for i := range out.Steps {
			if _, ok := kept[out.Steps[i].ParentStepID]; !ok {
				out.Steps[i].ParentStepID = ""
			}
		}
	}
	return out
}
