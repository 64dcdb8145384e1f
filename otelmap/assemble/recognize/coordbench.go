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
	r.claim(famCoordbench)
	switch kv.Key {
	case otelmap.AttrCallType:
		v := r.str(kv)
		switch {
		case v == "":
		case strings.EqualFold(v, string(tracedata.CallAgent)):
			r.ct = CallAgent
		case strings.EqualFold(v, string(tracedata.CallTool)):
			r.ct = CallTool
		case strings.EqualFold(v, string(tracedata.CallHost)):
			r.ct = CallHost
		default:
			r.warn(string(kv.Key), fmt.Sprintf("has value %q, want AGENT, TOOL or HOST", v))
		}
	case otelmap.AttrSource:
		if r.str(kv) == otelmap.SourceExtension {
			r.Ext = true
		}
	}
}
