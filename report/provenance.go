package report

import (
	"fmt"
	"strings"

	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/tracedata"
)

// DescribeSetAside says in one line what was set aside, for warnings and
// the summary; "" when nothing was.
func DescribeSetAside(s *tracedata.SetAside) string {
	if s == nil || s.Spans == 0 {
		return ""
	}
	var parts []string
	if s.Impersonating > 0 {
		parts = append(parts, fmt.Sprintf("%d claimed to be the assessor's", s.Impersonating))
	}
	if s.Outside > 0 {
		p := fmt.Sprintf("%d lay outside the assessor's calls", s.Outside)
		if s.ParentMissing > 0 {
			p += fmt.Sprintf(" (%d with a parent missing from the trace)", s.ParentMissing)
		}
		parts = append(parts, p)
	}
	out := fmt.Sprintf("%d received spans set aside, not counted: %s", s.Spans, strings.Join(parts, ", "))
	if len(s.Claimed) > 0 {
		names := make([]string, len(s.Claimed))
		for i, n := range s.Claimed {
			names[i] = textutil.OneLine(n)
		}
		out += "; names they carried: " + strings.Join(names, ", ")
		if s.ClaimedMore > 0 {
			out += fmt.Sprintf(" and %d more", s.ClaimedMore)
		}
	}
	return out
}
