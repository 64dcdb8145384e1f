package scicode

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/coordbench/coordbench/sandbox"
)

// Section names of a SciCode test script.
const (
	SectionDependencies = "the dependencies"
	SectionAnswer       = "the step's code"
	SectionTargets      = "reading the targets"
)

// targetsFD is where the script finds the targets file: the first of the
// sandbox's Request.Files.
const targetsFD = 3

// BuildScript builds the test script of step index k of p as
// SciCode's harness does: the problem's dependencies, the code of the
// previous steps in order (previous[i] is step i's; empty ones are left
// out), this step's code, the targets of the step, then for each test case
// `target = targets[i]` followed by the test case's text. Everything runs
// in one namespace, so a later test case may use what an earlier one
// defined, and all share one random stream. The targets are read from file
// descriptor 3 (see Runner). The sections say which lines came from where.
func BuildScript(p *Problem, k int, previous []string, code string) (string, []sandbox.Section) {
	b := &scriptBuilder{}
	step := &p.Steps[k]
	b.add(SectionDependencies, p.Dependencies)
	for i := 0; i < k && i < len(previous); i++ {
		if strings.TrimSpace(previous[i]) != "" {
			b.add(fmt.Sprintf("step %s's code", p.Steps[i].Number), previous[i])
		}
	}
	b.add(SectionAnswer, code)
	b.add(SectionTargets, fmt.Sprintf("from scicode.parse.parse import process_hdf5_to_tuple\n\ntargets = process_hdf5_to_tuple('%s', %d, %d)",
		step.Number, len(step.TestCases), targetsFD))
	for i, tc := range step.TestCases {
		b.add(fmt.Sprintf("test case %d of %d", i+1, len(step.TestCases)),
			fmt.Sprintf("target = targets[%d]\n\n%s", i, tc))
	}
	return b.sb.String(), b.sections
}

// scriptBuilder appends blocks of code separated by a blank line and
// records each block's lines.
type scriptBuilder struct {
	sb       strings.Builder
	line     int // lines written so far
	sections []sandbox.Section
}

func (b *scriptBuilder) add(name, text string) {
	text = strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if b.line > 0 {
		b.sb.WriteString("\n")
		b.line++
	}
	n := strings.Count(text, "\n") + 1
	b.sections = append(b.sections, sandbox.Section{Name: name, From: b.line + 1, To: b.line + n})
	b.sb.WriteString(text)
	b.sb.WriteString("\n")
	b.line += n
}

// helperFS holds the Python package that SciCode's test scripts import
// (scicode.compare.cmp, scicode.parse.parse), put on the sandbox's
// PYTHONPATH.
//
//go:embed py/scicode/__init__.py py/scicode/compare/__init__.py py/scicode/compare/cmp.py py/scicode/parse/__init__.py py/scicode/parse/parse.py
var helperFS embed.FS

// helpers is the tree to put on PYTHONPATH: the scicode package.
func helpers() fs.FS {
	sub, err := fs.Sub(helperFS, "py")
	if err != nil {
		panic(err) // "py" is embedded above
	}
	return sub
}
