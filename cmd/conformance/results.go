package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// Outcome is what became of one test.
type Outcome string

// Outcomes.
const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
)

// Result is one test's outcome in one run.
type Result struct {
	ID      string // pytest node id: file::Class::test[param]
	Outcome Outcome
	Message string // the failure's or the skip's message
}

// junitSuites is pytest's JUnit XML (junit_family=xunit1, which names each
// test's file).
type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	ClassName string     `xml:"classname,attr"`
	Name      string     `xml:"name,attr"`
	File      string     `xml:"file,attr"`
	Failure   *junitNote `xml:"failure"`
	Error     *junitNote `xml:"error"`
	Skipped   *junitNote `xml:"skipped"`
}

type junitNote struct {
	Message string `xml:"message,attr"`
}

// parseJUnit reads pytest's JUnit XML into results, with pytest's node ids
// rebuilt from each case's file, class and name. A test that failed in its
// setup or teardown (an <error>) counts as failed.
func parseJUnit(r io.Reader) ([]Result, error) {
	dec := xml.NewDecoder(r)
	var doc junitSuites
	// pytest writes <testsuites> around one <testsuite>; older ones write
	// the <testsuite> alone.
	var root xml.StartElement
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("junit xml: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se
			break
		}
	}
	switch root.Name.Local {
	case "testsuites":
		if err := dec.DecodeElement(&doc, &root); err != nil {
			return nil, fmt.Errorf("junit xml: %w", err)
		}
	case "testsuite":
		var s junitSuite
		if err := dec.DecodeElement(&s, &root); err != nil {
			return nil, fmt.Errorf("junit xml: %w", err)
		}
		doc.Suites = []junitSuite{s}
	default:
		return nil, fmt.Errorf("junit xml: root element <%s>", root.Name.Local)
	}
	var out []Result
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			res := Result{ID: nodeID(c), Outcome: Passed}
			switch {
			case c.Failure != nil:
				res.Outcome, res.Message = Failed, c.Failure.Message
			case c.Error != nil:
				res.Outcome, res.Message = Failed, c.Error.Message
			case c.Skipped != nil:
				res.Outcome, res.Message = Skipped, c.Skipped.Message
			}
			out = append(out, res)
		}
	}
	return out, nil
}

// nodeID rebuilds pytest's node id: the classname is the module's dotted
// path, then the class if any.
func nodeID(c junitCase) string {
	if c.File == "" {
		return c.ClassName + "::" + c.Name
	}
	module := strings.ReplaceAll(strings.TrimSuffix(c.File, path.Ext(c.File)), "/", ".")
	id := c.File
	if class, ok := strings.CutPrefix(c.ClassName, module+"."); ok && class != "" {
		id += "::" + class
	}
	return id + "::" + c.Name
}

// Expectation is one entry of the expected-failures list: a test that
// fails against the named agents, and why, from the specification.
type Expectation struct {
	Suite  string   // "0.3" or "1.0"
	Agents []string // "green", "purple"
	ID     string
	Reason string
	Line   int
}

// parseExpected reads the expected-failures list. Each entry is a line
// "<suite> <agent>[,<agent>...] <test id>" followed by its reason on
// indented lines; '#' starts a comment line; an entry without a reason is
// an error, as is the same test listed twice for an agent.
func parseExpected(r io.Reader, suites, agents []string) ([]Expectation, error) {
	var out []Expectation
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n := 0
	seen := map[string]int{}
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case line[0] == ' ' || line[0] == '\t':
			if len(out) == 0 {
				return nil, fmt.Errorf("line %d: a reason before any entry", n)
			}
			e := &out[len(out)-1]
			e.Reason = strings.TrimSpace(e.Reason + " " + trimmed)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: want \"<suite> <agents> <test id>\", got %q", n, line)
		}
		e := Expectation{Suite: fields[0], Agents: strings.Split(fields[1], ","), ID: fields[2], Line: n}
		if !slices.Contains(suites, e.Suite) {
			return nil, fmt.Errorf("line %d: suite %q, want one of %s", n, e.Suite, strings.Join(suites, ", "))
		}
		for _, a := range e.Agents {
			if !slices.Contains(agents, a) {
				return nil, fmt.Errorf("line %d: agent %q, want one of %s", n, a, strings.Join(agents, ", "))
			}
			key := e.Suite + " " + a + " " + e.ID
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("line %d: %s is listed for %s already on line %d", n, e.ID, a, prev)
			}
			seen[key] = n
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, e := range out {
		if e.Reason == "" {
			return nil, fmt.Errorf("line %d: %s has no reason", e.Line, e.ID)
		}
	}
	return out, nil
}

