package convmap

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// Matching a map against spans: a rule that matches a span says what the
// span is (its word comes before every built-in family's: family.go);
// control_flow entries say which error statuses move control rather than
// fail.

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
			if r.value != nil && !r.value.MatchString(kv.Value.String()) {
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
	s := kv.Value.String()
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

// ControlFlow reports whether sp's error status is control flow by an
// entry of the map: its status message, or one of the error types it
// records (types, recognize.ErrorTypes), matches. (The control flow of the
// frameworks coordbench reads is their families'.)
func (c *Map) ControlFlow(sp *otelmap.Span, types []string) bool {
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
