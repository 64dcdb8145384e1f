package report

import (
	"fmt"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/internal/jsonenc"
	"github.com/coordbench/coordbench/tracedata"
)

// AppendJSON appends tr's JSON, the very bytes json.Marshal(tr) gives,
// for a caller that encodes many task results (the collector connector,
// one per assessed trace). The steps, most of a task's bytes, the agents
// and interactions, and the built-in evaluators' results are written
// without reflection; the rest goes through encoding/json.
// taskjson_test.go holds both to encoding/json on real and fuzzed
// results, field by field, so a field added to TaskResult or Step but
// not here fails it.
func (tr *TaskResult) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	if tr.TaskID != "" {
		b = jsonenc.String(append(b, `"task_id":`...), tr.TaskID)
		b = append(b, ',')
	}
	b = jsonenc.String(append(b, `"trace_id":`...), tr.TraceID)
	var err error
	if b, err = jsonenc.Slice(append(b, `,"agents":`...), tr.Agents, appendAgent); err != nil {
		return nil, err
	}
	if b, err = jsonenc.Slice(append(b, `,"interactions":`...), tr.Interactions, appendInteraction); err != nil {
		return nil, err
	}
	b = append(b, `,"steps":`...)
	if tr.Steps == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range tr.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendStep(b, &tr.Steps[i]); err != nil {
				return nil, fmt.Errorf("json: step %d: %w", i, err)
			}
		}
		b = append(b, ']')
	}
	if b, err = field(b, `,"coverage":`, &tr.Coverage); err != nil {
		return nil, err
	}
	if tr.Outcome != nil {
		if b, err = field(b, `,"outcome":`, tr.Outcome); err != nil {
			return nil, err
		}
	}
	if tr.LateSpans != 0 {
		b = jsonenc.Int(append(b, `,"late_spans":`...), int64(tr.LateSpans))
	}
	if tr.RefusedSpans != 0 {
		b = jsonenc.Int(append(b, `,"refused_spans":`...), int64(tr.RefusedSpans))
	}
	if tr.SetAside != nil {
		if b, err = field(b, `,"set_aside":`, tr.SetAside); err != nil {
			return nil, err
		}
	}
	if len(tr.Evaluations) > 0 {
		if b, err = jsonenc.Map(append(b, `,"evaluations":`...), tr.Evaluations, appendEvaluation); err != nil {
			return nil, err
		}
	}
	if len(tr.EvaluatorErrors) > 0 {
		if b, err = field(b, `,"evaluator_errors":`, tr.EvaluatorErrors); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendEvaluation appends an evaluator's result: the built-in ones by
// their own AppendJSON, any other by encoding/json.
func appendEvaluation(b []byte, r evals.Result) ([]byte, error) {
	if a, ok := r.(interface {
		AppendJSON([]byte) ([]byte, error)
	}); ok {
		return a.AppendJSON(b)
	}
	return jsonenc.Value(b, r)
}

// field appends key and v's JSON by encoding/json.
// appendAgent appends a's JSON as encoding/json encodes a tracedata.Agent.
func appendAgent(b []byte, a *tracedata.Agent) ([]byte, error) {
	b = jsonenc.String(append(b, `{"name":`...), a.Name)
	if a.ID != "" {
		b = jsonenc.String(append(b, `,"id":`...), a.ID)
	}
	if len(a.Aliases) > 0 {
		b = jsonenc.Strings(append(b, `,"aliases":`...), a.Aliases)
	}
	b = jsonenc.String(append(b, `,"identified_by":`...), a.IdentifiedBy)
	if a.Virtual {
		b = append(b, `,"virtual":true`...)
	}
	if a.Role != "" {
		b = jsonenc.String(append(b, `,"role":`...), a.Role)
	}
	b = jsonenc.Int(append(b, `,"steps":`...), int64(a.Steps))
	b = jsonenc.Int(append(b, `,"errors":`...), int64(a.Errors))
	return append(b, '}'), nil
}

// appendInteraction appends it's JSON as encoding/json encodes a
// tracedata.Interaction.
func appendInteraction(b []byte, it *tracedata.Interaction) ([]byte, error) {
	b = jsonenc.String(append(b, `{"from":`...), it.From)
	b = jsonenc.String(append(b, `,"to":`...), it.To)
	b = jsonenc.Int(append(b, `,"count":`...), int64(it.Count))
	b = jsonenc.Int(append(b, `,"errors":`...), int64(it.Errors))
	var err error
	if b, err = jsonenc.Slice(append(b, `,"latencies_ms":`...), it.LatenciesMS, func(b []byte, f *float64) ([]byte, error) {
		return jsonenc.Float64(b, *f)
	}); err != nil {
		return b, err
	}
	b = jsonenc.Int(append(b, `,"both_sides":`...), int64(it.BothSides))
	b = jsonenc.Int(append(b, `,"client_only":`...), int64(it.ClientOnly))
	b = jsonenc.Int(append(b, `,"server_only":`...), int64(it.ServerOnly))
	b = jsonenc.Int(append(b, `,"in_process":`...), int64(it.InProcess))
	b = jsonenc.Int(append(b, `,"extension_only":`...), int64(it.ExtensionOnly))
	return append(b, '}'), nil
}

func field(b []byte, key string, v any) ([]byte, error) {
	return jsonenc.Value(append(b, key...), v)
}

// appendStep appends st's JSON as encoding/json encodes a tracedata.Step
// (its fields in order, omitempty as tagged).
func appendStep(b []byte, st *tracedata.Step) ([]byte, error) {
	var err error
	b = jsonenc.String(append(b, `{"step_id":`...), st.StepID)
	b = jsonenc.String(append(b, `,"trace_id":`...), st.TraceID)
	if st.ParentStepID != "" {
		b = jsonenc.String(append(b, `,"parent_step_id":`...), st.ParentStepID)
	}
	b = jsonenc.String(append(b, `,"call_type":`...), string(st.CallType))
	if st.Name != "" {
		b = jsonenc.String(append(b, `,"name":`...), st.Name)
	}
	if len(st.Parameters) > 0 {
		if b, err = field(b, `,"parameters":`, st.Parameters); err != nil {
			return nil, err
		}
	}
	if len(st.Requests) > 0 {
		if b, err = field(b, `,"requests":`, st.Requests); err != nil {
			return nil, err
		}
	}
	if st.StepType != "" {
		b = jsonenc.String(append(b, `,"step_type":`...), st.StepType)
	}
	if st.Cost != 0 {
		if b, err = jsonenc.Float64(append(b, `,"cost":`...), st.Cost); err != nil {
			return nil, err
		}
	}
	if st.TotalTokens != 0 {
		b = jsonenc.Int(append(b, `,"total_tokens":`...), st.TotalTokens)
	}
	if len(st.AdditionalAttributes) > 0 {
		if b, err = field(b, `,"additional_attributes":`, st.AdditionalAttributes); err != nil {
			return nil, err
		}
	}
	b = jsonenc.Int(append(b, `,"latency":`...), st.Latency)
	if b, err = jsonenc.Time(append(b, `,"start_time":`...), st.StartTime); err != nil {
		return nil, err
	}
	if b, err = jsonenc.Time(append(b, `,"end_time":`...), st.EndTime); err != nil {
		return nil, err
	}
	if st.Error != "" {
		b = jsonenc.String(append(b, `,"error":`...), st.Error)
	}
	if st.Agent != "" {
		b = jsonenc.String(append(b, `,"agent":`...), st.Agent)
	}
	if st.Caller != "" {
		b = jsonenc.String(append(b, `,"caller":`...), st.Caller)
	}
	if st.LatencyMS != 0 {
		if b, err = jsonenc.Float64(append(b, `,"latency_ms":`...), st.LatencyMS); err != nil {
			return nil, err
		}
	}
	if st.Input != "" {
		b = jsonenc.String(append(b, `,"input":`...), st.Input)
	}
	if st.Output != "" {
		b = jsonenc.String(append(b, `,"output":`...), st.Output)
	}
	if st.Model != "" {
		b = jsonenc.String(append(b, `,"model":`...), st.Model)
	}
	return append(b, '}'), nil
}
