package doctest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Block is one fenced code block of a Markdown document.
type Block struct {
	File    string  // the document's name, as given to Parse
	Line    int     // the line of the opening fence, from 1
	Lang    string  // the language word of the opening fence, "" for none
	Body    string  // the lines between the fences, each ending in "\n"
	Section string  // the nearest heading above the block, "" for none
	Marker  *Marker // the doctest marker before the block, nil for none
}

// Where is the block's place, "README.md:42 (Running it)".
func (b Block) Where() string {
	if b.Section == "" {
		return fmt.Sprintf("%s:%d", b.File, b.Line)
	}
	return fmt.Sprintf("%s:%d (%s)", b.File, b.Line, b.Section)
}

// Shell reports whether the block's language is a shell's, so that it must
// carry a marker.
func (b Block) Shell() bool {
	switch strings.ToLower(b.Lang) {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// Runnable reports whether the block is marked to run.
func (b Block) Runnable() bool { return b.Shell() && b.Marker != nil && b.Marker.Run }

// Marker is a parsed "<!-- doctest: ... -->" line.
type Marker struct {
	Line   int      // its line in the document, from 1
	Run    bool     // run, or skip
	Reason string   // skip: why (required); run: the comment in parentheses, if any
	Check  string   // run: the name of a check the test runs after the block
	Except []string // run: lines left out (compared without a trailing comment)
}

var (
	markerLine = regexp.MustCompile(`^\s*<!--\s*doctest:(.*?)-->\s*$`)
	fenceOpen  = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	option     = regexp.MustCompile(`^(\w+)=("(?:[^"\\]|\\.)*"|\S+)\s*`)
)

// Parse reads the fenced blocks of a Markdown document, with the heading
// each is under and the doctest marker before it. A marker that comes
// before anything but a fenced block, or that cannot be read, is an error.
func Parse(name string, doc []byte) ([]Block, error) {
	lines := strings.SplitAfter(string(doc), "\n")
	var (
		blocks  []Block
		errs    []error
		section string
		pending *Marker // a marker waiting for its block
	)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], "\r\n")
		if m := markerLine.FindStringSubmatch(line); m != nil {
			if pending != nil {
				errs = append(errs, fmt.Errorf("%s:%d: doctest marker before another marker, not before a fenced block", name, pending.Line))
			}
			mk, err := parseMarker(m[1])
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", name, i+1, err))
				pending = nil
				continue
			}
			mk.Line = i + 1
			pending = mk
			continue
		}
		f := fenceOpen.FindStringSubmatch(line)
		if f == nil {
			if h := heading.FindStringSubmatch(line); h != nil {
				section = h[1]
			}
			if strings.TrimSpace(line) != "" && pending != nil {
				errs = append(errs, fmt.Errorf("%s:%d: doctest marker not followed by a fenced block", name, pending.Line))
				pending = nil
			}
			continue
		}
		b := Block{File: name, Line: i + 1, Lang: f[2], Section: section, Marker: pending}
		pending = nil
		fence := f[1]
		var body strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			l := strings.TrimRight(lines[i], "\r\n")
			if t := strings.TrimLeft(l, " "); len(l)-len(t) <= 3 && strings.HasPrefix(t, fence) &&
				strings.Trim(strings.TrimSpace(t), fence[:1]) == "" {
				closed = true
				break
			}
			body.WriteString(l)
			body.WriteString("\n")
		}
		if !closed {
			errs = append(errs, fmt.Errorf("%s:%d: fenced block never closed", name, b.Line))
		}
		b.Body = body.String()
		blocks = append(blocks, b)
	}
	if pending != nil {
		errs = append(errs, fmt.Errorf("%s:%d: doctest marker not followed by a fenced block", name, pending.Line))
	}
	return blocks, errors.Join(errs...)
}

