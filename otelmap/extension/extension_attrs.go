package extension

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// The spans rebuilt from extension steps, and their attributes: names and
// GenAI attributes as trace assembly reads them, the extension's own fields
// under coordbench's names.

// spans builds the spans, in the order of the steps.
func (c *stepConverter) spans() []otelmap.Span {
	resources := make(map[string]*otelmap.Resource)
	resourceOf := func(agent string) *otelmap.Resource {
		r := resources[agent]
		if r == nil {
			r = &otelmap.Resource{ServiceName: agent}
			if agent != "" {
				r.Attrs = []attribute.KeyValue{otelmap.AttrServiceName.String(agent)}
			}
			resources[agent] = r
		}
		return r
	}
	out := make([]otelmap.Span, len(c.steps))
	for i, s := range c.steps {
		sp := otelmap.Span{
			TraceID:  c.traceID,
			SpanID:   c.ids[i],
			Kind:     c.kind[i],
			Start:    c.start[i],
			End:      c.end[i],
			Resource: resourceOf(c.executor[i]),
			Source:   otelmap.SourceExtension,
		}
		if p := c.par[i]; p >= 0 {
			sp.ParentSpanID = c.ids[p]
		} else {
			sp.ParentSpanID = c.parent.SpanID()
		}
		if s.Error != "" {
			sp.StatusError = true
			sp.StatusMessage = otelmap.TruncateContent(s.Error)
		}
		sp.Name, sp.Attrs = c.nameAndAttrs(i)
		out[i] = sp
	}
	return out
}

// nameAndAttrs names a step's span and gives it the GenAI attributes trace
// assembly reads, then the extension's fields under coordbench's names.
func (c *stepConverter) nameAndAttrs(i int) (string, []attribute.KeyValue) {
	s := c.steps[i]
	attrs := []attribute.KeyValue{
		otelmap.AttrSource.String(otelmap.SourceExtension),
		otelmap.AttrCallType.String(string(s.CallType)),
	}
	var name string
	switch s.CallType {
	case tracedata.CallAgent:
		name = strings.TrimSpace(otelmap.SpanInvokeAgentPrefix + c.agent[i])
		attrs = append(attrs, otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent))
		if c.agent[i] != "" {
			attrs = append(attrs, otelmap.AttrGenAIAgentName.String(c.agent[i]))
		}
		if c.kind[i] == trace.SpanKindClient && s.Caller != "" {
			attrs = append(attrs, otelmap.AttrCaller.String(s.Caller))
		}
	case tracedata.CallTool:
		if isLLMStep(s) {
			name = firstNonEmpty(s.Name, strings.TrimSpace(otelmap.SpanChatPrefix+s.Model))
			attrs = append(attrs, otelmap.AttrGenAIOperationName.String(otelmap.OpChat))
		} else {
			tool := toolName(s)
			name = firstNonEmpty(s.Name, strings.TrimSpace(otelmap.SpanExecuteToolPrefix+tool))
			attrs = append(attrs, otelmap.AttrGenAIOperationName.String(otelmap.OpExecuteTool))
			if tool != "" {
				attrs = append(attrs, otelmap.AttrGenAIToolName.String(tool))
			}
		}
	default:
		name = firstNonEmpty(s.Name, strings.ToLower(string(s.CallType)))
	}
	if s.Model != "" {
		attrs = append(attrs, otelmap.AttrGenAIRequestModel.String(s.Model))
	}
	if s.StepType != "" {
		attrs = append(attrs, otelmap.AttrStepType.String(s.StepType))
	}
	if s.Cost != 0 && !math.IsNaN(s.Cost) {
		attrs = append(attrs, otelmap.AttrCost.Float64(s.Cost))
	}
	if s.TotalTokens != 0 {
		attrs = append(attrs, otelmap.AttrTotalTokens.Int64(s.TotalTokens))
	}
	if s.Input != "" {
		attrs = append(attrs, otelmap.AttrGenAIInputMessages.String(genAIMessages("user", s.Input)))
	}
	if s.Output != "" {
		attrs = append(attrs, otelmap.AttrGenAIOutputMessages.String(genAIMessages("assistant", s.Output)))
	}
	attrs = appendFlattened(attrs, otelmap.AttrParametersPrefix, s.Parameters)
	attrs = appendFlattened(attrs, otelmap.AttrRequestsPrefix, s.Requests)
	original := firstNonEmpty(s.TraceID, c.rt.TraceID)
	extra := s.AdditionalAttributes
	if original != "" && !strings.EqualFold(original, c.traceID.String()) {
		// Ours, not a participant's attribute of the same name.
		if _, clash := extra["original_trace_id"]; clash {
			extra = withoutKey(extra, "original_trace_id")
		}
		attrs = appendFlattened(attrs, otelmap.AttrExtraPrefix, extra)
		attrs = append(attrs, AttrOriginalTraceID.String(original))
	} else {
		attrs = appendFlattened(attrs, otelmap.AttrExtraPrefix, extra)
	}
	return name, attrs
}

