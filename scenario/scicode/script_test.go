package scicode_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode"
)

// TestScriptSections: the script is SciCode's, and its sections
// name the lines a failure points at.
func TestScriptSections(t *testing.T) {
	split := testSplit(t)
	p, _ := split.Problem("19")
	script, sections := scicode.BuildScript(p, 1, []string{"def first():\n    return 1"}, "def second():\n    return 2\n")
	lines := strings.Split(script, "\n")
	want := []string{scicode.SectionDependencies, "step 19.1's code", scicode.SectionAnswer, scicode.SectionTargets, "test case 1 of 4", "test case 2 of 4", "test case 3 of 4", "test case 4 of 4"}
	var got []string
	for _, s := range sections {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
	if l := lines[sections[2].From-1]; l != "def second():" {
		t.Errorf("the answer starts at line %d: %q", sections[2].From, l)
	}
	if l := lines[sections[4].From-1]; l != "target = targets[0]" {
		t.Errorf("test case 1 starts with %q", l)
	}
	if !strings.Contains(script, "targets = process_hdf5_to_tuple('19.2', 4, 3)") {
		t.Errorf("script:\n%s", script)
	}
}
