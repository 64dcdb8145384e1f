package a2acall_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/otelmap"
)

// genAIContentJSON is GenAIContent written with encoding/json, as it was
// before it was written by hand: the reference the fuzz target compares
// with.
func genAIContentJSON(role, text string, data []map[string]any, finishReason string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	msg := message{Role: role, Parts: []part{}, FinishReason: finishReason}
	if text != "" || len(data) == 0 {
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(text)})
	}
	for _, d := range data {
		b, err := json.Marshal(d)
		if err != nil {
			b = []byte(fmt.Sprint(d))
		}
		msg.Parts = append(msg.Parts, part{Type: "text", Content: otelmap.TruncateContent(string(b))})
	}
	b, err := json.Marshal([]message{msg})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// FuzzGenAIContent: the hand-written encoding is byte for byte the one
// encoding/json writes, for any text (invalid UTF-8, control characters,
// HTML, U+2028 included), role, finish reason and data part.
func FuzzGenAIContent(f *testing.F) {
	for _, s := range []string{"", "hi", "a\"b\\c", "<a href='x'>&amp;</a>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"\u2028\u2029", "é漢字🙂", "\xff\xfe bad \xc3", strings.Repeat("é", otelmap.MaxContentChars)} {
		f.Add("user", s, "", "")
		f.Add("assistant", s, "stop", s)
	}
	f.Fuzz(func(t *testing.T, role, text, finish, datum string) {
		var data []map[string]any
		if datum != "" {
			data = []map[string]any{{"k": datum, "n": len(datum)}}
		}
		got := a2acall.GenAIContent(role, text, data, finish)
		if want := genAIContentJSON(role, text, data, finish); got != want {
			t.Fatalf("GenAIContent(%q, %q, %v, %q)\n got %s\nwant %s", role, text, data, finish, got, want)
		}
	})
}

// BenchmarkGenAIContent: a kilobyte of prompt text, as a recorded call
// encodes it.
func BenchmarkGenAIContent(b *testing.B) {
	text := benchText()
	for _, v := range []struct {
		name string
		f    func(role, text string, data []map[string]any, finishReason string) string
	}{{"hand", a2acall.GenAIContent}, {"encoding-json", genAIContentJSON}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			u0, s0 := processCPU()
			n := 0
			for b.Loop() {
				_ = v.f("user", text, nil, "")
				n++
			}
			u1, s1 := processCPU()
			b.ReportMetric(float64(u1-u0+s1-s0)/float64(n), "cpu-ns/op")
		})
	}
}
