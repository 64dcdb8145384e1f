// Package jsonenc appends JSON values exactly as encoding/json's Marshal
// encodes them (HTML-safe string escapes, ES6 number formatting, RFC 3339
// times), without reflection. It is for hand-written encoders of types on
// hot paths (a trace's steps in the collector connector's log records),
// which must keep producing encoding/json's bytes: its tests hold it to
// encoding/json on fuzzed input. Its decoders are json.Unmarshal's:
// ParseObject into a map[string]any, for a tool call's arguments;
// StringFields into a struct of strings, for LangGraph's run metadata.
package jsonenc

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string, escaped as encoding/json escapes it:
// quote, backslash and the control characters, <, > and & (HTML-safe),
// U+2028 and U+2029, and each byte of invalid UTF-8 as \ufffd.
func String(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe(b) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// htmlSafe reports whether the ASCII byte b stands for itself in an
// HTML-safe JSON string.
func htmlSafe(b byte) bool {
	return b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// Float64 appends f as encoding/json encodes a float64: like %g but with
// ES6's exponent cut-offs (1e-6, 1e21) and no exponent padding. NaN and
// the infinities have no JSON form: an error, as encoding/json's.
func Float64(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// Int appends i.
func Int(dst []byte, i int64) []byte { return strconv.AppendInt(dst, i, 10) }

// Time appends t as its MarshalJSON does (a quoted RFC 3339 time with
// nanoseconds); a year outside 0..9999 is an error, as there.
func Time(dst []byte, t time.Time) ([]byte, error) {
	out, err := t.AppendText(append(dst, '"'))
	if err != nil {
		return dst, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(out, '"'), nil
}

// Value appends v as encoding/json's Marshal encodes it. The values
// json.Unmarshal gives an any (maps, slices, strings, float64s, bools,
// nil) and the integers of attributes are written here, without
// reflection (a step's parameters, parsed from a tool call's arguments, are
// in every record body); anything else goes through json.Marshal. On an
// error dst is returned as it came.
func Value(dst []byte, v any) ([]byte, error) {
	out, err := value(dst, v)
	if err != nil {
		return dst, err
	}
	return out, nil
}

func value(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return String(dst, x), nil
	case bool:
		return Bool(dst, x), nil
	case float64:
		return Float64(dst, x)
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case map[string]any:
		return Map(dst, x, value)
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		var err error
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = value(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Bool appends true or false.
func Bool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }

// Strings appends s as a JSON array of strings; nil is null, as
// encoding/json encodes a nil slice.
func Strings(dst []byte, s []string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, v := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = String(dst, v)
	}
	return append(dst, ']')
}

// Slice appends s as a JSON array, each element by enc; nil is null.
func Slice[V any](dst []byte, s []V, enc func([]byte, *V) ([]byte, error)) ([]byte, error) {
	if s == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	var err error
	for i := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = enc(dst, &s[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// Map appends m as a JSON object with its keys sorted, as encoding/json
// orders a map with string keys, each value by enc; nil is null.
func Map[V any](dst []byte, m map[string]V, enc func([]byte, V) ([]byte, error)) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '{')
	var err error
	// The keys in one slice of the right size: slices.Sorted(maps.Keys(m))
	// grows its slice by doubling, and these maps are encoded by the
	// thousand (the connector's record bodies).
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(String(dst, k), ':')
		if dst, err = enc(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// FloatPtr appends *f, or null for nil.
func FloatPtr(dst []byte, f *float64) ([]byte, error) {
	if f == nil {
		return append(dst, "null"...), nil
	}
	return Float64(dst, *f)
}
