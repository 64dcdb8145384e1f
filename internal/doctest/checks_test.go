//go:build unix

package doctest

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checks are what the test verifies after a block marked check=NAME, in
// the directory the document ran in: the files its commands wrote.
var checks = map[string]func(t *testing.T, dir string){
	"demo":        checkDemo,
	"walkthrough": checkWalkthrough,
}

// result is the part of a coordbench.result/v2 document the checks read.
type result struct {
	Schema   string   `json:"schema"`
	Score    *float64 `json:"score"`
	MaxScore float64  `json:"max_score"`
	Tasks    []struct {
		TaskID string `json:"task_id"`
		Agents []struct {
			Name string `json:"name"`
		} `json:"agents"`
		Interactions []struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"interactions"`
	} `json:"tasks"`
}

func readResult(t *testing.T, path string) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(readFile(t, path), &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r.Schema != "coordbench.result/v2" {
		t.Errorf("%s: schema %q, want coordbench.result/v2", path, r.Schema)
	}
	if r.Score == nil || *r.Score <= 0 || *r.Score > r.MaxScore {
		t.Errorf("%s: score %v of %v, want a score above 0", path, r.Score, r.MaxScore)
	}
	if len(r.Tasks) == 0 {
		t.Errorf("%s: no tasks", path)
	}
	return r
}

// checkDemo: `make demo` wrote its JSON result, three tasks with a score.
func checkDemo(t *testing.T, dir string) {
	r := readResult(t, filepath.Join(dir, "coordbench-demo-result.json"))
	if len(r.Tasks) != 3 {
		t.Errorf("the demo assessed %d tasks, want the 3 the README promises", len(r.Tasks))
	}
}

// checkWalkthrough: the README's walkthrough left result.json and result.md,
// a scored assessment whose every task's graph holds both agents of the
// team and the coordinator's call to its reviewer.
func checkWalkthrough(t *testing.T, dir string) {
	r := readResult(t, filepath.Join(dir, "result.json"))
	for _, task := range r.Tasks {
		var names []string
		for _, a := range task.Agents {
			names = append(names, a.Name)
		}
		for _, want := range []string{"coordinator", "reviewer-1"} {
			if !slices.Contains(names, want) {
				t.Errorf("task %s: agents %v, want %s among them", task.TaskID, names, want)
			}
		}
		called := false
		for _, i := range task.Interactions {
			called = called || i.From == "coordinator" && i.To == "reviewer-1"
		}
		if !called {
			t.Errorf("task %s: no interaction coordinator → reviewer-1 in %+v", task.TaskID, task.Interactions)
		}
	}
	md := string(readFile(t, filepath.Join(dir, "result.md")))
	for _, want := range []string{"**Score:", "flowchart", "reviewer-1"} {
		if !strings.Contains(md, want) {
			t.Errorf("result.md lacks %q:\n%s", want, md)
		}
	}
}
