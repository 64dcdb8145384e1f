package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const junitXML = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.compatibility.agent_card.test_agent_card.TestCard" name="test_ok" file="tests/compatibility/agent_card/test_agent_card.py" line="1" time="0.1" />
<testcase classname="tests.compatibility.agent_card.test_agent_card.TestCard" name="test_bad[jsonrpc]" file="tests/compatibility/agent_card/test_agent_card.py" line="2" time="0.1"><failure message="AssertionError: no">trace</failure></testcase>
<testcase classname="tests.mandatory.test_send" name="test_plain" file="tests/mandatory/test_send.py" line="3" time="0.1"><skipped type="pytest.skip" message="not declared">skip</skipped></testcase>
<testcase classname="tests.mandatory.test_send" name="test_setup" file="tests/mandatory/test_send.py" line="4" time="0.1"><error message="fixture broke">e</error></testcase>
<testcase classname="tests.mandatory.test_send" name="test_plain2" file="tests/mandatory/test_send.py" line="5" time="0.1" />
</testsuite></testsuites>`

func TestParseJUnit(t *testing.T) {
	got, err := parseJUnit(strings.NewReader(junitXML))
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{ID: "tests/compatibility/agent_card/test_agent_card.py::TestCard::test_ok", Outcome: Passed},
		{ID: "tests/compatibility/agent_card/test_agent_card.py::TestCard::test_bad[jsonrpc]", Outcome: Failed, Message: "AssertionError: no"},
		{ID: "tests/mandatory/test_send.py::test_plain", Outcome: Skipped, Message: "not declared"},
		{ID: "tests/mandatory/test_send.py::test_setup", Outcome: Failed, Message: "fixture broke"},
		{ID: "tests/mandatory/test_send.py::test_plain2", Outcome: Passed},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseJUnit:\n got %+v\nwant %+v", got, want)
	}
	// A lone <testsuite> root reads the same.
	lone := strings.Replace(strings.Replace(junitXML, "<testsuites>", "", 1), "</testsuites>", "", 1)
	if got, err := parseJUnit(strings.NewReader(lone)); err != nil || len(got) != 5 {
		t.Errorf("lone testsuite: %d results, %v", len(got), err)
	}
	if _, err := parseJUnit(strings.NewReader("<html/>")); err == nil {
		t.Error("an HTML document parsed as JUnit")
	}
}

func TestParseExpected(t *testing.T) {
	suites, agents := []string{"0.3", "1.0"}, []string{"green", "purple"}
	list := `# comment

1.0 green,purple tests/a.py::test_a
    first line of the reason,
	second line.
0.3 green tests/b.py::test_b
    why
