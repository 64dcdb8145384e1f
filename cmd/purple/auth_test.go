package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthOptions: the A2A token comes from $COORDBENCH_A2A_TOKEN or a
// file (never from a flag value), the peers' credentials from a file; bad
// or doubled sources exit 2 without repeating the token.
func TestAuthOptions(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	peersFile := filepath.Join(dir, "peers")
	if err := os.WriteFile(tokenFile, []byte("file-Token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(peersFile, []byte("http://reviewer-1:9009 peer-Token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	var stderr bytes.Buffer
	o, code := options(command(io.Discard, &stderr), nil, getenv)
	if code >= 0 || o.A2AToken != "" || o.PeerCredentials != nil {
		t.Fatalf("no auth configured: exit %d, token %q, peers %v: %s", code, o.A2AToken, o.PeerCredentials, stderr.String())
	}

	env["COORDBENCH_A2A_TOKEN"] = "env-Token"
	if o, code = options(command(io.Discard, &stderr), nil, getenv); code >= 0 || o.A2AToken != "env-Token" {
		t.Errorf("token from the environment: exit %d, %q", code, o.A2AToken)
	}
	delete(env, "COORDBENCH_A2A_TOKEN")
	if o, code = options(command(io.Discard, &stderr), []string{"--a2a-token-file", tokenFile, "--peer-tokens-file", peersFile}, getenv); code >= 0 || o.A2AToken != "file-Token" {
		t.Errorf("token from a file: exit %d, %q", code, o.A2AToken)
	}
	if c, ok := o.PeerCredentials.For("http://reviewer-1:9009/"); !ok || c.Value != "Bearer peer-Token" {
		t.Errorf("peer credentials: %+v %v", c, ok)
	}
	env["COORDBENCH_A2A_TOKEN_FILE"], env["COORDBENCH_PEER_TOKENS_FILE"] = tokenFile, peersFile
	if o, code = options(command(io.Discard, &stderr), nil, getenv); code >= 0 || o.A2AToken != "file-Token" || o.PeerCredentials == nil {
		t.Errorf("files named by the environment: exit %d, %q, %v", code, o.A2AToken, o.PeerCredentials)
	}

	env["COORDBENCH_A2A_TOKEN"] = "env-Token"
	stderr.Reset()
	if _, code = options(command(io.Discard, &stderr), nil, getenv); code != 2 || !strings.Contains(stderr.String(), "set one") {
		t.Errorf("a token in the environment and a file: exit %d: %s", code, stderr.String())
	}
	env["COORDBENCH_A2A_TOKEN"], env["COORDBENCH_A2A_TOKEN_FILE"] = "bad token", ""
	stderr.Reset()
	if _, code = options(command(io.Discard, &stderr), nil, getenv); code != 2 || strings.Contains(stderr.String(), "bad token") {
		t.Errorf("a bad token: exit %d: %s", code, stderr.String())
	}
	delete(env, "COORDBENCH_A2A_TOKEN")
	env["COORDBENCH_PEER_TOKENS_FILE"] = filepath.Join(dir, "missing")
	stderr.Reset()
	if _, code = options(command(io.Discard, &stderr), nil, getenv); code != 2 || !strings.Contains(stderr.String(), "peer tokens") {
		t.Errorf("a missing peers file: exit %d: %s", code, stderr.String())
	}
}
