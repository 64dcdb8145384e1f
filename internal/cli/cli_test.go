package cli

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint(*l) }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type testCmd struct {
	c       *Command
	out     *string
	verbose *bool
	files   *listFlag
	stdout  *bytes.Buffer
	stderr  *bytes.Buffer
}

func newTestCmd() testCmd {
	var stdout, stderr bytes.Buffer
	c := New("tool sub", "[flags] FILE ...", "Does a thing to files.", &stdout, &stderr)
	c.Examples = []string{"tool sub a.json --out r.json"}
	t := testCmd{c: c, stdout: &stdout, stderr: &stderr, files: &listFlag{}}
	t.out = c.Flags.String("out", "", "output file")
	t.verbose = c.Flags.Bool("v", false, "verbose")
	c.Flags.Var(t.files, "file", "a file (repeatable)")
	return t
}

func TestParseFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		out       string
		verbose   bool
		files     []string
		positonal []string
	}{
		{[]string{"a", "--out", "x"}, "x", false, nil, []string{"a"}},
		{[]string{"--out", "x", "a"}, "x", false, nil, []string{"a"}},
		{[]string{"a", "-v", "b", "--out=x"}, "x", true, nil, []string{"a", "b"}},
		{[]string{"--file", "f1", "a", "--file", "f2", "b", "-v"}, "", true, []string{"f1", "f2"}, []string{"a", "b"}},
		// A flag's value may look like anything, a dash included.
		{[]string{"--out", "-", "a"}, "-", false, nil, []string{"a"}},
		{[]string{"--out", "--", "a"}, "--", false, nil, []string{"a"}},
		// "--" ends the flags; "-" alone is positional.
		{[]string{"a", "--", "--out", "-v"}, "", false, nil, []string{"a", "--out", "-v"}},
		{[]string{"-", "-v"}, "", true, nil, []string{"-"}},
		{nil, "", false, nil, nil},
	} {
		tc2 := newTestCmd()
		pos, code, ok := tc2.c.Parse(tc.args)
		if !ok {
			t.Errorf("%q: stopped with %d: %s", tc.args, code, tc2.stderr)
			continue
		}
		if *tc2.out != tc.out || *tc2.verbose != tc.verbose || !slices.Equal(*tc2.files, tc.files) || !slices.Equal(pos, tc.positonal) {
			t.Errorf("%q: out %q verbose %v files %q positional %q", tc.args, *tc2.out, *tc2.verbose, *tc2.files, pos)
		}
	}
}

func TestParseHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		tc := newTestCmd()
		_, code, ok := tc.c.Parse([]string{"a", arg})
		if ok || code != ExitOK {
			t.Errorf("%s: ok %v code %d", arg, ok, code)
		}
		usage := tc.stdout.String()
		for _, want := range []string{"usage: tool sub [flags] FILE ...", "Does a thing", "-out string", "Examples:\n  tool sub a.json --out r.json\n"} {
			if !strings.Contains(usage, want) {
				t.Errorf("%s: usage lacks %q:\n%s", arg, want, usage)
			}
		}
		if tc.stderr.Len() != 0 {
			t.Errorf("%s: stderr %q, want nothing", arg, tc.stderr)
		}
	}
}

func TestParseBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "tool sub: flag provided but not defined: -bogus\nusage: tool sub"},
		{[]string{"a", "--out"}, "tool sub: flag needs an argument: -out\n"},
		{[]string{"-v=maybe"}, "tool sub: invalid boolean value"},
	} {
		c := newTestCmd()
		_, code, ok := c.c.Parse(tc.args)
		if ok || code != ExitUsage || !strings.HasPrefix(c.stderr.String(), tc.want) {
			t.Errorf("%q: ok %v code %d stderr:\n%s", tc.args, ok, code, c.stderr)
		}
		if c.stdout.Len() != 0 {
			t.Errorf("%q: stdout %q", tc.args, c.stdout)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, tc := range []struct{ name, msg, want string }{
		{"purple", "purple: unknown role", "purple: unknown role"},
		{"purple", "unknown role", "purple: unknown role"},
		{"purple", "purple coordinator: listen: in use", "purple coordinator: listen: in use"},
		{"e2e", "e2e: e2e: x", "e2e: e2e: x"}, // only the command's own prefix is looked at
		{"green run", "green: x", "green run: x"},
		{"green run", "green run: x", "green run: x"},
		{"green run", "coordination: x", "green run: coordination: x"},
		{"green run", "greenery: x", "green run: greenery: x"},
	} {
		if got := Prefix(tc.name, tc.msg); got != tc.want {
			t.Errorf("Prefix(%q, %q) = %q, want %q", tc.name, tc.msg, got, tc.want)
		}
	}
}

func TestFail(t *testing.T) {
	c := newTestCmd()
	if code := c.c.Fail(ExitFailure, fmt.Errorf("tool: %w", fmt.Errorf("disk full"))); code != ExitFailure {
		t.Errorf("code %d", code)
	}
	if got := c.stderr.String(); got != "tool sub: disk full\n" {
		t.Errorf("stderr %q", got)
	}
}
