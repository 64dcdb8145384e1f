package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/internal/jsonenc/jsontest"
	"github.com/coordbench/coordbench/tracedata"
)

// The rule: TaskResult.AppendJSON gives json.Marshal's bytes for every
// task result, and fails where json.Marshal fails. The named cases are
// the full fixture and its empty counterpart; the attacks are steps and
// task results filled field by field by reflection, with evaluations of
// every kind (so a field added to a type and not to its encoder fails
// here), every field left zero in turn (omitempty), hostile strings,
// extreme numbers and times, and the values encoding/json refuses.

func checkTask(t *testing.T, tr *TaskResult) {
	t.Helper()
	if msg, ok := jsontest.Equal(tr, tr.AppendJSON); !ok {
		t.Fatal(msg)
	}
}

func TestAppendJSONFixtures(t *testing.T) {
	for _, tr := range fullResult().Tasks {
		checkTask(t, &tr)
	}
	for _, tr := range summaryFixture().Tasks {
		checkTask(t, &tr)
	}
	checkTask(t, &TaskResult{})
	empty := NewTaskResult(&tracedata.TraceData{TraceID: "t"}, evals.Report{})
	checkTask(t, &empty)
	checkTask(t, &TaskResult{Steps: []tracedata.Step{{}}, Evaluations: Evaluations{}, EvaluatorErrors: map[string]string{}})
}

// fillResult gives an evaluation: a built-in result of each kind, filled
// in turn, one of an evaluator this package does not know, or nil.
func fillResult(t reflect.Type, r *rand.Rand) (reflect.Value, bool) {
	if t != reflect.TypeFor[evals.Result]() {
		return reflect.Value{}, false
	}
	var v evals.Result
	switch r.IntN(6) {
	case 0:
		v = new(evals.GraphResult)
	case 1:
		v = new(evals.LatencyResult)
	case 2:
		v = new(evals.TextResult)
	case 3:
		v = new(judge.Result)
	case 4:
		return reflect.ValueOf(RawEvaluation(`{"x": [1, 2.5, "<three>"], "y" :null}`)), true
	default:
		return reflect.Value{}, false
	}
	jsontest.Filler{R: r, Interface: fillResult}.Fill(reflect.ValueOf(v).Elem())
	return reflect.ValueOf(v), true
}

// TestAppendJSONEveryField fills every field of a task and of its steps,
// then leaves each field of a step, an agent, an interaction and the task
// zero in turn.
func TestAppendJSONEveryField(t *testing.T) {
	f := jsontest.Filler{R: rand.New(rand.NewPCG(1, 2)), Interface: fillResult}
	for range 300 {
		var tr TaskResult
		f.Fill(reflect.ValueOf(&tr).Elem())
		if len(tr.Steps) == 0 {
			tr.Steps = make([]tracedata.Step, 1)
			f.Fill(reflect.ValueOf(&tr.Steps[0]).Elem())
		}
		check := func() {
			if msg, ok := jsontest.Equal(&tr, tr.AppendJSON); !ok {
				t.Fatal(msg)
			}
		}
		if len(tr.Agents) == 0 {
			tr.Agents = make([]tracedata.Agent, 1)
			f.Fill(reflect.ValueOf(&tr.Agents[0]).Elem())
		}
		if len(tr.Interactions) == 0 {
			tr.Interactions = make([]tracedata.Interaction, 1)
			f.Fill(reflect.ValueOf(&tr.Interactions[0]).Elem())
		}
		jsontest.EveryFieldZero(&tr.Steps[0], check)
		jsontest.EveryFieldZero(&tr.Agents[0], check)
		jsontest.EveryFieldZero(&tr.Interactions[0], check)
		jsontest.EveryFieldZero(&tr, check)
	}
}

// TestAppendJSONRefuses: what encoding/json cannot encode, AppendJSON
// refuses too.
func TestAppendJSONRefuses(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, st := range map[string]tracedata.Step{
		"NaN cost":          {Cost: math.NaN(), StartTime: start, EndTime: start},
		"infinite latency":  {LatencyMS: math.Inf(1), StartTime: start, EndTime: start},
		"year 10000":        {StartTime: start, EndTime: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"negative year":     {StartTime: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), EndTime: start},
		"NaN parameter":     {Parameters: map[string]any{"x": math.NaN()}, StartTime: start, EndTime: start},
		"channel attribute": {AdditionalAttributes: map[string]any{"c": make(chan int)}, StartTime: start, EndTime: start},
	} {
		tr := TaskResult{TraceID: "t", Steps: []tracedata.Step{{StepID: "ok", StartTime: start, EndTime: start}, st}}
		if _, err := json.Marshal(&tr); err == nil {
			t.Fatalf("%s: encoding/json encodes it; the case proves nothing", name)
		}
		if b, err := tr.AppendJSON(nil); err == nil {
			t.Errorf("%s: AppendJSON gave %s, no error", name, b)
		}
	}
}

func FuzzAppendJSONStep(f *testing.F) {
	for _, s := range jsontest.Hostile {
		f.Add(s, s, 1.5, int64(3), int64(1_700_000_000_000_000_000))
	}
	f.Fuzz(func(t *testing.T, name, input string, latency float64, tokens, startNS int64) {
		start := time.Unix(0, startNS).UTC()
		tr := TaskResult{TraceID: name, Steps: []tracedata.Step{{
			StepID: name, Name: name, Input: input, Output: name + input, Error: input,
			LatencyMS: latency, Cost: -latency, TotalTokens: tokens, StartTime: start, EndTime: start.Add(time.Duration(tokens)),
			Parameters: map[string]any{name: input},
		}}}
		checkTask(t, &tr)
	})
}
