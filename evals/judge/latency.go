package judge

// What the judge reads of the latency evaluator's result. The judge runs
// after it (tier 3 against latency's 2), and both its prompt and its rules
// use the numbers: the prompt gets a compact latency section that survives
// the truncation of the other evaluators' JSON, and the rule-based judge
// names an agent that held most of the critical path. Latencies compare only
// within one run on one machine (LatencyNote), so they are evidence, never a
// score term.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coordbench/coordbench/evals"
)

// ruleCriticalShare: an agent whose own time is more than this share of the
// critical path, on a path with two agents or more, is named as the one the
// others waited on.
const ruleCriticalShare = 0.5

// judgeLatencyView is the part of the latency result the judge uses, read
// through its JSON so that any result of that shape will do; every field may
// be absent.
type judgeLatencyView struct {
	Present bool
	Note    string
	// Overall p50 and p95 over the measured agents' steps.
	HasOverall bool
	P50MS      float64
	P95MS      float64
	// The slowest measured agent by p95.
	Slowest    string
	SlowestP95 float64
	// The critical path: its duration and each agent's share of it,
	// largest first.
	HasCritical bool
	CriticalMS  float64
	Shares      []judgeShare
}

type judgeShare struct {
	Agent string
	Share float64
}

// judgeReadLatency reads prior["latency"].
func judgeReadLatency(prior map[string]evals.Result) judgeLatencyView {
	r, ok := prior["latency"]
	if !ok || r == nil {
		return judgeLatencyView{}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return judgeLatencyView{}
	}
	var doc struct {
		Note    string `json:"note"`
		Overall *struct {
			P50MS float64 `json:"p50_ms"`
			P95MS float64 `json:"p95_ms"`
		} `json:"overall"`
		SlowestAgent *struct {
			Name  string  `json:"name"`
			P95MS float64 `json:"p95_ms"`
		} `json:"slowest_agent"`
		CriticalPath *struct {
			DurationMS float64            `json:"duration_ms"`
			AgentShare map[string]float64 `json:"agent_share"`
		} `json:"critical_path"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return judgeLatencyView{}
	}
	v := judgeLatencyView{Present: true, Note: doc.Note}
	if o := doc.Overall; o != nil {
		v.HasOverall, v.P50MS, v.P95MS = true, o.P50MS, o.P95MS
	}
	if s := doc.SlowestAgent; s != nil {
		v.Slowest, v.SlowestP95 = s.Name, s.P95MS
	}
	if c := doc.CriticalPath; c != nil {
		v.HasCritical, v.CriticalMS = true, c.DurationMS
		for agent, share := range c.AgentShare {
			v.Shares = append(v.Shares, judgeShare{agent, share})
		}
		slices.SortFunc(v.Shares, func(a, b judgeShare) int {
			if a.Share != b.Share {
				if a.Share > b.Share {
					return -1
				}
				return 1
			}
			return strings.Compare(a.Agent, b.Agent)
		})
	}
	return v
}

// promptLines renders the view for the judge's prompt: a few lines, the
// critical path's shares capped at promptListLines.
func (v judgeLatencyView) promptLines() []string {
	if !v.Present {
		return []string{"no latency result (the latency evaluator is off or failed)\n"}
	}
	var out []string
	if v.Note != "" {
		out = append(out, "note: "+v.Note+"\n")
	}
	if v.HasOverall {
		out = append(out, fmt.Sprintf("overall: p50_ms=%.1f p95_ms=%.1f\n", v.P50MS, v.P95MS))
	}
	if v.Slowest != "" {
		out = append(out, fmt.Sprintf("slowest agent: %s (p95_ms=%.1f)\n", v.Slowest, v.SlowestP95))
	}
	if v.HasCritical {
		parts := make([]string, 0, len(v.Shares))
		for i, s := range v.Shares {
			if i == promptListLines {
				parts = append(parts, fmt.Sprintf("[truncated: %d more]", len(v.Shares)-i))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Agent, 100*s.Share))
		}
		out = append(out, fmt.Sprintf("critical path: %.1f ms; own time on it: %s\n", v.CriticalMS, strings.Join(parts, ", ")))
	}
	if len(out) == 0 {
		out = append(out, "no timed step\n")
	}
	return out
}

// criticalHolder returns the agent that held more than ruleCriticalShare of
// the critical path, when the path has at least two agents (steps without an
// agent, "(none)", do not count as one).
func (v judgeLatencyView) criticalHolder() (judgeShare, bool) {
	agents := 0
	for _, s := range v.Shares {
		if s.Agent != "(none)" && s.Share > 0 {
			agents++
		}
	}
	if !v.HasCritical || agents < 2 || len(v.Shares) == 0 {
		return judgeShare{}, false
	}
	top := v.Shares[0]
	if top.Agent == "(none)" || top.Share <= ruleCriticalShare {
		return judgeShare{}, false
	}
	return top, true
}

// ruleLatencyEvidence is what the rule-based judge says about latency:
// nothing when the result is absent, else a weakness naming the agent the
// others waited on, if there is one.
func ruleLatencyEvidence(v judgeLatencyView) (weakness string) {
	top, ok := v.criticalHolder()
	if !ok {
		return ""
	}
	s := fmt.Sprintf("%s's own work took %.0f%% of the critical path (%.0f ms): the other agents waited on it",
		top.Agent, 100*top.Share, v.CriticalMS)
	if v.Slowest == top.Agent {
		s += fmt.Sprintf("; it is also the slowest agent (p95 %.0f ms)", v.SlowestP95)
	}
	return s
}
