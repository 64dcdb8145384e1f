package recognize

import (
	"strings"

	"github.com/coordbench/coordbench/otelmap"
)

// ErrorTypes returns the types of the errors sp records, for the families
// that know error statuses which move control (ControlFlower): each
// exception event's exception.type, and the name its exception.message or
// the status message starts with (JavaScript tracers record no type, only
// the error's stack, "\n\nName\n    at ..."; Python's begin "Name: ..."
// or with a dotted path), with the last part of a dotted name as well.
func ErrorTypes(sp *otelmap.Span) []string {
	var types []string
	for _, e := range sp.Events() {
		if e.Name != "exception" {
			continue
		}
		if v, ok := eventAttr(e, "exception.type"); ok {
			types = appendErrorName(types, v)
		}
		if v, ok := eventAttr(e, "exception.message"); ok {
			types = appendErrorName(types, v)
		}
	}
	return appendErrorName(types, sp.StatusMessage)
}

// eventAttr returns e's attribute key as text (attribute.Value.String:
// a string as it is; another type as OpenTelemetry's rules for non-OTLP
// protocols write it, which no longer makes "invalid" of a float slice
// holding NaN, as the deprecated Emit did).
func eventAttr(e otelmap.Event, key string) (string, bool) {
	for _, kv := range e.Attrs {
		if string(kv.Key) == key {
			return kv.Value.String(), true
		}
	}
	return "", false
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
