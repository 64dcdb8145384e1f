package groundtruth_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/tracedata"
)

// TestTopologyTrace: the hand-off, one call per peer seen from both sides,
// the agents that report spans, and every agent a participant, isolated
// ones included.
func TestTopologyTrace(t *testing.T) {
	top := groundtruth.Topology{Entry: "c", Agents: []groundtruth.TopologyAgent{
		{Name: "c", Peers: []string{"r1", "r2"}, ExportsSpans: true},
		{Name: "r1", Peers: []string{"r2"}, ReturnsExtensionSteps: true},
		{Name: "r2"},
		{Name: "idle"},
	}}
	if got, want := top.Calls(), []groundtruth.Call{{"c", "r1"}, {"c", "r2"}, {"r1", "r2"}}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	td, names := top.Trace("t1", "green")
	if td.TraceID != "t1" || !slices.Equal(names, []string{"c", "r1", "r2", "idle"}) {
		t.Errorf("trace %s, participants %v", td.TraceID, names)
	}
	wantAgents := []tracedata.Agent{{Name: "green", Role: tracedata.RoleAssessor}, {Name: "c"}, {Name: "r1"}}
	if !reflect.DeepEqual(td.Agents, wantAgents) {
		t.Errorf("agents %+v, want %+v", td.Agents, wantAgents)
	}
	wantCalls := []tracedata.Interaction{
		{From: "green", To: "c", Count: 1, BothSides: 1},
		{From: "c", To: "r1", Count: 1, BothSides: 1},
		{From: "c", To: "r2", Count: 1, BothSides: 1},
		{From: "r1", To: "r2", Count: 1, BothSides: 1},
	}
	if !reflect.DeepEqual(td.Interactions, wantCalls) {
		t.Errorf("interactions %+v, want %+v", td.Interactions, wantCalls)
	}
	if td, names := (&groundtruth.Topology{Entry: "solo"}).Trace("t2", "green"); len(names) != 0 || len(td.Interactions) != 1 {
		t.Errorf("an empty topology: %+v, %v", td, names)
	}
}
