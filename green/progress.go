package green

import (
	"context"
	"fmt"
	"time"
)

// Progress: the working updates an assessment sends, and the heartbeat
// that keeps an AgentBeats stream from going silent.

// progress sends one working update and restarts the silence clock.
func (a *assessment) progress(text string) {
	a.progressMu.Lock()
	defer a.progressMu.Unlock()
	a.lastSent = time.Now()
	if a.progressFn != nil {
		a.progressFn(text)
	}
}

func (a *assessment) setCurrent(s string) {
	a.progressMu.Lock()
	a.current, a.currentSince = s, time.Now()
	a.progressMu.Unlock()
}

// heartbeatText says what runs, for how long (a task running: the task's
// own time; phase < 0: no time of its own), and how long the assessment has
// run.
func heartbeatText(current string, phase, total time.Duration) string {
	if phase < 0 {
		return fmt.Sprintf("%s (%s since the assessment began)", current, roundElapsed(total))
	}
	return fmt.Sprintf("%s for %s (%s since the assessment began)", current, roundElapsed(phase), roundElapsed(total))
}

// roundElapsed rounds to a tenth of a second under a minute, else to the
// second.
func roundElapsed(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// heartbeat sends a working update whenever the assessment has said
// nothing for interval, until the returned stop is called.
func (a *assessment) heartbeat(ctx context.Context, interval time.Duration) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		timer := time.NewTimer(interval)
		defer timer.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			a.progressMu.Lock()
			silent, current, since := time.Since(a.lastSent), a.current, a.currentSince
			a.progressMu.Unlock()
			if silent < interval {
				timer.Reset(interval - silent)
				continue
			}
			now, phase := time.Now(), time.Duration(-1)
			if !since.IsZero() {
				phase = now.Sub(since)
			}
			a.progress(heartbeatText(current, phase, now.Sub(a.started)))
			timer.Reset(interval)
		}
	}()
	return func() { close(quit); <-finished }
}

func (a *assessment) warn(msg string) {
	a.e.log.Warn("assessment: "+msg, "assessment", a.id)
	a.warnings = append(a.warnings, msg)
}
