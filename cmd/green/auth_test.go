package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/green"
)

// startLockedReviewer is startReviewer behind a token.
func startLockedReviewer(t *testing.T, token string) string {
	t.Helper()
	auth, err := a2aserve.NewTokenAuth(token, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/"
	srv.Config.Handler = auth.RequireA2A(reviewerMux(url))
	srv.Start()
	t.Cleanup(srv.Close)
	return url
}

// TestRunParticipantTokens: `green run` reaches a participant that
// requires a token with the credentials of --participant-tokens-file, and
// fails its calls without them.
func TestRunParticipantTokens(t *testing.T) {
	url := startLockedReviewer(t, "reviewer-Token")
	file := filepath.Join(t.TempDir(), "participants")
	if err := os.WriteFile(file, []byte("# the league's reviewer\n"+url+" reviewer-Token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envParticipantTokensFile, "")
	for _, withTokens := range []bool{true, false} {
		args := []string{"run", "--participant", "reviewer=" + url, "--titles-only",
			"--config", `{"task_ids": ["iclr2017-305"], "settle_quiet_ms": 50}`}
		if withTokens {
			args = append(args, "--participant-tokens-file", file)
		}
		code, stdout, stderr := runGreen(t, args...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		var res struct {
			Tasks []struct {
				Outcome struct {
					Success bool `json:"success"`
				} `json:"outcome"`
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || len(res.Tasks) != 1 {
			t.Fatalf("result: %v\n%s", err, stdout)
		}
		if res.Tasks[0].Outcome.Success != withTokens {
			t.Errorf("with tokens %v: success %v\n%s", withTokens, res.Tasks[0].Outcome.Success, stderr)
		}
		if !withTokens && !strings.Contains(stdout+stderr, "401") {
			t.Errorf("without tokens, the result does not say 401:\n%s", stdout)
		}
	}
}

// TestServeAuth: `green serve` takes the A2A token from the environment
// and the OTLP token from a file, and requires each where it belongs.
func TestServeAuth(t *testing.T) {
	otlpFile := filepath.Join(t.TempDir(), "otlp-token")
	if err := os.WriteFile(otlpFile, []byte("otlp-Token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(a2aserve.EnvA2AToken, "a2a-Token")
	t.Setenv(a2aserve.EnvA2ATokenFile, "")
	t.Setenv(a2aserve.EnvOTLPToken, "")
	t.Setenv(a2aserve.EnvOTLPTokenFile, "")
	t.Setenv(envParticipantTokensFile, "")
	ready := make(chan *green.Server, 1)
	serveReady = func(s *green.Server) { ready <- s }
	defer func() { serveReady = nil }()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"--host", "127.0.0.1", "--port", "0", "--otlp-token-file", otlpFile, "--shutdown-timeout", "5s"}, &stdout, &stderr)
	}()
	var srv *green.Server
	select {
	case srv = <-ready:
	case c := <-code:
		t.Fatalf("green exited %d: %s", c, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("green did not start")
	}
	post := func(path, header, value string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}`))
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, header, value string
		want                int
	}{
		{"", "", "", 401},
		{"", "Authorization", "Bearer otlp-Token", 401},
		{"", "Authorization", "Bearer a2a-Token", 200},
		{"v1/traces", "", "", 401},
		{"v1/traces", "Authorization", "Bearer a2a-Token", 401},
		// Past the token, the receiver answers (and refuses a body that is
		// not OTLP): anything but 401.
		{"v1/traces", "Authorization", "Bearer otlp-Token", 0},
	} {
		if got := post(tc.path, tc.header, tc.value); got != tc.want && (tc.want != 0 || got == 401) {
			t.Errorf("POST /%s with %s %q: %d, want %d", tc.path, tc.header, tc.value, got, tc.want)
		}
	}
	if !strings.Contains(stderr.String(), "a2a_auth=true otlp_auth=true") {
		t.Errorf("the log does not say auth is on:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "a2a-Token") || strings.Contains(stderr.String(), "otlp-Token") {
		t.Errorf("the log repeats a token:\n%s", stderr.String())
	}
	terminateSelf(t)
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d after SIGTERM: %s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("green did not stop on SIGTERM")
	}
}

func TestServeAuthBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("file-Token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(a2aserve.EnvA2ATokenFile, "")
	t.Setenv(a2aserve.EnvOTLPTokenFile, "")
	t.Setenv(a2aserve.EnvOTLPToken, "")
	t.Setenv(envParticipantTokensFile, "")
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"env-Token", []string{"--a2a-token-file", file}, "set one"},
		{"", []string{"--a2a-token-file", filepath.Join(dir, "missing")}, "A2A token"},
		{"bad token", nil, "A2A token"},
		{"", []string{"--participant-tokens-file", filepath.Join(dir, "missing")}, "participant tokens"},
	} {
		t.Setenv(a2aserve.EnvA2AToken, tc.env)
		var stdout, stderr bytes.Buffer
		c := run(append([]string{"serve", "--port", "0"}, tc.args...), &stdout, &stderr)
		if c != 2 || !strings.Contains(stderr.String(), tc.want) || strings.Contains(stderr.String(), "bad token") {
			t.Errorf("%v %q: exit %d: %s", tc.args, tc.env, c, stderr.String())
		}
	}
}
