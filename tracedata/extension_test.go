package tracedata_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/tracedata"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeFixture(t *testing.T, name string) *tracedata.ResponseTrace {
	t.Helper()
	rt, err := tracedata.DecodeResponseTrace(readFixture(t, name))
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return rt
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// The Python sample's ResponseTrace.as_dict(), as json.dumps writes it:
// isoformat times with "+00:00" and without a zone, latency as a truncated
// int, nulls for what a step did not set, children listed before parents.
func TestExtensionDecodePythonSample(t *testing.T) {
	rt := decodeFixture(t, "python_sample.json")
	const traceID = "trace-5f0c3e1a-9d4b-4c8e-b2a7-61f0d3c9e845"
	if rt.TraceID != traceID {
		t.Errorf("trace id = %q", rt.TraceID)
	}
	if len(rt.Steps) != 6 {
		t.Fatalf("%d steps, want 6", len(rt.Steps))
	}
	byID := map[string]tracedata.Step{}
	for _, s := range rt.Steps {
		byID[s.StepID] = s
		if s.TraceID != traceID {
			t.Errorf("step %s: trace id %q, want the trace's (a null trace_id inherits it)", s.StepID, s.TraceID)
		}
	}

	tool := byID["step-0b7e2c4d-1f3a-4e5b-9c6d-7a8b9c0d1e2f"]
	wantTool := tracedata.Step{
		StepID:       "step-0b7e2c4d-1f3a-4e5b-9c6d-7a8b9c0d1e2f",
		TraceID:      traceID,
		ParentStepID: "step-8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f",
		CallType:     tracedata.CallTool,
		Name:         "get_weather",
		Parameters:   map[string]any{"city": "Paris", "units": "metric", "days": json.Number("3")},
		StepType:     "tool_call",
		// The times are more precise than Python's truncated latency (412).
		Latency:   413,
		LatencyMS: 412.837,
		StartTime: utc("2025-06-03T09:14:07.512034Z"),
		EndTime:   utc("2025-06-03T09:14:07.924871Z"),
	}
	if !reflect.DeepEqual(tool, wantTool) {
		t.Errorf("tool step:\n got %+v\nwant %+v", tool, wantTool)
	}

	llm := byID["step-3d4e5f6a-7b8c-4d9e-a0b1-c2d3e4f5a6b7"]
	if llm.Cost != 0.00042 || llm.TotalTokens != 1536 || llm.StepType != "llm_call" {
		t.Errorf("llm step cost/tokens/type = %v/%v/%q", llm.Cost, llm.TotalTokens, llm.StepType)
	}
	if llm.AdditionalAttributes["cached"] != false || llm.AdditionalAttributes["finish_reason"] != "stop" {
		t.Errorf("llm additional attributes = %v", llm.AdditionalAttributes)
	}

	failed := byID["step-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"]
	if !failed.Failed() || !strings.Contains(failed.Error, "KeyError") {
		t.Errorf("failed step error = %q", failed.Error)
	}

	call := byID["step-8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"]
	if call.CallType != tracedata.CallAgent || call.Name != "Weather Agent" ||
		call.AdditionalAttributes["agent_url"] != "http://localhost:10001/" ||
		call.Requests["message"] != "What is the weather in Paris for the next 3 days?" {
		t.Errorf("agent call step = %+v", call)
	}

	// Naive isoformat (no zone) is taken as UTC.
	root := byID["step-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"]
	if root.ParentStepID != "" || !root.StartTime.Equal(utc("2025-06-03T09:14:06.5Z")) ||
		!root.EndTime.Equal(utc("2025-06-03T09:14:08.951Z")) || root.Latency != 2451 {
		t.Errorf("root step = %+v", root)
	}
	if root.StartTime.Location() != time.UTC {
		t.Errorf("root start in %v, want UTC", root.StartTime.Location())
	}
	// Empty additional_attributes and null maps decode to nil, as the
	// encoder omits them.
	if root.AdditionalAttributes != nil || root.Parameters != nil {
		t.Errorf("empty maps kept: %#v %#v", root.AdditionalAttributes, root.Parameters)
	}

	// A step still running when as_dict() ran: end_time and latency null.
	open := byID["step-c0ffee00-1234-4567-89ab-cdef01234567"]
	if !open.EndTime.IsZero() || open.Latency != 0 || open.StartTime.IsZero() {
		t.Errorf("unfinished step = %+v", open)
	}
}

