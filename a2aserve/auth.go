package a2aserve

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// This file: optional token authentication of an agent's endpoints. One
// secret token per endpoint (the A2A JSON-RPC endpoint, the OTLP receiver),
// presented either as a bearer token or as an API key; the agent card stays
// public and declares both ways in the security schemes that A2A 1.0 and
// 0.3 clients read. Off (a nil *TokenAuth) changes nothing.

// Security scheme names the card declares, and the API key's header.
const (
	BearerSchemeName a2a.SecuritySchemeName = "bearer"
	APIKeySchemeName a2a.SecuritySchemeName = "apiKey"
	APIKeyHeader                            = "X-API-Key"
)

// Environment variables the commands read tokens from (or, with the _FILE
// suffix, the path of a file holding one). A token never comes from a flag
// value, which any user of the machine sees in ps.
const (
	EnvA2AToken      = "COORDBENCH_A2A_TOKEN"
	EnvA2ATokenFile  = "COORDBENCH_A2A_TOKEN_FILE"
	EnvOTLPToken     = "COORDBENCH_OTLP_TOKEN"
	EnvOTLPTokenFile = "COORDBENCH_OTLP_TOKEN_FILE"
)

// maxTokenBytes bounds a token (and a token file).
const maxTokenBytes = 4096

// TokenAuth admits the requests that carry one secret token, as
// "Authorization: Bearer <token>" (RFC 6750) or as "X-API-Key: <token>",
// and answers the others 401 with a WWW-Authenticate challenge naming the
// Bearer scheme. The token is compared in constant time. A nil *TokenAuth
// admits everything: its methods return the handler they wrap unchanged.
type TokenAuth struct {
	digest   [sha256.Size]byte
	realm    string
	rejected atomic.Uint64
}

// NewTokenAuth returns the authentication of token; realm names the
// protected endpoint in the challenge (e.g. "coordbench-a2a"). A token must
// be 1 to 4096 visible ASCII characters (no spaces), as a header value
// carries it unchanged.
func NewTokenAuth(token, realm string) (*TokenAuth, error) {
	if err := checkToken(token); err != nil {
		return nil, err
	}
	if realm == "" {
		realm = "coordbench"
	}
	if strings.ContainsAny(realm, "\"\\\r\n") {
		return nil, fmt.Errorf("auth: realm %q: want no quotes, backslashes or line breaks", realm)
	}
	return &TokenAuth{digest: sha256.Sum256([]byte(token)), realm: realm}, nil
}

func checkToken(token string) error {
	if token == "" {
		return errors.New("auth: empty token")
	}
	if len(token) > maxTokenBytes {
		return fmt.Errorf("auth: token of %d bytes exceeds %d", len(token), maxTokenBytes)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("auth: token has a space, control or non-ASCII character at byte %d", i)
		}
	}
	return nil
}

// tokenEqual tells whether the token presented is the one expected, whose
// SHA-256 digest want is. It compares fixed-size digests with
// crypto/subtle, so its time depends neither on the expected token's
// length nor on how much of it the presented one shares.
func tokenEqual(presented string, want *[sha256.Size]byte) bool {
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// presented returns the token a request carries: the Authorization
// header's bearer token, else the API key header; ok is false when it
// carries neither.
func presented(r *http.Request) (token string, ok bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, rest, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest), true
		}
	}
	if k := r.Header.Get(APIKeyHeader); k != "" {
		return strings.TrimSpace(k), true
	}
	return "", false
}

// Authorized tells whether r carries the token; a nil TokenAuth admits
// every request.
func (a *TokenAuth) Authorized(r *http.Request) bool {
	if a == nil {
		return true
	}
	tok, ok := presented(r)
	return ok && tokenEqual(tok, &a.digest)
}

// Rejected counts the requests answered 401.
func (a *TokenAuth) Rejected() uint64 {
	if a == nil {
		return 0
	}
	return a.rejected.Load()
}

// Require returns h behind the token: every request must carry it.
func (a *TokenAuth) Require(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Authorized(r) {
			h.ServeHTTP(w, r)
			return
		}
		a.reject(w, r)
	})
}

// RequireA2A returns an agent's handler (NewHandler's) behind the token,
// except for what must stay public: a GET of the agent card (at the
// well-known paths, below a path prefix, and at the root) and of the health
// check. Everything else (every JSON-RPC request of either protocol
// version, and any other path) needs the token.
func (a *TokenAuth) RequireA2A(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if publicPath(r) || a.Authorized(r) {
			h.ServeHTTP(w, r)
			return
		}
		a.reject(w, r)
	})
}

// publicPath tells whether r reads the card or the health check.
func publicPath(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := r.URL.Path
	return p == "/" || p == HealthPath || p == LegacyCardPath || strings.HasSuffix(p, a2asrv.WellKnownAgentCardPath)
}

