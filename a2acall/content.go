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

// dataParts wraps one data map as the list GenAIContent takes.
func dataParts(d map[string]any) []map[string]any {
	if d == nil {
		return nil
	}
	return []map[string]any{d}
}

// GenAIContent renders a message as the GenAI conventions' JSON message
// list (gen_ai.input.messages / gen_ai.output.messages): the text as a text
// part and each data part JSON-encoded as one more, each bounded by
// otelmap.TruncateContent so the attribute stays valid JSON. The bytes are
// those encoding/json writes for the same list.
func GenAIContent(role, text string, data []map[string]any, finishReason string) string {
	parts := make([]string, 0, 1+len(data))
	if text != "" || len(data) == 0 {
		parts = append(parts, otelmap.TruncateContent(text))
	}
	for _, d := range data {
		b, err := json.Marshal(d)
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
