package assemble

import (
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// familyTree is the assembled tree as one family's pass sees it
// (recognize.Tree): spans numbered by node, the family's identities
// ranked by the registry.
type familyTree struct {
	a   *assembler
	fam int
}

// treeOf returns the tree as family fam sees it.
func (a *assembler) treeOf(fam int) recognize.Tree {
	a.tree = familyTree{a: a, fam: fam}
	return &a.tree
}

func (t *familyTree) Span(i int32) *otelmap.Span { return t.a.span(i) }
func (t *familyTree) Parent(i int32) int32       { return t.a.nodes[i].parent }
func (t *familyTree) Process(i int32) int32      { return t.a.nodes[i].proc }
func (t *familyTree) Op(i int32) recognize.Op    { return t.a.nodes[i].op }
func (t *familyTree) Agent(i int32) bool         { return t.a.nodes[i].flags&fAgent != 0 }

func (t *familyTree) Named(i int32) bool {
	n := &t.a.nodes[i]
	return n.flags&fAgent != 0 && n.selfIdent >= 0
}

func (t *familyTree) ServiceCall(i int32) bool { return t.a.nodes[i].flags&fServiceCall != 0 }

func (t *familyTree) MakeAgent(i int32, name string, identity int) {
	a := t.a
	n := &a.nodes[i]
	n.selfIdent = a.intern(name)
	a.note(n.selfIdent, a.reg.Rank(t.fam, identity), false)
	n.flags |= fAgent | fMarker | fStep
	n.flags &^= fAgentLike
	n.op, n.callType, n.role = recognize.OpInvoke, recognize.CallAgent, recognize.RoleInternal
}

func (t *familyTree) ForgetUnnamed(i int32) {
	t.a.nodes[i].flags &^= fAgentLike | fUnnamedAgent | fWorkflow
}

func (t *familyTree) MarkUnnamed(i int32) {
	n := &t.a.nodes[i]
	if n.flags&fAgentLike == 0 {
		n.flags |= fAgentLike
		t.a.agentLike++
	}
	n.flags |= fUnnamedAgent
}

func (t *familyTree) RunBy(i, p int32) bool {
	nodes := t.a.nodes
	if p < 0 || nodes[p].proc != nodes[i].proc {
		return false
	}
	for x, steps := p, 0; x >= 0 && steps <= len(nodes); x, steps = nodes[x].parent, steps+1 {
		if x == i {
			return false
		}
	}
	nodes[i].parent = p
	t.a.reparented = true
	return true
}

func (t *familyTree) NameCaller(i int32, name string, identity int) {
	if name == "" {
		return
	}
	t.a.callerNames = append(t.a.callerNames, namedCaller{span: i, name: name, rank: t.a.reg.Rank(t.fam, identity)})
}
