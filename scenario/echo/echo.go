// Package echo is the smallest scenario, written to be copied: each task is
// a word the entry participant must say back. It shows the three methods a
// scenario implements (scenario.Scenario): its name, the tasks a request
// selects, and one task driven through the Messenger, whose calls join the
// task's trace. Everything else (the task's span, progress, deadlines,
// settling the trace, assembly, the evaluators, the result) is the
// executor's. It is wired into no server: a new scenario is a folder like
// this one and an entry in green.DefaultScenarios (docs/architecture.md,
// "I want to add ...").
package echo

import (
	"context"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/scenario"
)

// Name is the scenario's name: the result's domain and config.scenario.
const Name = "echo"

// Scenario says words to the entry participant and scores what comes back.
type Scenario struct {
	// Words are the tasks, one word each.
	Words []string
}

// Name is the result's domain.
func (Scenario) Name() string { return Name }

// Tasks returns a task per word, those of config.task_ids if given, the
// first config.num_tasks if set. A request the scenario cannot run (no
// entry participant) is a bad request, reported to the requester.
func (s Scenario) Tasks(req *scenario.Request) ([]scenario.Task, error) {
	if _, _, err := scenario.EntryParticipant(req, Name); err != nil {
		return nil, err
	}
	var tasks []scenario.Task
	for _, w := range s.Words {
		if len(req.Config.TaskIDs) > 0 && !slices.Contains(req.Config.TaskIDs, w) {
			continue
		}
		tasks = append(tasks, scenario.Task{ID: w, Title: "say " + w, Data: w})
	}
	if n := req.Config.NumTasks; n > 0 && n < len(tasks) {
		tasks = tasks[:n]
	}
	if len(tasks) == 0 {
		return nil, scenario.BadRequest("%s: no task selected", Name)
	}
	return tasks, nil
}

// Run sends the task's word to the entry participant. A participant that
// fails or answers wrong is an outcome, not an error.
func (Scenario) Run(ctx context.Context, env *scenario.TaskEnv, task scenario.Task) (*evals.Outcome, error) {
	_, url, err := scenario.EntryParticipant(env.Request, Name)
	if err != nil {
		return nil, err
	}
	word := task.Data.(string)
	reply, err := env.Messenger.Send(ctx, a2acall.SendRequest{URL: url, Text: "Say the word " + word + "."})
	if err != nil {
		return &evals.Outcome{Summary: "no answer: " + err.Error()}, nil
	}
	if !strings.Contains(strings.ToLower(reply.Text), strings.ToLower(word)) {
		return &evals.Outcome{Summary: "asked for " + word + ", got " + reply.Text}, nil
	}
	return &evals.Outcome{Success: true, Score: 1, Summary: "said " + word}, nil
}