`
	got, err := parseExpected(strings.NewReader(list), suites, agents)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Reason != "first line of the reason, second line." || !slices.Equal(got[0].Agents, agents) || got[1].Suite != "0.3" {
		t.Errorf("parsed %+v", got)
	}
	for name, bad := range map[string]string{
		"no reason":       "1.0 green tests/a.py::test_a\n",
		"unknown suite":   "2.0 green tests/a.py::test_a\n  why\n",
		"unknown agent":   "1.0 blue tests/a.py::test_a\n  why\n",
		"missing id":      "1.0 green\n  why\n",
		"reason first":    "  why\n1.0 green tests/a.py::test_a\n",
		"listed twice":    "1.0 green tests/a.py::test_a\n  why\n1.0 green,purple tests/a.py::test_a\n  why\n",
		"spaces in an id": "1.0 green tests/a.py::test a\n  why\n",
	} {
		if _, err := parseExpected(strings.NewReader(bad), suites, agents); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestCompare(t *testing.T) {
	exp := []Expectation{
		{Suite: "1.0", Agents: []string{"green", "purple"}, ID: "t/listed_fails", Reason: "r"},
		{Suite: "1.0", Agents: []string{"green"}, ID: "t/listed_passes", Reason: "r"},
		{Suite: "1.0", Agents: []string{"green"}, ID: "t/listed_skipped", Reason: "r"},
		{Suite: "1.0", Agents: []string{"green"}, ID: "t/listed_gone", Reason: "r"},
		{Suite: "0.3", Agents: []string{"green"}, ID: "t/other_suite", Reason: "r"},
		{Suite: "1.0", Agents: []string{"purple"}, ID: "t/purple_only", Reason: "r"},
	}
	results := []Result{
		{ID: "t/listed_fails", Outcome: Failed},
		{ID: "t/listed_passes", Outcome: Passed},
		{ID: "t/listed_skipped", Outcome: Skipped},
		{ID: "t/new_failure", Outcome: Failed, Message: "boom"},
		{ID: "t/purple_only", Outcome: Failed},
		{ID: "t/fine", Outcome: Passed},
	}
	v := compare("1.0", "green", results, exp)
	ids := func(rs []Result) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if v.Passed != 2 || v.Failed != 3 || v.Skipped != 1 {
		t.Errorf("counts %d/%d/%d", v.Passed, v.Failed, v.Skipped)
	}
	for name, tc := range map[string]struct{ got, want []string }{
		"expected":        {ids(v.Expected), []string{"t/listed_fails"}},
		"unexpected":      {ids(v.Unexpected), []string{"t/new_failure", "t/purple_only"}},
		"unexpected pass": {ids(v.UnexpectedPass), []string{"t/listed_passes"}},
		"stale":           {ids(v.Stale), []string{"t/listed_skipped", "t/listed_gone"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", name, tc.got, tc.want)
		}
	}
	if v.OK() {
		t.Error("a run with unexpected results is OK")
	}
	var sum bytes.Buffer
	writeSummary(&sum, []*Verdict{v})
	for _, want := range []string{"| a2a-tck 1.0-dev (must) | green | 2 | 3 | 1 | 5 | 1 |", "unexpected failure: `t/new_failure`", "boom", "unexpected pass"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	clean := compare("1.0", "purple", []Result{{ID: "t/listed_fails", Outcome: Failed}, {ID: "t/purple_only", Outcome: Failed}}, exp)
	if !clean.OK() || len(clean.Expected) != 2 {
		t.Errorf("a run that matches the list: %+v", clean)
	}
}

// TestExpectedList: the checked-in list parses, and every entry's reason
// quotes the specification.
func TestExpectedList(t *testing.T) {
	var names []string
	for _, s := range suites() {
		names = append(names, s.Name)
	}
	exp, err := readExpected(filepath.Join("..", "..", "conformance", "expected-failures.txt"), names, []string{"green", "purple"})
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) == 0 {
		t.Fatal("the list is empty")
	}
	for _, e := range exp {
		if !strings.Contains(e.Reason, "§") || !strings.Contains(e.Reason, `"`) {
			t.Errorf("line %d: %s: the reason quotes no section of the specification", e.Line, e.ID)
		}
	}
}

// TestDescriptorSet: the set protoc reads holds the googleapis files and
// their imports, imports first.
func TestDescriptorSet(t *testing.T) {
	b, err := descriptorSet(googleProtos)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, f := range set.File {
		index[f.GetName()] = i
	}
	for _, f := range set.File {
		for _, dep := range f.GetDependency() {
			if j, ok := index[dep]; !ok || j > index[f.GetName()] {
				t.Errorf("%s imports %s, which is missing or comes after it", f.GetName(), dep)
			}
		}
	}
	for _, p := range append(googleProtos, "google/protobuf/descriptor.proto") {
		if _, ok := index[p]; !ok {
			t.Errorf("the set lacks %s", p)
		}
	}
	if _, err := descriptorSet([]string{"no/such.proto"}); err == nil {
		t.Error("an unknown file was found")
	}
}

// TestSkipWithoutSuites: without the snapshots the command says so and
// exits 0, or 2 under CI.
func TestSkipWithoutSuites(t *testing.T) {
	dir := t.TempDir()
	for ci, want := range map[string]int{"false": 0, "true": 2} {
		t.Setenv("CI", ci)
		var out, errOut bytes.Buffer
		if code := runMain(t.Context(), []string{"-tck", filepath.Join(dir, "none")}, &out, &errOut); code != want {
			t.Errorf("CI=%s: exit %d, want %d (%s%s)", ci, code, want, out.String(), errOut.String())
		}
		if !strings.Contains(out.String()+errOut.String(), "no TCK snapshot") {
			t.Errorf("CI=%s: output %q does not say what is missing", ci, out.String()+errOut.String())
		}
	}
	_ = os.Remove(dir)
}
