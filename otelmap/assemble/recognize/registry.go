package recognize

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/coordbench/coordbench/otelmap"
)

// The keys of coverage.recognized this package reads itself: the
// protocols calls are made of (a2a.go, http.go, mcp.go, messaging.go,
// links.go) and coordbench's own attributes (coordbench.go). They are the
// first bits of Claims; a Registry's families follow.
const (
	claimMessaging = iota
	claimLinks
	claimA2A
	claimHTTP
	claimCoordbench
	claimMCP
	numCoreClaims
)

var coreClaimNames = [numCoreClaims]string{
	claimMessaging:  "messaging",
	claimLinks:      "links",
	claimA2A:        "a2a",
	claimHTTP:       "http",
	claimCoordbench: "coordbench",
	claimMCP:        "mcp",
}

// Limits of a Registry: a family is a bit of a 64-bit set, and so is each
// key of coverage.recognized.
const (
	maxFamilies = 64
	maxClaims   = 64
)

// minKey is the shortest attribute key read: shorter keys are skipped
// without a look at the table.
const minKey = 4

// A Registry is a list of families in precedence order: the order breaks
// ties between words of one Tier and between names of one NameTier, and
// the families' passes run in it. It is made once and is safe for
// concurrent use; each assembly reads with a Reader of its own.
type Registry struct {
	fams  []Family
	specs []Spec

	claimNames []string // keys of coverage.recognized: this package's, then the families'
	claimBase  []int    // per family: the bit of its Spec.Name

	ranks  [][]Rank   // per family, per Identity
	labels []string   // per rank below RankService: its label
	tiers  []NameTier // per rank below RankService: its tier

	// dispatch routes attribute keys by their first two bytes (ASCII):
	// most buckets hold one entry.
	dispatch [256]*[256]keyBucket
	steps    [128][]StepKey // the families' step keys, by first byte

	every        uint64 // families with Spec.EverySpan
	handoffTools []HandoffTool
	argumentKeys []string
	unnamed      []string
	flows        []ControlFlower

	// spare is one reader kept across garbage collections, which empty
	// pool: one assembly after another reads with the same reader.
	spare atomic.Pointer[Reader]
	pool  sync.Pool
}

// keyEntry routes attribute keys to a family. head and mask are the
// name's first 8 bytes as load8 reads a key: most names are matched by
// one compare of a machine word (every attribute of every span is
// matched here).
type keyEntry struct {
	head, mask uint64
	name       string
	prefix     bool
	id         uint8
	fam        int8
}

// keyBucket is the entries of one first two bytes, in registry order.
// byLen[min(len(key), maxLenClass)] is, as a bit set over entries, those a
// key of that length can be: the names of that length and the prefixes
// no longer (names and prefixes past maxLenClass are in its class and
// told apart by comparison); the other entries are not tried. Keys of
// one namespace share a bucket (gen_ai.*: eleven entries of six
// families), and each attribute of each span is routed here: trying them
// all was half of the cost of reading a span (issue 31). nil where the
// bucket has more than 64 entries: then each is tried.
type keyBucket struct {
	entries []keyEntry
	byLen   *[maxLenClass + 1]uint64
}

// maxLenClass is the longest key length keyBucket.byLen tells apart.
const maxLenClass = 63

// add appends e and marks it in the length classes it can match.
func (b *keyBucket) add(e keyEntry) {
	b.entries = append(b.entries, e)
	j := len(b.entries) - 1
	if j >= 64 {
		b.byLen = nil
		return
	}
	if j == 0 {
		b.byLen = new([maxLenClass + 1]uint64)
	}
	n := min(len(e.name), maxLenClass)
	if !e.prefix {
		b.byLen[n] |= 1 << j
		return
	}
	for l := n; l <= maxLenClass; l++ {
		b.byLen[l] |= 1 << j
	}
}

