package tracestore

import (
	"cmp"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
)

// The settle rule's evidence part: which calls of a trace await an answer
// (Await compiled), and what a trace's spans say of its completeness.

// awaitRule is an Await made ready to match.
type awaitRule struct {
	calls     CallRule
	assessor  bool
	allAgents bool
	agents    map[string]bool
	// hostPorts holds "host:port"; hosts the hosts alone, for spans that
	// carry no server.port.
	hostPorts map[string]bool
	hosts     map[string]bool
	except    map[string]bool
}

func (a *Await) compile() *awaitRule {
	if a == nil {
		return nil
	}
	// The sets are made only when something goes in them: a nil map
	// reads as empty, and the connector compiles its rule at every check.
	r := &awaitRule{calls: a.Calls, assessor: a.Assessor, allAgents: a.AllAgents}
	put := func(m *map[string]bool, k string) {
		if *m == nil {
			*m = map[string]bool{}
		}
		(*m)[k] = true
	}
	for _, n := range a.Except {
		if n != "" {
			put(&r.except, n)
		}
	}
	for _, n := range a.Agents {
		if n != "" {
			put(&r.agents, n)
		}
	}
	for _, addr := range a.Addresses {
		host, port := splitAddress(addr)
		if host == "" {
			continue
		}
		put(&r.hosts, host)
		if port != "" {
			put(&r.hostPorts, net.JoinHostPort(host, port))
		}
	}
	return r
}

// splitAddress reads "host:port" or a URL; a URL's port defaults to its
// scheme's.
func splitAddress(addr string) (host, port string) {
	addr = strings.TrimSpace(addr)
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return "", ""
		}
		port = u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		return strings.ToLower(u.Hostname()), port
	}
	if h, p, err := net.SplitHostPort(addr); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(addr), ""
}

// Evidence is what one trace's spans say about its completeness by the
// settle rule, for callers that hold spans themselves rather than in a
// Store.
type Evidence struct {
	// Root is true when some span has no parent.
	Root bool
	// Detached counts the spans cut off from the trace's root
	// (DetachedSpans): a trace that has any is not whole.
	Detached int
	// Awaited counts the calls a awaits; Unanswered lists those no span of
	// the callee answers.
	Awaited    int
	Unanswered []Call
}

// Whole tells whether the evidence shows the trace whole by the settle
// rule: its root held, no span cut off from it, every awaited call
// answered. (The quiet part is the caller's.)
func (ev Evidence) Whole() bool {
	return ev.Root && ev.Detached == 0 && len(ev.Unanswered) == 0
}

// CheckEvidence applies the settle rule's evidence part to spans (one
// trace's): is the root held, is every span attached to it
// (DetachedSpans), and which awaited calls are unanswered. The quiet part
// is the caller's: it knows when spans arrived. It is linear in the spans;
// a nil a awaits nothing.
func CheckEvidence(spans []otelmap.Span, a *Await) Evidence {
	return CheckEvidenceIn(spans, a, nil)
}

// EvidenceScratch is memory CheckEvidenceIn reuses from one trace to the
// next (the spans' index, the chains), and a's compiled rule: a checker of
// trace after trace (the Collector connector's) allocates them once. Its
// zero value is ready; it is not safe for concurrent use.
type EvidenceScratch struct {
	idx     map[trace.SpanID]int32
	top     []int32
	chainOf []int32
	chains  []callChain
	path    []int32
	await   *Await
	rule    *awaitRule
}

// CheckEvidenceIn is CheckEvidence in s's memory (nil: fresh memory). An
// Await must not change between calls with one s: its rule is compiled at
// the first.
func CheckEvidenceIn(spans []otelmap.Span, a *Await, s *EvidenceScratch) Evidence {
	if s == nil {
		s = &EvidenceScratch{}
	}
	var ev Evidence
	for i := range spans {
		if !spans[i].ParentSpanID.IsValid() {
			ev.Root = true
			break
		}
	}
	// One index of the spans by id serves both parts.
	idx := s.index(spans)
	ev.Detached = detachedSpans(spans, idx)
	if a == nil {
		return ev
	}
	if s.await != a || s.rule == nil {
		s.await, s.rule = a, a.compile()
	}
	c := s.rule.checkIn(spans, idx, s, false)
	ev.Awaited, ev.Unanswered = c.awaited, c.unanswered
	if len(s.top) > scratchKeeps {
		*s = EvidenceScratch{await: s.await, rule: s.rule}
	}
	return ev
}