// parseMarker reads what follows "doctest:" in a marker.
func parseMarker(s string) (*Marker, error) {
	s = strings.TrimSpace(s)
	verb, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "skip":
		reason := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(rest, "("), ")"))
		if reason == "" {
			return nil, errors.New(`doctest skip without a reason: write <!-- doctest: skip (why) -->`)
		}
		return &Marker{Reason: reason}, nil
	case "run":
		m := &Marker{Run: true}
		for rest != "" && !strings.HasPrefix(rest, "(") {
			o := option.FindStringSubmatch(rest)
			if o == nil {
				return nil, fmt.Errorf("doctest run: cannot read %q (want key=value or key=\"value\", then an optional (comment))", rest)
			}
			rest = rest[len(o[0]):]
			val := o[2]
			if strings.HasPrefix(val, `"`) {
				val = strings.ReplaceAll(strings.ReplaceAll(val[1:len(val)-1], `\"`, `"`), `\\`, `\`)
			}
			switch o[1] {
			case "check":
				m.Check = val
			case "except":
				m.Except = append(m.Except, val)
			default:
				return nil, fmt.Errorf("doctest run: unknown option %q (known: check, except)", o[1])
			}
		}
		if rest != "" {
			if !strings.HasSuffix(rest, ")") {
				return nil, fmt.Errorf("doctest run: comment %q not closed by )", rest)
			}
			m.Reason = strings.TrimSpace(rest[1 : len(rest)-1])
		}
		if len(m.Except) > 0 && m.Reason == "" {
			return nil, errors.New(`doctest run except=... needs a reason: write <!-- doctest: run except="..." (why) -->`)
		}
		return m, nil
	}
	return nil, fmt.Errorf("doctest marker %q: want run or skip", s)
}

// commandLike is the start of an unlabelled block that is a command line a
// reader would type: such a block must be labelled sh (or console) so that
// it is marked.
var commandLike = regexp.MustCompile(`^(\$ |(go|make|curl|docker|bin/\S+|\./\S+|export|cd|jq|python3?)\s)`)

// backgroundGoRun returns the lines of b where a command that runs `go
// run` in the background (ending in a single &) starts.
func backgroundGoRun(b Block) []int {
	var lines []int
	start, cmd := 0, ""
	for i, l := range strings.Split(b.Body, "\n") {
		if cmd == "" {
			start = b.Line + 1 + i
		}
		l = strings.TrimPrefix(withoutComment(l), "$ ")
		if strings.HasSuffix(l, `\`) {
			cmd += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		cmd += l
		if strings.Contains(cmd, "go run ") && strings.HasSuffix(cmd, "&") && !strings.HasSuffix(cmd, "&&") {
			lines = append(lines, start)
		}
		cmd = ""
	}
	return lines
}

// Lint returns what is wrong with the markers of blocks: a shell block
// without a marker, a marker on a block that is not a shell's, a check or
// an except line that names nothing, an unlabelled block that starts like
// a command line, and `go run` started in the background (killing it
// leaves the program running).
func Lint(blocks []Block) error {
	var errs []error
	for _, b := range blocks {
		switch {
		case b.Shell() && b.Marker == nil:
			errs = append(errs, fmt.Errorf("%s: %s block without a marker: put <!-- doctest: run --> or <!-- doctest: skip (why) --> on the line before it", b.Where(), b.Lang))
		case !b.Shell() && b.Marker != nil:
			errs = append(errs, fmt.Errorf("%s: doctest marker on a %q block, which is not a shell's (sh, bash, shell, console)", b.Where(), b.Lang))
		case b.Lang == "" && commandLike.MatchString(strings.TrimSpace(b.Body)):
			errs = append(errs, fmt.Errorf("%s: an unlabelled block that starts like a command line: label it sh (or console) and mark it", b.Where()))
		}
		if b.Shell() {
			for _, line := range backgroundGoRun(b) {
				errs = append(errs, fmt.Errorf("%s: line %d starts `go run` in the background: killing it (kill %%1) stops go run, not the program, which keeps its port; start a built binary instead (make build, then bin/NAME ... &)", b.Where(), line))
			}
		}
		if b.Runnable() {
			if _, err := b.Steps(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", b.Where(), err))
			}
		}
	}
	return errors.Join(errs...)
}
