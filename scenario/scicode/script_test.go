package scicode_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode"
)

// TestScriptSections: the harness comes before any of the solver's code, the
// test cases after it, and the sections name the lines a failure points at.
// The script holds no target and no way to read one.
func TestScriptSections(t *testing.T) {
	split := testSplit(t)
	p, _ := split.Problem("19")
	cases := [][2]string{{"<test case 1 of 2>", "x = 1\n__coordbench_record__(1, 0, lambda: second())\n"}, {"<test case 2 of 2>", "y = 'it''s \\\\ \"q\"'\n"}}
	script, sections := scicode.BuildScript(p, 1, []string{"def first():\n    return 1"}, "def second():\n    return 2\n", cases)
	lines := strings.Split(script, "\n")
	want := []string{scicode.SectionHarness, scicode.SectionDependencies, "step 19.1's code", scicode.SectionAnswer, scicode.SectionTests}
	var got []string
	for _, s := range sections {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sections %v, want %v", got, want)
	}
	if l := lines[0]; l != "import coordbench_harness as __coordbench_harness__" {
		t.Errorf("the script starts with %q", l)
	}
	if l := lines[sections[3].From-1]; l != "def second():" {
		t.Errorf("the answer starts at line %d: %q", sections[3].From, l)
	}
	last := lines[sections[4].From-1]
	if sections[4].From != sections[4].To || !strings.HasPrefix(last, "__coordbench_harness__.run_cases(globals(), [('<test case 1 of 2>', 'x = 1\\n") {
		t.Errorf("the test cases: %q", last)
	}
	for _, bad := range []string{"target", "h5", "process_hdf5_to_tuple"} {
		if strings.Contains(script, bad) {
			t.Errorf("the script mentions %q:\n%s", bad, script)
		}
	}
}
