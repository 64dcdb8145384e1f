package jsonenc

import (
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseObject parses s as json.Unmarshal parses it into a map[string]any,
// without reflection: the same map (objects as map[string]any, arrays as
// []any, numbers as float64, a repeated key's last value), or ok false
// where Unmarshal fails (bad syntax, a number out of float64's range,
// nesting past encoding/json's 10,000 levels, a value that is not an
// object). A top-level null gives nil, true, as Unmarshal leaves a nil map.
// Trace assembly parses every tool call's arguments with it.
func ParseObject(s string) (m map[string]any, ok bool) {
	p := parser{s: s}
	p.space()
	if p.literal("null") {
		p.space()
		return nil, p.i == len(p.s)
	}
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, false
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.s) {
		return nil, false
	}
	return v.(map[string]any), true
}

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// value parses the value at p.i (no leading space); depth counts the
// objects and arrays it is inside.
func (p *parser) value(depth int) (any, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		if depth++; depth > maxDepth {
			return nil, false
		}
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, false
			}
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth)
			if !ok {
				return nil, false
			}
			m[k] = v
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case '}':
				p.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return nil, false
		}
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return a, true
		}
		for {
			v, ok := p.value(depth)
			if !ok {
				return nil, false
			}
			a = append(a, v)
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case ']':
				p.i++
				return a, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return p.str()
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

// number parses JSON's number grammar and converts it as encoding/json
// does into an any: strconv.ParseFloat, out of range an error.
func (p *parser) number() (any, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && '1' <= p.s[p.i] && p.s[p.i] <= '9':
		p.digits()
	default:
		return nil, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// str parses the string at p.i (its opening quote) as encoding/json
// unquotes: escapes decoded, a surrogate pair joined, a lone surrogate and
// each byte of invalid UTF-8 as U+FFFD; a control character is an error.
func (p *parser) str() (string, bool) {
	p.i++ // the quote
	start := p.i
	// Most strings need no rewriting: take them as they stand.
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			return s, true
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			break
		}
		p.i++
	}
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), true
		case c < ' ':
			return "", false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(p.s, p.i)
				if !ok {
					return "", false
				}
				p.i += 4
				if utf16.IsSurrogate(r) {
					// A second \u escape completing the pair is taken with
					// it; anything else stays for the loop to read.
					if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
						if r2, ok := hex4(p.s, p.i+2); ok {
							if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
								p.i += 6
								b = utf8.AppendRune(b, d)
								continue
							}
						}
					}
					r = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += size
			b = utf8.AppendRune(b, r) // invalid UTF-8 is RuneError, one byte at a time
		}
	}
	return "", false
}

// hex4 reads four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if len(s)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