func readExpected(file string, suites, agents []string) ([]Expectation, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	exp, err := parseExpected(f, suites, agents)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return exp, nil
}

// Verdict compares one run (a suite against an agent) with the list.
type Verdict struct {
	Suite, Agent            string
	Passed, Failed, Skipped int
	// Expected are the listed tests that failed; Unexpected the failures
	// not listed; UnexpectedPass the listed tests that passed; Stale the
	// listed tests that were skipped or did not run at all.
	Expected, Unexpected, UnexpectedPass, Stale []Result
}

// OK reports whether the run matched the list exactly.
func (v *Verdict) OK() bool {
	return len(v.Unexpected) == 0 && len(v.UnexpectedPass) == 0 && len(v.Stale) == 0
}

// compare judges the results of suite against agent by the list.
func compare(suite, agent string, results []Result, exp []Expectation) *Verdict {
	v := &Verdict{Suite: suite, Agent: agent}
	listed := map[string]bool{}
	for _, e := range exp {
		if e.Suite == suite && slices.Contains(e.Agents, agent) {
			listed[e.ID] = true
		}
	}
	ran := map[string]bool{}
	for _, r := range results {
		ran[r.ID] = true
		switch r.Outcome {
		case Passed:
			v.Passed++
			if listed[r.ID] {
				v.UnexpectedPass = append(v.UnexpectedPass, r)
			}
		case Failed:
			v.Failed++
			if listed[r.ID] {
				v.Expected = append(v.Expected, r)
			} else {
				v.Unexpected = append(v.Unexpected, r)
			}
		case Skipped:
			v.Skipped++
			if listed[r.ID] {
				v.Stale = append(v.Stale, r)
			}
		}
	}
	for _, e := range exp {
		if listed[e.ID] && !ran[e.ID] && e.Suite == suite && slices.Contains(e.Agents, agent) {
			v.Stale = append(v.Stale, Result{ID: e.ID, Message: "not collected"})
		}
	}
	return v
}

// writeSummary writes the verdicts as Markdown: the table, then what did
// not match the list.
func writeSummary(w io.Writer, verdicts []*Verdict) {
	fmt.Fprintln(w, "| suite | agent | passed | failed | expected failures | unexpected | skipped |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, v := range verdicts {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d |\n", suiteTitle(v.Suite), v.Agent,
			v.Passed, v.Failed, len(v.Expected), len(v.Unexpected)+len(v.UnexpectedPass)+len(v.Stale), v.Skipped)
	}
	for _, v := range verdicts {
		for _, group := range []struct {
			title string
			rs    []Result
		}{
			{"unexpected failure", v.Unexpected},
			{"unexpected pass (remove it from the list)", v.UnexpectedPass},
			{"listed but skipped or not run", v.Stale},
		} {
			for _, r := range group.rs {
				msg := strings.Join(strings.Fields(r.Message), " ")
				if len(msg) > 300 {
					msg = msg[:300] + "…"
				}
				fmt.Fprintf(w, "\n- %s, %s: %s: `%s`", suiteTitle(v.Suite), v.Agent, group.title, r.ID)
				if msg != "" {
					fmt.Fprintf(w, "\n  %s", msg)
				}
			}
		}
	}
	fmt.Fprintln(w)
}

func suiteTitle(s string) string {
	switch s {
	case "0.3":
		return "a2a-tck 0.3.x (mandatory)"
	case "1.0":
		return "a2a-tck 1.0-dev (must)"
	}
	return s
}
