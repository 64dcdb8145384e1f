package scicode_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/coordbench/coordbench/scenario/scicode"
)

// TestRecordCapIsTheJudgesBound holds the sandbox's cap on a run's records
// to the judge's bound on what it reads: were the cap larger, a run between
// the two would pass the sandbox and be refused by the judge as
// invalid_result instead of stopping as over its records limit.
func TestRecordCapIsTheJudgesBound(t *testing.T) {
	src, err := os.ReadFile("py/judge_records.py")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MAX_BYTES = (\d+) << (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("py/judge_records.py defines no MAX_BYTES = N << K")
	}
	n, _ := strconv.Atoi(string(m[1]))
	k, _ := strconv.Atoi(string(m[2]))
	if got := int64(n) << k; got != scicode.DefaultRecordCap {
		t.Errorf("the judge reads %d bytes of records, the sandbox caps a run at %d", got, scicode.DefaultRecordCap)
	}
}
