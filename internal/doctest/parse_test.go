package doctest

import (
	"slices"
	"strings"
	"testing"
)

const sample = "# Title\n\n## Running it\n\n" +
	"<!-- doctest: run check=walkthrough -->\n\n" +
	"```sh\nmake demo   # the demo\nmake test\n```\n\n" +
	"<!-- doctest: skip (needs Docker) -->\n" +
	"```bash\ndocker compose up\n```\n\n" +
	"## Output\n\n" +
	"````console\n$ echo a \\\n  b\na b\n$ true\n````\n\n" +
	"```\nplain output\n```\n"

func TestParse(t *testing.T) {
	blocks, err := Parse("x.md", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("got %d blocks, want 4: %+v", len(blocks), blocks)
	}
	b := blocks[0]
	if b.Lang != "sh" || b.Line != 7 || b.Section != "Running it" || !b.Runnable() || b.Marker.Check != "walkthrough" {
		t.Errorf("block 0: %+v %+v", b, b.Marker)
	}
	if b.Body != "make demo   # the demo\nmake test\n" {
		t.Errorf("block 0 body %q", b.Body)
	}
	if s := blocks[1]; s.Runnable() || s.Marker == nil || s.Marker.Reason != "needs Docker" {
		t.Errorf("block 1: %+v %+v", s, s.Marker)
	}
	if c := blocks[2]; c.Lang != "console" || c.Section != "Output" || c.Marker != nil || c.Body != "$ echo a \\\n  b\na b\n$ true\n" {
		t.Errorf("block 2: %+v", c)
	}
	if err := Lint(blocks); err == nil || !strings.Contains(err.Error(), "x.md:19 (Output): console block without a marker") {
		t.Errorf("Lint: %v, want the console block without a marker", err)
	}
	if err := Lint(blocks[:2]); err != nil {
		t.Errorf("Lint of marked blocks: %v", err)
	}
}

func TestParseMarkerErrors(t *testing.T) {
	for _, doc := range []string{
		"<!-- doctest: skip -->\n```sh\nx\n```\n",                  // no reason
		"<!-- doctest: skip () -->\n```sh\nx\n```\n",               // empty reason
		"<!-- doctest: maybe -->\n```sh\nx\n```\n",                 // unknown verb
		"<!-- doctest: run colour=red -->\n```sh\nx\n```\n",        // unknown option
		"<!-- doctest: run except=\"x\" -->\n```sh\nx\n```\n",      // except without a reason
		"<!-- doctest: run -->\nsome text\n```sh\nx\n```\n",        // not before a block
		"<!-- doctest: run -->\n",                                  // before nothing
		"<!-- doctest: run -->\n<!-- doctest: run -->\n```sh\n```", // two markers
		"```sh\nnever closed\n",
	} {
		if _, err := Parse("d.md", []byte(doc)); err == nil {
			t.Errorf("Parse(%q) = nil error", doc)
		}
	}
}

func TestLint(t *testing.T) {
	for doc, want := range map[string]string{
		"<!-- doctest: run -->\n```json\n{}\n```\n":                                          "not a shell's",
		"```\ngo run ./cmd/green\n```\n":                                                     "starts like a command line",
		"```\n$ make demo\n```\n":                                                            "starts like a command line",
		"<!-- doctest: run -->\n```console\nout\n```":                                        "output before the first",
		"<!-- doctest: run except=\"make x\" (why) -->\n```sh\nmake y\n```":                  "matches no line",
		"<!-- doctest: skip (x) -->\n```sh\ngo run ./cmd/purple \\\n  --port 1 &  # bg\n```": "line 3 starts `go run` in the background",
	} {
		blocks, err := Parse("d.md", []byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if err := Lint(blocks); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Lint(%q) = %v, want %q", doc, err, want)
		}
	}
	blocks, _ := Parse("d.md", []byte("```\nnginx: listening\n```\n```go\nfunc f() {}\n```\n"+
		"<!-- doctest: skip (x) -->\n```sh\ngo run ./cmd/green demo && echo ok\nbin/green &\n```\n"))
	if err := Lint(blocks); err != nil {
		t.Errorf("Lint of output and Go blocks: %v", err)
	}
}

func TestSteps(t *testing.T) {
	doc := "<!-- doctest: run except=\"make test\" (the suite itself) -->\n```sh\nmake demo\nmake test   # all\n```\n" +
		"<!-- doctest: run -->\n```console\n$ echo a \\\n  b\na b\n$ false || echo x\n...\nx\n```\n"
	blocks, err := Parse("d.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := blocks[0].Steps()
	if err != nil || len(sh) != 1 || sh[0].Script != "make demo\n" || sh[0].Line != 3 {
		t.Errorf("sh steps %+v, %v", sh, err)
	}
	con, err := blocks[1].Steps()
	if err != nil || len(con) != 2 {
		t.Fatalf("console steps %+v, %v", con, err)
	}
	if con[0].Script != "echo a \\\n  b\n" || !slices.Equal(con[0].Want, []string{"a b"}) || con[0].Line != 8 {
		t.Errorf("console step 0: %+v", con[0])
	}
	if con[1].Script != "false || echo x\n" || !slices.Equal(con[1].Want, []string{"...", "x"}) {
		t.Errorf("console step 1: %+v", con[1])
	}
}

func TestMatch(t *testing.T) {
	got := "log line\nscore 93.5 of 100; agents: a, b\nnoise\n  done\n"
	for _, want := range [][]string{
		nil,
		{"score ... of 100; agents: a, b", "done"},
		{"...", "done"},
		{"log line", "...", "done"},
	} {
		if err := Match(want, got); err != nil {
			t.Errorf("Match(%q): %v", want, err)
		}
	}
	for _, want := range [][]string{
		{"done", "log line"}, // out of order
		{"score 93.5"},       // a whole line, not a prefix
		{"missing"},
	} {
		if err := Match(want, got); err == nil {
			t.Errorf("Match(%q) = nil, want an error", want)
		}
	}
}

func TestRewrite(t *testing.T) {
	text := "go run ./cmd/purple --port 9101 --peers r=http://127.0.0.1:9102\n" +
		"curl -s localhost:9009/x; JAEGER_OTLP_HTTP_PORT=14318 go run ./cmd/green --otlp-addr 0.0.0.0:4318 # 19009\n"
	if got := Ports(text); !slices.Equal(got, []int{4318, 9009, 9101, 9102, 14318}) {
		t.Errorf("Ports = %v", got)
	}
	if got := Commands(text); !slices.Equal(got, []string{"green", "purple"}) {
		t.Errorf("Commands = %v", got)
	}
	r := &Rewriter{}
	r.Func(GoRun, func(m []string) string { return "/b/" + m[1] })
	r.Port(9009, 1)
	got := r.Apply(text)
	if !strings.Contains(got, "/b/purple --port 9101") || !strings.Contains(got, "localhost:1/x") || !strings.Contains(got, "# 19009") {
		t.Errorf("Apply = %q", got)
	}
}
