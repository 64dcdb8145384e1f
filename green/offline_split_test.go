package green

import (
	"strings"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// TestSplitConversations: traces of one conversation that each lack an
// agent another names are fragments (agents run as separate root
// traces); a conversation whose traces all name the same agent (one
// agent's turns, a trace per turn) is not, nor is a conversation seen in
// one trace.
func TestSplitConversations(t *testing.T) {
	agents := func(names ...string) *tracedata.TraceData {
		td := &tracedata.TraceData{}
		for _, n := range names {
			td.Agents = append(td.Agents, tracedata.Agent{Name: n, IdentifiedBy: tracedata.IdentityAgentName})
		}
		td.Agents = append(td.Agents, tracedata.Agent{Name: "user", Virtual: true})
		return td
	}
	tds := []*tracedata.TraceData{
		agents("researcher"), agents("writer"), // conversation net: split
		agents("bot"), agents("bot"), // conversation chat: one agent's turns
		agents("a", "b"),                                      // conversation solo: one trace
		agents("coordinator", "researcher"), agents("writer"), // conversation mixed
	}
	convs := [][]string{{"net"}, {"net"}, {"chat"}, {"chat"}, {"solo"}, {"mixed"}, {"mixed"}}
	split := splitConversations(tds, convs)
	for k, want := range map[int]string{0: "writer", 1: "researcher", 5: "writer", 6: "coordinator researcher"} {
		s := split[k]
		if s == nil {
			t.Errorf("trace %d: not a fragment", k)
			continue
		}
		if got := join(s.Missing); got != want {
			t.Errorf("trace %d: missing %q, want %q", k, got, want)
		}
	}
	for _, k := range []int{2, 3, 4} {
		if split[k] != nil {
			t.Errorf("trace %d: a fragment %+v, want none", k, split[k])
		}
	}
}

func join(s []string) string { return strings.Join(s, " ") }
