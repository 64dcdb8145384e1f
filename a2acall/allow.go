package a2acall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
)

// This file: the participant allowlist (Options.Allow; the green agent's
// --allow-participants). Without one, a Messenger connects wherever it is
// told: a participant URL, the URL inside a participant's card, a redirect
// of the card fetch. With one, it connects only to hosts the list names,
// and the check is made where it cannot be dodged:
//
//   - before a call, on the participant URL, and after the card is read,
//     on the URL the card names (an IP literal outside the list, or a host
//     name the list does not name when it holds no address ranges, fails
//     at once);
//   - on every redirect (http.Client.CheckRedirect), card fetches and
//     calls alike;
//   - when connecting (net.Dialer.Control), on the address a host name
//     resolved to, so that a name the list does not name cannot lead to an
//     address it does not hold (DNS rebinding included), and before any
//     packet is sent: whether a refused target's port is open, closed or
//     filtered, the error is the same.
//
// A host name the list names is trusted with whatever it resolves to: that
// is how a deployment names its participants ("purple-agent" in a compose
// file). The environment's HTTP proxy is not used while a list is set,
// since the proxy, not the participant, would then be the address checked.

// ErrNotAllowed is wrapped by the error of a call to a host the allowlist
// does not hold.
var ErrNotAllowed = errors.New("not among the allowed participants")

// maxRedirects bounds the redirects one request follows.
const maxRedirects = 5

// AllowList is a set of hosts a Messenger may connect to: host names,
// wildcard subdomains and IP prefixes. The nil *AllowList allows every
// host. It is immutable and safe for concurrent use.
type AllowList struct {
	names    []string       // lower-case, without a trailing dot
	suffixes []string       // from "*.example.com": ".example.com"
	prefixes []netip.Prefix // CIDR ranges; an address is a /32 or /128
	spec     string
}

// ParseAllowList reads comma-separated patterns (spaces around them are
// ignored): a host name ("purple-agent", "agent.example.com"), a wildcard
// subdomain ("*.example.com", which does not match example.com itself),
// an IP address ("10.0.0.7", "::1") or a CIDR prefix ("10.0.0.0/8",
// "fd00::/8"). An empty spec returns nil: every host is allowed.
func ParseAllowList(spec string) (*AllowList, error) {
	a := &AllowList{}
	var kept []string
	for _, raw := range strings.Split(spec, ",") {
		p := strings.TrimSpace(raw)
		if p == "" {
			continue
		}
		kept = append(kept, p)
		if strings.Contains(p, "/") {
			pfx, err := netip.ParsePrefix(p)
			if err != nil {
				return nil, fmt.Errorf("allowed participants: %q is not a CIDR prefix: %w", p, err)
			}
			a.prefixes = append(a.prefixes, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(p, "[]")); err == nil {
			a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		name := strings.TrimSuffix(strings.ToLower(p), ".")
		wild := strings.HasPrefix(name, "*.")
		if !validHostName(strings.TrimPrefix(name, "*.")) {
			return nil, fmt.Errorf("allowed participants: %q is neither a host name, *.domain, an IP address nor a CIDR prefix", p)
		}
		if wild {
			a.suffixes = append(a.suffixes, name[1:])
		} else {
			a.names = append(a.names, name)
		}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	a.spec = strings.Join(kept, ",")
	return a, nil
}

// validHostName accepts letters, digits, hyphens and underscores in dot-
// separated labels (underscores appear in container names).
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// String is the list as given, normalized ("" for nil).
func (a *AllowList) String() string {
	if a == nil {
		return ""
	}
	return a.spec
}

// allowsName reports whether host, a name or an IP literal, is allowed by
// the list itself, with no resolution.
func (a *AllowList) allowsName(host string) bool {
	if a == nil {
		return true
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.allowsAddr(ip)
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, n := range a.names {
		if name == n {
			return true
		}
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func (a *AllowList) allowsAddr(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL checks what can be checked of a URL without resolving it: an
// IP literal must be in a range of the list; a host name must be named by
// it, unless the list holds ranges, which the name's addresses are then
// checked against when connecting. The error wraps ErrNotAllowed.
func (a *AllowList) CheckURL(raw string) error {
	if a == nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	return a.checkHost(u.Hostname())
}

func (a *AllowList) checkHost(host string) error {
	if a.allowsName(host) {
		return nil
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err != nil && len(a.prefixes) > 0 {
		return nil // a name: its addresses are checked when connecting
	}
	return fmt.Errorf("host %q is %w", host, ErrNotAllowed)
}

// redirectPolicy is the http.Client.CheckRedirect of every client of a
// Messenger: at most maxRedirects redirects, and with a list each
// redirect's target is checked like a participant URL, before anything is
// sent to it.
func (a *AllowList) redirectPolicy(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	if a == nil {
		return nil
	}
	if err := a.checkHost(req.URL.Hostname()); err != nil {
		return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
	}
	return nil
}

// dialContext returns the DialContext of a Messenger's transport. A host
// the list names is dialled as is; any other host is resolved and each
// address checked in the dialer's Control, after the socket is made and
// before it connects.
func (a *AllowList) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	checked := *d
	checked.Control = func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return fmt.Errorf("address %q: %w", address, ErrNotAllowed)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !a.allowsAddr(ip) {
			return fmt.Errorf("address %s is %w", host, ErrNotAllowed)
		}
		return nil
	}
	// net/http dials in a goroutine of its own (Transport.dialConnFor),
	// where nothing recovers: a panic in the check below, which reads
	// addresses a participant chose, would end the process.
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		defer func() {
			if r := recover(); r != nil {
				slog.Error("the allow-list's dial check panicked", "addr", addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				conn, err = nil, fmt.Errorf("dial %s: the allow-list check failed unexpectedly: %v", addr, r)
			}
		}()
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
		if a.allowsName(host) {
			return d.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// applyAllowList makes base and the clients using it keep to a: the
// redirect policy always (nil a: the redirect bound alone); with a list,
// the dialer's check and no proxy. A base that is not an *http.Transport (a
// benchmark's stand-in) dials nothing and is left as it is.
func applyAllowList(a *AllowList, base pool, clients ...*http.Client) {
	for _, c := range clients {
		c.CheckRedirect = a.redirectPolicy
	}
	t, ok := base.(*http.Transport)
	if a == nil || !ok {
		return
	}
	t.Proxy = nil
	t.DialContext = a.dialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
}

// Transport is a new transport with http.DefaultTransport's settings that
// keeps to a as a Messenger does when connecting: with a list, the
// dialer's check (every address a name resolves to) and no proxy. Requests
// the green agent makes on a client's behalf (push notifications to a
// webhook) use it, so they reach no host a participant could not be. The
// caller chooses its own redirect policy.
func (a *AllowList) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	applyAllowList(a, t)
	return t
}
