package a2acall

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// This file: credentials for participants that require them. A Messenger
// with Options.Credentials gives each participant's client the header its
// URL's credential names, once, when the client is made (an a2a-go call
// interceptor of that client alone); agent card fetches carry none, as
// cards are public.

// Credential is one header the calls to a participant carry:
// "Authorization: Bearer <token>" for a bearer token, or an API key's
// header ("X-API-Key: <key>").
type Credential struct {
	Header string
	Value  string
}

// BearerCredential is the Authorization header of a bearer token.
func BearerCredential(token string) Credential {
	return Credential{Header: "Authorization", Value: "Bearer " + token}
}

func (c Credential) validate() error {
	if c.Header == "" {
		return errors.New("no header name")
	}
	for i := 0; i < len(c.Header); i++ {
		if !isTokenChar(c.Header[i]) {
			return fmt.Errorf("header name %q: invalid character at byte %d", c.Header, i)
		}
	}
	if strings.TrimSpace(c.Value) == "" {
		return fmt.Errorf("header %s: empty value", c.Header)
	}
	for i := 0; i < len(c.Value); i++ {
		if b := c.Value[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return fmt.Errorf("header %s: control character in the value", c.Header)
		}
	}
	return nil
}

// isTokenChar reports whether b may appear in an HTTP header name (RFC 9110
// token).
func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// Credentials say which credential the calls to a URL carry: that of the
// longest URL prefix matching it, else Default. A prefix matches a URL of
// the same scheme, host and port (80 and 443 implied) whose path is the
// prefix's path or below it ("http://h:9019/a" matches http://h:9019/a/b,
// not http://h:9019/ab). A nil or zero Credentials carries none.
//
// A credential is looked up for the URL calls go to (the card's); a
// participant URL's credential is also used when the card names the same
// scheme, host and port. A token is so never sent to a host its operator did
// not name.
type Credentials struct {
	// Default, when its Header is set, goes to every URL no prefix
	// matches: to any participant an assessment request names, so only
	// for a deployment whose requesters are trusted.
	Default Credential
	// ByPrefix maps URL prefixes to credentials.
	ByPrefix map[string]Credential
}

// Validate checks every prefix and credential.
func (c *Credentials) Validate() error {
	if c == nil {
		return nil
	}
	if c.Default.Header != "" {
		if err := c.Default.validate(); err != nil {
			return fmt.Errorf("default credential: %w", err)
		}
	}
	seen := map[string]string{}
	for p, cred := range c.ByPrefix {
		key, err := prefixKey(p)
		if err != nil {
			return err
		}
		if other, dup := seen[key]; dup {
			return fmt.Errorf("URL prefixes %q and %q are the same", other, p)
		}
		seen[key] = p
		if err := cred.validate(); err != nil {
			return fmt.Errorf("credential of %s: %w", p, err)
		}
	}
	return nil
}

// For returns the credential of rawURL.
func (c *Credentials) For(rawURL string) (Credential, bool) {
	if c == nil {
		return Credential{}, false
	}
	target, err := prefixKey(rawURL)
	if err == nil {
		best, bestLen := Credential{}, -1
		for p, cred := range c.ByPrefix {
			key, err := prefixKey(p)
			if err != nil || !underPrefix(target, key) || len(key) <= bestLen {
				continue
			}
			best, bestLen = cred, len(key)
		}
		if bestLen >= 0 {
			return best, true
		}
	}
	if c.Default.Header != "" {
		return c.Default, true
	}
	return Credential{}, false
}