// load8 reads s's first 8 bytes (len(s) >= 8), little-endian: one load.
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// NewRegistry makes a registry of fams, in precedence order.
func NewRegistry(fams ...Family) (*Registry, error) {
	if len(fams) > maxFamilies {
		return nil, fmt.Errorf("registry: %d families, at most %d", len(fams), maxFamilies)
	}
	reg := &Registry{fams: slices.Clone(fams), claimNames: slices.Clone(coreClaimNames[:])}
	var errs []error
	byLabel := map[string]Rank{}
	for f, fam := range fams {
		spec := fam.Spec()
		reg.specs = append(reg.specs, spec)
		if spec.Name == "" {
			errs = append(errs, fmt.Errorf("registry: family %d has no name", f))
		}
		reg.claimBase = append(reg.claimBase, len(reg.claimNames))
		for _, name := range append([]string{spec.Name}, spec.Also...) {
			if slices.Contains(reg.claimNames, name) {
				errs = append(errs, fmt.Errorf("registry: the name %q is given twice", name))
			}
			reg.claimNames = append(reg.claimNames, name)
		}
		if len(spec.Also) > 7 {
			errs = append(errs, fmt.Errorf("registry: family %q claims under %d names, at most 8", spec.Name, 1+len(spec.Also)))
		}
		for _, k := range spec.Keys {
			if len(k.Name) < 2 || !k.Prefix && len(k.Name) < minKey {
				errs = append(errs, fmt.Errorf("registry: family %q reads the key %q: keys of fewer than %d bytes are not read", spec.Name, k.Name, minKey))
				continue
			}
			reg.route(keyEntry{name: k.Name, prefix: k.Prefix, id: k.ID, fam: int8(f)})
		}
		if spec.EverySpan {
			reg.every |= 1 << f
		}
		if spec.Unnamed != "" {
			reg.unnamed = append(reg.unnamed, spec.Unnamed)
		}
		for _, k := range spec.StepKeys {
			if k.Key == "" || k.Key[0] >= 128 || k.Is == StepNone || k.Is > StepTotalTokens {
				errs = append(errs, fmt.Errorf("registry: family %q: step key %q: an ASCII key and a detail", spec.Name, k.Key))
				continue
			}
			if d := reg.StepDetail(k.Key); d != StepNone && d != k.Is {
				errs = append(errs, fmt.Errorf("registry: family %q: step key %q gives another detail than a family's before it", spec.Name, k.Key))
			}
			reg.steps[k.Key[0]] = append(reg.steps[k.Key[0]], k)
		}
		reg.handoffTools = append(reg.handoffTools, spec.HandoffTools...)
		for _, k := range spec.ArgumentKeys {
			if !slices.Contains(reg.argumentKeys, k) {
				reg.argumentKeys = append(reg.argumentKeys, k)
			}
		}
		if cf, ok := fam.(ControlFlower); ok {
			reg.flows = append(reg.flows, cf)
		}
		reg.ranks = append(reg.ranks, make([]Rank, len(spec.Identities)))
		for k, id := range spec.Identities {
			if id.Label == "" || id.Tier > NameSpanName {
				errs = append(errs, fmt.Errorf("registry: family %q: identity %d needs a label and a tier", spec.Name, k))
			}
		}
	}
	if len(reg.claimNames) > maxClaims {
		errs = append(errs, fmt.Errorf("registry: %d keys of coverage.recognized, at most %d", len(reg.claimNames), maxClaims))
	}
	// Ranks: tier by tier, in registry order; a label given again shares
	// the rank it was first given.
	for tier := NameStandard; tier <= NameSpanName; tier++ {
		for f, spec := range reg.specs {
			for k, id := range spec.Identities {
				if id.Tier != tier {
					continue
				}
				if r, ok := byLabel[id.Label]; ok {
					if reg.tiers[r] != tier {
						errs = append(errs, fmt.Errorf("registry: family %q gives the label %q in another tier than a family before it", spec.Name, id.Label))
					}
					reg.ranks[f][k] = r
					continue
				}
				if len(reg.labels) == maxFamilyRanks {
					errs = append(errs, fmt.Errorf("registry: more than %d identity labels", maxFamilyRanks))
					continue
				}
				r := Rank(len(reg.labels))
				byLabel[id.Label] = r
				reg.labels = append(reg.labels, id.Label)
				reg.tiers = append(reg.tiers, tier)
				reg.ranks[f][k] = r
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	reg.pool.New = func() any { return reg.newReader() }
	return reg, nil
}

// route adds a key entry to the dispatch table.
func (reg *Registry) route(e keyEntry) {
	var pad [8]byte
	copy(pad[:], e.name)
	e.head = load8(string(pad[:]))
	e.mask = ^uint64(0)
	if n := len(e.name); n < 8 {
		e.mask = 1<<(8*n) - 1
	}
	e.head &= e.mask
	b := reg.dispatch[e.name[0]]
	if b == nil {
		b = new([256]keyBucket)
		reg.dispatch[e.name[0]] = b
	}
	b[e.name[1]].add(e)
}

// Families returns the registry's families, in order.
func (reg *Registry) Families() []Family { return slices.Clone(reg.fams) }

// Without returns a registry of the same families but those named: what
// spans read as when no family knows their framework.
func (reg *Registry) Without(names ...string) (*Registry, error) {
	var keep []Family
	found := map[string]bool{}
	for f, fam := range reg.fams {
		if slices.Contains(names, reg.specs[f].Name) {
			found[reg.specs[f].Name] = true
			continue
		}
		keep = append(keep, fam)
	}
	for _, n := range names {
		if !found[n] {
			return nil, fmt.Errorf("registry: no family is called %q", n)
		}
	}
	return NewRegistry(keep...)
}

// NumClaims is the number of keys of coverage.recognized a span may be
// claimed under.
func (reg *Registry) NumClaims() int { return len(reg.claimNames) }

// ClaimName is the k-th key of coverage.recognized.
func (reg *Registry) ClaimName(k int) string { return reg.claimNames[k] }

// IdentifiedBy is the identified_by label of a rank, "" for RankNone.
func (reg *Registry) IdentifiedBy(r Rank) string {
	switch {
	case int(r) < len(reg.labels):
		return reg.labels[r]
	case r >= RankService && r < RankNone:
		return coreLabels[r-RankService]
	}
	return ""
}

// Rank is the rank of family fam's Identities[identity].
func (reg *Registry) Rank(fam, identity int) Rank { return reg.ranks[fam][identity] }

// StepDetail returns the step detail a family's StepKeys says key gives,
// StepNone for none.
func (reg *Registry) StepDetail(key string) StepDetail {
	if key == "" || key[0] >= 128 {
		return StepNone
	}
	for _, k := range reg.steps[key[0]] {
		if k.Key == key {
			return k.Is
		}
	}
	return StepNone
}

// Unnamed says, family by family, how an agent runs with no name recorded
// (Spec.Unnamed), in registry order.
func (reg *Registry) Unnamed() []string { return reg.unnamed }

// ControlFlow reports whether sp's error status is control flow, not a
// failure, by any family's word (ControlFlower).
func (reg *Registry) ControlFlow(sp *otelmap.Span) bool {
	if len(reg.flows) == 0 {
		return false
	}
	types := ErrorTypes(sp)
	for _, f := range reg.flows {
		if f.ControlFlow(sp, types) {
			return true
		}
	}
	return false
}

// Reader returns a reader for one assembly (or one span), from a pool:
// hand it back with Release when done.
func (reg *Registry) Reader() *Reader {
	rd := reg.spare.Swap(nil)
	if rd == nil {
		rd = reg.pool.Get().(*Reader)
	}
	if rd.kept {
		// Only a reader that kept spans for its passes has any to forget
		// (a reader of single spans, CallRule's, never does).
		for _, p := range rd.passes {
			if p != nil {
				p.Begin()
			}
		}
		rd.kept = false
	}
	return rd
}

// Release hands a Reader back to the pool; it must not be used after.
func (reg *Registry) Release(rd *Reader) {
	clear(rd.r.warnings)
	rd.r.warnings = rd.r.warnings[:0]
	if !reg.spare.CompareAndSwap(nil, rd) {
		reg.pool.Put(rd)
	}
}

// newReader makes a reader of every family.
func (reg *Registry) newReader() *Reader {
	n := len(reg.fams)
	rd := &Reader{reg: reg, fams: make([]SpanReader, n), callers: make([]CallerNamer, n),
		namespacers: make([]Namespacer, n), passes: make([]TreePass, n), finishers: make([]Finisher, n)}
	rd.r.rd = rd
	for f, fam := range reg.fams {
		sr := fam.NewReader()
		rd.fams[f] = sr
		rd.callers[f], _ = sr.(CallerNamer)
		rd.namespacers[f], _ = sr.(Namespacer)
		rd.passes[f], _ = sr.(TreePass)
		rd.finishers[f], _ = sr.(Finisher)
	}
	return rd
}
