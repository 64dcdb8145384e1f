package scicode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/scenario"
)

// SciCode data (docs/scicode.md): problems in SciCode's JSONL, one problem a
// line, and the targets of every test case in an HDF5 file in SciCode's
// layout. The data set is not part of the repository; it is found in a
// directory named by a flag or $COORDBENCH_SCICODE_DIR, with
// ../shared/data/scicode (relative to the working directory or the module
// root) as the fallback that tests and CI use.

// EnvDir names the SciCode data directory (problems_dev.jsonl,
// problems_test.jsonl, test_data.h5 or test_data_dev.h5).
const EnvDir = "COORDBENCH_SCICODE_DIR"

// relDir is where tests, CI and local runs keep the data set, relative to
// the working directory or the module root.
const relDir = "../shared/data/scicode"

// SciCode splits, as the Hugging Face data set names them.
const (
	SplitValidation = "validation"
	SplitTest       = "test"
)

// problemFiles and targetFiles name the files of a split in a SciCode data
// directory, in order of preference. The upstream targets file holds every
// problem of both splits; test_data_dev.h5 holds the validation split's
// targets only, regenerated from the reference code (see the data README).
func problemFiles(split string) []string {
	if split == SplitTest {
		return []string{"problems_test.jsonl"}
	}
	return []string{"problems_dev.jsonl", "problems_validation.jsonl"}
}

func targetFiles(split string) []string {
	if split == SplitTest {
		return []string{"test_data.h5"}
	}
	return []string{"test_data.h5", "test_data_dev.h5"}
}

// maxLine bounds one JSONL line (one problem): the largest
// upstream problem is about 100 KB.
const maxLine = 16 << 20

// DefaultDir finds the SciCode data directory: $COORDBENCH_SCICODE_DIR
// when set (an error when it names no directory), else
// ../shared/data/scicode relative to the working directory, else relative
// to the module root. The error says where it looked.
func DefaultDir() (string, error) {
	dir, err := scenario.LocateData(EnvDir, filepath.FromSlash(relDir), true)
	if err != nil {
		return "", fmt.Errorf("scicode data: %w", err)
	}
	return dir, nil
}

// NormalizeSplit maps the names a request may use to a split:
// "validation" (also "dev", "val", "valid") and "test". The empty name is
// the validation split, the one with reference code.
func NormalizeSplit(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "validation", "dev", "val", "valid":
		return SplitValidation, nil
	case "test":
		return SplitTest, nil
	}
	return "", fmt.Errorf("unknown SciCode split %q: want %q (also dev) or %q", s, SplitValidation, SplitTest)
}

// Problem is one problem of SciCode's JSONL. Fields this version
// does not use (general_solution, ...) are ignored.
type Problem struct {
	ID           string   `json:"problem_id"`
	Name         string   `json:"problem_name"`
	Description  string   `json:"problem_description_main"`
	Background   string   `json:"problem_background_main"`
	IO           string   `json:"problem_io"`
	Dependencies string   `json:"required_dependencies"`
	GeneralTests []string `json:"general_tests"`
	Steps        []Step   `json:"sub_steps"`
}

// Step is one sub-step of a problem.
type Step struct {
	// Number is the step's id, "<problem>.<k>" ("10.3"); it names the
	// step's group in the targets file.
	Number         string   `json:"step_number"`
	Description    string   `json:"step_description_prompt"`
	Background     string   `json:"step_background"`
	FunctionHeader string   `json:"function_header"`
	ReturnLine     string   `json:"return_line"`
	TestCases      []string `json:"test_cases"`
	// Reference is the reference code, present in the validation split
	// only.
	Reference string `json:"ground_truth_code,omitempty"`
}

// Scored reports whether the step has test cases. SciCode's test split has
// three steps without (13.6, 62.1, 76.3): their code is given, not scored.
func (s *Step) Scored() bool { return len(s.TestCases) > 0 }

// Split is one split as loaded: its problems and the targets file.
type Split struct {
	Name     string
	Dir      string
	Problems []*Problem
	// ProblemsPath is the JSONL read; TargetsPath the HDF5 file of the
	// targets.
	ProblemsPath string
	TargetsPath  string
	byID         map[string]*Problem
}

// Problem returns the problem with the given id.
func (s *Split) Problem(id string) (*Problem, bool) {
	p, ok := s.byID[id]
	return p, ok
}

// IDs returns the problem ids in file order.
func (s *Split) IDs() []string {
	ids := make([]string, len(s.Problems))
	for i, p := range s.Problems {
		ids[i] = p.ID
	}
	return ids
}

