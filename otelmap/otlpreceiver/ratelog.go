package otlpreceiver

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// This file: rate-limited logging of the receiver's rejections. One
// misbehaving exporter can send thousands of bad requests a second; each
// is counted in the receiver's stats, but only the first few of each
// reason within an interval are logged. The first message let through
// after others were held back is preceded by one line that says how many.

// Defaults of ReceiverLimits.LogBurst and LogInterval.
const (
	DefaultLogBurst    = 10
	DefaultLogInterval = time.Minute
)

// logLimiter lets through at most burst messages of each key per
// interval, and counts the rest.
type logLimiter struct {
	burst    int
	interval time.Duration

	mu         sync.Mutex
	windows    map[string]*logWindow
	suppressed uint64 // every message held back, ever
}

// logWindow is one key's current interval.
type logWindow struct {
	start      time.Time
	logged     int
	suppressed uint64 // held back since the last message let through
}

func newLogLimiter(burst int, interval time.Duration) *logLimiter {
	return &logLimiter{burst: burst, interval: interval, windows: map[string]*logWindow{}}
}

// allow reports whether a message of key may be logged now and, if so,
// how many of its kind were held back before it. Keys are the receiver's
// fixed reasons, so the map stays small.
func (l *logLimiter) allow(key string, now time.Time) (ok bool, heldBack uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[key]
	if w == nil {
		w = &logWindow{start: now}
		l.windows[key] = w
	}
	if now.Sub(w.start) >= l.interval {
		w.start, w.logged = now, 0
	}
	if w.logged >= l.burst {
		w.suppressed++
		l.suppressed++
		return false, 0
	}
	w.logged++
	heldBack, w.suppressed = w.suppressed, 0
	return true, heldBack
}

func (l *logLimiter) total() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.suppressed
}

// warn logs msg at Warn unless key's share is spent; a summary line of
// the messages held back since the last one of key comes first.
func (r *Receiver) warn(ctx context.Context, key, msg string, attrs ...slog.Attr) {
	ok, heldBack := r.logLimit.allow(key, time.Now())
	if !ok {
		return
	}
	log := r.log()
	if heldBack > 0 {
		log.LogAttrs(ctx, slog.LevelWarn, "otlp receiver: suppressed similar messages",
			slog.String("reason", key), slog.Uint64("suppressed", heldBack),
			slog.Int("burst", r.logLimit.burst), slog.Duration("interval", r.logLimit.interval))
	}
	log.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
