package green

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/coordbench/coordbench/evals"
)

// DecodeResult reads a coordbench.result/v1 document, as a client of the
// green agent receives it in the Result artifact. Each task's evaluator
// results are kept as their JSON under their names (RawEvaluation), so the
// result encodes back to the same document and Summary renders it.
func DecodeResult(raw []byte) (*Result, error) {
	var res Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if res.Schema != ResultSchema {
		return nil, fmt.Errorf("decode result: schema %q, want %q", res.Schema, ResultSchema)
	}
	var tasks struct {
		Tasks []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(raw, &tasks); err != nil {
		return nil, fmt.Errorf("decode result: %w", err)
	}
	if len(tasks.Tasks) != len(res.Tasks) {
		return nil, errors.New("decode result: tasks changed between readings")
	}
	fixed := taskResultKeys()
	for i, t := range tasks.Tasks {
		for k, v := range t {
			if fixed[k] {
				continue
			}
			if res.Tasks[i].Evaluations == nil {
				res.Tasks[i].Evaluations = map[string]evals.Result{}
			}
			res.Tasks[i].Evaluations[k] = RawEvaluation(v)
		}
	}
	return &res, nil
}

// taskResultKeys are the JSON keys of TaskResult's own fields; every other
// key of a task is an evaluator's result.
func taskResultKeys() map[string]bool {
	keys := map[string]bool{}
	rt := reflect.TypeFor[TaskResult]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// RawEvaluation is an evaluator's result as decoded JSON: it encodes to
// the same bytes, and has no headline numbers.
type RawEvaluation json.RawMessage

// Headline implements evals.Result.
func (RawEvaluation) Headline() map[string]float64 { return nil }

// MarshalJSON returns the JSON as it was read.
func (r RawEvaluation) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}
