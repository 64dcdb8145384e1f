package loopback

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/purple"
	"github.com/coordbench/coordbench/scenario"
)

// TestHarness: an assessment request without participants is rejected,
// and Assess says so; Stop stops the team still running, and the green
// agent.
func TestHarness(t *testing.T) {
	coord, err := stubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(t.Context(), Options{Green: green.ServerOptions{
		Scenarios: map[string]scenario.Scenario{scenario.Coordination: coord},
		Getenv:    noDemoEnv, Logger: quietLogger,
	}, CallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	team, err := h.StartTeam(t.Context(), []purple.AgentSpec{{Options: purple.Options{Name: "solo", Getenv: noDemoEnv}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Assess(t.Context(), map[string]string{}, map[string]any{}); err == nil || !strings.Contains(err.Error(), "is missing or empty") {
		t.Errorf("an assessment without participants: %v", err)
	}
	agent := team.Agent("solo").URL()
	if resp, err := http.Get(agent + "/.well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if err := h.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	for _, u := range []string{agent, h.URL()} {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			t.Errorf("%s still answers after Stop", u)
		}
	}
	if err := team.Stop(); err != nil {
		t.Errorf("the team's own stop after the harness's: %v", err)
	}
}