// The proto's JSON mapping: call_type as the enum number, int64 as strings,
// step_action's oneof; with the proto field names and with protojson's
// default lowerCamelCase names.
func TestExtensionDecodeProtoJSON(t *testing.T) {
	want := &tracedata.ResponseTrace{
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Steps: []tracedata.Step{{
			StepID:      "00f067aa0ba902b7",
			TraceID:     "4bf92f3577b34da6a3ce929d0e0e4736",
			CallType:    tracedata.CallAgent,
			Requests:    map[string]any{"message": "plan the week"},
			Cost:        3,
			TotalTokens: 900,
			AdditionalAttributes: map[string]any{
				"region": "eu-west-1", "agent_name": "Planner", "agent_url": "https://planner.example.com/a2a",
			},
			Latency:   250,
			LatencyMS: 250,
			StartTime: utc("2025-06-03T09:14:06Z"),
			EndTime:   utc("2025-06-03T09:14:06.25Z"),
		}, {
			StepID:       "b7ad6b7169203331",
			TraceID:      "4bf92f3577b34da6a3ce929d0e0e4736",
			ParentStepID: "00f067aa0ba902b7",
			CallType:     tracedata.CallTool,
			Name:         "calendar.lookup",
			Parameters:   map[string]any{"week": json.Number("23")},
			Latency:      40,
			LatencyMS:    40,
			StartTime:    utc("2025-06-03T09:14:06.1Z"),
			EndTime:      utc("2025-06-03T09:14:06.14Z"),
		}},
	}
	for _, name := range []string{"proto_json.json", "proto_json_camel.json"} {
		t.Run(name, func(t *testing.T) {
			got := decodeFixture(t, name)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestExtensionCallTypeForms(t *testing.T) {
	for in, want := range map[string]tracedata.CallType{
		`"AGENT"`: tracedata.CallAgent, `"tool"`: tracedata.CallTool, `"CallTypeEnum.HOST"`: tracedata.CallHost,
		`1`: tracedata.CallAgent, `2`: tracedata.CallTool, `3`: tracedata.CallHost,
	} {
		rt, err := tracedata.DecodeResponseTrace([]byte(`{"steps":[{"step_id":"a","call_type":` + in + `}]}`))
		if err != nil {
			t.Errorf("call_type %s: %v", in, err)
			continue
		}
		if got := rt.Steps[0].CallType; got != want {
			t.Errorf("call_type %s = %q, want %q", in, got, want)
		}
	}
}

func coordbenchTrace() *tracedata.ResponseTrace {
	start := time.Date(2025, 6, 3, 9, 14, 6, 0, time.FixedZone("CEST", 2*3600))
	return &tracedata.ResponseTrace{
		TraceID: "0af7651916cd43dd8448eb211c80319c",
		Steps: []tracedata.Step{{
			StepID: "b9c7c989f97918e1", TraceID: "0af7651916cd43dd8448eb211c80319c",
			CallType: tracedata.CallAgent, Name: "invoke_agent purple",
			Requests: map[string]any{"message": "hi", "n": json.Number("2")},
			Latency:  1200, LatencyMS: 1200.4,
			StartTime: start, EndTime: start.Add(1200400 * time.Microsecond),
			Agent: "purple", Caller: "green", Input: "Book a table", Output: "Booked",
		}, {
			StepID: "e457b5a2e4d86bd1", TraceID: "0af7651916cd43dd8448eb211c80319c", ParentStepID: "b9c7c989f97918e1",
			CallType: tracedata.CallTool, Name: "chat gpt-4o-mini", StepType: "llm",
			Cost: 0.0003, TotalTokens: 321,
			AdditionalAttributes: map[string]any{"temperature": json.Number("0.2"), "stream": true},
			Latency:              300, LatencyMS: 300,
			StartTime: start.Add(100 * time.Millisecond), EndTime: start.Add(400 * time.Millisecond),
			Agent: "purple", Model: "gpt-4o-mini",
		}, {
			StepID: "53995c3f42cd8ad8", TraceID: "0af7651916cd43dd8448eb211c80319c", ParentStepID: "b9c7c989f97918e1",
			CallType: tracedata.CallHost, Name: "coordbench.evaluate latency",
			Parameters: map[string]any{"threshold": "p95"},
			Latency:    2, LatencyMS: 2,
			StartTime: start.Add(time.Second), EndTime: start.Add(time.Second + 2*time.Millisecond),
			Error: "boom", Agent: "green",
		}},
	}
}

// coordbench's own steps survive encode then decode unchanged, but for the
// times, which come back in UTC.
func TestExtensionRoundTrip(t *testing.T) {
	in := coordbenchTrace()
	b, err := tracedata.EncodeResponseTrace(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "+02:00") {
		t.Errorf("encoded times are not UTC: %s", b)
	}
	got, err := tracedata.DecodeResponseTrace(b)
	if err != nil {
		t.Fatal(err)
	}
	want := coordbenchTrace()
	for i := range want.Steps {
		want.Steps[i].StartTime = want.Steps[i].StartTime.UTC()
		want.Steps[i].EndTime = want.Steps[i].EndTime.UTC()
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// The caller's value is not modified by encoding.
	if in.Steps[0].StartTime.Location().String() != "CEST" {
		t.Error("EncodeResponseTrace changed its argument")
	}
}

func TestExtensionEncodeNil(t *testing.T) {
	if _, err := tracedata.EncodeResponseTrace(nil); err == nil {
		t.Error("nil trace encoded")
	}
}

// Lenient forms a producer may use are read, not rejected.
func TestExtensionLenientForms(t *testing.T) {
	cases := []struct {
		name, step string
		check      func(tracedata.Step) bool
	}{
		{"numeric step id", `{"step_id":42,"call_type":"TOOL"}`,
			func(s tracedata.Step) bool { return s.StepID == "42" }},
		{"numbers as strings", `{"step_id":"a","call_type":"TOOL","cost":"0.5","total_tokens":"12","latency":"7"}`,
			func(s tracedata.Step) bool { return s.Cost == 0.5 && s.TotalTokens == 12 && s.Latency == 7 }},
		{"epoch seconds", `{"step_id":"a","call_type":"TOOL","start_time":1748941446.5,"end_time":1748941447}`,
			func(s tracedata.Step) bool {
				return s.StartTime.Equal(time.Unix(1748941446, 5e8)) && s.Latency == 500
			}},
		{"space separator and offset", `{"step_id":"a","call_type":"TOOL","start_time":"2025-06-03 11:14:06+02:00"}`,
			func(s tracedata.Step) bool { return s.StartTime.Equal(utc("2025-06-03T09:14:06Z")) }},
		{"start and latency give the end", `{"step_id":"a","call_type":"TOOL","start_time":"2025-06-03T09:14:06Z","latency":250}`,
			func(s tracedata.Step) bool {
				return s.EndTime.Equal(utc("2025-06-03T09:14:06.25Z")) && s.LatencyMS == 250
			}},
		{"latency_ms wins over latency without times", `{"step_id":"a","call_type":"TOOL","latency":3,"latency_ms":2.75}`,
			func(s tracedata.Step) bool { return s.LatencyMS == 2.75 && s.Latency == 3 }},
		{"error as an object", `{"step_id":"a","call_type":"TOOL","error":{"code":7}}`,
			func(s tracedata.Step) bool { return s.Error == `{"code":7}` }},
		{"error as true", `{"step_id":"a","call_type":"TOOL","error":true}`,
			func(s tracedata.Step) bool { return s.Error == "error" }},
		{"error as false", `{"step_id":"a","call_type":"TOOL","error":false}`,
			func(s tracedata.Step) bool { return s.Error == "" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, err := tracedata.DecodeResponseTrace([]byte(`{"trace_id":"t","steps":[` + c.step + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(rt.Steps[0]) {
				t.Errorf("decoded %+v", rt.Steps[0])
			}
		})
	}
	rt, err := tracedata.DecodeResponseTrace([]byte(`{"trace_id":"t","steps":null}`))
	if err != nil || len(rt.Steps) != 0 {
		t.Errorf("null steps: %v, %v", rt, err)
	}
}

// Every way a participant's answer can be unusable is an error, never a
// panic or a half-read trace.
func TestExtensionMalformed(t *testing.T) {
	step := func(fields string) string {
		return `{"trace_id":"t","steps":[{"step_id":"a","call_type":"TOOL"` + fields + `}]}`
	}
	cases := map[string]string{
		"not JSON":                     `this is not json`,
		"empty":                        ``,
		"top-level null":               `null`,
		"top-level array":              `[]`,
		"truncated":                    `{"trace_id":"t","steps":[`,
		"trailing data":                `{"trace_id":"t","steps":[]} {"x":1}`,
		"steps not an array":           `{"trace_id":"t","steps":{"step_id":"a"}}`,
		"steps a string":               `{"trace_id":"t","steps":"[]"}`,
		"trace_id an object":           `{"trace_id":{},"steps":[]}`,
		"step not an object":           `{"trace_id":"t","steps":[42]}`,
		"step null":                    `{"trace_id":"t","steps":[null]}`,
		"step without step_id":         `{"trace_id":"t","steps":[{"call_type":"TOOL"}]}`,
		"empty step_id":                `{"trace_id":"t","steps":[{"step_id":"","call_type":"TOOL"}]}`,
		"step_id an object":            `{"trace_id":"t","steps":[{"step_id":{},"call_type":"TOOL"}]}`,
		"parent_step_id a list":        step(`,"parent_step_id":["b"]`),
		"missing call_type":            `{"trace_id":"t","steps":[{"step_id":"a"}]}`,
		"unknown call_type":            `{"trace_id":"t","steps":[{"step_id":"a","call_type":"LLM"}]}`,
		"unknown call_type number":     `{"trace_id":"t","steps":[{"step_id":"a","call_type":7}]}`,
		"call_type zero":               `{"trace_id":"t","steps":[{"step_id":"a","call_type":0}]}`,
		"call_type bool":               `{"trace_id":"t","steps":[{"step_id":"a","call_type":true}]}`,
		"bad time":                     step(`,"start_time":"yesterday"`),
		"bad end time":                 step(`,"end_time":"2025-13-01T00:00:00Z"`),
		"time a bool":                  step(`,"start_time":true`),
		"negative epoch":               step(`,"start_time":-5`),
		"time out of range after zone": step(`,"start_time":"0000-01-01T00:30:00+01:00"`),
		"end before start":             step(`,"start_time":"2025-06-03T09:14:07Z","end_time":"2025-06-03T09:14:06Z"`),
		"step of centuries":            step(`,"start_time":"1800-01-01T00:00:00Z","end_time":"2025-01-01T00:00:00Z"`),
		"negative latency":             step(`,"latency":-1`),
		"negative latency_ms":          step(`,"latency_ms":-0.5`),
		"huge latency":                 step(`,"latency":1e300`),
		"latency past year 9999":       step(`,"start_time":"9999-12-31T23:59:59Z","latency":5000`),
		"NaN latency":                  step(`,"latency":"NaN"`),
		"Inf cost":                     step(`,"cost":"+Inf"`),
		"Infinity tokens":              step(`,"total_tokens":"Infinity"`),
		"nan lowercase":                step(`,"latency_ms":"nan"`),
		"number overflow":              step(`,"cost":1e400`),
		"latency not a number":         step(`,"latency":"fast"`),
		"latency a bool":               step(`,"latency":true`),
		"negative tokens":              step(`,"total_tokens":-3`),
		"too many tokens":              step(`,"total_tokens":1e19`),
		"name a number":                step(`,"name":5`),
		"parameters a list":            step(`,"parameters":[1,2]`),
		"step_action a string":         step(`,"step_action":"tool"`),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			rt, err := tracedata.DecodeResponseTrace([]byte(in))
			if err == nil {
				t.Fatalf("decoded %+v, want an error", rt)
			}
			if rt != nil {
				t.Errorf("error %v came with a trace", err)
			}
			if !strings.HasPrefix(err.Error(), "response trace") {
				t.Errorf("error %q does not say what failed", err)
			}
		})
	}
}

func TestExtensionLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"trace_id":"t","steps":[`)
	for i := range tracedata.MaxExtensionSteps + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"step_id":"s%d","call_type":"TOOL"}`, i)
	}
	b.WriteString(`]}`)
	if _, err := tracedata.DecodeResponseTrace([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "steps exceeds") {
		t.Errorf("%d steps: err = %v", tracedata.MaxExtensionSteps+1, err)
	}

	// Exactly at the step limit is fine.
	at := strings.Replace(b.String(), fmt.Sprintf(`,{"step_id":"s%d","call_type":"TOOL"}`, tracedata.MaxExtensionSteps), "", 1)
	if rt, err := tracedata.DecodeResponseTrace([]byte(at)); err != nil || len(rt.Steps) != tracedata.MaxExtensionSteps {
		t.Errorf("%d steps: err = %v", tracedata.MaxExtensionSteps, err)
	}

	big := `{"trace_id":"t","steps":[],"pad":"` + strings.Repeat("x", tracedata.MaxExtensionBytes) + `"}`
	if _, err := tracedata.DecodeResponseTrace([]byte(big)); err == nil || !strings.Contains(err.Error(), "bytes exceeds") {
		t.Errorf("%d bytes: err = %v", len(big), err)
	}
}

func TestExtensionFromMetadata(t *testing.T) {
	fixture := readFixture(t, "python_sample.json")
	want, err := tracedata.DecodeResponseTrace(fixture)
	if err != nil {
		t.Fatal(err)
	}
	// The value as an A2A SDK hands it over: a decoded JSON object.
	var asMap map[string]any
	if err := json.Unmarshal(fixture, &asMap); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"map":         asMap,
		"JSON string": string(fixture),
		"raw message": json.RawMessage(fixture),
		"bytes":       fixture,
	} {
		t.Run(name, func(t *testing.T) {
			md := map[string]any{"other": 1, tracedata.ExtensionMetadataKey: v}
			got, err := tracedata.ResponseTraceFromMetadata(md)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}

	for name, md := range map[string]map[string]any{
		"nil metadata": nil,
		"absent":       {"other": "x"},
		"null":         {tracedata.ExtensionMetadataKey: nil},
	} {
		if rt, err := tracedata.ResponseTraceFromMetadata(md); rt != nil || err != nil {
			t.Errorf("%s: got %v, %v; want nil, nil", name, rt, err)
		}
	}

	for name, v := range map[string]any{
		"bad JSON string":   "{not json",
		"unmarshalable":     func() {},
		"number":            5,
		"malformed as map":  map[string]any{"steps": []any{map[string]any{"call_type": "TOOL"}}},
		"NaN inside a map":  map[string]any{"steps": []any{map[string]any{"step_id": "a", "call_type": "TOOL", "cost": 0.0 / zero()}}},
		"steps not a array": map[string]any{"steps": "x"},
	} {
		if rt, err := tracedata.ResponseTraceFromMetadata(map[string]any{tracedata.ExtensionMetadataKey: v}); err == nil {
			t.Errorf("%s: got %+v, want an error", name, rt)
		}
	}
}

func zero() float64 { return 0 }
