package sandbox

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// tracebackFrame matches a frame line of a Python traceback.
var tracebackFrame = regexp.MustCompile(`^\s*File "([^"]+)", line (\d+)`)

// parseTraceback returns the exception line of the last traceback in out
// (or of a syntax error) and the lines of the script file named in it,
// outermost first. A last traceback cut short before its exception line
// (processes that share the output and are killed while they write, as in
// a fork bomb) gives way to the one before it.
func parseTraceback(out, scriptFile string) (exc string, lines []int) {
	const marker = "Traceback (most recent call last):"
	last := strings.LastIndex(out, marker)
	if last < 0 {
		return parseOneTraceback(out, scriptFile)
	}
	exc, lines = parseOneTraceback(out[last:], scriptFile)
	for end := last; exc == ""; {
		i := strings.LastIndex(out[:end], marker)
		if i < 0 {
			break // none is whole: the last one's frames
		}
		if e, l := parseOneTraceback(out[i:end], scriptFile); e != "" {
			return e, l
		}
		end = i
	}
	return exc, lines
}

// parseOneTraceback is parseTraceback for text that holds at most one
// traceback, at its start.
func parseOneTraceback(text, scriptFile string) (exc string, lines []int) {
	all := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for _, l := range all {
		if m := tracebackFrame.FindStringSubmatch(l); m != nil && filepath.Base(m[1]) == scriptFile {
			if n, err := strconv.Atoi(m[2]); err == nil {
				lines = append(lines, n)
			}
		}
	}
	// The exception is the last line that starts in column 0 and looks
	// like "Name: message" or "Name"; without a traceback, only a name
	// that reads as an exception counts.
	traced := len(lines) > 0 || strings.HasPrefix(text, "Traceback")
	for i := len(all) - 1; i >= 0; i-- {
		l := all[i]
		if l == "" || l[0] == ' ' || l[0] == '\t' || l[0] == '^' {
			continue
		}
		if (traced && pythonRaised.MatchString(l)) || pythonException.MatchString(l) {
			return clipText(strings.TrimSpace(l), 300), lines
		}
		break
	}
	return "", lines
}

var (
	pythonRaised    = regexp.MustCompile(`^[A-Za-z_][\w.]*(: .*|:)?$`)
	pythonException = regexp.MustCompile(`^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Iteration)\b`)
)

func sectionOf(sections []Section, line int) string {
	for _, s := range sections {
		if line >= s.From && line <= s.To {
			return s.Name
		}
	}
	return ""
}
