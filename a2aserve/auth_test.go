package a2aserve

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

const testToken = "s3cret-Token_1"

// echo answers every message with "ok".
type echo struct{}

func (echo) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("ok"))
		msg.ContextID = ec.ContextID
		yield(msg, nil)
	}
}

func (echo) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// startAgent serves an echo agent behind auth on loopback.
func startAgent(t *testing.T, auth *TokenAuth) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	u := "http://" + srv.Listener.Addr().String() + "/"
	card := &a2a.AgentCard{
		Name: "echo", Description: "echo", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: u, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{},
	}
	auth.Declare(card)
	mux, err := NewHandler(Options{Card: card, Executor: echo{}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = auth.RequireA2A(mux)
	srv.Start()
	t.Cleanup(srv.Close)
	return u
}

// Bodies of a message send in each protocol version.
const (
	send10 = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`
	send03 = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
)

func authPost(t *testing.T, u, body string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestTokenAuthA2A: over loopback, JSON-RPC of both protocol versions is
// answered 401 with a Bearer challenge without a token or with a wrong one,
// and served with the right one as a bearer token or an API key; the card
// and the health check stay public.
func TestTokenAuthA2A(t *testing.T) {
	auth, err := NewTokenAuth(testToken, "test-a2a")
	if err != nil {
		t.Fatal(err)
	}
	u := startAgent(t, auth)
	for _, body := range []string{send10, send03} {
		for _, tc := range []struct {
			name      string
			header    http.Header
			status    int
			challenge string
		}{
			{"missing", nil, 401, `Bearer realm="test-a2a"`},
			{"wrong bearer", http.Header{"Authorization": {"Bearer " + testToken + "x"}}, 401, `Bearer realm="test-a2a", error="invalid_token"`},
			{"shorter bearer", http.Header{"Authorization": {"Bearer s3cret"}}, 401, `Bearer realm="test-a2a", error="invalid_token"`},
			{"wrong scheme", http.Header{"Authorization": {"Basic " + testToken}}, 401, `Bearer realm="test-a2a"`},
			{"wrong key", http.Header{APIKeyHeader: {"nope"}}, 401, `Bearer realm="test-a2a", error="invalid_token"`},
			{"right bearer", http.Header{"Authorization": {"Bearer " + testToken}}, 200, ""},
			{"right bearer, scheme in lower case", http.Header{"Authorization": {"bearer " + testToken}}, 200, ""},
			{"right key", http.Header{APIKeyHeader: {testToken}}, 200, ""},
		} {
			resp, got := authPost(t, u, body, tc.header)
			if resp.StatusCode != tc.status {
				t.Errorf("%s, %.40s: status %d, want %d: %s", tc.name, body, resp.StatusCode, tc.status, got)
				continue
			}
			if c := resp.Header.Get("WWW-Authenticate"); c != tc.challenge {
				t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, c, tc.challenge)
			}
			if tc.status == 401 {
				var rpc struct {
					Error struct {
						Code int `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(got), &rpc); err != nil || rpc.Error.Code != -31401 {
					t.Errorf("%s: body %q, want a JSON-RPC error -31401", tc.name, got)
				}
				if strings.Contains(got, testToken) {
					t.Errorf("%s: the 401 repeats the token", tc.name)
				}
				continue
			}
			if !strings.Contains(got, `"ok"`) {
				t.Errorf("%s: the agent did not answer: %s", tc.name, got)
			}
		}
	}
	for _, path := range []string{"", ".well-known/agent-card.json", "gateway/purple/.well-known/agent-card.json", strings.TrimPrefix(LegacyCardPath, "/"), strings.TrimPrefix(HealthPath, "/")} {
		resp, err := http.Get(u + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /%s without a token: %d, want 200 (public)", path, resp.StatusCode)
		}
	}
	// Only the card's GET is public: other methods on its path, and GETs
	// of other paths, need the token.
	if resp, _ := authPost(t, u+".well-known/agent-card.json", send10, nil); resp.StatusCode != 401 {
		t.Errorf("POST to the card's path without a token: %d, want 401", resp.StatusCode)
	}
	if resp, err := http.Get(u + "tasks"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 401 {
		t.Errorf("GET /tasks without a token: %d, want 401", resp.StatusCode)
	}
	if n := auth.Rejected(); n != 12 {
		t.Errorf("Rejected() = %d, want 12", n)
	}
}

