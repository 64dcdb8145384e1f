package tracedata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// ResponseTrace is the extension's payload: the steps of one trace.
type ResponseTrace struct {
	TraceID string `json:"trace_id"`
	Steps   []Step `json:"steps"`
}

// EncodeResponseTrace returns the JSON form of rt, with times in UTC.
func EncodeResponseTrace(rt *ResponseTrace) ([]byte, error) {
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
	var wire struct {
		TraceID string            `json:"trace_id"`
		Steps   []json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&wire); err != nil {
		return nil, fmt.Errorf("response trace: %w", err)
	}
	if len(wire.Steps) > MaxExtensionSteps {
		return nil, fmt.Errorf("response trace: %d steps exceeds the limit of %d", len(wire.Steps), MaxExtensionSteps)
	}
	rt := &ResponseTrace{TraceID: wire.TraceID, Steps: make([]Step, 0, len(wire.Steps))}
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
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("response trace metadata: %w", err)
		}
		raw = b
	}
	return DecodeResponseTrace(raw)
}

type wireStep struct {
	StepID               any            `json:"step_id"`
	TraceID              string         `json:"trace_id"`
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
}

func decodeStep(raw json.RawMessage) (Step, error) {
	var w wireStep
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return Step{}, err
	}
	s := Step{
		TraceID: w.TraceID, Name: w.Name, Parameters: w.Parameters, Requests: w.Requests,
		StepType: w.StepType, AdditionalAttributes: w.AdditionalAttributes,
		Agent: w.Agent, Caller: w.Caller, Input: w.Input, Output: w.Output, Model: w.Model,
	}
	var err error
	if s.StepID, err = idString(w.StepID); err != nil || s.StepID == "" {
		return Step{}, errors.New("step_id is missing or not a string")
	}
	if s.ParentStepID, err = idString(w.ParentStepID); err != nil {
		return Step{}, fmt.Errorf("parent_step_id: %w", err)
	}
	if s.CallType, err = parseCallType(w.CallType); err != nil {
		return Step{}, err
	}
	if s.Cost, err = number(w.Cost, "cost"); err != nil {
		return Step{}, err
	}
	tokens, err := number(w.TotalTokens, "total_tokens")
	if err != nil {
		return Step{}, err
	}
	s.TotalTokens = int64(tokens)
	if s.StartTime, err = parseTime(w.StartTime, "start_time"); err != nil {
		return Step{}, err
	}
	if s.EndTime, err = parseTime(w.EndTime, "end_time"); err != nil {
		return Step{}, err
	}
	if !s.StartTime.IsZero() && !s.EndTime.IsZero() && s.EndTime.Before(s.StartTime) {
		return Step{}, errors.New("end_time is before start_time")
	}
	latency, err := number(w.Latency, "latency")
	if err != nil {
		return Step{}, err
	}
	if latency < 0 {
		return Step{}, errors.New("latency is negative")
	}
	s.LatencyMS, err = number(w.LatencyMS, "latency_ms")
	if err != nil {
		return Step{}, err
	}
	switch {
	case !s.StartTime.IsZero() && !s.EndTime.IsZero():
		// The times are the more precise record; latency may be rounded.
		s.LatencyMS = float64(s.EndTime.Sub(s.StartTime)) / float64(time.Millisecond)
	case s.LatencyMS == 0:
		s.LatencyMS = latency
	}
	if !s.StartTime.IsZero() && s.EndTime.IsZero() && s.LatencyMS > 0 {
		s.EndTime = s.StartTime.Add(time.Duration(s.LatencyMS * float64(time.Millisecond)))
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
				return t.UTC(), nil
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