// Steps counts the split's scored sub-steps.
func (s *Split) Steps() int {
	n := 0
	for _, p := range s.Problems {
		for i := range p.Steps {
			if p.Steps[i].Scored() {
				n++
			}
		}
	}
	return n
}

// LoadSplit reads a split from dir: its problems and the location of
// its targets. Each missing piece is named in the error with what to do
// about it, so "the data is not there" never shows up later as failing
// tests.
func LoadSplit(dir, split string) (*Split, error) {
	name, err := NormalizeSplit(split)
	if err != nil {
		return nil, fmt.Errorf("scicode data: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("scicode data: directory %s: %w (set $%s to the SciCode data directory)", dir, err, EnvDir)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("scicode data: %s is not a directory", dir)
	}
	problemsPath, ok := firstFile(dir, problemFiles(name))
	if !ok {
		return nil, fmt.Errorf("scicode data: the %s split's problems (%s) are not in %s",
			name, strings.Join(problemFiles(name), " or "), dir)
	}
	targetsPath, ok := firstFile(dir, targetFiles(name))
	if !ok {
		hint := ""
		if name == SplitTest {
			hint = "; the test split's targets exist only in SciCode's test_data.h5 (about 1 GB, linked from the SciCode repository's README)"
		}
		return nil, fmt.Errorf("scicode data: the %s split's targets (%s) are not in %s%s",
			name, strings.Join(targetFiles(name), " or "), dir, hint)
	}
	problems, err := ReadProblems(problemsPath)
	if err != nil {
		return nil, err
	}
	s := &Split{Name: name, Dir: dir, Problems: problems, ProblemsPath: problemsPath,
		TargetsPath: targetsPath, byID: make(map[string]*Problem, len(problems))}
	for _, p := range problems {
		s.byID[p.ID] = p
	}
	return s, nil
}

func firstFile(dir string, names []string) (string, bool) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// stepNumber is "<problem id>.<k>".
var stepNumber = regexp.MustCompile(`^[A-Za-z0-9_-]+\.[0-9]+$`)

// ReadProblems reads and checks a JSONL file: unique problem ids,
// steps numbered "<id>.<k>" and unique, a function header per step.
func ReadProblems(path string) ([]*Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scicode data: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	var problems []*Problem
	seen := map[string]bool{}
	var errs []error
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		var p Problem
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", line, err))
			continue
		}
		if err := p.validate(); err != nil {
			errs = append(errs, fmt.Errorf("line %d (problem %q): %w", line, p.ID, err))
			continue
		}
		if seen[p.ID] {
			errs = append(errs, fmt.Errorf("line %d: problem %q appears twice", line, p.ID))
			continue
		}
		seen[p.ID] = true
		problems = append(problems, &p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scicode data: read %s: %w", path, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scicode data: %s: %w", path, err)
	}
	if len(problems) == 0 {
		return nil, fmt.Errorf("scicode data: %s holds no problems", path)
	}
	return problems, nil
}

func (p *Problem) validate() error {
	if strings.TrimSpace(p.ID) == "" {
		return errors.New("no problem_id")
	}
	if len(p.Steps) == 0 {
		return errors.New("no sub_steps")
	}
	seen := map[string]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		if !stepNumber.MatchString(s.Number) || !strings.HasPrefix(s.Number, p.ID+".") {
			return fmt.Errorf("sub-step %d: step_number %q is not %q followed by a number", i+1, s.Number, p.ID+".")
		}
		if seen[s.Number] {
			return fmt.Errorf("sub-step %s appears twice", s.Number)
		}
		seen[s.Number] = true
		if strings.TrimSpace(s.FunctionHeader) == "" {
			return fmt.Errorf("sub-step %s has no function_header", s.Number)
		}
	}
	return nil
}

// funcName finds the function or class a header defines, as
// SciCode's harness does.
var funcName = regexp.MustCompile(`\b(?:def|class)\s+(\w+)\s*[(:]`)

// FunctionName is the name the step's header defines ("" when it defines
// none).
func (s *Step) FunctionName() string {
	if m := funcName.FindStringSubmatch(s.FunctionHeader); m != nil {
		return m[1]
	}
	return ""
}

// classHeader is a step header that defines a class (30.3's "class
// MultiplyWF:").
var classHeader = regexp.MustCompile(`(?m)^class\s+([A-Za-z_]\w*)`)

// ClassNames are the classes the problem's steps define: an instance of
// one is the solver's object, never a value the judge can compare.
func (p *Problem) ClassNames() []string {
	var out []string
	for i := range p.Steps {
		for _, m := range classHeader.FindAllStringSubmatch(p.Steps[i].FunctionHeader, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	return out
}
