package stepproto_test

import (
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode/stepproto"
)

// TestExtractAnswer: the three answer forms, and what is not code.
func TestExtractAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		data       []map[string]any
		code, src  string
	}{
		{"data part", "see data", []map[string]any{{"code": "def f():\n    return 1"}}, "def f():\n    return 1\n", stepproto.AnswerFromData},
		{"json text", `{"code": "def f():\n    return 2"}`, nil, "def f():\n    return 2\n", stepproto.AnswerFromJSON},
		{"fenced json", "Here:\n```json\n{\"code\": \"x = 1\"}\n```", nil, "x = 1\n", stepproto.AnswerFromJSON},
		{"code tags", "Answer: <code>\ndef f():\n    return 3\n</code> done", nil, "def f():\n    return 3\n", stepproto.AnswerFromCodeTag},
		{"code tags around a fence", "<code>```python\nx = 4\n```</code>", nil, "x = 4\n", stepproto.AnswerFromCodeTag},
		{"python fence first", "Plan.\n```text\nnot code\n```\n```python\ndef f():\n    return 5\n```\nUsage:\n```python\nf()\n```", nil, "def f():\n    return 5\n", stepproto.AnswerFromFence},
		{"any fence", "```\ny = 6\n```", nil, "y = 6\n", stepproto.AnswerFromFence},
		{"crlf", "```py\r\nz = 7\r\n```", nil, "z = 7\n", stepproto.AnswerFromFence},
		{"prose", "I think the answer is 42.", nil, "", ""},
		{"empty json code", `{"code": "  "}`, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, src := stepproto.ExtractAnswer(tc.text, tc.data)
			if code != tc.code || src != tc.src {
				t.Errorf("got %q from %q, want %q from %q", code, src, tc.code, tc.src)
			}
		})
	}
}
