package textutil

import "strings"

// Fence is one Markdown fenced code block: "```lang info\nbody```", or the
// inline form "```json {...}```" that language models also write.
type Fence struct {
	// Lang is the word right after the opening backticks, lower-cased
	// ("python", "json"; "" when there is none).
	Lang string
	// Body is the block's text as written: everything between the opening
	// line and the closing fence (code keeps its indentation and final
	// newline); an inline block's body is trimmed of spaces.
	Body string
}

// maxFences bounds how many blocks Fences reads, so a reply made of
// backticks costs linear time.
const maxFences = 64

// Fences returns the fenced code blocks of text in order: every answer
// format that carries code or JSON in a Markdown fence (participants'
// replies, a pasted request, the judge's answer) is read by this one
// function. A block runs from an opening "```" to the next "```"; an
// opening fence without a closing one is not a block. On the opening line,
// the language word is kept and the rest (an info string) dropped; when no
// newline comes before the closing fence the block is inline and its body
// is what follows the language word.
func Fences(text string) []Fence {
	var out []Fence
	for len(out) < maxFences {
		open := strings.Index(text, "```")
		if open < 0 {
			break
		}
		rest := text[open+3:]
		end := strings.Index(rest, "```")
		if end < 0 {
			break
		}
		inner := rest[:end]
		text = rest[end+3:]
		lang, body := fenceLang(inner), ""
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 {
			body = inner[nl+1:]
		} else {
			body = strings.TrimSpace(strings.TrimLeft(inner, " \t")[len(lang):])
		}
		out = append(out, Fence{Lang: strings.ToLower(lang), Body: body})
	}
	return out
}

// fenceLang is the language word at the start of a block's opening line.
func fenceLang(inner string) string {
	s := strings.TrimLeft(inner, " \t")
	n := 0
	for n < len(s) {
		c := s[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' {
			n++
			continue
		}
		break
	}
	return s[:n]
}

// Unfence returns the body of text, trimmed of white space, when the whole
// of it (white space aside) is one fenced block, and ok false otherwise.
func Unfence(text string) (body string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return "", false
	}
	fs := Fences(t)
	if len(fs) != 1 {
		return "", false
	}
	return strings.TrimSpace(fs[0].Body), true
}
