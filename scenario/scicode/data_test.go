package scicode_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode"
)

// TestDataMissing: a data directory without the data says what is
// missing, and where.
func TestDataMissing(t *testing.T) {
	empty := t.TempDir()
	if _, err := scicode.LoadSplit(empty, "validation"); err == nil || !strings.Contains(err.Error(), "problems_dev.jsonl") || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty directory: %v", err)
	}
	src := testDir(t)
	b, err := os.ReadFile(filepath.Join(src, "problems_dev.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "problems_dev.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scicode.LoadSplit(empty, "dev"); err == nil || !strings.Contains(err.Error(), "test_data_dev.h5") {
		t.Errorf("no targets: %v", err)
	}
	if _, err := scicode.LoadSplit(filepath.Join(empty, "nope"), "dev"); err == nil || !strings.Contains(err.Error(), scicode.EnvDir) {
		t.Errorf("no directory: %v", err)
	}
	if _, err := scicode.New(t.Context(), scicode.Options{DataDir: filepath.Join(empty, "nope")}); err == nil || !strings.Contains(err.Error(), "no split can be loaded") {
		t.Errorf("scenario without data: %v", err)
	}
	t.Setenv(scicode.EnvDir, filepath.Join(empty, "nope"))
	if _, err := scicode.DefaultDir(); err == nil || !strings.Contains(err.Error(), scicode.EnvDir) {
		t.Errorf("$%s naming nothing: %v", scicode.EnvDir, err)
	}
	bad := filepath.Join(empty, "problems_test.jsonl")
	if err := os.WriteFile(bad, []byte(`{"problem_id": "1", "sub_steps": [{"step_number": "2.1", "function_header": "def f():"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scicode.ReadProblems(bad); err == nil || !strings.Contains(err.Error(), `step_number "2.1"`) {
		t.Errorf("bad step number: %v", err)
	}
}

// TestSplitLoads: the validation split as the data README describes
// it: 15 problems, 50 sub-steps, reference code for each.
func TestSplitLoads(t *testing.T) {
	split := testSplit(t)
	if len(split.Problems) != 15 || split.Steps() != 50 || filepath.Base(split.TargetsPath) != "test_data_dev.h5" {
		t.Errorf("%d problems, %d steps, targets %s", len(split.Problems), split.Steps(), split.TargetsPath)
	}
	for _, p := range split.Problems {
		for _, st := range p.Steps {
			if st.Reference == "" || st.FunctionName() == "" || !st.Scored() {
				t.Errorf("step %s: reference %d bytes, function %q, %d tests", st.Number, len(st.Reference), st.FunctionName(), len(st.TestCases))
			}
		}
	}
	test, err := scicode.ReadProblems(filepath.Join(testDir(t), "problems_test.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	total, scored := 0, 0
	for _, p := range test {
		for _, st := range p.Steps {
			total++
			if st.Scored() {
				scored++
			}
		}
	}
	if len(test) != 65 || scored != 288 || total != 291 {
		t.Errorf("test split: %d problems, %d of %d steps scored; want 65, 288 of 291", len(test), scored, total)
	}
}
