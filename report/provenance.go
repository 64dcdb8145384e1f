package report

import (
	"fmt"
	"strings"

	"github.com/coordbench/coordbench/internal/textutil"
)

// SetAside is what a task's trace lost to provenance (docs/trace-assembly.md,
// "Provenance"): spans that reached the assessor by OTLP or the
// Traceability Extension and that it could not vouch for.
type SetAside struct {
	// Spans counts the spans set aside: Impersonating + Outside.
	Spans int `json:"spans"`
	// Impersonating spans claimed the assessor's identity.
	Impersonating int `json:"impersonating,omitempty"`
	// Outside spans did not descend from any call the assessor made;
	// ParentMissing of them had a parent that is not in the trace.
	Outside       int `json:"outside,omitempty"`
	ParentMissing int `json:"parent_missing,omitempty"`
	// Claimed are the service and agent names the spans carried, sorted and
	// clipped; ClaimedMore counts the names left off.
	Claimed     []string `json:"claimed,omitempty"`
	ClaimedMore int      `json:"claimed_more,omitempty"`
}

// Describe says in one line what was set aside, for warnings and the
// summary.
func (s *SetAside) Describe() string {
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
