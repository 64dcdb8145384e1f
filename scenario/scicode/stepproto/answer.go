package stepproto

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/coordbench/coordbench/internal/textutil"
)

// CodeKey is the data part's key for the code, the first place
// ExtractAnswer looks.
const CodeKey = "code"

// Where ExtractAnswer found the code.
const (
	AnswerFromData    = "data"
	AnswerFromJSON    = "json"
	AnswerFromCodeTag = "code_tag"
	AnswerFromFence   = "fenced"
)

var codeTag = regexp.MustCompile(`(?s)<code>(.*?)</code>`)

// ExtractAnswer finds the code in a solver's answer, in this order:
// a data part {"code": "..."}; the text as JSON {"code": "..."} (bare or in
// a fenced json block); the first <code>...</code>; the first fenced Python
// block (```python, ```py), else the first fenced block of any other kind.
// Structured forms come first because they are unambiguous; among fenced
// blocks the first Python one wins, as in SciCode's own extraction (a later
// block is usually an example of use). The empty string means no code was
// found.
func ExtractAnswer(text string, data []map[string]any) (code, source string) {
	for _, d := range data {
		if c, ok := d[CodeKey].(string); ok && strings.TrimSpace(c) != "" {
			return cleanCode(c), AnswerFromData
		}
	}
	trimmed := strings.TrimSpace(text)
	if c, ok := jsonCode(trimmed); ok {
		return c, AnswerFromJSON
	}
	if m := codeTag.FindAllStringSubmatch(text, -1); m != nil {
		for _, sm := range m {
			inner := strings.TrimSpace(sm[1])
			if inner == "" {
				continue
			}
			// A fence inside the tags is taken off.
			if fs := textutil.Fences(inner); len(fs) > 0 && strings.HasPrefix(inner, "```") {
				inner = fs[0].Body
			}
			return cleanCode(inner), AnswerFromCodeTag
		}
	}
	var other string
	for _, fc := range textutil.Fences(text) {
		lang, body := fc.Lang, fc.Body
		if strings.TrimSpace(body) == "" {
			continue
		}
		switch lang {
		case "python", "py", "python3":
			return cleanCode(body), AnswerFromFence
		case "json":
			if c, ok := jsonCode(strings.TrimSpace(body)); ok {
				return c, AnswerFromJSON
			}
		}
		if other == "" && lang != "json" {
			other = body
		}
	}
	if other != "" {
		return cleanCode(other), AnswerFromFence
	}
	return "", ""
}

// jsonCode reads {"code": "..."}.
func jsonCode(s string) (string, bool) {
	if !strings.HasPrefix(s, "{") {
		return "", false
	}
	var v struct {
		Code *string `json:"code"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil || v.Code == nil || strings.TrimSpace(*v.Code) == "" {
		return "", false
	}
	return cleanCode(*v.Code), true
}

// cleanCode normalises line ends and trims blank lines around the code.
func cleanCode(c string) string {
	c = strings.ReplaceAll(c, "\r\n", "\n")
	return strings.Trim(c, "\n") + "\n"
}
