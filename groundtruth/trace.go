package groundtruth

import "github.com/coordbench/coordbench/tracedata"

// Call is one edge of a topology: From calls To once per task.
type Call struct{ From, To string }

// Calls are the topology's calls, agent by agent in file order, each agent's
// in the order of its peers. The assessor's hand-off to Entry is not among
// them.
func (t *Topology) Calls() []Call {
	var calls []Call
	for _, a := range t.Agents {
		for _, p := range a.Peers {
			calls = append(calls, Call{From: a.Name, To: p})
		}
	}
	return calls
}

// Trace is the trace the topology makes when everything is seen: the
// assessor (named assessor, role assessor) sends the task to Entry and each
// agent calls each of its peers once, every call seen from both sides.
// Agents that export spans or return extension steps are agents of the
// trace; participants are all the topology's agents, in file order, so one
// that takes part in no call still counts. The tests that hold the ground
// truth to its oracles and to the Go graph evaluator read this trace.
func (t *Topology) Trace(traceID, assessor string) (td *tracedata.TraceData, participants []string) {
	td = &tracedata.TraceData{TraceID: traceID}
	td.Agents = append(td.Agents, tracedata.Agent{Name: assessor, Role: tracedata.RoleAssessor})
	td.Interactions = append(td.Interactions, tracedata.Interaction{From: assessor, To: t.Entry, Count: 1, BothSides: 1})
	for _, a := range t.Agents {
		participants = append(participants, a.Name)
		if a.ExportsSpans || a.ReturnsExtensionSteps {
			td.Agents = append(td.Agents, tracedata.Agent{Name: a.Name})
		}
	}
	for _, c := range t.Calls() {
		td.Interactions = append(td.Interactions, tracedata.Interaction{From: c.From, To: c.To, Count: 1, BothSides: 1})
	}
	return td, participants
}
