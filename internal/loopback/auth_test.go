package loopback

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/evals/judge"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/llmconfig"
	"github.com/coordbench/coordbench/scenario"
)

// TestAuthenticatedAssessment runs the demo's assessment with every
// endpoint behind a token: the green agent's A2A endpoint (the client sends
// its token), its OTLP receiver (the purple agents that export send the
// OTLP token), and every purple agent (the green agent's Messenger and the
// coordinator send the team's token). The assessment sees what the open
// demo sees: every call from both sides, spans by all three roads; no
// request of the agents was refused, and a client without the token is.
func TestAuthenticatedAssessment(t *testing.T) {
	t.Setenv(llmconfig.EnvAPIKey, "")
	const greenToken, otlpToken, teamToken = "green-Token", "otlp-Token", "team-Token"
	sc, err := stubCoordinationScenario()
	if err != nil {
		t.Fatal(err)
	}
	team := &a2acall.Credentials{Default: a2acall.BearerCredential(teamToken)}
	h, err := Start(t.Context(), Options{
		Green: green.ServerOptions{
			Scenarios: map[string]scenario.Scenario{scenario.Coordination: sc},
			Getenv:    noDemoEnv, Logger: quietLogger,
			A2AToken: greenToken, OTLPToken: otlpToken,
			Messenger: a2acall.Options{Credentials: team},
		},
		CallTimeout:       2 * time.Minute,
		Logger:            quietLogger,
		ClientCredentials: &a2acall.Credentials{Default: a2acall.BearerCredential(greenToken)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	opts := DemoOptions{Getenv: noDemoEnv, Logger: quietLogger,
		Config: evals.Config{Evaluators: map[string]bool{judge.Name: false}}}.withDefaults()
	specs := demoTeam(h.URL(), opts, quietLogger)
	for i := range specs {
		specs[i].A2AToken = teamToken
		specs[i].PeerCredentials = team
		if specs[i].OTLPEndpoint != "" {
			specs[i].OTLPHeaders = map[string]string{"Authorization": "Bearer " + otlpToken}
		}
	}
	purples, err := h.StartTeam(t.Context(), specs)
	if err != nil {
		t.Fatal(err)
	}

	// A client without the green agent's token is refused.
	plain := a2acall.New(noop.NewTracerProvider(), nil, a2acall.Options{CallTimeout: time.Minute, Logger: quietLogger})
	defer func() { _ = plain.Close() }()
	if _, err := plain.Send(t.Context(), a2acall.SendRequest{URL: h.URL(), Text: "{}"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a client without the token: %v, want 401", err)
	}

	res, err := demoAssess(t.Context(), h, purples.URLs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != len(demoPapers) {
		t.Fatalf("%d tasks, want %d", len(res.Tasks), len(demoPapers))
	}
	for _, task := range res.Tasks {
		checkDemoTask(t, task)
	}
	if a2aRejected, otlpRejected := h.Green().Rejected(); a2aRejected != 1 || otlpRejected != 0 {
		t.Errorf("the green agent refused %d A2A requests (want 1, the plain client's) and %d OTLP exports (want 0)", a2aRejected, otlpRejected)
	}
}
