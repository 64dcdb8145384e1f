package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// otlpDoc is the part of an OTLP/JSON export request this test edits.
type otlpDoc struct {
	ResourceSpans []struct {
		Resource   json.RawMessage `json:"resource"`
		ScopeSpans []struct {
			Scope json.RawMessage              `json:"scope"`
			Spans []map[string]json.RawMessage `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

// TestAssessTraceCutOffFromItsRoot: a trace at rest whose spans between a
// span and the root were lost (a collector that died, an export dropped)
// is assessed from its file with partial evidence naming the cut, as the
// Collector connector does; the same trace whole is complete.
func TestAssessTraceCutOffFromItsRoot(t *testing.T) {
	raw, err := os.ReadFile("../../otelmap/testdata/sdk_export.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var docs []otlpDoc
	parents := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var d otlpDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
		for _, rs := range d.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if p, ok := sp["parentSpanId"]; ok {
						parents[string(p)] = true
					}
				}
			}
		}
	}
	// Drop the first span that has a parent and is a parent itself: its
	// children are cut off from the root, which stays.
	dropped := ""
drop:
	for _, d := range docs {
		for _, rs := range d.ResourceSpans {
			for i := range rs.ScopeSpans {
				spans := rs.ScopeSpans[i].Spans
				for k, sp := range spans {
					if _, hasParent := sp["parentSpanId"]; hasParent && parents[string(sp["spanId"])] {
						dropped = string(sp["name"])
						rs.ScopeSpans[i].Spans = append(spans[:k:k], spans[k+1:]...)
						break drop
					}
				}
			}
		}
	}
	if dropped == "" {
		t.Fatal("the fixture has no span in the middle of its trace")
	}
	var cut strings.Builder
	for _, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		cut.Write(append(b, '\n'))
	}
	cutPath := filepath.Join(t.TempDir(), "cut.otlp.jsonl")
	if err := os.WriteFile(cutPath, []byte(cut.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	evidence := func(path string) (level string, reasons []string) {
		t.Helper()
		code, stdout, stderr := assessCmd(t, "--otlp", path)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", path, code, stderr)
		}
		var res struct {
			Tasks []struct {
				Evaluations struct {
					Graph struct {
						Evidence struct {
							Level   string   `json:"level"`
							Reasons []string `json:"reasons"`
						} `json:"evidence"`
					} `json:"graph"`
				} `json:"evaluations"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Tasks) != 1 {
			t.Fatalf("%s: want one task: %v\n%s", path, err, stdout)
		}
		ev := res.Tasks[0].Evaluations.Graph.Evidence
		return ev.Level, ev.Reasons
	}
	if level, reasons := evidence("../../otelmap/testdata/sdk_export.otlp.jsonl"); level != "complete" {
		t.Errorf("whole trace: evidence %s %q, want complete", level, reasons)
	}
	level, reasons := evidence(cutPath)
	if level == "complete" || !strings.Contains(strings.Join(reasons, "\n"), "cut off from the trace's root") {
		t.Errorf("trace without its %s span: evidence %s %q, want it told cut off from its root", dropped, level, reasons)
	}
}
