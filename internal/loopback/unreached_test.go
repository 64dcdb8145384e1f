package loopback

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/report"
	"github.com/coordbench/coordbench/scenario"
)

// refusedURL is a loopback URL where nothing listens.
func refusedURL(t *testing.T) (url, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", Host+":0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/", addr
}

// TestSummaryOfUnreachableAgents: through the green agent on loopback, a
// participant nobody listens for is one node of the summary's graph, named
// by its role, and its line and the task's outcome quote the whole cause;
// a coordinator whose peer is unreachable fails its task, and the outcome
// quotes that cause to its end too.
func TestSummaryOfUnreachableAgents(t *testing.T) {
	coord, err := stubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(t.Context(), Options{Green: green.ServerOptions{
		Scenarios: map[string]scenario.Scenario{scenario.Coordination: coord},
		Getenv:    noDemoEnv, Logger: quietLogger,
	}, CallTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop() })
	config := map[string]any{"num_tasks": 1, "settle_quiet_ms": 50, "settle_max_wait_ms": 2000}
	summary := func(participants map[string]string) string {
		t.Helper()
		raw, err := h.Assess(t.Context(), participants, config)
		if err != nil {
			t.Fatal(err)
		}
		res, err := report.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		return report.Summary(res)
	}
	const cause = "connect: connection refused"

	t.Run("participant", func(t *testing.T) {
		url, addr := refusedURL(t)
		md := summary(map[string]string{"agent": url})
		notReached := lineWith(md, "- Not reached: **agent** at "+addr+" — 1 call, 1 error: ")
		if !strings.HasSuffix(notReached, cause) {
			t.Errorf("the unreachable participant's line %q does not end with the cause:\n%s", notReached, md)
		}
		if outcome := lineWith(md, "- Outcome: **fail**"); !strings.HasSuffix(outcome, cause) {
			t.Errorf("outcome %q does not end with the cause", outcome)
		}
		block := md[strings.Index(md, "```mermaid"):]
		block = block[:strings.Index(block[3:], "```")+3]
		if !strings.Contains(block, `n_agent["agent (`+addr+`, not reached)"]`) || strings.Contains(block, "n_127") ||
			strings.Count(block, addr) != 1 {
			t.Errorf("the participant is not drawn once, by its role:\n%s", block)
		}
	})

	t.Run("peer", func(t *testing.T) {
		peerURL, _ := refusedURL(t)
		team, err := h.StartTeam(t.Context(), []purple.AgentSpec{{Options: purple.Options{
			Name: "coordinator", Role: purple.RoleCoordinator, Getenv: noDemoEnv, Logger: quietLogger,
			Peers: []purple.Peer{{Name: "reviewer-1", URL: peerURL}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = team.Stop() }()
		md := summary(map[string]string{"coordinator": team.Agent("coordinator").URL()})
		outcome := lineWith(md, "- Outcome: **fail**")
		if !strings.Contains(outcome, "reviewer-1") || !strings.HasSuffix(strings.TrimSuffix(outcome, `"`), cause) {
			t.Errorf("outcome %q does not quote the peer's failure to its cause:\n%s", outcome, md)
		}
	})
}

// lineWith is the first line of md that starts with prefix, or "".
func lineWith(md, prefix string) string {
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
