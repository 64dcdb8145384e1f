package sandbox

import (
	"fmt"
	"sync"
)

// Identities of runs. Where the caller runs as root, every run runs as a
// uid and gid that no other running run has: the kernel counts several
// resources per user (processes for RLIMIT_NPROC, pipe buffer pages,
// pending signals, inotify instances, key quotas), and lets a process
// signal, trace or read /proc of another only with the same uid. One
// identity for all runs would make each run's use count against the
// others' and let one reach the others' processes.

// DefaultUID is the first identity of the default range: 65536 uids (and
// gids) from 0x70000000, past systemd's container ranges
// (524288–1879048191) and below the ones it gives other uses, so that no
// user or service of the machine owns a process or file with them (see
// docs/scicode.md "Identity").
const (
	DefaultUID = 0x70000000
	DefaultIDs = 1 << 16
)

// idPool hands out offsets into the identity range, round robin, so that an
// identity comes back into use as late as possible.
type idPool struct {
	mu   sync.Mutex
	n    int
	next int
	used map[int]bool
}

func newIDPool(n int) *idPool { return &idPool{n: n, used: map[int]bool{}} }

// take returns an offset no running run holds; a range of one identity is
// every run's (Options.IDs 1).
func (p *idPool) take() (int, error) {
	if p.n == 1 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.n {
		i := p.next
		p.next = (p.next + 1) % p.n
		if !p.used[i] {
			p.used[i] = true
			return i, nil
		}
	}
	return 0, fmt.Errorf("sandbox: all %d identities of runs are in use (Options.IDs)", p.n)
}

// put gives an offset back once nothing of its run is left.
func (p *idPool) put(i int) {
	if p.n == 1 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, i)
}

// validIDs checks that the range [first, first+n) holds no identity the
// kernel treats specially: root, 16-bit -1 (65535) and 32-bit -1.
func validIDs(what string, first uint32, n int) error {
	last := uint64(first) + uint64(n) - 1
	switch {
	case first == 0:
		return fmt.Errorf("sandbox: %s range starts at 0 (root)", what)
	case last >= 1<<32-1:
		return fmt.Errorf("sandbox: %s range %d+%d passes the last valid id, 4294967294", what, first, n)
	case uint64(first) <= 65535 && last >= 65535:
		return fmt.Errorf("sandbox: %s range %d+%d holds 65535, which 16-bit programs take for -1", what, first, n)
	}
	return nil
}
