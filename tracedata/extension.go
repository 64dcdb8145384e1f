package tracedata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// The A2A Traceability Extension's names.
const (
	// ExtensionURI activates the extension (X-A2A-Extensions header, agent
	// card capabilities).
	ExtensionURI = "https://github.com/a2aproject/a2a-samples/extensions/traceability/v1"
	// ExtensionMetadataKey is the message or artifact metadata key that holds
	// a ResponseTrace.
	ExtensionMetadataKey = "github.com/a2aproject/a2a-samples/extensions/traceability/v1/traceability"
)

// Limits of the extension decoder: a participant's answer is untrusted.
const (
	MaxExtensionBytes = 8 << 20
	MaxExtensionSteps = 10000
)

// maxStepLatency bounds one step's duration. Longer is not a measurement but
// a broken clock, and the bound keeps every latency exactly representable as
// a time.Duration and as whole milliseconds, so a decoded trace re-encodes.
const maxStepLatency = 100 * 365 * 24 * time.Hour

// maxTotalTokens bounds total_tokens so that it converts to int64 exactly.
const maxTotalTokens = 1 << 53

// ResponseTrace is the extension's payload: the steps of one trace.
type ResponseTrace struct {
	TraceID string `json:"trace_id"`
	Steps   []Step `json:"steps"`
}

// EncodeResponseTrace returns the JSON form of rt, with times in UTC.
func EncodeResponseTrace(rt *ResponseTrace) ([]byte, error) {
	if rt == nil {
		return nil, errors.New("encode response trace: nil trace")
	}
	out := ResponseTrace{TraceID: rt.TraceID, Steps: make([]Step, len(rt.Steps))}
	for i, s := range rt.Steps {
		s.StartTime = s.StartTime.UTC()
		s.EndTime = s.EndTime.UTC()
		out.Steps[i] = s
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode response trace: %w", err)
	}
	return b, nil
}

// DecodeResponseTrace parses and validates the JSON form of a ResponseTrace.
// It is lenient where producers differ (call types as names or proto enum
// numbers, numbers as strings, times with or without a zone, which are then
// taken as UTC) and strict where the data could not be used (a step without
// an id, an unknown call type, an end before the start, too many steps).
func DecodeResponseTrace(data []byte) (*ResponseTrace, error) {
	if len(data) > MaxExtensionBytes {
		return nil, fmt.Errorf("response trace: %d bytes exceeds the limit of %d", len(data), MaxExtensionBytes)
	}
	// A top-level null would decode to an empty trace without complaint;
	// anything but an object is not a ResponseTrace.
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("response trace: not a JSON object")
	}
	var wire struct {
		TraceID      any               `json:"trace_id"`
		TraceIDCamel any               `json:"traceId"` // proto-JSON's default names
		Steps        []json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&wire); err != nil {
		return nil, fmt.Errorf("response trace: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("response trace: data after the JSON object")
	}
	if len(wire.Steps) > MaxExtensionSteps {
		return nil, fmt.Errorf("response trace: %d steps exceeds the limit of %d", len(wire.Steps), MaxExtensionSteps)
	}
	traceID, err := idString(firstSet(wire.TraceID, wire.TraceIDCamel))
	if err != nil {
		return nil, fmt.Errorf("response trace: trace_id: %w", err)
	}
	rt := &ResponseTrace{TraceID: traceID, Steps: make([]Step, 0, len(wire.Steps))}
	for i, raw := range wire.Steps {
		s, err := decodeStep(raw)
		if err != nil {
			return nil, fmt.Errorf("response trace: step %d: %w", i, err)
		}
		if s.TraceID == "" {
			s.TraceID = rt.TraceID
		}
		rt.Steps = append(rt.Steps, s)
	}
	return rt, nil
}

// ResponseTraceFromMetadata finds the extension's payload in A2A metadata
// (a decoded JSON object). It returns nil, nil when the key is absent.
func ResponseTraceFromMetadata(metadata map[string]any) (*ResponseTrace, error) {
	v, ok := metadata[ExtensionMetadataKey]
	if !ok || v == nil {
		return nil, nil
	}
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	case json.RawMessage:
		raw = x
	case []byte:
		// json.Marshal would turn bytes into a base64 string.
		raw = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("response trace metadata: %w", err)
		}
		raw = b
	}
	return DecodeResponseTrace(raw)
}

