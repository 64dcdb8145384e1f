package doctest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Step is one thing typed into the session: a script, and the output it
// must show.
type Step struct {
	Line   int      // the document line the step starts on
	Script string   // what is typed, each line ending in "\n"
	Want   []string // the expected output lines, trimmed (console blocks only)
}

// Steps splits a runnable block into what the session runs: the whole
// block for sh, bash and shell, one step per "$ " command for console. The
// marker's except lines are left out; one that matches no line is an
// error, as is a console block with output before its first command.
func (b Block) Steps() ([]Step, error) {
	var except []string
	if b.Marker != nil {
		except = b.Marker.Except
	}
	used := make([]bool, len(except))
	keep := func(line string) bool {
		cmd := withoutComment(strings.TrimSpace(strings.TrimPrefix(line, "$ ")))
		for i, e := range except {
			if cmd == strings.TrimSpace(e) {
				used[i] = true
				return false
			}
		}
		return true
	}
	lines := strings.SplitAfter(b.Body, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var steps []Step
	if strings.EqualFold(b.Lang, "console") {
		var err error
		if steps, err = transcript(b.Line, lines, keep); err != nil {
			return nil, err
		}
	} else {
		var script strings.Builder
		for _, l := range lines {
			if keep(l) {
				script.WriteString(l)
			}
		}
		steps = []Step{{Line: b.Line + 1, Script: script.String()}}
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("except %q matches no line of the block", except[i])
		}
	}
	return steps, nil
}

// transcript reads a console block: "$ " commands (continued by a trailing
// backslash) and the output lines after each.
func transcript(fenceLine int, lines []string, keep func(string) bool) ([]Step, error) {
	var (
		steps []Step
		cur   *Step
		cont  bool // the previous command line ended in a backslash
		drop  bool // the current command is left out
	)
	for i, l := range lines {
		trimmed := strings.TrimRight(l, " \t\n")
		switch {
		case cont:
			if !drop {
				cur.Script += l
			}
			cont = strings.HasSuffix(trimmed, `\`)
		case strings.HasPrefix(l, "$ "):
			if !keep(l) {
				drop, cur = true, &Step{}
				cont = strings.HasSuffix(trimmed, `\`)
				continue
			}
			drop = false
			steps = append(steps, Step{Line: fenceLine + 1 + i, Script: strings.TrimPrefix(l, "$ ")})
			cur = &steps[len(steps)-1]
			cont = strings.HasSuffix(trimmed, `\`)
		case cur == nil:
			if strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("console block: line %d is output before the first \"$ \" command", fenceLine+1+i)
			}
		default:
			if w := strings.TrimSpace(l); w != "" && !drop {
				cur.Want = append(cur.Want, w)
			}
		}
	}
	if len(steps) == 0 && cur == nil {
		return nil, errors.New(`console block without a "$ " command`)
	}
	return steps, nil
}

// withoutComment cuts a shell line's trailing comment (" # ...") off.
func withoutComment(line string) string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	return strings.TrimSpace(line)
}

// Match reports whether got shows want: each wanted line matches a line of
// got (both trimmed), in order, other lines between allowed; "..." in a
// wanted line matches any text. The error names the first line not found.
func Match(want []string, got string) error {
	lines := strings.Split(strings.ReplaceAll(got, "\r", ""), "\n")
	pos := 0
	for _, w := range want {
		if w == "..." {
			continue
		}
		re := wantPattern(w)
		found := false
		for ; pos < len(lines); pos++ {
			if re.MatchString(strings.TrimSpace(lines[pos])) {
				found = true
				pos++
				break
			}
		}
		if !found {
			return fmt.Errorf("expected output line %q not found (in order) in the output", w)
		}
	}
	return nil
}

// wantPattern is the regular expression of one expected line.
func wantPattern(w string) *regexp.Regexp {
	parts := strings.Split(w, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}
