package recognize_test

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// kvFamily is a family made up for these tests: it reads the keys given,
// says the word of tier tier for the value of its key "<name>.op" (agent,
// llm, tool, workflow, handoff), names the agent by "<name>.name" under
// its one identity, and counts what it was handed.
type kvFamily struct {
	name     string
	keys     []recognize.Key
	tier     recognize.Tier
	label    string
	nameTier recognize.NameTier
	every    bool
	claimIf  bool // claim only if its word is taken
	log      *[]string
}

func (f *kvFamily) Spec() recognize.Spec {
	keys := f.keys
	if keys == nil {
		keys = []recognize.Key{recognize.Prefix(f.name+".", 0)}
	}
	s := recognize.Spec{Name: f.name, Keys: keys, EverySpan: f.every}
	if f.label != "" {
		s.Identities = []recognize.Identity{{Label: f.label, Tier: f.nameTier}}
	}
	return s
}

func (f *kvFamily) NewReader() recognize.SpanReader { return &kvReader{f: f} }

type kvReader struct {
	f        *kvFamily
	op, name string
	attrs    int
}

func (r *kvReader) Reset() { r.op, r.name, r.attrs = "", "", 0 }

func (r *kvReader) Attr(rd *recognize.Reading, kv *attribute.KeyValue, _ uint8) {
	r.attrs++
	if r.f.log != nil {
		*r.f.log = append(*r.f.log, r.f.name+":"+string(kv.Key))
	}
	if !r.f.claimIf {
		rd.Claim()
	}
	switch string(kv.Key) {
	case r.f.name + ".op":
		r.op = recognize.Quiet(kv)
	case r.f.name + ".name":
		r.name = recognize.Quiet(kv)
	}
}

func (r *kvReader) Decide(rd *recognize.Reading, _ *otelmap.Span) {
	if r.f.log != nil {
		*r.f.log = append(*r.f.log, r.f.name+" decides")
	}
	if r.f.label != "" {
		rd.Name(0, r.name)
	}
	var w recognize.Word
	switch r.op {
	case "agent":
		w.Op = recognize.OpInvoke
	case "llm":
		w.Op = recognize.OpLLM
	case "tool", "handoff":
		w.Op = recognize.OpTool
	case "workflow":
		w.Workflow = true
	case "":
		return
	}
	if r.op == "handoff" {
		rd.HandoffKind()
	}
	if r.f.claimIf {
		w.Claims = 1
	}
	rd.Say(r.f.tier, w)
}

func read(t *testing.T, reg *recognize.Registry, name string, attrs ...attribute.KeyValue) *recognize.Reading {
	t.Helper()
	rd := reg.Reader()
	t.Cleanup(func() { reg.Release(rd) })
	return rd.Read(&otelmap.Span{Name: name, Kind: trace.SpanKindInternal, Attrs: attrs}, 1)
}

func claimed(reg *recognize.Registry, r *recognize.Reading) []string {
	var out []string
	for k := range reg.NumClaims() {
		if r.Claimed.Has(k) {
			out = append(out, reg.ClaimName(k))
		}
	}
	return out
}

// TestWordTiers: the strongest word settles the operation wherever its
// family stands in the registry; between words of one tier, the family
// listed first; a claim made only if the word is taken is made only then.
func TestWordTiers(t *testing.T) {
	fw := &kvFamily{name: "fw", tier: recognize.TierFramework}
	std := &kvFamily{name: "std", tier: recognize.TierStandard}
	fw2 := &kvFamily{name: "fw2", tier: recognize.TierFramework, claimIf: true}
	reg, err := recognize.NewRegistry(std, fw, fw2)
	if err != nil {
		t.Fatal(err)
	}
	r := read(t, reg, "x", attribute.String("std.op", "agent"), attribute.String("fw.op", "llm"), attribute.String("fw2.op", "tool"))
	if r.Op != recognize.OpLLM || r.Agent {
		t.Errorf("op %v agent %v: want fw's llm (the framework's tier, and listed before fw2)", r.Op, r.Agent)
	}
	if got := strings.Join(claimed(reg, r), ","); got != "std,fw" {
		t.Errorf("claimed %s, want std,fw (fw2 claims only if its word is taken)", got)
	}
	r = read(t, reg, "x", attribute.String("std.op", "agent"), attribute.String("fw2.op", "tool"))
	if r.Op != recognize.OpTool || strings.Join(claimed(reg, r), ",") != "std,fw2" {
		t.Errorf("op %v claimed %v: want fw2's tool, claimed", r.Op, claimed(reg, r))
	}
	r = read(t, reg, "x", attribute.String("std.op", "workflow"))
	if !r.Workflow || r.Role != recognize.RoleInternal || r.Step != recognize.CallNone {
		t.Errorf("workflow: %+v", r.Verdict)
	}
}