// wireStep is a step as producers write it: the Python sample's as_dict()
// form (snake_case names, flat name/parameters/requests), the proto-JSON form
// of the extension's proto (lowerCamelCase names by default, a step_action
// oneof, int64 as strings) and coordbench's own additions.
type wireStep struct {
	StepID               any            `json:"step_id"`
	TraceID              any            `json:"trace_id"`
	ParentStepID         any            `json:"parent_step_id"`
	CallType             any            `json:"call_type"`
	Name                 string         `json:"name"`
	Parameters           map[string]any `json:"parameters"`
	Requests             map[string]any `json:"requests"`
	StepType             string         `json:"step_type"`
	Cost                 any            `json:"cost"`
	TotalTokens          any            `json:"total_tokens"`
	AdditionalAttributes map[string]any `json:"additional_attributes"`
	Latency              any            `json:"latency"`
	StartTime            any            `json:"start_time"`
	EndTime              any            `json:"end_time"`
	Error                any            `json:"error"`
	Agent                string         `json:"agent"`
	Caller               string         `json:"caller"`
	LatencyMS            any            `json:"latency_ms"`
	Input                string         `json:"input"`
	Output               string         `json:"output"`
	Model                string         `json:"model"`
	StepAction           *wireAction    `json:"step_action"`

	StepIDCamel               any            `json:"stepId"`
	TraceIDCamel              any            `json:"traceId"`
	ParentStepIDCamel         any            `json:"parentStepId"`
	CallTypeCamel             any            `json:"callType"`
	StepTypeCamel             string         `json:"stepType"`
	TotalTokensCamel          any            `json:"totalTokens"`
	AdditionalAttributesCamel map[string]any `json:"additionalAttributes"`
	StartTimeCamel            any            `json:"startTime"`
	EndTimeCamel              any            `json:"endTime"`
	StepActionCamel           *wireAction    `json:"stepAction"`
}

// wireAction is the proto's StepAction oneof. A nested response_trace of an
// agent invocation is not read: its steps belong to the callee's own answer.
type wireAction struct {
	Tool       *wireTool  `json:"tool_invocation"`
	ToolCamel  *wireTool  `json:"toolInvocation"`
	Agent      *wireAgent `json:"agent_invocation"`
	AgentCamel *wireAgent `json:"agentInvocation"`
}

type wireTool struct {
	ToolName      string         `json:"tool_name"`
	ToolNameCamel string         `json:"toolName"`
	Parameters    map[string]any `json:"parameters"`
}

type wireAgent struct {
	AgentURL       string         `json:"agent_url"`
	AgentURLCamel  string         `json:"agentUrl"`
	AgentName      string         `json:"agent_name"`
	AgentNameCamel string         `json:"agentName"`
	Requests       map[string]any `json:"requests"`
}

// firstSet returns the first value that is present, so the snake_case name
// wins over its lowerCamelCase alias.
func firstSet(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstString(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// nonEmpty returns m, or nil when it holds nothing: the encoder omits empty
// maps, so keeping them would make a decoded trace differ from its re-encoding.
func nonEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// applyAction folds the proto's step_action into the flat fields the Python
// sample and coordbench use; flat fields that are set win.
func (w *wireStep) applyAction() {
	a := w.StepAction
	if a == nil {
		a = w.StepActionCamel
	}
	if a == nil {
		return
	}
	if t := a.Tool; t != nil || a.ToolCamel != nil {
		if t == nil {
			t = a.ToolCamel
		}
		if w.Name == "" {
			w.Name = firstString(t.ToolName, t.ToolNameCamel)
		}
		if len(w.Parameters) == 0 {
			w.Parameters = t.Parameters
		}
	}
	if g := a.Agent; g != nil || a.AgentCamel != nil {
		if g == nil {
			g = a.AgentCamel
		}
		if len(w.Requests) == 0 {
			w.Requests = g.Requests
		}
		for k, v := range map[string]string{
			"agent_name": firstString(g.AgentName, g.AgentNameCamel),
			"agent_url":  firstString(g.AgentURL, g.AgentURLCamel),
		} {
			if v == "" {
				continue
			}
			if w.AdditionalAttributes == nil {
				w.AdditionalAttributes = make(map[string]any)
			}
			if _, ok := w.AdditionalAttributes[k]; !ok {
				w.AdditionalAttributes[k] = v
			}
		}
	}
}

func decodeStep(raw json.RawMessage) (Step, error) {
	var w wireStep
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return Step{}, err
	}
	if w.AdditionalAttributes == nil {
		w.AdditionalAttributes = w.AdditionalAttributesCamel
	}
	w.applyAction()
	s := Step{
		Name: w.Name, Parameters: nonEmpty(w.Parameters), Requests: nonEmpty(w.Requests),
		StepType: firstString(w.StepType, w.StepTypeCamel), AdditionalAttributes: nonEmpty(w.AdditionalAttributes),
		Agent: w.Agent, Caller: w.Caller, Input: w.Input, Output: w.Output, Model: w.Model,
	}
	var err error
	if s.StepID, err = idString(firstSet(w.StepID, w.StepIDCamel)); err != nil || s.StepID == "" {
		return Step{}, errors.New("step_id is missing or not a string")
	}
	if s.TraceID, err = idString(firstSet(w.TraceID, w.TraceIDCamel)); err != nil {
		return Step{}, fmt.Errorf("trace_id: %w", err)
	}
	if s.ParentStepID, err = idString(firstSet(w.ParentStepID, w.ParentStepIDCamel)); err != nil {
		return Step{}, fmt.Errorf("parent_step_id: %w", err)
	}
	if s.CallType, err = parseCallType(firstSet(w.CallType, w.CallTypeCamel)); err != nil {
		return Step{}, err
	}
	if s.Cost, err = number(w.Cost, "cost"); err != nil {
		return Step{}, err
	}
	tokens, err := number(firstSet(w.TotalTokens, w.TotalTokensCamel), "total_tokens")
	if err != nil {
		return Step{}, err
	}
	if tokens < 0 || tokens > maxTotalTokens {
		return Step{}, fmt.Errorf("total_tokens: %v is out of range", tokens)
	}
	s.TotalTokens = int64(tokens)
	if s.StartTime, err = parseTime(firstSet(w.StartTime, w.StartTimeCamel), "start_time"); err != nil {
		return Step{}, err
	}
	if s.EndTime, err = parseTime(firstSet(w.EndTime, w.EndTimeCamel), "end_time"); err != nil {
		return Step{}, err
	}
	if !s.StartTime.IsZero() && !s.EndTime.IsZero() {
		if s.EndTime.Before(s.StartTime) {
			return Step{}, errors.New("end_time is before start_time")
		}
		if s.EndTime.Sub(s.StartTime) > maxStepLatency {
			return Step{}, fmt.Errorf("step lasts longer than %v", maxStepLatency)
		}
	}
	latency, err := latencyMS(w.Latency, "latency")
	if err != nil {
		return Step{}, err
	}
	if s.LatencyMS, err = latencyMS(w.LatencyMS, "latency_ms"); err != nil {
		return Step{}, err
	}
	switch {
	case !s.StartTime.IsZero() && !s.EndTime.IsZero():
		// The times are the more precise record; latency may be rounded.
		s.LatencyMS = msOf(s.EndTime.Sub(s.StartTime))
	case s.LatencyMS == 0:
		s.LatencyMS = latency
	}
	if !s.StartTime.IsZero() && s.EndTime.IsZero() && s.LatencyMS > 0 {
		s.EndTime = s.StartTime.Add(time.Duration(s.LatencyMS * float64(time.Millisecond)))
		if y := s.EndTime.Year(); y > 9999 {
			return Step{}, errors.New("start_time plus latency is past year 9999")
		}
		// Keep latency what the times say, so the step re-encodes as is.
		s.LatencyMS = msOf(s.EndTime.Sub(s.StartTime))
	}
	s.Latency = int64(math.Round(s.LatencyMS))
	switch e := w.Error.(type) {
	case nil:
	case string:
		s.Error = e
	case bool:
		if e {
			s.Error = "error"
		}
	default:
		b, _ := json.Marshal(e)
		s.Error = string(b)
	}
	return s, nil
}

// msOf returns d in milliseconds with the fraction kept.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyMS reads a latency in milliseconds: a finite number from zero to
// maxStepLatency.
func latencyMS(v any, field string) (float64, error) {
	f, err := number(v, field)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, fmt.Errorf("%s is negative", field)
	}
	if f > msOf(maxStepLatency) {
		return 0, fmt.Errorf("%s: %v ms exceeds %v", field, f, maxStepLatency)
	}
	return f, nil
}

