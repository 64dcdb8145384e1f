package assemble_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOTelGenAIManualClientKind reads otel-genai-manual's client-kind
// variant: the same hand-traced team whose invoke_agent spans are CLIENT
// (the conventions' "Invoke agent client span") although every agent runs in
// the one process, its callee's spans right under it. The kind must not
// change the team: the same agents and calls as the program's truth, none of
// them a call whose callee is missing.
func TestOTelGenAIManualClientKind(t *testing.T) {
	const program = "otel-genai-manual"
	truth := loadLiveTruth(t, filepath.Join(liveDir, program))
	for _, run := range []string{"run-1", "run-2", "run-3"} {
		t.Run(run, func(t *testing.T) {
			problems, _, summary := assessLiveRun(t, liveCapture(program, filepath.Join("captures-client-kind", run+".otlp.json")), truth)
			if len(problems) > 0 {
				t.Errorf("%s\n  coordbench read: %s", strings.Join(problems, "\n  "), summary)
			}
		})
	}
}
