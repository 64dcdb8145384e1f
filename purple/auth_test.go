package purple

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

const teamToken = "team-Token.7"

// TestAuthTeam: agents that require a token answer only callers that send
// it, and a coordinator with the team's credentials reaches its reviewers,
// which require it too; every call is seen from both sides.
func TestAuthTeam(t *testing.T) {
	// The harness's Messenger sends the token as an API key.
	h := newHarness(t, a2acall.Options{Credentials: &a2acall.Credentials{
		Default: a2acall.Credential{Header: a2aserve.APIKeyHeader, Value: teamToken},
	}})
	team := &a2acall.Credentials{Default: a2acall.BearerCredential(teamToken)}
	sys := startSystem(t, h,
		AgentSpec{Options: Options{Name: "reviewer-1", OTLPEndpoint: "export", NoExtension: true, A2AToken: teamToken}},
		AgentSpec{Options: Options{Name: "reviewer-2", OTLPEndpoint: "export", NoExtension: true, A2AToken: teamToken}},
		AgentSpec{Options: Options{Name: "coordinator", Role: RoleCoordinator, OTLPEndpoint: "export", NoExtension: true,
			A2AToken: teamToken, PeerCredentials: team}, PeerNames: []string{"reviewer-1", "reviewer-2"}},
	)
	coord := sys.Agent("coordinator")
	if len(coord.Card().SecurityRequirements) == 0 {
		t.Error("the card declares no security requirement")
	}

	// A Messenger without credentials: 401.
	_, err := newHarness(t).m.Send(t.Context(), reviewRequest(coord.URL(), "t0"))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a call without the token: %v, want 401", err)
	}

	reply, td, err := h.call(t, reviewRequest(coord.URL(), "t1"))
	if err != nil {
		t.Fatalf("a call with the token: %v", err)
	}
	if !strings.Contains(reply.Text, "decision") {
		t.Errorf("reply %q", reply.Text)
	}
	wantEdges(t, td, "coordinator->reviewer-1:1/both", "coordinator->reviewer-2:1/both", "green->coordinator:1/both")
}

// TestOTLPHeadersFromEnvironment: a receiver that requires a token gets
// the agent's spans when OTEL_EXPORTER_OTLP_HEADERS carries it, in the
// standard form authorization=Bearer%20<token>, for the environment's
// exporter and for the --otlp-endpoint one alike, and when
// Options.OTLPHeaders does; without it, nothing arrives. A call that hands
// the agent an ingest token changes nothing of that: the exporter that
// adds the token's header keeps the others.
func TestOTLPHeadersFromEnvironment(t *testing.T) {
	for _, tc := range []otlpHeadersCase{
		{"environment's exporter, no header", "", false, nil, false},
		{"environment's exporter, bearer header", "authorization=Bearer%20" + teamToken, false, nil, true},
		{"environment's exporter, API key header", "x-api-key=" + teamToken, false, nil, true},
		{"environment's exporter, wrong token", "authorization=Bearer%20nope", false, nil, false},
		{"--otlp-endpoint, no header", "", true, nil, false},
		{"--otlp-endpoint, header from the environment", "authorization=Bearer%20" + teamToken, true, nil, true},
		{"--otlp-endpoint, Options.OTLPHeaders", "", true, map[string]string{"Authorization": "Bearer " + teamToken}, true},
	} {
		for _, ingestToken := range []string{"", "INGEST"} {
			name := tc.name
			if ingestToken != "" {
				name += ", ingest token"
			}
			t.Run(name, func(t *testing.T) { testOTLPHeaders(t, tc, ingestToken) })
		}
	}
}

type otlpHeadersCase struct {
	name        string
	envHeaders  string
	endpoint    bool // Options.OTLPEndpoint rather than OTEL_EXPORTER_OTLP_ENDPOINT
	optHeaders  map[string]string
	wantArrived bool
}

// testOTLPHeaders runs one case of TestOTLPHeadersFromEnvironment; with
// ingestToken the call hands the agent that ingest token.
func testOTLPHeaders(t *testing.T, tc otlpHeadersCase, ingestToken string) {
	auth, err := a2aserve.NewTokenAuth(teamToken, "otlp")
	if err != nil {
		t.Fatal(err)
	}
	store := tracestore.NewStore(tracestore.Limits{})
	var sawIngest atomic.Bool
	receiver := auth.Require(otlpreceiver.NewReceiver(store, otlpreceiver.ReceiverLimits{}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ingestToken != "" && r.Header.Get(otelmap.IngestTokenHeader) == ingestToken {
			sawIngest.Store(true)
		}
		receiver.ServeHTTP(w, r)
	}))
	defer srv.Close()
	// The SDK reads the process's environment; the agent reads
	// whether to export through Getenv.
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", tc.envHeaders)
	o := Options{Name: "exporter", NoExtension: true, FlushOnResponse: true, Logger: quiet, OTLPHeaders: tc.optHeaders}
	if tc.endpoint {
		o.OTLPEndpoint = srv.URL
		o.Getenv = noEnv
	} else {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
		o.Getenv = func(k string) string {
			if strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_") {
				return os.Getenv(k)
			}
			return ""
		}
	}
	s, err := NewServer(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	req := reviewRequest(s.URL(), "t1")
	if ingestToken != "" {
		req.Metadata = map[string]any{otelmap.IngestMetadataKey: map[string]any{"token": ingestToken, "otlp_header": otelmap.IngestTokenHeader}}
	}
	if _, err := newHarness(t).m.Send(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	fctx, fcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer fcancel()
	flushErr := s.ForceFlush(fctx)
	arrived := false
	for _, id := range store.TraceIDs() {
		for _, sp := range store.Spans(id) {
			if sp.Resource.ServiceName == "exporter" {
				arrived = true
			}
		}
	}
	if arrived != tc.wantArrived {
		t.Errorf("spans arrived: %v, want %v (flush: %v)", arrived, tc.wantArrived, flushErr)
	}
	if rejected := auth.Rejected() > 0; rejected == tc.wantArrived {
		t.Errorf("the receiver answered %d exports 401", auth.Rejected())
	}
	if ingestToken != "" && !sawIngest.Load() {
		t.Errorf("no export carried the ingest token")
	}
}