// TestTokenAuthCard: the card declares both schemes, as alternatives, in
// the 1.0 fields a2a-go's resolver reads and the 0.3 fields (type, in,
// security) a 0.3 client reads.
func TestTokenAuthCard(t *testing.T) {
	auth, err := NewTokenAuth(testToken, "")
	if err != nil {
		t.Fatal(err)
	}
	u := startAgent(t, auth)
	// a2a-go's resolver, with its default 1.0 parser and with a2av0's
	// parser of both generations (which the Messenger uses).
	for _, parse := range []agentcard.Parser{agentcard.DefaultCardParser, a2av0.NewAgentCardParser()} {
		card, err := (&agentcard.Resolver{CardParser: parse}).Resolve(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		checkDeclared(t, card)
	}

	resp, err := http.Get(u + ".well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var legacy struct {
		SecuritySchemes map[string]struct {
			Type   string `json:"type"`
			Scheme string `json:"scheme"`
			In     string `json:"in"`
			Name   string `json:"name"`
		} `json:"securitySchemes"`
		Security []map[string][]string `json:"security"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&legacy); err != nil {
		t.Fatal(err)
	}
	b, k := legacy.SecuritySchemes["bearer"], legacy.SecuritySchemes["apiKey"]
	if b.Type != "http" || !strings.EqualFold(b.Scheme, "bearer") || k.Type != "apiKey" || k.In != "header" || k.Name != APIKeyHeader {
		t.Errorf("0.3 security schemes: %+v", legacy.SecuritySchemes)
	}
	if len(legacy.Security) != 2 {
		t.Errorf("0.3 security %v, want two alternatives", legacy.Security)
	}

	// Auth off: the card declares nothing.
	var off *TokenAuth
	plain := startAgent(t, off)
	card, err := (&agentcard.Resolver{}).Resolve(t.Context(), plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(card.SecuritySchemes) != 0 || len(card.SecurityRequirements) != 0 {
		t.Errorf("auth off, the card declares %v %v", card.SecuritySchemes, card.SecurityRequirements)
	}
	if resp, got := authPost(t, plain, send10, nil); resp.StatusCode != 200 {
		t.Errorf("auth off, a request without a token: %d %s", resp.StatusCode, got)
	}
}

// checkDeclared: the card declares the bearer and the API key schemes, as
// alternatives.
func checkDeclared(t *testing.T, card *a2a.AgentCard) {
	t.Helper()
	if s, ok := card.SecuritySchemes[BearerSchemeName].(a2a.HTTPAuthSecurityScheme); !ok || !strings.EqualFold(s.Scheme, "bearer") {
		t.Errorf("bearer scheme: %#v", card.SecuritySchemes[BearerSchemeName])
	}
	if s, ok := card.SecuritySchemes[APIKeySchemeName].(a2a.APIKeySecurityScheme); !ok || s.Name != APIKeyHeader || s.Location != a2a.APIKeySecuritySchemeLocationHeader {
		t.Errorf("API key scheme: %#v", card.SecuritySchemes[APIKeySchemeName])
	}
	want := a2a.SecurityRequirementsOptions{{BearerSchemeName: {}}, {APIKeySchemeName: {}}}
	if len(card.SecurityRequirements) != 2 || len(card.SecurityRequirements[0]) != 1 || card.SecurityRequirements[0][BearerSchemeName] == nil ||
		len(card.SecurityRequirements[1]) != 1 || card.SecurityRequirements[1][APIKeySchemeName] == nil {
		t.Errorf("security requirements %v, want %v", card.SecurityRequirements, want)
	}
}

// TestTokenAuthRequire: Require guards every request, and a nil TokenAuth
// returns the handler itself.
func TestTokenAuthRequire(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "in") })
	auth, err := NewTokenAuth(testToken, "otlp")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Require(ok))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="otlp"` {
		t.Errorf("GET / without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ := authPost(t, srv.URL+"/v1/traces", "", http.Header{"Authorization": {"Bearer " + testToken}}); resp.StatusCode != 200 {
		t.Errorf("with the token: %d", resp.StatusCode)
	}
	var off *TokenAuth
	if h := off.Require(ok); h == nil || !off.Authorized(httptest.NewRequest("GET", "/", nil)) {
		t.Error("a nil TokenAuth must admit everything")
	}
}

// TestTokenEqual: the comparator accepts the token and refuses every other
// string, of the same length, shorter, longer, a prefix, empty.
func TestTokenEqual(t *testing.T) {
	want := sha256.Sum256([]byte(testToken))
	if !tokenEqual(testToken, &want) {
		t.Error("the token itself is refused")
	}
	for _, other := range []string{"", "s", "s3cret", testToken[:len(testToken)-1], testToken + "1",
		strings.ToUpper(testToken), "x3cret-Token_1", testToken + testToken} {
		if tokenEqual(other, &want) {
			t.Errorf("%q accepted", other)
		}
	}
}

// TestTokenEqualIsConstantTime reads auth.go: tokenEqual compares through
// crypto/subtle.ConstantTimeCompare, and the expected token's digest is
// read nowhere else, so no other comparison can short-circuit.
func TestTokenEqualIsConstantTime(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "auth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	usesSubtle := false
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && fn.Name.Name == "tokenEqual" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "subtle" && sel.Sel.Name == "ConstantTimeCompare" {
						usesSubtle = true
					}
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "digest" && fn.Name.Name != "NewTokenAuth" && fn.Name.Name != "Authorized" {
					t.Errorf("%s reads the token's digest; only tokenEqual may compare it", fn.Name.Name)
				}
			case *ast.BinaryExpr:
				if fn.Name.Name == "tokenEqual" && (n.Op == token.EQL || n.Op == token.NEQ) {
					if _, lit := n.Y.(*ast.BasicLit); !lit {
						t.Errorf("tokenEqual compares with %s", n.Op)
					}
				}
			}
			return true
		})
	}
	if !usesSubtle {
		t.Error("tokenEqual does not call subtle.ConstantTimeCompare")
	}
}

func TestNewTokenAuthRefusesBadTokens(t *testing.T) {
	for _, tok := range []string{"", "a b", "tab\there", "new\nline", "ünïcode", strings.Repeat("x", maxTokenBytes+1)} {
		if _, err := NewTokenAuth(tok, ""); err == nil {
			t.Errorf("token %q accepted", tok)
		} else if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
	if _, err := NewTokenAuth("ok", `bad"realm`); err == nil {
		t.Error("a realm with a quote accepted")
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte(strings.Repeat("x", maxTokenBytes+10)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvA2AToken {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name   string
		getenv func(string) string
		file   string
		want   string
		err    bool
	}{
		{"nothing", env(""), "", "", false},
		{"env", env(" " + testToken + "\n"), "", testToken, false},
		{"file", env(""), file, testToken, false},
		{"both", env("x"), file, "", true},
		{"empty file", env(""), empty, "", true},
		{"missing file", env(""), filepath.Join(dir, "nope"), "", true},
		{"long file", env(""), long, "", true},
		{"bad env", env("a b"), "", "", true},
	} {
		got, err := ReadToken(tc.getenv, EnvA2AToken, tc.file)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: %q, %v", tc.name, got, err)
		}
	}
}