func idString(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	default:
		return "", fmt.Errorf("want a string, got %T", v)
	}
}

func parseCallType(v any) (CallType, error) {
	switch x := v.(type) {
	case nil:
		return "", errors.New("call_type is missing")
	case string:
		c := CallType(strings.ToUpper(strings.TrimPrefix(x, "CallTypeEnum.")))
		if c.Valid() {
			return c, nil
		}
	case json.Number:
		// The extension's proto enum: AGENT = 1, TOOL = 2 (HOST is ours, 3).
		switch x.String() {
		case "1":
			return CallAgent, nil
		case "2":
			return CallTool, nil
		case "3":
			return CallHost, nil
		}
	}
	return "", fmt.Errorf("call_type %v is not AGENT, TOOL or HOST", v)
}

func number(v any, field string) (float64, error) {
	var f float64
	var err error
	switch x := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		f, err = x.Float64()
	case string:
		if x == "" {
			return 0, nil
		}
		f, err = json.Number(x).Float64()
	default:
		return 0, fmt.Errorf("%s: want a number, got %T", field, v)
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s: %v is not a finite number", field, v)
	}
	return f, nil
}

// timeLayouts are the ISO-8601 forms producers write: RFC 3339 and Python's
// datetime.isoformat() with and without a zone.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

func parseTime(v any, field string) (time.Time, error) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, nil
	case string:
		if x == "" {
			return time.Time{}, nil
		}
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, x); err == nil {
				// A zone offset can carry year 0 or 9999 out of the range
				// the encoder can write.
				if t = t.UTC(); t.Year() < 0 || t.Year() > 9999 {
					return time.Time{}, fmt.Errorf("%s: %q is out of range", field, x)
				}
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("%s: %q is not an ISO-8601 time", field, x)
	case json.Number:
		// Seconds since the epoch, as some producers write it.
		f, err := x.Float64()
		if err != nil || f < 0 || f > 1e11 {
			return time.Time{}, fmt.Errorf("%s: %v is not a time", field, v)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
	default:
		return time.Time{}, fmt.Errorf("%s: want a time string, got %T", field, v)
	}
}