// isLLMStep tells an LLM call from another tool call: it names a model, or
// its step_type says so.
func isLLMStep(s *tracedata.Step) bool {
	if s.Model != "" {
		return true
	}
	t := strings.ToLower(s.StepType)
	return strings.Contains(t, "llm") || strings.Contains(t, "chat")
}

// toolName is the tool a TOOL step ran: its name without the
// "execute_tool " prefix, else additional_attributes "tool_name".
func toolName(s *tracedata.Step) string {
	if name := strings.TrimSpace(strings.TrimPrefix(s.Name, otelmap.SpanExecuteToolPrefix)); name != "" && name != otelmap.OpExecuteTool {
		return name
	}
	if v, ok := s.AdditionalAttributes["tool_name"].(string); ok {
		return v
	}
	return ""
}

func withoutKey(m map[string]any, drop string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != drop {
			out[k] = v
		}
	}
	return out
}

// appendFlattened adds m's entries as prefix+key attributes, in key order so
// the spans do not depend on map iteration. Strings are kept (bounded),
// numbers and booleans typed, anything else JSON-encoded; nulls are left out.
func appendFlattened(attrs []attribute.KeyValue, prefix string, m map[string]any) []attribute.KeyValue {
	if len(m) == 0 {
		return attrs
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if kv, ok := flatValue(attribute.Key(prefix+k), m[k]); ok {
			attrs = append(attrs, kv)
		}
	}
	return attrs
}

func flatValue(key attribute.Key, v any) (attribute.KeyValue, bool) {
	switch x := v.(type) {
	case nil:
		return attribute.KeyValue{}, false
	case string:
		return key.String(otelmap.TruncateContent(x)), true
	case bool:
		return key.Bool(x), true
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return key.Int64(i), true
		}
		if f, err := x.Float64(); err == nil {
			return key.Float64(f), true
		}
		return key.String(x.String()), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return key.Int64(int64(x)), true
		}
		return key.Float64(x), true
	case float32:
		return key.Float64(float64(x)), true
	case int:
		return key.Int(x), true
	case int64:
		return key.Int64(x), true
	case int32:
		return key.Int64(int64(x)), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return key.String(otelmap.TruncateContent(fmt.Sprint(v))), true
	}
	return key.String(otelmap.TruncateContent(string(b))), true
}

// genAIMessages renders text as the GenAI conventions' message list with one
// text part, the form of gen_ai.input.messages and gen_ai.output.messages.
func genAIMessages(role, text string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Encoding strings into a fixed shape cannot fail.
	_ = enc.Encode([]message{{Role: role, Parts: []part{{Type: "text", Content: otelmap.TruncateContent(text)}}}})
	return strings.TrimSuffix(b.String(), "\n")
}
