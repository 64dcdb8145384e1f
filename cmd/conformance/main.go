// Command conformance runs the official A2A conformance suites (the
// a2aproject/a2a-tck snapshots in the -tck folder, by default
// ../shared/conformance beside the checkout) against the green
// agent and the base purple agent over JSON-RPC, and compares the outcome
// with the checked-in list of expected failures: an unexpected failure, an
// expected failure that passed, or a listed test that did not run fails
// the run. `make conformance` runs it; docs/conformance.md explains the
// list and the results.
//
// For each suite it copies the snapshot into a temporary directory (the
// suites write caches; the shared copy stays untouched), readies it for
// Debian's Python (the 1.0 suite's protobuf stubs are regenerated with
// protoc), serves each agent on a free loopback port and runs pytest, whose
// JUnit XML gives each test's outcome.
//
// Usage:
//
//	conformance [-tck DIR] [-green BIN] [-purple BIN] [-expected FILE] [-summary FILE] [-keep]
//
// Exit status: 0 when every run matched the list; 1 when one did not; 2
// when the runs could not be made. Without the suites or the tools they
// need it says what is missing and exits 0, or 2 under CI=true, where
// .ci/run provides them.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// pytestTimeout bounds one suite's run against one agent.
const pytestTimeout = 15 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type config struct {
	tck, greenBin, purpleBin, expected, summary, python string
	keep                                                bool
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	defTCK := os.Getenv("COORDBENCH_TCK_DIR")
	if defTCK == "" {
		defTCK = filepath.Join("..", "shared", "conformance")
	}
	fs.StringVar(&c.tck, "tck", defTCK, "folder of the TCK snapshots (default $COORDBENCH_TCK_DIR, else ../shared/conformance)")
	fs.StringVar(&c.greenBin, "green", "", "the green agent's binary (default: go build ./cmd/green)")
	fs.StringVar(&c.purpleBin, "purple", "", "the purple agent's binary (default: go build ./cmd/purple)")
	fs.StringVar(&c.expected, "expected", filepath.Join("conformance", "expected-failures.txt"), "the list of expected failures")
	fs.StringVar(&c.summary, "summary", "", "also write the Markdown summary to this file")
	fs.StringVar(&c.python, "python", "/usr/bin/python3", "the Python that runs the suites (Debian's, with the packages .ci/run installs)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (suite copies, agent logs, pytest output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "conformance: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if msg := prerequisites(ctx, c); msg != "" {
		if ci() {
			fmt.Fprintf(stderr, "conformance: %s (CI=true: .ci/run should have provided it)\n", msg)
			return 2
		}
		fmt.Fprintf(stdout, "conformance: skipped: %s\n", msg)
		return 0
	}
	verdicts, err := runAll(ctx, c, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "conformance: %v\n", err)
		return 2
	}
	var sum bytes.Buffer
	writeSummary(&sum, verdicts)
	fmt.Fprint(stdout, "\n"+sum.String())
	if c.summary != "" {
		err := os.MkdirAll(filepath.Dir(c.summary), 0o755)
		if err == nil {
			err = os.WriteFile(c.summary, sum.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "conformance: summary: %v\n", err)
			return 2
		}
	}
	passed, skipped, expected, bad := 0, 0, 0, 0
	for _, v := range verdicts {
		passed += v.Passed
		skipped += v.Skipped
		expected += len(v.Expected)
		bad += len(v.Unexpected) + len(v.UnexpectedPass) + len(v.Stale)
	}
	fmt.Fprintf(stdout, "\n%d expected failures (%s); failed counts the results the list does not explain\n", expected, c.expected)
	fmt.Fprintf(stdout, "conformance: %d passed, %d failed, %d skipped\n", passed, bad, skipped)
	if bad > 0 {
		return 1
	}
	return 0
}

// prerequisites says what the runs need and is missing, "" when nothing.
func prerequisites(ctx context.Context, c config) string {
	for _, s := range suites() {
		if fi, err := os.Stat(filepath.Join(c.tck, s.Folder)); err != nil || !fi.IsDir() {
			return fmt.Sprintf("no TCK snapshot %s under %s", s.Folder, c.tck)
		}
	}
	if _, err := os.Stat(c.python); err != nil {
		return fmt.Sprintf("no Python at %s", c.python)
	}
	if err := checkTools(ctx, c.python); err != nil {
		return err.Error()
	}
	return ""
}

