package textutil

import (
	"reflect"
	"strings"
	"testing"
)

func TestFences(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []Fence
	}{
		{"none", "no code here", nil},
		{"python", "Here:\n```python\ndef f():\n    return 1\n```\nDone.", []Fence{{"python", "def f():\n    return 1\n"}}},
		{"no language", "```\nx = 1\n```", []Fence{{"", "x = 1\n"}}},
		{"info string dropped", "```Python title=\"a.py\"\nx = 1\n```", []Fence{{"python", "x = 1\n"}}},
		{"inline json", "The team agrees. ```json {\"decision\": \"accept\"}```", []Fence{{"json", `{"decision": "accept"}`}}},
		{"inline without language", "```{\"a\": 1}```", []Fence{{"", `{"a": 1}`}}},
		{"two blocks", "```json\n{}\n```\ntext\n```py\nx\n```", []Fence{{"json", "{}\n"}, {"py", "x\n"}}},
		{"unclosed", "```python\nx = 1\n", nil},
		{"crlf", "```json\r\n{\"a\": 1}\r\n```", []Fence{{"json", "{\"a\": 1}\r\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fences(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Fences(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
}

func TestFencesBounded(t *testing.T) {
	if got := Fences(strings.Repeat("``````", 10000)); len(got) != maxFences {
		t.Errorf("%d blocks, want the bound %d", len(got), maxFences)
	}
}

func TestUnfence(t *testing.T) {
	if body, ok := Unfence("  ```json\n{\"a\": 1}\n```\n"); !ok || body != `{"a": 1}` {
		t.Errorf("Unfence = %q, %v", body, ok)
	}
	for _, in := range []string{`{"a": 1}`, "text ```json\n{}\n```", "```a```\n```b```"} {
		if body, ok := Unfence(in); ok {
			t.Errorf("Unfence(%q) = %q, true; want false", in, body)
		}
	}
}

func FuzzFences(f *testing.F) {
	for _, s := range []string{"```python\nx\n```", "```json {}```", "``` ```", "````"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fc := range Fences(s) {
			if !strings.Contains(s, fc.Body) {
				t.Fatalf("body %q is not part of the input", fc.Body)
			}
		}
	})
}