// index is indexSpans in s's map.
func (s *EvidenceScratch) index(spans []otelmap.Span) map[trace.SpanID]int32 {
	if len(spans) > scratchKeeps {
		return indexSpans(spans)
	}
	if s.idx == nil {
		s.idx = make(map[trace.SpanID]int32, len(spans))
	}
	clear(s.idx)
	for i := range spans {
		s.idx[spans[i].SpanID] = int32(i)
	}
	return s.idx
}

// DetachedSpans counts the spans of one trace cut off from its root: spans
// whose parent is not among spans, other than the trace's top. Every span a
// process exports names its parent, and the parent is exported by the same
// process (a local parent) or by the caller that sent the context (a
// remote one), so the spans of a trace received whole form one tree, and a
// span whose parent is missing says spans between it and the root were
// lost, or are still on their way (a parent ends after its children, and
// is exported after them). The tops a whole trace may have:
//
//   - the root, a span without a parent; a second one is detached (two
//     roots are not one tree);
//   - where no root is held, the trace began in a caller that exports
//     nothing (a browser, a gateway, an SDK with tracing off): its entry
//     spans, SERVER or CONSUMER, whose parent is that caller's span, are
//     the tops, however many calls it made. A span of another kind whose
//     parent is missing had a local parent, which its process did export
//     or did not create: it is detached.
//
// With a root held, an entry span whose parent is missing is detached: the
// trace began here, so its caller's span (a CLIENT span of a process that
// exports) was lost. A trace whose root was lost and which started with one
// call into a SERVER span reads as one begun by a caller that exports
// nothing; the settle rule, which waits for a root, does not take it as
// settled. Leaves (spans no other span names as its parent) lost leave no
// mark here, but for the answers of awaited calls (Await).
func DetachedSpans(spans []otelmap.Span) int {
	return detachedSpans(spans, indexSpans(spans))
}

// indexSpans maps each span id of spans to its index (the last one's, for
// an id held twice).
func indexSpans(spans []otelmap.Span) map[trace.SpanID]int32 {
	idx := make(map[trace.SpanID]int32, len(spans))
	for i := range spans {
		idx[spans[i].SpanID] = int32(i)
	}
	return idx
}

// detachedSpans is DetachedSpans with the spans' index (indexSpans).
func detachedSpans(spans []otelmap.Span, held map[trace.SpanID]int32) int {
	rooted := false
	for i := range spans {
		if !spans[i].ParentSpanID.IsValid() {
			rooted = true
			break
		}
	}
	detached, roots := 0, 0
	for i := range spans {
		p := spans[i].ParentSpanID
		switch {
		case !p.IsValid():
			if roots++; roots > 1 {
				detached++
			}
		case p == spans[i].SpanID:
			detached++ // its own parent: attached to nothing
		default:
			if _, ok := held[p]; ok {
				continue
			}
			if rooted || !isEntryKind(spans[i].Kind) {
				detached++
			}
		}
	}
	return detached
}

func isEntryKind(k trace.SpanKind) bool {
	return k == trace.SpanKindServer || k == trace.SpanKindConsumer
}

// callCheck is the state of a trace's awaited calls.
type callCheck struct {
	awaited    int
	unanswered []Call
	silent     []string
}

// callChain is what the spans of one client chain say about the call.
type callChain struct {
	top      int32
	marker   bool
	agent    string
	host     string
	port     string
	answered bool
	// httpAnswer: some span of the chain has an HTTP status code, so a
	// server did answer; failed: some span failed.
	httpAnswer bool
	failed     bool
}

