package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

func TestSetAsideInTheResultAndSummary(t *testing.T) {
	r := summaryFixture()
	r.Tasks[0].SetAside = &tracedata.SetAside{Spans: 3, Impersonating: 1, Outside: 2, ParentMissing: 1,
		Claimed: []string{"coordbench-green", "hijacked\nnext line"}, ClaimedMore: 4}
	md := Summary(r)
	want := "- ⚠ Provenance: 3 received spans set aside, not counted: 1 claimed to be the assessor's, " +
		"2 lay outside the assessor's calls (1 with a parent missing from the trace); " +
		"names they carried: coordbench-green, hijacked next line and 4 more (see docs/trace-assembly.md#provenance)\n"
	if !strings.Contains(md, want) {
		t.Errorf("summary lacks\n%s\nin\n%s", want, md)
	}
	if n := strings.Count(md, "Provenance:"); n != 1 {
		t.Errorf("%d provenance lines, want 1 (the other tasks set nothing aside)", n)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Tasks[0].SetAside; got == nil || got.Spans != 3 || got.ParentMissing != 1 || len(got.Claimed) != 2 {
		t.Errorf("set_aside after a round trip: %+v", got)
	}
	if back.Tasks[1].SetAside != nil || strings.Count(string(raw), `"set_aside"`) != 1 {
		t.Errorf("set_aside is not omitted when nothing was set aside: %s", raw)
	}
	if DescribeSetAside(nil) != "" {
		t.Error("nil SetAside describes something")
	}
}
