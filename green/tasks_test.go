package green

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/a2aserve"
)

// TestServerTaskLimits: the green agent keeps at most TaskLimits.MaxTasks
// finished tasks however many requests it answers, and lists its tasks to
// an anonymous caller.
func TestServerTaskLimits(t *testing.T) {
	g := startGreen(t, ServerOptions{TaskLimits: a2aserve.TaskStoreLimits{MaxTasks: 3}})
	c := g.client10(t)
	for i := range 12 {
		if _, err := c.SendMessage(t.Context(), userMessage("Hello")); err != nil {
			t.Fatalf("SendMessage %d: %v", i, err)
		}
		if st := g.srv.Tasks().Stats(); st.Tasks > 3 {
			t.Fatalf("after %d requests the task store holds %d tasks, want at most 3", i+1, st.Tasks)
		}
	}
	if st := g.srv.Tasks().Stats(); st.Tasks != 3 || st.Evicted != 9 {
		t.Errorf("task store %+v, want 3 held and 9 dropped", st)
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks without authentication: %v", err)
	}
	if len(list.Tasks) != 3 {
		t.Errorf("ListTasks: %d tasks, want 3", len(list.Tasks))
	}
}
