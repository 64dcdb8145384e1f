package a2acall

import (
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/internal/textutil"
)

// This file: reply collection. Whatever way the answer comes (a Message, a
// Task, a stream of events, polled tasks), a collector gathers it and builds
// the Reply.

// collector gathers an answer from a blocking result or a stream's events.
type collector struct {
	seen      bool
	final     *a2a.Message // a Message answer
	taskID    string
	contextID string
	state     a2a.TaskState
	statusMsg *a2a.Message    // the current status's message, nil when it has none
	artifacts []*a2a.Artifact // in order of first appearance
	metas     []map[string]any
}

// done reports whether the answer ends the call: a message, a terminal
// state, or a state that waits for the caller.
func (c *collector) done() bool {
	return c.final != nil || c.state.Terminal() || c.state == a2a.TaskStateInputRequired || c.state == a2a.TaskStateAuthRequired
}

func (c *collector) meta(m map[string]any) {
	if len(m) > 0 {
		c.metas = append(c.metas, m)
	}
}

func (c *collector) info(taskID a2a.TaskID, contextID string) {
	if taskID != "" {
		c.taskID = string(taskID)
	}
	if contextID != "" {
		c.contextID = contextID
	}
}

func (c *collector) message(msg *a2a.Message) {
	c.seen = true
	c.final = msg
	c.info(msg.TaskID, msg.ContextID)
	c.meta(msg.Metadata)
}

// task takes a whole task: it replaces the artifacts gathered so far.
func (c *collector) task(t *a2a.Task) {
	if t == nil {
		return
	}
	c.seen = true
	c.info(t.ID, t.ContextID)
	c.meta(t.Metadata)
	c.status(t.Status)
	if len(t.Artifacts) > 0 {
		c.artifacts = nil
		for _, a := range t.Artifacts {
			c.artifact(a, false)
		}
	}
	for _, h := range t.History {
		if h != nil && h.Role == a2a.MessageRoleAgent {
			c.meta(h.Metadata)
		}
	}
}

// status takes the task's current status. Its message belongs to it: a
// later status without one (a final completed after a working "thinking
// ...") leaves no message, so earlier progress text never reaches the
// Reply. Metadata of every status message is kept.
func (c *collector) status(s a2a.TaskStatus) {
	c.state = s.State
	c.statusMsg = s.Message
	if s.Message != nil {
		c.meta(s.Message.Metadata)
	}
}

// artifact adds a or, when appending, extends the artifact of the same id.
func (c *collector) artifact(a *a2a.Artifact, appendParts bool) {
	if a == nil {
		return
	}
	c.meta(a.Metadata)
	for i, old := range c.artifacts {
		if old.ID == a.ID && a.ID != "" {
			if appendParts {
				merged := *old
				merged.Parts = append(slices.Clone(old.Parts), a.Parts...)
				c.artifacts[i] = &merged
			} else {
				c.artifacts[i] = a
			}
			return
		}
	}
	c.artifacts = append(c.artifacts, a)
}

func (c *collector) event(ev a2a.Event) {
	switch e := ev.(type) {
	case *a2a.Message:
		c.message(e)
	case *a2a.Task:
		c.task(e)
	case *a2a.TaskStatusUpdateEvent:
		c.seen = true
		c.info(e.TaskID, e.ContextID)
		c.meta(e.Metadata)
		c.status(e.Status)
	case *a2a.TaskArtifactUpdateEvent:
		c.seen = true
		c.info(e.TaskID, e.ContextID)
		c.meta(e.Metadata)
		c.artifact(e.Artifact, e.Append)
	}
}

// reply builds the Reply: a Message answer's parts, else the artifacts'
// parts followed by the final status message's.
func (c *collector) reply(p *participant, streamed bool) *Reply {
	r := &Reply{AgentName: p.name, ContextID: c.contextID, TaskID: c.taskID, Protocol: p.protocol, Streamed: streamed}
	var texts []string
	addParts := func(parts []*a2a.Part) {
		for _, part := range parts {
			if part == nil {
				continue
			}
			switch v := part.Content.(type) {
			case a2a.Text:
				if s := string(v); s != "" {
					texts = append(texts, s)
				}
			case a2a.Data:
				if mv, ok := v.Value.(map[string]any); ok {
					r.Data = append(r.Data, mv)
				} else if v.Value != nil {
					r.Data = append(r.Data, map[string]any{"value": v.Value})
				}
			}
		}
	}
	if c.final != nil {
		addParts(c.final.Parts)
		r.State = "completed"
	} else {
		for _, a := range c.artifacts {
			addParts(a.Parts)
		}
		if c.statusMsg != nil {
			addParts(c.statusMsg.Parts)
		}
		r.State = stateName(c.state)
	}
	r.Text = strings.Join(texts, "\n")
	return r
}

// stateName spells a task state as A2A 0.3 and scenarios do: "completed",
// "input-required"; "unknown" when unset.
func stateName(s a2a.TaskState) string {
	if s == a2a.TaskStateUnspecified {
		return "unknown"
	}
	v := strings.TrimPrefix(string(s), "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(v), "_", "-")
}

// wireState is the state as the protocol in use spells it, for a2a.task.state.
func wireState(s a2a.TaskState, legacy bool) string {
	if legacy {
		return stateName(s)
	}
	return string(s)
}

func failedState(s a2a.TaskState) bool {
	return s == a2a.TaskStateFailed || s == a2a.TaskStateRejected || s == a2a.TaskStateCanceled
}

func finishReason(s a2a.TaskState) string {
	if failedState(s) {
		return "error"
	}
	return "stop"
}

// excerptRunes bounds the text of a failed task quoted in its error. The
// text is often an error chain whose cause comes last, so its middle is
// what gets cut.
const excerptRunes = 600

// excerpt quotes a failed task's text for its error: the start and the end
// (the cause) of a long one.
func excerpt(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return ": " + strconv.Quote(textutil.ClipMiddle(text, excerptRunes))
}
