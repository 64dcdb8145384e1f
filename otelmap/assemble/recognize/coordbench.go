package recognize

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// coordbench's own attributes (docs/design.md#one-call-in-spans):
// coordbench.call_type (AGENT, TOOL or HOST) makes a span a step of that call
// type whatever else it carries, and coordbench.source=extension marks a span
// rebuilt from the Traceability Extension. The rest of coordbench's conventions
// are the GenAI, A2A and HTTP ones, read by those families.

// readCoordbench reads one coordbench.* attribute.
func (r *Reading) readCoordbench(kv *attribute.KeyValue) {
	r.claimCore(claimCoordbench)
	switch kv.Key {
	case otelmap.AttrCallType:
		v := r.Str(kv)
		switch {
		case v == "":
		case strings.EqualFold(v, string(tracedata.CallAgent)):
			r.s.ct = CallAgent
		case strings.EqualFold(v, string(tracedata.CallTool)):
			r.s.ct = CallTool
		case strings.EqualFold(v, string(tracedata.CallHost)):
			r.s.ct = CallHost
		default:
			r.Warn(string(kv.Key), fmt.Sprintf("has value %q, want AGENT, TOOL or HOST", v))
		}
	case otelmap.AttrSource:
		if r.Str(kv) == otelmap.SourceExtension {
			r.Ext = true
		}
	}
}