// reject answers 401: the challenge names the Bearer scheme (with
// error="invalid_token" when a token was presented, RFC 6750 §3.1), and the
// body is a JSON-RPC error (-31401, A2A's "unauthenticated") that says how
// to authenticate, so that both HTTP and JSON-RPC clients read why.
func (a *TokenAuth) reject(w http.ResponseWriter, r *http.Request) {
	a.rejected.Add(1)
	challenge := fmt.Sprintf("Bearer realm=%q", a.realm)
	msg := "unauthenticated: send the token as \"Authorization: Bearer <token>\" or \"" + APIKeyHeader + ": <token>\""
	if _, ok := presented(r); ok {
		challenge += `, error="invalid_token"`
		msg = "unauthenticated: the token presented is not valid"
	}
	// The body is never read: net/http drains a little of it to reuse the
	// connection, or closes the connection.
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -31401, "message": msg},
	})
}

// Declare adds the token's two schemes to card, as alternatives: a client
// may present the token either way. The schemes go to the card's 1.0
// fields (securitySchemes, securityRequirements); a2av0's card producer
// writes the 0.3 fields (securitySchemes with "type", and "security") from
// them, so both generations of client read them. A nil TokenAuth declares
// nothing.
func (a *TokenAuth) Declare(card *a2a.AgentCard) {
	if a == nil || card == nil {
		return
	}
	if card.SecuritySchemes == nil {
		card.SecuritySchemes = a2a.NamedSecuritySchemes{}
	}
	card.SecuritySchemes[BearerSchemeName] = a2a.HTTPAuthSecurityScheme{
		Scheme:      "Bearer",
		Description: "The deployment's token as a bearer token (Authorization header).",
	}
	card.SecuritySchemes[APIKeySchemeName] = a2a.APIKeySecurityScheme{
		Location:    a2a.APIKeySecuritySchemeLocationHeader,
		Name:        APIKeyHeader,
		Description: "The same token as an API key in the " + APIKeyHeader + " header.",
	}
	card.SecurityRequirements = append(card.SecurityRequirements,
		a2a.SecurityRequirements{BearerSchemeName: {}},
		a2a.SecurityRequirements{APIKeySchemeName: {}},
	)
}

// withSchemesOfBothVersions makes the security schemes of a card that
// a2av0's producer encoded readable by 1.0 parsers too. a2av0 writes each
// scheme in the 0.3 form ({"type": "http", "scheme": "Bearer", ...}), which
// a2a-go's own 1.0 parser (agentcard.DefaultCardParser, a2a.AgentCard's
// UnmarshalJSON) refuses: it wants the 1.0 wrapper key
// ({"httpAuthSecurityScheme": {...}}), as does the 1.0 specification. Each
// scheme gets its wrapper key beside the 0.3 fields, so a 0.3 parser (which
// goes by "type") and a 1.0 parser (which goes by the wrapper key) both
// read it. A card without schemes is returned as it is, byte for byte.
// (a2a-go v2.3.1; its securityRequirements encoding, scopes as a plain
// array rather than ProtoJSON's {"list": [...]}, is a2a-go's own and is
// kept: see a2a-go pull request 437.)
func withSchemesOfBothVersions(cardJSON []byte, card *a2a.AgentCard) ([]byte, error) {
	if len(card.SecuritySchemes) == 0 {
		return cardJSON, nil
	}
	v1, err := json.Marshal(card.SecuritySchemes)
	if err != nil {
		return nil, fmt.Errorf("security schemes: %w", err)
	}
	var wrapped map[string]map[string]json.RawMessage
	if err := json.Unmarshal(v1, &wrapped); err != nil {
		return nil, fmt.Errorf("security schemes: %w", err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(cardJSON, &doc); err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	var legacy map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["securitySchemes"], &legacy); err != nil {
		return nil, fmt.Errorf("card's security schemes: %w", err)
	}
	for name, w := range wrapped {
		if legacy[name] == nil {
			legacy[name] = map[string]json.RawMessage{}
		}
		for k, v := range w {
			legacy[name][k] = v
		}
	}
	if doc["securitySchemes"], err = json.Marshal(legacy); err != nil {
		return nil, fmt.Errorf("card's security schemes: %w", err)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("card: %w", err)
	}
	return out, nil
}

// ReadToken reads a token from a file, else from the environment variable
// env (through getenv); "" with a nil error means none is configured (auth
// off). Surrounding white space (a file's final newline) is trimmed. Setting
// both is an error, as is a file that is empty or not a valid token.
func ReadToken(getenv func(string) string, env, file string) (string, error) {
	fromEnv := ""
	if getenv != nil && env != "" {
		fromEnv = strings.TrimSpace(getenv(env))
	}
	if file == "" {
		if fromEnv == "" {
			return "", nil
		}
		if err := checkToken(fromEnv); err != nil {
			return "", fmt.Errorf("$%s: %w", env, err)
		}
		return fromEnv, nil
	}
	if fromEnv != "" {
		return "", fmt.Errorf("token file %s and $%s are both set; set one", file, env)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer func() { _ = f.Close() }()
	// A token and a line break; more is refused as too long.
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+3))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", file, err)
	}
	tok := strings.TrimSpace(string(b))
	if err := checkToken(tok); err != nil {
		return "", fmt.Errorf("token file %s: %w", file, err)
	}
	return tok, nil
}
