package a2aserve

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// Protocol versions served, as Major.Minor.
var (
	version1  = majorMinor(string(a2a.Version))
	version03 = majorMinor(string(a2av0.Version))
)

// requestedVersion is the A2A-Version a request names: the header, else the
// query parameter of the same name (A2A 1.0 §3.6.1: "Clients MAY provide the
// A2A-Version as a request parameter instead of a header"), as Major.Minor,
// and whether it named one at all. An empty value names none.
func requestedVersion(r *http.Request) (string, bool) {
	v := strings.TrimSpace(r.Header.Get(a2a.SvcParamVersion))
	if v == "" {
		v = strings.TrimSpace(r.URL.Query().Get(a2a.SvcParamVersion))
	}
	if v == "" {
		return "", false
	}
	return majorMinor(v), true
}

// majorMinor cuts a version to Major.Minor ("1.0.2" → "1.0", "v0.3" → "0.3");
// a value with no minor part stays as it is, and matches nothing served.
func majorMinor(v string) string {
	v = strings.TrimPrefix(v, "v")
	major, rest, ok := strings.Cut(v, ".")
	if !ok {
		return v
	}
	minor, _, _ := strings.Cut(rest, ".")
	return major + "." + minor
}

// checkVersion decides whether a request of the protocol version its method
// belongs to (wire, "1.0" or "0.3") may be served under the A2A-Version it
// names. It returns nil to serve it, or the JSON-RPC error to answer.
//
// A2A 1.0 §3.6.2: "Agents MUST process requests using the semantics of the
// requested A2A-Version (matching Major.Minor). If the version is not
// supported by the interface, agents MUST return a VersionNotSupportedError.
// Agents MUST interpret empty value as 0.3 version." a2a-go v2.3.1 never
// reads the header (its JSON-RPC handlers only copy it into the call's
// service parameters), so a request naming 99.0 was served; the check is
// ours. What each kind of client sends:
//   - 1.0 clients send "A2A-Version: 1.0" with 1.0 methods (a2a-go's client
//     sends its interface's version on every call);
//   - 0.3 clients send no A2A-Version (the 0.3 specification has no such
//     parameter; a2a-python 0.3 sends none) or, from a2a-go's a2av0 client,
//     "0.3", with 0.3 methods ("message/send").
//
// So: a version neither interface serves is VersionNotSupportedError
// (-32009), for methods of both generations; a served version that is not
// the method's (A2A-Version 0.3 with SendMessage, 1.0 with message/send) is
// method-not-found, since that version has no such method. No version at
// all is 0.3 by the rule above, but 1.0 method names do not exist in 0.3,
// so a header-less 1.0 call is unambiguous and is served as 1.0 rather than
// refused (curl users and lax clients send none).
func checkVersion(r *http.Request, wire string) *rpcError {
	v, named := requestedVersion(r)
	if !named {
		return nil
	}
	switch v {
	case wire:
		return nil
	case version1, version03:
		return &rpcError{code: codeMethodNotFound, reason: "METHOD_NOT_FOUND",
			msg: fmt.Sprintf("A2A-Version %s has no such method: this method belongs to A2A %s", v, wire)}
	}
	return &rpcError{code: codeVersionNotSupported, reason: "VERSION_NOT_SUPPORTED",
		msg: fmt.Sprintf("A2A-Version %q is not supported: this agent serves %s and %s", v, version1, version03)}
}
