package convmap

import (
	"encoding/json"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// Matching a map against spans: a rule that matches a span says what the
// span is (assembly reads it before its built-in families); control_flow
// entries, and the built-in ones below, say which error statuses move
// control rather than fail.

// builtinControlFlow are exception types frameworks raise to move control,
// recorded as an error status with an exception event though nothing
// failed. LangGraph's ParentCommand (raised by a handoff tool's Command
// with graph=PARENT, to route to a node of the parent graph) and the
// interrupts that pause a graph for a human are subclasses of its
// GraphBubbleUp, which LangGraph itself does not treat as an error.
var builtinControlFlow = regexp.MustCompile(`^(ParentCommand|GraphBubbleUp|GraphInterrupt|NodeInterrupt)$`)

// Match returns the first rule that matches sp, or nil.
func (c *Map) Match(sp *otelmap.Span) *Rule {
	if c == nil {
		return nil
	}
	for k := range c.rules {
		r := &c.rules[k]
		if r.kind != 0 && sp.Kind != r.kind {
			continue
		}
		if r.spanName != nil && !r.spanName.MatchString(sp.Name) {
			continue
		}
		if r.attribute != "" {
			kv, ok := findAttr(sp.Attrs, r.attribute)
			if !ok {
				continue
			}
			if r.value != nil && !r.value.MatchString(kv.Value.Emit()) {
				continue
			}
		}
		return r
	}
	return nil
}

// findAttr returns the attribute with key.
func findAttr(attrs []attribute.KeyValue, key string) (attribute.KeyValue, bool) {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv, true
		}
	}
	return attribute.KeyValue{}, false
}

// Read returns the name v reads from sp, "" when it finds none (or v is nil).
func (v *Value) Read(sp *otelmap.Span) string {
	if v == nil {
		return ""
	}
	if v.spanName != nil {
		if m := v.spanName.FindStringSubmatch(sp.Name); len(m) == 2 {
			return m[1]
		}
		return ""
	}
	kv, ok := findAttr(sp.Attrs, v.attribute)
	if !ok {
		return ""
	}
	s := kv.Value.Emit()
	if len(v.json) == 0 {
		return s
	}
	var obj map[string]any
	if json.Unmarshal([]byte(s), &obj) != nil {
		return ""
	}
	for _, m := range v.json {
		if name, ok := obj[m].(string); ok && name != "" {
			return name
		}
	}
	return ""
}

// ControlFlow reports whether sp's error status is control flow: its
// status message, or the type of the error it records, matches a built-in
// control-flow type or an entry of the map. The error's type is an
// exception event's exception.type, else the name its message or the
// status message starts with: JavaScript tracers record no type, only the
// error's stack ("\n\nParentCommand\n    at ..."), and Python's begin
// "ParentCommand: ..." or with a dotted path.
func (c *Map) ControlFlow(sp *otelmap.Span) bool {
	var types []string
	for _, e := range sp.Events() {
		if e.Name != "exception" {
			continue
		}
		if kv, ok := findAttr(e.Attrs, "exception.type"); ok {
			types = appendErrorName(types, kv.Value.Emit())
		}
		if kv, ok := findAttr(e.Attrs, "exception.message"); ok {
			types = appendErrorName(types, kv.Value.Emit())
		}
	}
	types = appendErrorName(types, sp.StatusMessage)
	for _, t := range types {
		if builtinControlFlow.MatchString(t) {
			return true
		}
	}
	if c == nil {
		return false
	}
	for _, f := range c.flows {
		if f.statusMessage != nil && sp.StatusMessage != "" && f.statusMessage.MatchString(sp.StatusMessage) {
			return true
		}
		if f.exceptionType != nil {
			for _, t := range types {
				if f.exceptionType.MatchString(t) {
					return true
				}
			}
		}
	}
	return false
}

// appendErrorName appends the error name s starts with: its first
// non-blank line up to a colon, when that is a (dotted) identifier, and
// the identifier's last dotted part.
func appendErrorName(names []string, s string) []string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 200 {
		return names
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isNameChar(c) && c != '_' && c != '.' && c != '$' {
			return names
		}
	}
	names = append(names, s)
	if i := strings.LastIndexByte(s, '.'); i >= 0 && i+1 < len(s) {
		names = append(names, s[i+1:])
	}
	return names
}

// isNameChar reports whether c is an ASCII letter or digit.
func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
