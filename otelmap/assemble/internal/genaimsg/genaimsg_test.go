package genaimsg

import (
	"encoding/json"
	"strings"
	"testing"
)

// refMessagesText is Text written with encoding/json, the
// reference the hand-written reader must agree with.
func refMessagesText(s string) string {
	type part struct {
		Type    *string `json:"type"`
		Content any     `json:"content"`
	}
	type message struct {
		Parts   []json.RawMessage `json:"parts"`
		Content any               `json:"content"`
	}
	var raws []json.RawMessage
	t := strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(t, "["):
		if json.Unmarshal([]byte(t), &raws) != nil {
			return s
		}
	case strings.HasPrefix(t, "{"):
		raws = []json.RawMessage{json.RawMessage(t)}
		if !json.Valid(raws[0]) {
			return s
		}
	default:
		return s
	}
	var texts []string
	for _, raw := range raws {
		var m message
		if json.Unmarshal(raw, &m) != nil {
			continue // not an object: skipped
		}
		if c, ok := m.Content.(string); ok && c != "" {
			texts = append(texts, c)
		}
		for _, pr := range m.Parts {
			var p part
			if json.Unmarshal(pr, &p) != nil {
				continue
			}
			c, ok := p.Content.(string)
			if ok && c != "" && (p.Type == nil || *p.Type == "text" || *p.Type == "") {
				texts = append(texts, c)
			}
		}
	}
	if len(texts) == 0 {
		return s
	}
	return strings.Join(texts, "\n")
}

// TestText: the GenAI message reader agrees with
// encoding/json on well-formed, odd and broken input.
func TestText(t *testing.T) {
	for _, in := range []string{
		`[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
		` [ {"role":"user","parts":[{"type":"text","content":"a"},{"type":"tool_call","id":"1","arguments":{"q":[1,2.5e3,true,null]}},{"content":"b","type":"text"}]},{"role":"assistant","content":"c"} ] `,
		`[{"role":"user","parts":[{"type":"text","content":"esc \"q\" \\ \/ \n \u00e9 \ud83d\ude00 \ud800"}]}]`,
		`{"role":"user","parts":[{"type":"text","content":"single object"}]}`,
		`[{"role":"user","parts":[{"type":"image","content":"x"}]}]`,
		`[{"role":"user","parts":[]}]`,
		`[]`,
		`[1, "two", {"content": 3}]`,
		`[{"role":"user","parts":[{"type":"text","content":"x"}]}] trailing`,
		`[{"role":"user","parts":[{"type":"text","content":"unterminated}]}]`,
		`[{"role":"user",}]`,
		`plain text`,
		``,
		`{"content":"old style"}`,
		`[{"parts":[{"type":"text","content":"ctl` + "\x01" + `"}]}]`,
		`[{"parts":[{"type":"text","content":""}]},{"content":"after empty"}]`,
		`[{"parts":[{"type":"text","content":"n"}],"n":-1.5e-3,"m":01}]`,
		`{"content":"\0"}`, `{"content":"\u12"}`, `{"content":"\u12x4"}`, `{"content":"x\`,
	} {
		if got, want := Text(in), refMessagesText(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzText: the reader never panics, and never takes text
// out of something that is not JSON.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","parts":[{"type":"text","content":"hello"}]}]`,
		`{"content":"x\u00e9"}`, `[1,{"parts":[{"content":"a"}]}]`, `[{"n":-0.5E+2}]`, `[`, `"x"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if !json.Valid([]byte(s)) && got != s {
			t.Fatalf("invalid JSON %q read as messages: %q", s, got)
		}
	})
}

// BenchmarkText reads the messages an agent span carries in the assembly
// benchmark, with Text and with encoding/json (refMessagesText).
//
//	go test ./otelmap/assemble/internal/genaimsg -run '^$' -bench Text
func BenchmarkText(b *testing.B) {
	msgs := []string{
		`[{"role":"user","parts":[{"type":"text","content":"Review the paper and decide."}]}]`,
		`[{"role":"assistant","parts":[{"type":"text","content":"accept"}]}]`,
	}
	for _, bc := range []struct {
		name string
		text func(string) string
	}{
		{"reader", Text},
		{"encoding/json", refMessagesText},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range msgs {
					bc.text(m)
				}
			}
			b.ReportMetric(float64(len(msgs))*float64(b.N)/b.Elapsed().Seconds(), "messages/s")
		})
	}
}
