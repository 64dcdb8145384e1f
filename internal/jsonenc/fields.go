package jsonenc

import (
	"unicode"
	"unicode/utf8"
)

// StringFields parses s as json.Unmarshal parses it into a struct whose
// fields are strings tagged names, without reflection: vals[k] (len(vals)
// == len(names)) is the value of the key matching names[k], a repeated
// key's last string ("" when absent, a null leaving it as it was), or ok
// false where Unmarshal fails (bad syntax, nesting past 10,000 levels, a
// matched key's value neither a string nor null, a top-level value
// neither an object nor null). A key matches a name as encoding/json
// matches a field: exactly, else by its case folding. The other keys'
// values are checked, not decoded. The names must differ after folding.
//
// Trace assembly reads a LangChain run's metadata, a JSON object on every
// LangGraph span, with it: encoding/json took 2 to 3 µs a span, most of it
// its validity scan.
func StringFields(s string, names, vals []string) (ok bool) {
	clear(vals)
	p := parser{s: s}
	p.space()
	if p.literal("null") {
		p.space()
		return p.i == len(p.s)
	}
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return false
	}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.space()
		return p.i == len(p.s)
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return false
		}
		k, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		if f := fieldOf(k, names); f >= 0 {
			switch {
			case p.i < len(p.s) && p.s[p.i] == '"':
				if vals[f], ok = p.str(); !ok {
					return false
				}
			case p.literal("null"):
			default:
				return false // Unmarshal's type error, whatever follows
			}
		} else if !p.skip(1) {
			return false
		}
		p.space()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			p.space()
			return p.i == len(p.s)
		default:
			return false
		}
	}
}

// fieldOf is the index of the name key matches as encoding/json matches a
// struct field's name, -1 for none.
func fieldOf(key string, names []string) int {
	for k, n := range names {
		if key == n {
			return k
		}
	}
	for k, n := range names {
		if foldedEqual(key, n) {
			return k
		}
	}
	return -1
}

// foldedEqual reports whether a and b fold to the same name as
// encoding/json folds field names (its foldName): ASCII letters upper
// case, any other rune unicode.ToUpper(unicode.ToLower(r)), invalid UTF-8
// as U+FFFD.
func foldedEqual(a, b string) bool {
	// ASCII a byte at a time, while both are: most keys are ASCII and
	// share a prefix with a name (langgraph_step, langgraph_node).
	i := 0
	for ; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca|cb >= utf8.RuneSelf {
			break
		}
		if ca != cb && upperASCII(ca) != upperASCII(cb) {
			return false
		}
	}
	a, b = a[i:], b[i:]
	for a != "" && b != "" {
		ra, na := foldedRune(a)
		rb, nb := foldedRune(b)
		if ra != rb {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		c -= 'a' - 'A'
	}
	return c
}

func foldedRune(s string) (rune, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return rune(upperASCII(c)), 1
	}
	r, n := utf8.DecodeRuneInString(s)
	return unicode.ToUpper(unicode.ToLower(r)), n
}

// skip checks the value at p.i (no leading space) as encoding/json's
// scanner checks what it does not decode: the syntax and the nesting
// alone (a number out of float64's range is no error here). depth counts
// the objects and arrays it is inside, as value counts them.
func (p *parser) skip(depth int) bool {
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		if depth++; depth > maxDepth {
			return false
		}
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return true
		}
		for {
			if p.i >= len(p.s) || p.s[p.i] != '"' || !p.skipStr() {
				return false
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
			if !p.skip(depth) {
				return false
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case '}':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		if depth++; depth > maxDepth {
			return false
		}
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return true
		}
		for {
			if !p.skip(depth) {
				return false
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case ']':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return p.skipStr()
	case c == '-' || ('0' <= c && c <= '9'):
		return p.skipNumber()
	default:
		return p.literal("true") || p.literal("false") || p.literal("null")
	}
}

// skipNumber checks JSON's number grammar at p.i.
func (p *parser) skipNumber() bool {
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && '1' <= p.s[p.i] && p.s[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

// skipStr checks the string at p.i (its opening quote): its escapes, and
// no control character; any other byte, invalid UTF-8 included, stands.
func (p *parser) skipStr() bool {
	p.i++ // the quote
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return true
		case c < ' ':
			return false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return false
			}
			switch p.s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if _, ok := hex4(p.s, p.i+2); !ok {
					return false
				}
				p.i += 6
			default:
				return false
			}
		default:
			p.i++
		}
	}
	return false
}