// TestNameTiers: an agent span's name is the best tier's; within a tier
// the family listed first; two families giving one label share its rank;
// a name on a span that is no agent's names nothing.
func TestNameTiers(t *testing.T) {
	a := &kvFamily{name: "aa", tier: recognize.TierFramework, label: "aa.name", nameTier: recognize.NameAttribute}
	b := &kvFamily{name: "bb", tier: recognize.TierFramework, label: "bb.name", nameTier: recognize.NameStandard}
	c := &kvFamily{name: "cc", tier: recognize.TierFramework, label: "span.name", nameTier: recognize.NameSpanName}
	d := &kvFamily{name: "dd", tier: recognize.TierFramework, label: "span.name", nameTier: recognize.NameSpanName}
	reg, err := recognize.NewRegistry(a, b, c, d)
	if err != nil {
		t.Fatal(err)
	}
	r := read(t, reg, "x", attribute.String("aa.op", "agent"), attribute.String("aa.name", "from-a"), attribute.String("bb.name", "from-b"))
	if r.AgentName != "from-b" || reg.IdentifiedBy(r.AgentRank) != "bb.name" {
		t.Errorf("name %q by %q, want from-b by bb.name (the standard tier, though bb is listed second)", r.AgentName, reg.IdentifiedBy(r.AgentRank))
	}
	r = read(t, reg, "x", attribute.String("aa.op", "agent"), attribute.String("dd.name", "from-d"), attribute.String("cc.name", "from-c"))
	if r.AgentName != "from-c" || reg.IdentifiedBy(r.AgentRank) != "span.name" {
		t.Errorf("name %q by %q, want from-c by span.name (cc listed before dd)", r.AgentName, reg.IdentifiedBy(r.AgentRank))
	}
	if reg.Rank(2, 0) != reg.Rank(3, 0) {
		t.Errorf("one label, two ranks: %d and %d", reg.Rank(2, 0), reg.Rank(3, 0))
	}
	if !(reg.Rank(1, 0) < reg.Rank(0, 0) && reg.Rank(0, 0) < reg.Rank(2, 0) && reg.Rank(2, 0) < recognize.RankService) {
		t.Errorf("ranks %d %d %d, want bb < aa < span.name < service.name", reg.Rank(1, 0), reg.Rank(0, 0), reg.Rank(2, 0))
	}
	r = read(t, reg, "x", attribute.String("aa.op", "llm"), attribute.String("aa.name", "caller"))
	if r.AgentName != "" {
		t.Errorf("an LLM span named %q, want no name", r.AgentName)
	}
	r = read(t, reg, "x", attribute.String("aa.op", "agent"))
	if r.AgentName != "" || r.Agent || !r.Workflow || !r.AgentLike {
		t.Errorf("an agent span naming no agent: %+v, want an orchestration that looks like an agent's work", r.Verdict)
	}
}

// TestDispatch: every family that reads a key gets it, in registry order,
// and each family is reset before its first attribute of a span, so that
// nothing of a span leaks into the next; keys too short are never read;
// a family reading every span decides on spans without its keys.
func TestDispatch(t *testing.T) {
	var log []string
	shared := []recognize.Key{recognize.Exact("tool.name", 0), recognize.Prefix("xx", 0)}
	a := &kvFamily{name: "aa", keys: append(shared, recognize.Prefix("aa.", 0)), tier: recognize.TierFramework, log: &log}
	b := &kvFamily{name: "bb", keys: shared, tier: recognize.TierFramework, log: &log}
	e := &kvFamily{name: "ee", tier: recognize.TierFramework, every: true, log: &log}
	reg, err := recognize.NewRegistry(a, b, e)
	if err != nil {
		t.Fatal(err)
	}
	read(t, reg, "x", attribute.String("tool.name", "t"), attribute.String("xx", "short"), attribute.String("xxlong", "y"), attribute.String("aa.op", "agent"))
	want := "aa:tool.name bb:tool.name aa:xxlong bb:xxlong aa:aa.op aa decides bb decides ee decides"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("handed\n got %s\nwant %s", got, want)
	}
	rd := reg.Reader()
	defer reg.Release(rd)
	rd.Read(&otelmap.Span{Name: "x", Attrs: []attribute.KeyValue{attribute.String("aa.op", "agent"), attribute.String("aa.name", "a")}}, 1)
	if r := rd.Read(&otelmap.Span{Name: "y", Attrs: []attribute.KeyValue{attribute.String("aa.name", "b")}}, 2); r.Op != recognize.OpNone || r.Workflow {
		t.Errorf("the op of the span before leaked into the next: %v", r.Op)
	}
	log = nil
	r := read(t, reg, "y", attribute.String("bb.op", "llm"))
	if got := strings.Join(log, " "); got != "ee decides" || r.Op != recognize.OpNone {
		t.Errorf("a span of no family's key: handed %q, op %v; want only ee to decide, no op", got, r.Op)
	}
}

