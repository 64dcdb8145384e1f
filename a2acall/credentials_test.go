package a2acall_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/a2atest"
)

const agentToken = "tok-123_ABC"

// TestMessengerCredentials: agents of both protocol generations, blocking
// and streaming, that require a token answer 401 to a Messenger without
// it or with a wrong one, and answer a Messenger that sends it, as a bearer
// token or an API key; every call carries it, the card fetch does not, and
// an agent no prefix names never sees it.
func TestMessengerCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts a2atest.Options
	}{
		{"1.0 blocking", a2atest.Options{Name: "locked"}},
		{"1.0 streaming", a2atest.Options{Name: "locked", Streaming: true}},
		{"0.3 blocking", a2atest.Options{Name: "locked", Legacy: true}},
		{"0.3 streaming", a2atest.Options{Name: "locked", Legacy: true, Streaming: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Token = agentToken
			locked := a2atest.Start(t, tc.opts)
			open := a2atest.Start(t, a2atest.Options{Name: "open"})

			for _, bad := range []*a2acall.Credentials{
				nil,
				{ByPrefix: map[string]a2acall.Credential{locked.URL: a2acall.BearerCredential("wrong")}},
				// The prefix names another port: nothing is sent.
				{ByPrefix: map[string]a2acall.Credential{open.URL: a2acall.BearerCredential(agentToken)}},
			} {
				c := newCaller(t, a2acall.Options{Credentials: bad})
				_, _, err := c.send(t, a2acall.SendRequest{URL: locked.URL, Text: "hello"})
				var ce *a2acall.CallError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), "401") {
					t.Errorf("credentials %v: err %v, want a CallError saying 401", bad, err)
				}
			}

			for _, cred := range []a2acall.Credential{
				a2acall.BearerCredential(agentToken),
				{Header: a2aserve.APIKeyHeader, Value: agentToken},
			} {
				before := len(locked.Requests())
				c := newCaller(t, a2acall.Options{Credentials: &a2acall.Credentials{
					ByPrefix: map[string]a2acall.Credential{locked.URL + "/": cred},
				}})
				for _, u := range []string{locked.URL, open.URL} {
					reply, _, err := c.send(t, a2acall.SendRequest{URL: u, Text: "hello"})
					if err != nil {
						t.Fatalf("%s with %s: %v", u, cred.Header, err)
					}
					if !strings.Contains(reply.Text, "answers: hello") {
						t.Errorf("reply %q", reply.Text)
					}
				}
				calls := 0
				for _, r := range locked.Requests()[before:] {
					got := r.Header.Get(cred.Header)
					if r.Method == http.MethodGet {
						if got != "" {
							t.Errorf("the card fetch carried %s", cred.Header)
						}
						continue
					}
					calls++
					if got != cred.Value {
						t.Errorf("%s %s carried %s %q, want %q", r.Method, r.Path, cred.Header, got, cred.Value)
					}
					if n := len(r.Header.Values(cred.Header)); n != 1 {
						t.Errorf("%s sent %d times", cred.Header, n)
					}
				}
				if calls == 0 {
					t.Error("no call reached the locked agent")
				}
				for _, r := range open.Requests() {
					if r.Header.Get("Authorization") != "" || r.Header.Get(a2aserve.APIKeyHeader) != "" {
						t.Errorf("the agent no prefix names received a credential on %s %s", r.Method, r.Path)
					}
				}
			}
		})
	}
}