// check finds the client chains of spans and which of the awaited ones
// were answered. It is linear in the spans.
func (r *awaitRule) check(spans []otelmap.Span) callCheck {
	return r.checkIn(spans, indexSpans(spans), &EvidenceScratch{}, true)
}

// checkIn is check with the spans' index (indexSpans), its working memory
// from s; silent: whether to name the silent callees (Settle does,
// CheckEvidence does not).
func (r *awaitRule) checkIn(spans []otelmap.Span, idx map[trace.SpanID]int32, s *EvidenceScratch, silent bool) callCheck {
	parent := func(i int32) int32 {
		if p, ok := idx[spans[i].ParentSpanID]; ok && spans[i].ParentSpanID.IsValid() {
			return p
		}
		return -1
	}
	// top[i] is the top span of client span i's chain; -1 for spans that
	// are not client spans, unset before it is known.
	const unset = -2
	top := grown(s.top, len(spans))
	for i := range top {
		top[i] = unset
	}
	path := s.path[:0]
	topOf := func(i int32) int32 {
		if top[i] != unset {
			return top[i]
		}
		if !isClientKind(spans[i].Kind) {
			top[i] = -1
			return -1
		}
		path = path[:0]
		t := i
		for {
			path = append(path, t)
			p := parent(t)
			if p < 0 || !isClientKind(spans[p].Kind) || !sameProcess(&spans[p], &spans[t]) || len(path) > len(spans) {
				break
			}
			if top[p] >= 0 {
				t = top[p]
				break
			}
			t = p
		}
		for _, j := range path {
			top[j] = t
		}
		return t
	}

	// The chains in the order their first span comes, in one slice;
	// chainOf[t] is the position of the chain whose top is span t, +1 (0
	// for none yet).
	n := 0
	for i := range spans {
		if topOf(int32(i)) == int32(i) {
			n++
		}
	}
	chains := s.chains[:0]
	chainOf := grown(s.chainOf, len(spans))
	clear(chainOf)
	for i := range spans {
		t := topOf(int32(i))
		if t < 0 {
			continue
		}
		if chainOf[t] == 0 {
			chains = append(chains, callChain{top: t})
			chainOf[t] = int32(len(chains))
		}
		chains[chainOf[t]-1].note(&spans[i], int32(i) == t, r.calls)
	}
	for i := range spans {
		p := parent(int32(i))
		if p < 0 {
			continue
		}
		t := topOf(p)
		if t < 0 {
			continue
		}
		if isClientKind(spans[i].Kind) && sameProcess(&spans[i], &spans[p]) {
			continue // part of the chain
		}
		chains[chainOf[t]-1].answered = true
	}

	s.top, s.chainOf, s.path = top, chainOf, path
	defer func() {
		clear(chains) // their strings point into this trace's spans
		s.chains = chains[:0]
	}()

	var res callCheck
	var answered map[string]bool
	if silent {
		answered = map[string]bool{}
	}
	for k := range chains {
		c := &chains[k]
		t := c.top
		if !r.awaits(c, &spans[t]) {
			continue
		}
		res.awaited++
		if c.answered {
			if silent {
				answered[c.callee()] = true
			}
			continue
		}
		callee := c.callee()
		res.unanswered = append(res.unanswered, Call{
			Caller: spanResource(&spans[t]).ServiceName, Callee: callee, SpanID: spans[t].SpanID.String(),
		})
	}
	// In a fixed order, not the spans': a collector's spans arrive in
	// whatever order batching and routing give them, and the verdict that
	// lists these calls must not depend on it.
	slices.SortFunc(res.unanswered, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Callee, b.Callee), cmp.Compare(a.SpanID, b.SpanID))
	})
	if !silent {
		return res
	}
	for _, u := range res.unanswered {
		if !answered[u.Callee] && !slices.Contains(res.silent, u.Callee) {
			res.silent = append(res.silent, u.Callee)
		}
	}
	slices.Sort(res.silent)
	return res
}