// TestRegistryErrors: a registry refuses families it could not read by.
func TestRegistryErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fams []recognize.Family
		want string
	}{
		{"no name", []recognize.Family{&kvFamily{name: ""}}, "no name"},
		{"a name twice", []recognize.Family{&kvFamily{name: "aa"}, &kvFamily{name: "aa"}}, "given twice"},
		{"a name of this package's", []recognize.Family{&kvFamily{name: "http"}}, "given twice"},
		{"a key too short", []recognize.Family{&kvFamily{name: "aa", keys: []recognize.Key{recognize.Exact("abc", 0)}}}, "fewer than 4 bytes"},
		{"a label in two tiers", []recognize.Family{
			&kvFamily{name: "aa", label: "x.name", nameTier: recognize.NameAttribute},
			&kvFamily{name: "bb", label: "x.name", nameTier: recognize.NameSpanName}}, "another tier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := recognize.NewRegistry(tc.fams...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	fams := make([]recognize.Family, 65)
	for i := range fams {
		fams[i] = &kvFamily{name: strings.Repeat("f", i+1)}
	}
	if _, err := recognize.NewRegistry(fams...); err == nil {
		t.Error("65 families: no error")
	}
}

// TestDispatchByLength: the registry hands each attribute to exactly the
// families whose keys it is or starts with, in registry order and each
// family's key order, however the keys of a bucket (their first two
// bytes) differ in length: names of one length and of others, prefixes
// shorter and longer than the key, names and prefixes past the longest
// length the bucket's index tells apart, and a bucket of more entries
// than the index holds (where every entry is tried). Held to a plain
// reading of Spec.Keys.
func TestDispatchByLength(t *testing.T) {
	long := strings.Repeat("n", 70)
	var log []string
	fams := []*kvFamily{
		{name: "f0", keys: []recognize.Key{recognize.Exact("gen_ai.agent.name", 0), recognize.Prefix("gen_ai.", 1), recognize.Exact("gen_ai."+long, 2)}},
		{name: "f1", keys: []recognize.Key{recognize.Exact("gen_ai.agent.id", 0), recognize.Prefix("gen_ai.agent", 1), recognize.Prefix("gen_ai."+long[:60], 2)}},
		{name: "f2", keys: []recognize.Key{recognize.Exact("gen_ai.agent.name", 0), recognize.Exact("gen_", 1), recognize.Prefix("gen_ai."+long, 2)}},
	}
	// A bucket of 70 entries: "zz.k0" ... "zz.k69", and a prefix.
	many := &kvFamily{name: "f3", keys: []recognize.Key{recognize.Prefix("zz.k1", 99)}}
	for i := range 70 {
		many.keys = append(many.keys, recognize.Exact(fmt.Sprintf("zz.k%d", i), uint8(i)))
	}
	fams = append(fams, many)
	var all []recognize.Family
	for _, f := range fams {
		f.tier, f.log = recognize.TierFramework, &log
		all = append(all, f)
	}
	reg, err := recognize.NewRegistry(all...)
	if err != nil {
		t.Fatal(err)
	}
	probes := []string{"gen_ai.agent.name", "gen_ai.agent.id", "gen_ai.agent", "gen_ai.agentX", "gen_ai.", "gen_ai", "gen_", "gen",
		"gen_ai." + long, "gen_ai." + long + "x", "gen_ai." + long[:60], "gen_ai." + long[:59], "gen_ai." + long[:56] + "m",
		"gen_ai.agent.name.more", "zz.k1", "zz.k10", "zz.k69", "zz.k7", "zz.k70", "zz.k", "other.key"}
	for _, key := range probes {
		log = nil
		read(t, reg, "span", attribute.String(key, "v"))
		var got []string
		for _, l := range log {
			if !strings.HasSuffix(l, " decides") {
				got = append(got, l)
			}
		}
		var want []string
		for _, f := range fams {
			for _, k := range f.keys {
				if len(key) >= 4 && (key == k.Name || k.Prefix && strings.HasPrefix(key, k.Name)) {
					want = append(want, f.name+":"+key)
				}
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%q handed to\n got %v\nwant %v", key, got, want)
		}
	}
}