// TestMessengerDefaultCredential: the default goes to every URL no prefix
// names.
func TestMessengerDefaultCredential(t *testing.T) {
	locked := a2atest.Start(t, a2atest.Options{Name: "locked", Token: agentToken})
	c := newCaller(t, a2acall.Options{Credentials: &a2acall.Credentials{Default: a2acall.BearerCredential(agentToken)}})
	if _, _, err := c.send(t, a2acall.SendRequest{URL: locked.URL, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
}

func TestCredentialsFor(t *testing.T) {
	a, b, d := a2acall.BearerCredential("a"), a2acall.BearerCredential("b"), a2acall.BearerCredential("d")
	c := &a2acall.Credentials{ByPrefix: map[string]a2acall.Credential{
		"http://host:9019":          a,
		"http://HOST:9019/team/":    b,
		"https://secure.example/":   a,
		"http://plain.example:80/x": b,
	}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want string // "" for none
	}{
		{"http://host:9019", "Bearer a"},
		{"http://host:9019/", "Bearer a"},
		{"http://host:9019/other/path", "Bearer a"},
		{"http://host:9019/team", "Bearer b"},
		{"http://Host:9019/team/solver/", "Bearer b"},
		{"http://host:9019/teamx", "Bearer a"},
		{"http://host:90190/", ""},
		{"https://host:9019/", ""},
		{"http://host.evil:9019/", ""},
		{"https://secure.example:443/a", "Bearer a"},
		{"http://secure.example/", ""},
		{"http://plain.example/x/y", "Bearer b"},
		{"http://plain.example/xy", ""},
		{"not a url", ""},
	} {
		got, ok := c.For(tc.url)
		if (tc.want == "") == ok || (ok && got.Value != tc.want) {
			t.Errorf("For(%q) = %v %v, want %q", tc.url, got, ok, tc.want)
		}
	}
	c.Default = d
	if got, ok := c.For("http://anywhere:1/"); !ok || got != d {
		t.Errorf("default: %v %v", got, ok)
	}
	var none *a2acall.Credentials
	if _, ok := none.For("http://host:9019/"); ok {
		t.Error("nil credentials gave one")
	}
	for _, bad := range []a2acall.Credentials{
		{ByPrefix: map[string]a2acall.Credential{"ftp://h/": a}},
		{ByPrefix: map[string]a2acall.Credential{"http://h:80/": a, "http://H/": b}},
		{ByPrefix: map[string]a2acall.Credential{"http://h/": {Header: "Bad Header", Value: "v"}}},
		{ByPrefix: map[string]a2acall.Credential{"http://h/": {Header: "X-Key", Value: "v\r\nInjected: 1"}}},
		{Default: a2acall.Credential{Header: "X-Key"}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestParseCredentials(t *testing.T) {
	c, err := a2acall.ParseCredentials(strings.NewReader(`
# participants of the league
http://127.0.0.1:9019/   s3cret
https://agents.example/team/	X-API-Key: the-key
*  fallback
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.For("http://127.0.0.1:9019/"); got != a2acall.BearerCredential("s3cret") {
		t.Errorf("bearer line: %+v", got)
	}
	if got, _ := c.For("https://agents.example/team/solver"); got != (a2acall.Credential{Header: "X-API-Key", Value: "the-key"}) {
		t.Errorf("header line: %+v", got)
	}
	if got, _ := c.For("http://elsewhere/"); got != a2acall.BearerCredential("fallback") {
		t.Errorf("default line: %+v", got)
	}
	// No error repeats a secret (every secret here has SECRET in it).
	for _, bad := range []string{
		"http://h/",                               // no token
		"http://h/ two SECRET words",              // a token with a space
		"ftp://h/ SECRET",                         // not http
		"* SECRETa\n* SECRETb",                    // two defaults
		"http://h/ SECRETa\nhttp://h/ SECRETb",    // listed twice
		"http://h:80/ SECRETa\nhttp://h/ SECRETb", // the same prefix, written twice
		"http://h/ Bad Header: SECRET",            // not a header name, not a token
		"http://h/ X-Key:",                        // a header without a value
		"http://h/ SECRET\x01",                    // a control character
		"http://h/?q=1 SECRET",                    // a query
		"http://user@h/ SECRET",                   // user info
		strings.Repeat("x", 70<<10) + " SECRET",   // a line too long
	} {
		_, err := a2acall.ParseCredentials(strings.NewReader(bad))
		if err == nil {
			t.Errorf("%.60q parsed", bad)
		} else if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("the error repeats a secret: %v", err)
		}
	}
	if c, err := a2acall.LoadCredentials(""); c != nil || err != nil {
		t.Errorf("no path: %v %v", c, err)
	}
	if _, err := a2acall.LoadCredentials(t.TempDir() + "/missing"); err == nil {
		t.Error("a missing file loaded")
	}
}