// callee names the callee of c: its agent name, else its address, else
// "unknown".
func (c *callChain) callee() string {
	switch {
	case c.agent != "":
		return c.agent
	case c.host != "" && c.port != "":
		return net.JoinHostPort(c.host, c.port)
	case c.host != "":
		return c.host
	}
	return "unknown"
}

// awaits reports whether the call of chain c, whose top span is top, is
// awaited.
func (r *awaitRule) awaits(c *callChain, top *otelmap.Span) bool {
	if c.failed && !c.httpAnswer {
		return false // nobody answered: nobody will send spans for it
	}
	// callee and the host:port key allocate; most rules have no such names.
	if len(r.except) > 0 && r.except[c.callee()] {
		return false
	}
	addr := false
	if c.host != "" {
		if c.port != "" {
			addr = len(r.hostPorts) > 0 && r.hostPorts[net.JoinHostPort(c.host, c.port)]
		} else {
			addr = r.hosts[c.host]
		}
	}
	if addr {
		return true
	}
	if !c.marker {
		return false
	}
	// Only the in-process road speaks for the assessor (provenance.go): a
	// chain of another road that names its resource is not its call.
	return r.allAgents || (c.agent != "" && r.agents[c.agent]) || (r.assessor && top.Source == otelmap.SourceInProcess && isAssessorResource(spanResource(top)))
}

// note records what span s of the chain says; top is true for the chain's
// top span, whose callee names win. Whether the chain is an agent call, and
// to which agent, is assembly's rule (calls); the address, the failure and
// the HTTP answer are the HTTP conventions'. It is the one place the rule
// reads a span's attributes, a client chain's only (Held.SpansForCheck).
func (c *callChain) note(s *otelmap.Span, top bool, calls CallRule) {
	if s.StatusError {
		c.failed = true
	}
	if calls != nil {
		agentCall, callee := calls(s)
		c.marker = c.marker || agentCall
		if callee != "" && (c.agent == "" || top) {
			c.agent = callee
		}
	}
	for _, kv := range s.Attrs {
		switch key := string(kv.Key); {
		case kv.Key == otelmap.AttrServerAddress:
			if v := kv.Value.AsString(); kv.Value.Type() == attribute.STRING && v != "" && (c.host == "" || top) {
				c.host = strings.ToLower(v)
			}
		case kv.Key == otelmap.AttrServerPort:
			if n, ok := intValue(kv.Value); ok && (c.port == "" || top) {
				c.port = strconv.FormatInt(n, 10)
			}
		case kv.Key == otelmap.AttrErrorType:
			if kv.Value.Type() == attribute.STRING && kv.Value.AsString() != "" {
				c.failed = true
			}
		case key == "http.response.status_code" || key == "http.status_code":
			c.httpAnswer = true
		}
	}
}

// grown is b with length n, reallocated if its capacity is short.
func grown(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

func intValue(v attribute.Value) (int64, bool) {
	switch v.Type() {
	case attribute.INT64:
		return v.AsInt64(), true
	case attribute.STRING:
		n, err := strconv.ParseInt(v.AsString(), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func isClientKind(k trace.SpanKind) bool {
	return k == trace.SpanKindClient || k == trace.SpanKindProducer
}

// sameProcess tells whether two spans come from one process, as assembly
// decides it: one resource, or one service.name.
func sameProcess(a, b *otelmap.Span) bool {
	ra, rb := spanResource(a), spanResource(b)
	return ra == rb || (ra.ServiceName != "" && ra.ServiceName == rb.ServiceName)
}

// spanResource is s's resource, never nil. (Assembly has its own copy:
// the two may live in different packages.)
func spanResource(s *otelmap.Span) *otelmap.Resource {
	if s.Resource == nil {
		return otelmap.EmptyResource()
	}
	return s.Resource
}

func isAssessorResource(r *otelmap.Resource) bool {
	for _, kv := range r.Attrs {
		if kv.Key == otelmap.AttrRole && kv.Value.Type() == attribute.STRING && kv.Value.AsString() == otelmap.RoleAssessor {
			return true
		}
	}
	return false
}
