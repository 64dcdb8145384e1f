package assemble

import (
	"fmt"
	"strings"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// coordbenchConventions reads the conventions coordbench emits (DESIGN §3):
// the OpenTelemetry GenAI agent, LLM and tool spans of semantic conventions
// v1.41.0 (gen_ai.operation.name, gen_ai.agent.name, gen_ai.agent.id), the
// OpenTelemetry A2A attributes (a2a.*, any of which marks a span of an agent
// call; a2a.task.state failed or rejected fails it), error.type,
// server.address, and coordbench's own coordbench.call_type and
// coordbench.source. Emitted by coordbench's green and purple agents, and by
// any agent instrumented to the current GenAI conventions.
//
// It reads all of them in one pass over the attributes, switching on the
// key's first byte: every span goes through it, so it is kept to one loop.
type coordbenchConventions struct{}

func (coordbenchConventions) read(sp *otelmap.Span, r *reading) {
	attrs := sp.Attrs
	for k := range attrs {
		kv := &attrs[k]
		key := string(kv.Key)
		if len(key) < 4 {
			continue
		}
		switch key[0] {
		case 'g':
			switch kv.Key {
			case otelmap.AttrGenAIOperationName:
				switch r.str(kv) {
				case otelmap.OpInvokeAgent:
					r.op = opInvoke
				case otelmap.OpChat, "text_completion", "generate_content", "embeddings":
					r.op = opLLM
				case otelmap.OpExecuteTool, "retrieval":
					r.op = opTool
				}
			case otelmap.AttrGenAIAgentName:
				r.agentName = r.str(kv)
			case otelmap.AttrGenAIAgentID:
				r.agentID = r.str(kv)
			}
		case 'c':
			switch kv.Key {
			case otelmap.AttrCallType:
				v := r.str(kv)
				switch {
				case v == "":
				case strings.EqualFold(v, string(tracedata.CallAgent)):
					r.callType = ctAgent
				case strings.EqualFold(v, string(tracedata.CallTool)):
					r.callType = ctTool
				case strings.EqualFold(v, string(tracedata.CallHost)):
					r.callType = ctHost
				default:
					r.warn(key, fmt.Sprintf("has value %q, want AGENT, TOOL or HOST", v))
				}
			case otelmap.AttrSource:
				if r.str(kv) == otelmap.SourceExtension {
					r.ext = true
				}
			}
		case 'a':
			if strings.HasPrefix(key, "a2a.") {
				r.marker = true
				if kv.Key == otelmap.AttrA2ATaskState && a2aFailed(r.str(kv)) {
					r.failed = true
				}
			}
		case 'e':
			if kv.Key == otelmap.AttrErrorType && r.str(kv) != "" {
				r.failed = true
			}
		case 's':
			if kv.Key == otelmap.AttrServerAddress && r.str(kv) != "" {
				r.hasAddr = true
			}
		}
	}
}