// prefixKey is scheme://host:port/path of an http(s) URL, lower-case up to
// the path, with the default port made explicit and no trailing slash.
func prefixKey(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("URL prefix %q: %w", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL prefix %q: want an absolute http or https URL", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("URL prefix %q: want no user, query or fragment", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(host, port) + strings.TrimRight(u.Path, "/"), nil
}

// underPrefix reports whether the key of a URL lies at or below a prefix
// key, on a path segment boundary.
func underPrefix(target, prefix string) bool {
	return target == prefix || strings.HasPrefix(target, prefix+"/")
}

// sameOrigin reports whether two URLs share scheme, host and port.
func sameOrigin(a, b string) bool {
	ka, err1 := prefixKey(a)
	kb, err2 := prefixKey(b)
	if err1 != nil || err2 != nil {
		return false
	}
	origin := func(k string) string {
		rest := k[strings.Index(k, "://")+3:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			return k[:len(k)-len(rest)+i]
		}
		return k
	}
	return origin(ka) == origin(kb)
}

// credentialFor is the credential of the calls to endpoint, made for the
// participant at base.
func (m *Messenger) credentialFor(base, endpoint string) (Credential, bool) {
	c := m.opts.Credentials
	if cred, ok := c.For(endpoint); ok {
		return cred, true
	}
	if endpoint != base && sameOrigin(base, endpoint) {
		return c.For(base)
	}
	return Credential{}, false
}

// credentialInterceptor puts one credential on every call of the client
// it belongs to, replacing a value of the same header the call's context
// may have carried.
type credentialInterceptor struct {
	a2aclient.PassthroughInterceptor
	cred Credential
}

func (ci credentialInterceptor) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	for k := range req.ServiceParams {
		if strings.EqualFold(k, ci.cred.Header) {
			delete(req.ServiceParams, k)
		}
	}
	req.ServiceParams[strings.ToLower(ci.cred.Header)] = []string{ci.cred.Value}
	return ctx, nil, nil
}

// ParseCredentials reads credentials, one a line:
//
//	# a comment, and blank lines, are skipped
//	http://127.0.0.1:9019/        s3cret-token          → Authorization: Bearer s3cret-token
//	https://agents.example/team/  X-API-Key: the-key    → X-API-Key: the-key
//	*                             token                 → Default (every other URL)
//
// The first field is a URL prefix (or * for the default); the rest of the
// line is a bearer token, or "Header-Name: value" for another header (a
// colon makes the header form: a bearer token has none, RFC 6750 §2.1). No
// error message repeats a token.
func ParseCredentials(r io.Reader) (*Credentials, error) {
	c := &Credentials{ByPrefix: map[string]Credential{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return nil, fmt.Errorf("credentials line %d: want \"URL-prefix token\" or \"URL-prefix Header: value\"", n)
		}
		prefix, rest := line[:i], strings.TrimSpace(line[i+1:])
		if rest == "" {
			return nil, fmt.Errorf("credentials line %d: want \"URL-prefix token\" or \"URL-prefix Header: value\"", n)
		}
		cred := BearerCredential(rest)
		if name, value, isHeader := strings.Cut(rest, ":"); isHeader && !strings.ContainsAny(name, " \t") {
			cred = Credential{Header: name, Value: strings.TrimSpace(value)}
		} else if strings.ContainsAny(rest, " \t") {
			return nil, fmt.Errorf("credentials line %d: a token has no spaces (for a header, write \"Header-Name: value\")", n)
		}
		if err := cred.validate(); err != nil {
			return nil, fmt.Errorf("credentials line %d: %w", n, err)
		}
		if prefix == "*" {
			if c.Default.Header != "" {
				return nil, fmt.Errorf("credentials line %d: a second default (*)", n)
			}
			c.Default = cred
			continue
		}
		if _, dup := c.ByPrefix[prefix]; dup {
			return nil, fmt.Errorf("credentials line %d: %s listed twice", n, prefix)
		}
		c.ByPrefix[prefix] = cred
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return c, nil
}

// LoadCredentials reads a credentials file (ParseCredentials); an empty
// path means none (nil, nil).
func LoadCredentials(path string) (*Credentials, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	defer func() { _ = f.Close() }()
	c, err := ParseCredentials(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
