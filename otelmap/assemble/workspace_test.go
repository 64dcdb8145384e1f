package assemble_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// TestWorkspacesLeaveNoTrace: an assembly that reuses the working arrays
// of the assemblies before it (workspace.go) gives the TraceData, byte for
// byte, that it gives from fresh memory. The traces (the framework
// fixtures, the broken-input trace and 200 mixes of conventions) are
// assembled from fresh memory, then one after another with workspaces
// kept, in three shuffled orders, with and without steps, so that each
// follows larger and smaller traces of other shapes.
func TestWorkspacesLeaveNoTrace(t *testing.T) {
	type input struct {
		name  string
		id    trace.TraceID
		spans []otelmap.Span
	}
	var inputs []input
	for _, name := range frameworkNames(t) {
		id, spans, _ := loadFramework(t, name)
		inputs = append(inputs, input{name, id, spans})
	}
	broken := trace.TraceID{0xb0, 2}
	inputs = append(inputs, input{"broken", broken, brokenSpans(broken)})
	for seed := range 200 {
		data := make([]byte, 400)
		x := uint32(seed*2246822519 + 7)
		for i := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[i] = byte(x)
		}
		id, spans := conventionTrace(data)
		inputs = append(inputs, input{fmt.Sprintf("mix%d", seed), id, spans})
	}
	encode := func(in input, opts assemble.Options) string {
		b, err := json.Marshal(assemble.TraceWith(in.id, in.spans, opts))
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		return string(b)
	}
	for _, withoutSteps := range []bool{false, true} {
		opts := assemble.Options{WithoutSteps: withoutSteps}
		old := assemble.KeepWorkspaces(false)
		fresh := make([]string, len(inputs))
		for k, in := range inputs {
			fresh[k] = encode(in, opts)
		}
		assemble.KeepWorkspaces(true)
		r := rand.New(rand.NewPCG(31, uint64(len(inputs))))
		for round := range 3 {
			for _, k := range r.Perm(len(inputs)) {
				if got := encode(inputs[k], opts); got != fresh[k] {
					t.Fatalf("round %d, without steps %v: %s with a kept workspace differs from fresh memory:\n%s\nfresh:\n%s",
						round, withoutSteps, inputs[k].name, got, fresh[k])
				}
			}
		}
		assemble.KeepWorkspaces(old)
	}
}
