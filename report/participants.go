package report

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/tracedata"
)

// causeRunes bounds an error quoted in the summary; its middle is cut, so
// the cause at its end ("connect: connection refused") stays.
const causeRunes = 600

// participantAddrs maps each participant's role, from the result's inputs
// ("role=URL"), to the address its calls carry as server.address and
// server.port (host:port, the port defaulting to the scheme's): the name
// the trace gives a participant it could not reach.
func participantAddrs(inputs []string) map[string]string {
	addrs := map[string]string{}
	for _, in := range inputs {
		role, raw, ok := strings.Cut(in, "=")
		if !ok || role == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		addrs[role] = net.JoinHostPort(u.Hostname(), port)
	}
	return addrs
}

// unreached is an absent participant and the virtual node of its address:
// the participant was called and never answered, so the trace knows it by
// its address only.
type unreached struct {
	role, addr string
	calls      int
	errors     int
	cause      string // the first error of a call to it
}

// unreachedParticipants pairs each absent participant with the virtual
// node named by its address, when the trace has one; the graph then draws
// them as one node, and the summary says why it was not reached.
func unreachedParticipants(t *TaskResult, absent []string, addrs map[string]string) map[string]unreached {
	virtual := map[string]bool{}
	for _, a := range t.Agents {
		if a.Virtual {
			virtual[a.Name] = true
		}
	}
	out := map[string]unreached{}
	for _, role := range absent {
		addr, ok := addrs[role]
		if !ok || !virtual[addr] {
			continue
		}
		u := unreached{role: role, addr: addr}
		for _, in := range t.Interactions {
			if in.To == addr {
				u.calls += in.Count
				u.errors += in.Errors
			}
		}
		u.cause = firstError(t.Steps, addr)
		out[addr] = u
	}
	return out
}

// firstError is the error of the first failed step attributed to agent.
func firstError(steps []tracedata.Step, agent string) string {
	for _, s := range steps {
		if s.Agent == agent && s.Error != "" {
			return s.Error
		}
	}
	return ""
}

// writeAbsent says which participants took no part in the trace, and for
// those the trace knows by address only, how often they were called and
// the full cause of the first failure (bounded, its end kept).
func writeAbsent(b *strings.Builder, absent []string, unreachedByAddr map[string]unreached) {
	if len(absent) == 0 {
		return
	}
	byRole := map[string]unreached{}
	for _, u := range unreachedByAddr {
		byRole[u.role] = u
	}
	for _, role := range absent {
		u, ok := byRole[role]
		if !ok {
			fmt.Fprintf(b, "- Absent: **%s** took no part in the trace\n", textutil.OneLine(role))
			continue
		}
		s := fmt.Sprintf("- Not reached: **%s** at %s — %s, %s", textutil.OneLine(role), u.addr,
			textutil.Plural(u.calls, "call", "calls"), textutil.Plural(u.errors, "error", "errors"))
		if u.cause != "" {
			s += ": " + textutil.ClipMiddle(textutil.OneLine(u.cause), causeRunes)
		}
		b.WriteString(s + "\n")
	}
}
