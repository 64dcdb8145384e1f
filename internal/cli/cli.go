// Package cli is the command line every coordbench command shares (green and
// its subcommands, purple, e2e, bench-graph, bench-ingest), so they all
// behave alike:
//
//   - flags may come anywhere among the arguments, before or after the
//     positional ones (`green assess FILE --output x` and `green assess
//     --output x FILE` are the same); `--` ends the flags;
//   - -h, -help and --help print the usage, with examples, to stdout and
//     exit 0;
//   - a bad flag or argument prints one error line, prefixed once with the
//     command's name, and the usage to stderr, and exits 2;
//   - a failure while running prints one error line, prefixed once, and
//     exits 1.
//
// The standard flag package stops at the first argument that is not a
// flag; Parse moves the flags ahead of the positional arguments first,
// using the flag set to tell a flag's value from a positional argument.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of every command.
const (
	ExitOK      = 0 // success, or help asked for
	ExitFailure = 1 // a failure while running
	ExitUsage   = 2 // bad usage or bad input
)

// Command is one command or subcommand: its name as typed, its synopsis,
// examples, flags and output streams.
type Command struct {
	// Name is the command as typed, e.g. "green assess".
	Name string
	// Synopsis follows the name on the usage line, e.g. "[flags] FILE ...".
	Synopsis string
	// Summary says in a sentence or two what the command does.
	Summary string
	// Examples are whole command lines shown under the flags.
	Examples []string
	// Flags are the command's flags; New makes an empty set.
	Flags *flag.FlagSet
	// Stdout receives the usage asked for with -h; Stderr receives errors.
	Stdout, Stderr io.Writer
}

// New returns a command with an empty flag set that reports nothing on its
// own (Parse and the Command's methods do the reporting).
func New(name, synopsis, summary string, stdout, stderr io.Writer) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{Name: name, Synopsis: synopsis, Summary: summary, Flags: fs, Stdout: stdout, Stderr: stderr}
}

// Parse parses args with the flags anywhere among them and returns the
// positional arguments. ok is false when the command should stop and exit
// with code: ExitOK after printing the usage for -h or --help, ExitUsage
// after reporting a bad flag with the usage.
func (c *Command) Parse(args []string) (positional []string, code int, ok bool) {
	flags, positional := split(c.Flags, args)
	if err := c.Flags.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.PrintUsage(c.Stdout)
			return nil, ExitOK, false
		}
		return nil, c.UsageError("%v", err), false
	}
	// split hands Parse flags and their values only, so flag leaves
	// nothing behind; should it, that comes first, as written.
	return append(c.Flags.Args(), positional...), ExitOK, true
}

// split moves the flags (with their values) ahead of the positional
// arguments. A flag's value is the next argument unless the flag is
// boolean or written -name=value; an unknown flag is kept for Parse to
// report. Everything after "--" is positional.
func split(fs *flag.FlagSet, args []string) (flags, positional []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(positional, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBool(f) {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, positional
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// PrintUsage writes the usage line, the summary, the flags and the
// examples to w.
func (c *Command) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s %s\n", c.Name, c.Synopsis)
	if c.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.Summary)
	}
	hasFlags := false
	c.Flags.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, "\nFlags (anywhere on the line, as -name or --name; -- ends them):\n")
		c.Flags.SetOutput(w)
		c.Flags.PrintDefaults()
		c.Flags.SetOutput(io.Discard)
	}
	if len(c.Examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, e := range c.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// UsageError reports bad usage: one error line, then the usage, on Stderr.
// It returns ExitUsage.
func (c *Command) UsageError(format string, args ...any) int {
	fmt.Fprintln(c.Stderr, Prefix(c.Name, fmt.Sprintf(format, args...)))
	c.PrintUsage(c.Stderr)
	return ExitUsage
}

// Fail reports err on one line of Stderr, prefixed once with the command's
// name, and returns code.
func (c *Command) Fail(code int, err error) int {
	fmt.Fprintln(c.Stderr, Prefix(c.Name, err.Error()))
	return code
}

// Prefix puts the command's name in front of msg once. A message that
// already starts with the command's name, or with its first word (the
// program: "purple: ..." under "purple", "green: ..." under "green run",
// "purple coordinator: ..." under "purple"), is not prefixed again; a
// bare "program:" prefix is replaced by the full name.
func Prefix(name, msg string) string {
	prog, _, _ := strings.Cut(name, " ")
	switch {
	case strings.HasPrefix(msg, name+":"):
		return msg
	case strings.HasPrefix(msg, prog+":"):
		return name + ":" + strings.TrimPrefix(msg, prog+":")
	case strings.HasPrefix(msg, prog+" "):
		return msg
	}
	return name + ": " + msg
}