func ci() bool {
	v, _ := strconv.ParseBool(os.Getenv("CI"))
	return v
}

// runAll readies the suites, then serves each agent in turn and runs every
// suite against it.
func runAll(ctx context.Context, c config, progress io.Writer) ([]*Verdict, error) {
	all := suites()
	var names []string
	for _, s := range all {
		names = append(names, s.Name)
	}
	expected, err := readExpected(c.expected, names, []string{"green", "purple"})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "coordbench-conformance-")
	if err != nil {
		return nil, err
	}
	if c.keep {
		fmt.Fprintf(progress, "conformance: working in %s (kept)\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	agents, err := buildAgents(ctx, c, tmp)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	for _, s := range all {
		dir := filepath.Join(tmp, s.Folder)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(c.tck, s.Folder))); err != nil {
			return nil, fmt.Errorf("copy %s: %w", s.Folder, err)
		}
		if s.prepare != nil {
			if err := s.prepare(ctx, dir); err != nil {
				return nil, fmt.Errorf("prepare %s: %w", s.Folder, err)
			}
		}
		dirs[s.Name] = dir
	}
	var verdicts []*Verdict
	for _, a := range agents {
		r, err := start(ctx, a, tmp)
		if err != nil {
			return nil, err
		}
		for _, s := range all {
			fmt.Fprintf(progress, "conformance: %s against %s at %s\n", s.Folder, a.Name, r.base)
			results, err := runSuite(ctx, c.python, s, dirs[s.Name], r.base, filepath.Join(tmp, s.Name+"-"+a.Name))
			if err != nil {
				r.stop()
				return nil, fmt.Errorf("%s against %s: %w", s.Folder, a.Name, err)
			}
			verdicts = append(verdicts, compare(s.Name, a.Name, results, expected))
		}
		r.stop()
	}
	return verdicts, nil
}

// buildAgents names the two agents, building the binaries not given.
func buildAgents(ctx context.Context, c config, tmp string) ([]Agent, error) {
	bins := map[string]string{"green": c.greenBin, "purple": c.purpleBin}
	for _, name := range []string{"green", "purple"} {
		if bins[name] != "" {
			abs, err := filepath.Abs(bins[name])
			if err != nil {
				return nil, err
			}
			bins[name] = abs
			continue
		}
		out := filepath.Join(tmp, "bin", name)
		if err := run(ctx, "", nil, "go", "build", "-o", out, "./cmd/"+name); err != nil {
			return nil, fmt.Errorf("build the %s agent: %w", name, err)
		}
		bins[name] = out
	}
	loopback := []string{"--host", "127.0.0.1", "--port"}
	return []Agent{
		{Name: "green", Bin: bins["green"], Args: func(port int) []string {
			return append(append([]string{"serve"}, loopback...), strconv.Itoa(port))
		}},
		{Name: "purple", Bin: bins["purple"], Args: func(port int) []string {
			return append(slices.Clone(loopback), strconv.Itoa(port))
		}},
	}, nil
}

// runSuite runs pytest for one suite against the agent at base and reads
// each test's outcome from its JUnit XML; out is the path prefix of its
// output files.
func runSuite(ctx context.Context, python string, s Suite, dir, base, out string) ([]Result, error) {
	ctx, cancel := context.WithTimeout(ctx, pytestTimeout)
	defer cancel()
	args := append([]string{"-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", "--tb=short",
		"--junitxml=" + out + ".xml", "-o", "junit_family=xunit1"}, s.args(base)...)
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, s.env...)
	logFile, err := os.Create(out + ".out")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	err = cmd.Run()
	// pytest exits 1 when tests failed, which the list judges; anything
	// else means the run itself broke (5: nothing collected).
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return nil, fmt.Errorf("pytest: %w; output:\n%s", err, logTail(out+".out"))
	}
	f, err := os.Open(out + ".xml")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	results, err := parseJUnit(f)
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("pytest ran no test; output:\n%s", logTail(out+".out"))
	}
	return results, nil
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
