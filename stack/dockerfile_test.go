package stack

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// Dockerfile.green and Dockerfile.purple, read by BuildKit's own parser
// (no Docker engine runs here, so nothing is built): each must be a
// multi-stage build in the official Go image, run from a small base as a
// non-root user, for linux/amd64, with the AgentBeats flags reaching the
// binary, port 9009 exposed, and curl for the compose health check. The
// files it copies must exist and survive .dockerignore.

// instruction is one Dockerfile instruction as the parser saw it.
type instruction struct {
	cmd   string   // lower case: from, run, copy, ...
	flags []string // --platform=..., --from=..., --chown=...
	args  []string
	json  bool // exec (JSON) form
	line  int
}

func parseDockerfile(t *testing.T, name string) []instruction {
	t.Helper()
	f, err := os.Open(repoFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: parser warning: %s (line %d)", name, w.Short, w.Location.Start.Line)
	}
	var out []instruction
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, json: n.Attributes["json"], line: n.StartLine}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
		}
		out = append(out, in)
	}
	return out
}

// stages splits instructions at each FROM; stage[0] is the FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "from" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], in)
		}
	}
	return out
}

func TestDockerfiles(t *testing.T) {
	for _, tc := range []struct{ file, binary string }{
		{"Dockerfile.green", "green"},
		{"Dockerfile.purple", "purple"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			checkDockerfile(t, tc.file, tc.binary)
		})
	}
}

func checkDockerfile(t *testing.T, file, binary string) {
	ins := parseDockerfile(t, file)
	st := stages(ins)
	if len(st) < 2 {
		t.Fatalf("%d stage(s): want a build stage and a run stage", len(st))
	}
	for _, s := range st {
		from := s[0]
		if !slices.Contains(from.flags, "--platform=linux/amd64") {
			t.Errorf("line %d: FROM %v without --platform=linux/amd64 (flags %v)", from.line, from.args, from.flags)
		}
	}

	// The build stage: the official Go image, building ./cmd/<binary>.
	build := st[0]
	if len(build[0].args) != 3 || build[0].args[0] != "golang:1.26" || !strings.EqualFold(build[0].args[1], "as") {
		t.Errorf("build stage: FROM %v, want golang:1.26 AS <name>", build[0].args)
	}
	buildName := build[0].args[len(build[0].args)-1]
	if !slices.ContainsFunc(build, func(in instruction) bool {
		return in.cmd == "run" && strings.Contains(strings.Join(in.args, " "), "go build") &&
			strings.Contains(strings.Join(in.args, " "), "./cmd/"+binary)
	}) {
		t.Errorf("build stage does not `go build ./cmd/%s`", binary)
	}

	// The run stage: a small base, the binary from the build stage, a
	// non-root user, port 9009, an exec-form ENTRYPOINT taking the flags.
	run := st[len(st)-1]
	base := run[0].args[0]
	if strings.HasPrefix(base, "golang") {
		t.Errorf("run stage is FROM %s: want a small base, not the Go toolchain", base)
	}
	var user, entrypoint, cmd *instruction
	exposed, copied, curl := false, false, false
	for i := range run {
		in := &run[i]
		switch in.cmd {
		case "user":
			user = in
		case "entrypoint":
			entrypoint = in
		case "cmd":
			cmd = in
		case "expose":
			exposed = exposed || slices.Contains(in.args, "9009") || slices.Contains(in.args, "9009/tcp")
		case "copy":
			copied = copied || slices.Contains(in.flags, "--from="+buildName) && strings.HasSuffix(in.args[len(in.args)-1], "/"+binary)
		case "run":
			text := strings.Join(in.args, " ")
			curl = curl || strings.Contains(text, "install") && slices.Contains(strings.Fields(text), "curl")
		}
	}
	if !copied {
		t.Errorf("run stage does not COPY --from=%s the %s binary", buildName, binary)
	}
	if user == nil {
		t.Error("run stage has no USER: it would run as root")
	} else if u, _, _ := strings.Cut(user.args[0], ":"); u == "root" || u == "0" || u == "" {
		t.Errorf("USER %s is root", user.args[0])
	}
	if !exposed {
		t.Error("run stage does not EXPOSE 9009")
	}
	if !curl {
		t.Error("run stage does not install curl, which the compose health check runs")
	}
	if entrypoint == nil || !entrypoint.json || len(entrypoint.args) == 0 || filepath.Base(entrypoint.args[0]) != binary {
		t.Errorf("ENTRYPOINT %+v: want the exec form [\"%s\"], so `docker run IMAGE --host ... --port ... --card-url ...` passes the flags to it", entrypoint, binary)
	}
	if cmd == nil || !cmd.json || !slices.Equal(cmd.args, []string{"--host", "0.0.0.0", "--port", "9009"}) {
		t.Errorf("CMD %+v: want the default flags [\"--host\", \"0.0.0.0\", \"--port\", \"9009\"]", cmd)
	}

	checkCopySources(t, ins)
}

// checkCopySources: every local source a COPY names exists and is not
// excluded by .dockerignore (a build would fail with "not found").
func checkCopySources(t *testing.T, ins []instruction) {
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	for _, in := range ins {
		if in.cmd != "copy" && in.cmd != "add" || slices.ContainsFunc(in.flags, func(f string) bool { return strings.HasPrefix(f, "--from=") }) {
			continue
		}
		for _, src := range in.args[:len(in.args)-1] {
			if src == "." {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("line %d: COPY source %s: %v", in.line, src, err)
			}
			if ignored, err := pm.MatchesOrParentMatches(filepath.ToSlash(filepath.Clean(src))); err != nil || ignored {
				t.Errorf("line %d: COPY source %s is excluded by .dockerignore (err %v)", in.line, src, err)
			}
		}
	}
	// What `COPY . .` must bring for `go build ./cmd/...`.
	for _, need := range []string{"go.mod", "go.sum", "cmd/green/main.go", "green/server.go", "otelmap/receiver.go", "groundtruth/ground_truth.json"} {
		if ignored, _ := pm.MatchesOrParentMatches(need); ignored {
			t.Errorf(".dockerignore excludes %s, which the image build needs", need)
		}
	}
}

// TestDockerfileParserSeesJSONForm guards the test above: the parser marks
// the exec form, which is what makes the AgentBeats flags reach the binary
// (the shell form would run them through /bin/sh -c and drop them).
func TestDockerfileParserSeesJSONForm(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "Dockerfile")
	body := "FROM scratch\nENTRYPOINT [\"x\"]\nCMD x --y\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range res.AST.Children {
		got[strings.ToLower(n.Value)] = n.Attributes["json"]
	}
	want := map[string]bool{"from": false, "entrypoint": true, "cmd": false}
	if b, _ := json.Marshal(got); !maps.Equal(got, want) {
		t.Fatalf("json attributes %s, want %v", b, want)
	}
}
