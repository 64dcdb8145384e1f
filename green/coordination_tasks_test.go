package green

import (
	"strings"
	"testing"
)

// TestNewCoordinationScenarioFromTasks: tasks held in memory are checked
// as a ground truth file and the data set are: a task whose paper says
// otherwise than its entry, or an entry the ground truth's rules refuse,
// is an error.
func TestNewCoordinationScenarioFromTasks(t *testing.T) {
	gt, err := LoadGroundTruth(groundTruthTestPath(t))
	if err != nil {
		t.Fatal(err)
	}
	sc := gt.Scenarios[0]
	accepted := sc.Paper.Decision != nil && *sc.Paper.Decision == DecisionAccept
	paper := func(title string) *Paper {
		return &Paper{Venue: sc.Paper.Venue, Split: sc.Paper.Split, ID: sc.Paper.ID, Title: title, Abstract: "An abstract.",
			Accepted: &accepted, Scale: sc.Paper.RecommendationScale, MeanRecommendation: sc.Paper.MeanRecommendation,
			NormalizedRecommendation: sc.Paper.NormalizedRecommendation, ScoredReviews: sc.Paper.ScoredReviews}
	}
	s, err := NewCoordinationScenarioFromTasks([]CoordinationTask{{Scenario: sc, Paper: paper(sc.Paper.Title)}}, CoordinationOptions{})
	if err != nil {
		t.Fatalf("a task that matches its paper: %v", err)
	}
	if len(s.tasks) != 1 || s.tasks[0].Paper == nil || s.GroundTruth().Scenarios[0].ID != sc.ID || s.PeerReadDir() != "" {
		t.Errorf("scenario %+v", s)
	}
	if text, _ := s.reviewRequest(s.tasks[0]); !strings.Contains(text, "An abstract.") {
		t.Errorf("the request does not carry the abstract:\n%s", text)
	}
	if s, err := NewCoordinationScenarioFromTasks([]CoordinationTask{{Scenario: sc, Paper: paper(sc.Paper.Title)}}, CoordinationOptions{TitlesOnly: true}); err != nil || s.tasks[0].Paper != nil {
		t.Errorf("titles only: %v", err)
	}
	if _, err := NewCoordinationScenarioFromTasks([]CoordinationTask{{Scenario: sc, Paper: paper("Another Title")}}, CoordinationOptions{}); err == nil || !strings.Contains(err.Error(), "Another Title") {
		t.Errorf("a paper with another title: %v", err)
	}
	bad := sc
	bad.Topology.Entry = "nobody"
	if _, err := NewCoordinationScenarioFromTasks([]CoordinationTask{{Scenario: bad}}, CoordinationOptions{}); err == nil {
		t.Error("an entry agent outside the topology was accepted")
	}
	if _, err := NewCoordinationScenarioFromTasks(nil, CoordinationOptions{}); err == nil {
		t.Error("no tasks accepted")
	}
}
