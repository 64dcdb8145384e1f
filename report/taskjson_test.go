package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/tracedata"
)

// The rule: TaskResult.AppendJSON gives json.Marshal's bytes for every
// task result, and fails where json.Marshal fails. The named cases are
// the full fixture and its empty counterpart; the attacks are steps and
// task results filled field by field by reflection (so a field added to
// either type and not to the encoder fails here), every field left zero
// in turn (omitempty), hostile strings, extreme numbers and times, and
// the values encoding/json refuses.

func checkTask(t *testing.T, tr *TaskResult) {
	t.Helper()
	want, wantErr := json.Marshal(tr)
	got, err := tr.AppendJSON([]byte("prefix"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendJSON error %v, encoding/json's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("AppendJSON differs from encoding/json\n got: %s\nwant: %s", got, want)
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

// hostile are strings that need escaping, or HTML-escaping, or are not
// UTF-8.
var hostile = []string{
	"plain", `"quoted" \back\`, "<b>&amp;</b>", "line\nbreak\ttab\r\b\f\x00\x1f", "\u2028\u2029",
	"\xff\xfeinvalid", "naïve 漢字 🙂", "trail\xe2\x82", "",
}

// filler sets every field of a value, recursively, to something other
// than its zero value.
type filler struct{ r *rand.Rand }

func (f filler) fill(v reflect.Value) {
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		zones := []*time.Location{time.UTC, time.FixedZone("e", 5*3600+1800), time.FixedZone("w", -7*3600)}
		v.Set(reflect.ValueOf(time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).In(zones[f.r.IntN(len(zones))])))
		return
	case reflect.TypeFor[evals.Result]():
		results := fullResult().Tasks[0].Evaluations
		for _, res := range results {
			v.Set(reflect.ValueOf(res))
			break
		}
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile[f.r.IntN(len(hostile)-1)] + hostile[f.r.IntN(len(hostile))])
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(f.r.Int64N(1<<40) - 1<<39 + 1)
		if v.Int() == 0 {
			v.SetInt(7)
		}
	case reflect.Float64:
		floats := []float64{0.1, 1e-7, 1.5e21, -3.25, 812.5, 1e6, 5e-324, math.MaxFloat64}
		v.SetFloat(floats[f.r.IntN(len(floats))])
	case reflect.Slice:
		n := 1 + f.r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 1 + f.r.IntN(3) {
			k := reflect.New(v.Type().Key()).Elem()
			f.fill(k)
			e := reflect.New(v.Type().Elem()).Elem()
			f.fill(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Interface: // map[string]any values
		values := []any{"<s>", 2.5, int64(-3), true, nil, []any{"a", 1.0}, map[string]any{"z": 1, "a": "\u2028"}}
		if x := values[f.r.IntN(len(values))]; x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		panic("filler: no case for " + v.Type().String())
	}
}

// TestAppendJSONEveryField fills every field of a task and of its steps,
// then leaves each field of a step, and each of the task, zero in turn.
func TestAppendJSONEveryField(t *testing.T) {
	f := filler{rand.New(rand.NewPCG(1, 2))}
	for range 200 {
		var tr TaskResult
		f.fill(reflect.ValueOf(&tr).Elem())
		checkTask(t, &tr)
		st := reflect.ValueOf(&tr.Steps[0]).Elem()
		for i := range st.NumField() {
			saved := reflect.New(st.Field(i).Type()).Elem()
			saved.Set(st.Field(i))
			st.Field(i).SetZero()
			checkTask(t, &tr)
			st.Field(i).Set(saved)
		}
		task := reflect.ValueOf(&tr).Elem()
		for i := range task.NumField() {
			saved := reflect.New(task.Field(i).Type()).Elem()
			saved.Set(task.Field(i))
			task.Field(i).SetZero()
			checkTask(t, &tr)
			task.Field(i).Set(saved)
		}
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
	for _, s := range hostile {
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
