package otlpreceiver

import (
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// This file: the bound on the bytes the receiver holds at once. Each
// request's body is size-limited (ReceiverLimits.MaxBodyBytes and
// MaxDecompressedBytes), but without a bound across requests twenty
// concurrent 1 MB gzip bombs inflate to 64 MB each and take the process
// to gigabytes. Every buffer a request reads its body into is taken from
// one byte budget (ReceiverLimits.MaxInflightBytes) before it is
// allocated; a request that finds the budget spent is answered 503 with
// Retry-After, which the OTLP/HTTP specification names for an overloaded
// server ("Throttling") and which exporters retry (the OTel Go SDK's
// otlptracehttp retries 429, 502, 503 and 504 and waits the Retry-After).
// After a burst that held much, the memory is given back to the OS.

// DefaultMaxInflightBytesFactor times MaxDecompressedBytes is the default
// of ReceiverLimits.MaxInflightBytes: room for a few bodies at the limit
// at once, and for thousands of ordinary exports (a few KB to a few MB).
const DefaultMaxInflightBytesFactor = 2

// retryAfter is the Retry-After of an overloaded answer, in seconds:
// requests are short, so the budget is usually free again within one.
const retryAfter = 1

// reclaimMinInterval keeps the memory return after a burst from running
// more often than this: it is a full collection.
const reclaimMinInterval = 10 * time.Second

// byteBudget is the receiver's budget of bytes in flight. A request takes
// from it before each buffer it allocates and gives everything back when
// it ends.
type byteBudget struct {
	limit int64
	// reclaimAt is the burst size from which the receiver, once idle,
	// returns memory to the OS; zero never.
	reclaimAt int64

	mu          sync.Mutex
	used        int64
	peak        int64 // the most ever held
	burst       int64 // the most held since the budget was last empty
	lastReclaim time.Time
	reclaims    uint64
}

// take reserves n bytes, false when that would pass the limit.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	b.burst = max(b.burst, b.used)
	return true
}

// give returns n bytes. reclaim is true when the budget is empty again
// after a burst of at least reclaimAt bytes, and no reclaim ran within
// reclaimMinInterval: the caller should then return memory to the OS.
func (b *byteBudget) give(n int64) (reclaim bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used > 0 {
		return false
	}
	burst := b.burst
	b.burst = 0
	if b.reclaimAt <= 0 || burst < b.reclaimAt || time.Since(b.lastReclaim) < reclaimMinInterval {
		return false
	}
	b.lastReclaim = time.Now()
	b.reclaims++
	return true
}

func (b *byteBudget) stats() (used, peak int64, reclaims uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak, b.reclaims
}

// lease is one request's share of the budget. It is used by the
// request's goroutine only.
type lease struct {
	b    *byteBudget
	held int64
}

// grow takes n more bytes; false when the budget is spent.
func (l *lease) grow(n int64) bool {
	if l == nil {
		return true
	}
	if !l.b.take(n) {
		return false
	}
	l.held += n
	return true
}

// shrink gives back n bytes of a buffer the request no longer holds.
func (l *lease) shrink(n int64) {
	if l == nil || n <= 0 {
		return
	}
	l.held -= n
	l.b.give(n)
}

// end gives back everything; see byteBudget.give for reclaim.
func (l *lease) end() (reclaim bool) {
	n := l.held
	l.held = 0
	return l.b.give(n)
}

// errOverloaded is returned by readLimited when the budget cannot cover
// the next buffer.
type errOverloaded struct{ limit int64 }

func (e *errOverloaded) Error() string {
	return "the receiver holds its limit of " + strconv.FormatInt(e.limit, 10) +
		" bytes of requests in flight; retry after " + strconv.Itoa(retryAfter) + " s"
}

func (r *Receiver) overloaded(e *errOverloaded) *rejection {
	return &rejection{status: http.StatusServiceUnavailable, code: codes.Unavailable, counter: &r.rejOverloaded,
		reason: "overloaded", msg: e.Error(), retryAfter: retryAfter}
}

// endLease ends a request's lease and, after a large burst, returns the
// memory to the OS: without it the heap the burst grew stays mapped until
// the runtime's next forced collection, minutes later (20 concurrent gzip
// bombs left 1.9 GB resident). The answer is flushed first, so that the
// sender does not wait for the collection.
func (r *Receiver) endLease(w http.ResponseWriter, l *lease) {
	if !l.end() {
		return
	}
	_ = http.NewResponseController(w).Flush()
	debug.FreeOSMemory()
}
