package sandbox

import (
	"strings"
	"testing"
)

// TestIDPool: each running run has an identity no other has, taken round
// robin so that one given back comes into use again as late as possible; a full
// range is an error that says so; a range of one is every run's.
func TestIDPool(t *testing.T) {
	p := newIDPool(3)
	a, _ := p.take()
	b, _ := p.take()
	c, _ := p.take()
	if a == b || b == c || a == c {
		t.Fatalf("took %d, %d, %d", a, b, c)
	}
	if _, err := p.take(); err == nil || !strings.Contains(err.Error(), "all 3 identities") {
		t.Fatalf("a fourth run at once: %v", err)
	}
	p.put(b)
	if d, err := p.take(); err != nil || d != b {
		t.Fatalf("after giving back %d: %d, %v", b, d, err)
	}
	p.put(a)
	p.put(c)
	if e, _ := p.take(); e != c {
		t.Errorf("round robin: %d, want %d (the next after the last taken)", e, c)
	}
	one := newIDPool(1)
	x, _ := one.take()
	y, err := one.take()
	if err != nil || x != 0 || y != 0 {
		t.Errorf("a range of one: %d, %d, %v", x, y, err)
	}
}

// TestValidIDs: the identity range holds no id the kernel treats
// specially.
func TestValidIDs(t *testing.T) {
	for _, tc := range []struct {
		first uint32
		n     int
		bad   string
	}{
		{DefaultUID, DefaultIDs, ""},
		{65534, 1, ""},
		{0, 10, "root"},
		{65000, 1000, "65535"},
		{1<<32 - 10, 20, "last valid"},
		{1<<32 - 2, 1, ""},
	} {
		err := validIDs("uid", tc.first, tc.n)
		if (tc.bad == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
			t.Errorf("%d+%d: %v, want %q", tc.first, tc.n, err, tc.bad)
		}
	}
}
