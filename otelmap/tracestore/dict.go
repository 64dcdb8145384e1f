package tracestore

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/coordbench/coordbench/otelmap"
)

// A Dict holds the attribute keys and span names of packed spans once, for
// every trace written with it (Held): the records name a word by its
// index in a few bits instead of carrying its bytes. Keys and names come
// from the instrumentation, not the data, so a few hundred of them make
// most of a deployment's spans: in `make bench-collector`'s payload, 279
// distinct keys are 15.5 MB of 804,860 attributes' 32 MB of keys and
// values. Each table is bounded (dictWords words of at most dictWordLen
// bytes): a word past the bounds is written into the record as the Store
// writes it, so spans with ever new keys or names (a name holding an id)
// cost what they cost without a Dict, and the Dict no more than its bounds.
// Words are never dropped: a record may name any of them as long as it is
// held. Safe for concurrent use.
//
// It also holds one copy of each named resource (a process: its
// service.name and attributes) for all traces, up to dictResources of
// them: every trace of a process would otherwise copy its resource.
type Dict struct {
	mu        sync.Mutex
	keys      wordTable
	names     wordTable
	resources map[string][]*otelmap.Resource // by service.name
	nres      int
	resAttrs  int
}

// dictResources and dictResourceAttrs bound the resources a Dict holds
// and their attributes.
const (
	dictResources     = 4096
	dictResourceAttrs = 1 << 16
)

// resource returns the dict's copy of res, a named resource, made now if
// there is room; nil if there is none.
func (d *Dict) resource(res *otelmap.Resource) *otelmap.Resource {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.resources[res.ServiceName] {
		if slices.Equal(r.Attrs, res.Attrs) {
			return r
		}
	}
	if d.nres >= dictResources || d.resAttrs+len(res.Attrs) > dictResourceAttrs {
		return nil
	}
	if d.resources == nil {
		d.resources = map[string][]*otelmap.Resource{}
	}
	own := cloneResource(res)
	d.resources[own.ServiceName] = append(d.resources[own.ServiceName], own)
	d.nres++
	d.resAttrs += len(res.Attrs)
	return own
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{} }

// Bounds of each table of a Dict: at most dictWords words (an index then
// takes at most 3 bytes), each at most dictWordLen bytes, so a table
// holds at most 2 MiB of words.
const (
	dictWords   = 1 << 14
	dictWordLen = 128
)

// wordTable is one table of a Dict: words by index and indexes by word.
type wordTable struct {
	ids   map[string]uint32
	words []string
	// next guesses a word from the word before it (appendWordAfter):
	// next[0] is the word that last came first, next[i+1] the word that
	// last came after word i, as its index + 1 (0: none yet).
	next []uint32
	// arena holds the words' bytes; a full arena is replaced, not grown,
	// so the words already cut from it stay where they are.
	arena []byte
}

// Len returns how many keys and names d holds.
func (d *Dict) Len() (keys, names int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys.words), len(d.names.words)
}

// dictTables are a Dict's tables as of one moment, to read records
// written before it without the Dict's lock: words are only ever
// appended, so the slices stay valid. on is false for records written
// without a Dict.
type dictTables struct {
	on          bool
	keys, names []string
}

func (d *Dict) tables() dictTables {
	d.mu.Lock()
	defer d.mu.Unlock()
	return dictTables{on: true, keys: d.keys.words[:len(d.keys.words):len(d.keys.words)],
		names: d.names.words[:len(d.names.words):len(d.names.words)]}
}

// appendWord writes w into a record: uvarint(index<<1 | 1) for a word of
// the table (added when there is room), else uvarint(len<<1) and the
// bytes. The caller holds the Dict's lock.
func (t *wordTable) appendWord(b []byte, w string) []byte {
	t.putWordIndex(&b, w)
	return b
}

// putWordIndex is appendWord appending to *b in place (putUvarint); it
// returns w's index in the table, -1 if it is written out.
func (t *wordTable) putWordIndex(b *[]byte, w string) int32 {
	if i, ok := t.ids[w]; ok {
		putUvarint(b, uint64(i)<<1|1)
		return int32(i)
	}
	if len(w) == 0 || len(w) > dictWordLen || len(t.words) >= dictWords {
		putUvarint(b, uint64(len(w))<<1)
		*b = append(*b, w...)
		return -1
	}
	if t.ids == nil {
		t.ids = make(map[string]uint32)
	}
	if cap(t.arena)-len(t.arena) < len(w) {
		t.arena = make([]byte, 0, 16<<10)
	}
	start := len(t.arena)
	t.arena = append(t.arena, w...)
	own := unsafe.String(&t.arena[start], len(w))
	i := uint32(len(t.words))
	t.words = append(t.words, own)
	t.ids[own] = i
	putUvarint(b, uint64(i)<<1|1)
	return int32(i)
}

// appendWordAfter is appendWord for a word that follows another, *prev
// (0: the first of a list; i+1: word i; -1: a word not in the table):
// the spans of one instrumentation repeat their keys in one order, so the
// word that came after *prev last time is tried before the map, and most
// of a span's keys cost a string comparison rather than a hash and a
// lookup. It writes what appendWord writes, and sets *prev to w's.
func (t *wordTable) appendWordAfter(b []byte, w string, prev *int32) []byte {
	t.putWordAfter(&b, w, prev)
	return b
}

// putWordAfter is appendWordAfter appending to *b in place (putUvarint).
func (t *wordTable) putWordAfter(b *[]byte, w string, prev *int32) {
	p := *prev
	if p >= 0 && int(p) < len(t.next) {
		if g := t.next[p]; g != 0 && t.words[g-1] == w {
			*prev = int32(g)
			putUvarint(b, uint64(g-1)<<1|1)
			return
		}
	}
	i := t.putWordIndex(b, w)
	if i < 0 {
		*prev = -1
		return
	}
	if p >= 0 {
		for len(t.next) <= len(t.words) {
			t.next = append(t.next, 0)
		}
		t.next[p] = uint32(i) + 1
	}
	*prev = i + 1
}

// word reads what appendWord wrote, from words (a table as of tables).
func (r *reader) word(words []string) string {
	x := r.uvarint()
	if x&1 == 1 {
		return words[x>>1]
	}
	n := int(x >> 1)
	if n == 0 {
		return ""
	}
	s := unsafe.String(&r.b[r.pos], n)
	r.pos += n
	return s
}
