package scicode

import (
	"fmt"
	"strings"

	"github.com/coordbench/coordbench/sandbox"
)

// Section names of a SciCode test script.
const (
	SectionHarness      = "the harness"
	SectionDependencies = "the dependencies"
	SectionAnswer       = "the step's code"
	SectionTests        = "the test cases"
)

// BuildScript builds the script the sandbox runs for step index k of p:
// the harness's import (before any of the solver's code), the problem's
// dependencies, the code of the previous steps in order (previous[i] is step
// i's; empty ones are left out), this step's code, then the test cases as
// the judge rewrote them (cases), run by the harness in the script's
// namespace: a later test case may use what an earlier one defined, and all
// share one random stream, as in SciCode's harness. The targets are not in
// it: the test cases record values, the judge compares them. The sections
// say which lines came from where.
func BuildScript(p *Problem, k int, previous []string, code string, cases [][2]string) (string, []sandbox.Section) {
	b := &scriptBuilder{}
	b.add(SectionHarness, "import coordbench_harness as __coordbench_harness__")
	b.add(SectionDependencies, p.Dependencies)
	for i := 0; i < k && i < len(previous); i++ {
		if strings.TrimSpace(previous[i]) != "" {
			b.add(fmt.Sprintf("step %s's code", p.Steps[i].Number), previous[i])
		}
	}
	b.add(SectionAnswer, code)
	var lit strings.Builder
	lit.WriteString("__coordbench_harness__.run_cases(globals(), [")
	for i, c := range cases {
		if i > 0 {
			lit.WriteString(", ")
		}
		fmt.Fprintf(&lit, "(%s, %s)", pyString(c[0]), pyString(c[1]))
	}
	lit.WriteString("])")
	b.add(SectionTests, lit.String())
	return b.sb.String(), b.sections
}

// pyString is s as a Python string literal, on one line.
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x2028 || r == 0x2029 || r == 0x85:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
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

// Sections of a run_code script.
const (
	SectionRunCode       = "your code"
	SectionRunExpression = "the expression"
)

// BuildRunScript builds what run_code runs for step index k: the
// dependencies, the previous steps' code, the solver's code and, when
// given, the expression, whose repr is printed after a marker with the
// run's nonce. No harness, no test case: the run shows the solver its own
// code's behaviour, nothing of the targets.
func BuildRunScript(p *Problem, k int, previous []string, code, expression, nonce string) (string, []sandbox.Section) {
	b := &scriptBuilder{}
	b.add(SectionDependencies, p.Dependencies)
	for i := 0; i < k && i < len(previous); i++ {
		if strings.TrimSpace(previous[i]) != "" {
			b.add(fmt.Sprintf("step %s's code", p.Steps[i].Number), previous[i])
		}
	}
	if strings.TrimSpace(code) != "" {
		b.add(SectionRunCode, code)
	}
	if strings.TrimSpace(expression) != "" {
		b.add(SectionRunExpression, fmt.Sprintf("print('\\n%s', repr(eval(compile(%s, '<expression>', 'eval'))), sep='\\n', flush=True)",
			resultMarker(nonce), pyString(expression)))
	}
	return b.sb.String(), b.sections
}
