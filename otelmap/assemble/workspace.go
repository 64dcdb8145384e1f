package assemble

import (
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// An assembly's largest working arrays (a node per span, the span-id
// index, the children lists and the order, the processes, the identities,
// the chains, the entries and the calls, and their maps) are kept for the
// next assembly: the collector connector's workers assemble trace after
// trace, and these were about 60% of the bytes an assembly allocated.
// Nothing of one trace is read by the next: every array is cut to length
// 0 and every map emptied, and the elements that hold strings or pointers
// are zeroed when the assembly ends, so a kept workspace holds nothing of
// its trace. The TraceData shares no memory with them.

// workspaces holds the assemblers whose arrays the next assembly reuses.
var workspaces = sync.Pool{New: func() any { return new(assembler) }}

// keepWorkspaces is false only in tests, which compare assemblies with
// and without kept workspaces.
var keepWorkspaces = true

// maxKeptSpans bounds the traces whose working arrays are kept: those of a
// larger trace are left to the garbage collector, so that one huge trace
// does not pin its arrays for the traces after it.
const maxKeptSpans = 1 << 14

// newAssembler returns an assembler for one trace, with a kept
// workspace's arrays when there is one.
func newAssembler(traceID trace.TraceID, opts Options, reg *recognize.Registry) *assembler {
	w := workspaces.Get().(*assembler)
	*w = assembler{
		traceID: traceID, joined: opts.Joined, reg: reg, reader: reg.Reader(), withoutSteps: opts.WithoutSteps,
		nodes: w.nodes[:0], byID: w.byID,
		procs: w.procs[:0], procByRe: w.procByRe, procBySv: w.procBySv,
		idents: w.idents[:0], identIx: w.identIx,
		kidsOff: w.kidsOff[:0], kids: w.kids[:0], order: w.order[:0],
		chains: w.chains[:0], entries: w.entries[:0], calls: w.calls[:0],
		sortedCalls: w.sortedCalls[:0], startKeys: w.startKeys[:0],
	}
	if w.procByRe == nil {
		w.procByRe = make(map[*otelmap.Resource]int32)
		w.procBySv = make(map[string]int32)
		w.identIx = make(map[string]int32)
	}
	return w
}

// release ends the assembly: the reader goes back to its registry and,
// for a trace of at most maxKeptSpans spans, the arrays to workspaces,
// emptied of the trace.
func (a *assembler) release() {
	a.reg.Release(a.reader)
	if !keepWorkspaces || cap(a.nodes) > maxKeptSpans || len(a.idents) > maxKeptSpans || len(a.procs) > maxKeptSpans {
		return
	}
	clear(a.procs)  // service names
	clear(a.idents) // names, ids, aliases
	clear(a.procByRe)
	clear(a.procBySv)
	clear(a.identIx)
	*a = assembler{
		nodes: a.nodes[:0], byID: a.byID,
		procs: a.procs[:0], procByRe: a.procByRe, procBySv: a.procBySv,
		idents: a.idents[:0], identIx: a.identIx,
		kidsOff: a.kidsOff[:0], kids: a.kids[:0], order: a.order[:0],
		chains: a.chains[:0], entries: a.entries[:0], calls: a.calls[:0],
		sortedCalls: a.sortedCalls[:0], startKeys: a.startKeys[:0],
	}
	workspaces.Put(a)
}
