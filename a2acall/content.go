package a2acall

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/coordbench/coordbench/otelmap"
)

// This file: the message content of the invoke_agent span, as the GenAI
// conventions' JSON message list, written by hand: it is encoded for every
// recorded call, and encoding/json's reflection and copies cost a call
// more than the rest of its span.

// dataParts lists a request's data parts as GenAIContent takes them.
func dataParts(d map[string]any, extra []map[string]any) []map[string]any {
	var out []map[string]any
	for _, m := range append([]map[string]any{d}, extra...) {
		if m != nil {
			out = append(out, m)
		}
	}
	return out
}

// redact is d with the value of a top-level "token" key replaced by
// redactedValue: an MCP endpoint's per-task token (docs/mcp.md) is a
// credential, and the content attributes leave for every exporter.
func redact(d map[string]any) map[string]any {
	if _, ok := d[secretKey]; !ok {
		return d
	}
	c := make(map[string]any, len(d))
	for k, v := range d {
		c[k] = v
	}
	c[secretKey] = redactedValue
	return c
}

// secretKey is the data part key whose value content capture never
// records.
const (
	secretKey     = "token"
	redactedValue = "[redacted]"
)

// GenAIContent renders a message as the GenAI conventions' JSON message
// list (gen_ai.input.messages / gen_ai.output.messages): the text as a text
// part and each data part JSON-encoded as one more, each bounded by
// otelmap.TruncateContent so the attribute stays valid JSON (a data part's
// "token" is recorded as "[redacted]"). The bytes are those encoding/json
// writes for the same list.
func GenAIContent(role, text string, data []map[string]any, finishReason string) string {
	parts := make([]string, 0, 1+len(data))
	if text != "" || len(data) == 0 {
		parts = append(parts, otelmap.TruncateContent(text))
	}
	for _, d := range data {
		b, err := json.Marshal(redact(d))
		if err != nil {
			b = []byte(fmt.Sprint(d))
		}
		parts = append(parts, otelmap.TruncateContent(string(b)))
	}
	size := len(role) + len(finishReason) + 48
	for _, p := range parts {
		size += len(p) + len(p)/8 + 32
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(`[{"role":`)
	writeJSONString(&b, role)
	b.WriteString(`,"parts":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"text","content":`)
		writeJSONString(&b, p)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	if finishReason != "" {
		b.WriteString(`,"finish_reason":`)
		writeJSONString(&b, finishReason)
	}
	b.WriteString("}]")
	return b.String()
}

// jsonSafe tells the ASCII bytes a JSON string holds as they are (a
// lookup table, read only).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// writeJSONString writes s as a JSON string exactly as encoding/json does
// (HTML-safe): <, > and & escaped, control characters as \n, \t... or
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '\\', '"':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b.WriteString(s[start:i])
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
