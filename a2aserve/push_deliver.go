package a2aserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
)

// The push sender: each notification queued per config and delivered in
// order by a worker, with bounded attempts and backoff (push.go says why).

// SendPush implements push.Sender: it queues the notification of event for
// config and returns at once; it never fails the task.
func (p *Push) SendPush(_ context.Context, config *a2a.PushConfig, event a2a.Event) error {
	if config == nil || event == nil {
		return nil
	}
	k := pushKey{config.TaskID, config.ID}
	p.mu.Lock()
	e := p.entry(k)
	version := ""
	if e != nil {
		version = e.version
	}
	p.mu.Unlock()
	if e == nil {
		p.dropped.Add(1)
		return nil
	}
	// The payload is made now, so it is the state of this event even if
	// the delivery comes later.
	body, err := p.payload(k.task, version, event)
	if err != nil {
		p.dropped.Add(1)
		p.log.Warn("push notification not sent: payload", "task", k.task, "config", k.id, "err", err)
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.entry(k) == nil {
		p.dropped.Add(1)
		return nil
	}
	q := p.queues[k]
	if q == nil {
		ctx, cancel := context.WithCancel(p.ctx)
		q = &pushQueue{ctx: ctx, cancel: cancel}
		p.queues[k] = q
	}
	if len(q.items) >= p.opts.MaxQueue {
		q.items = q.items[1:]
		p.dropped.Add(1)
	}
	q.items = append(q.items, body)
	if !q.running {
		q.running = true
		p.wg.Add(1)
		go p.work(k, q)
	}
	return nil
}

// payload is the body of the notification of event: for a 1.0 config the
// StreamResponse holding it (1.0 §4.3.3), for a 0.3 config the task as it
// stands after it, in the 0.3 form (0.3 §9.5).
func (p *Push) payload(taskID a2a.TaskID, version string, event a2a.Event) ([]byte, error) {
	if version != version03 {
		return json.Marshal(a2a.StreamResponse{Event: event})
	}
	if tasks := p.tasks.Load(); tasks != nil {
		if st, err := tasks.Get(context.Background(), taskID); err == nil {
			return json.Marshal(a2av0.FromV1Task(st.Task))
		}
	}
	legacy, err := a2av0.FromV1Event(event)
	if err != nil {
		return nil, err
	}
	return json.Marshal(legacy)
}

// work delivers q's notifications in order until it is empty. A panic in
// it (a webhook's answer is read here) drops this config's queue, logged,
// and ends no one else's deliveries.
func (p *Push) work(k pushKey, q *pushQueue) {
	defer p.wg.Done()
	delivering := false
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("push notification worker panicked; its queue is dropped", "task", k.task, "config", k.id,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if delivering {
				p.dropped.Add(1)
			}
			p.mu.Lock()
			q.running = false
			if p.queues[k] == q {
				p.forget(k)
			}
			p.mu.Unlock()
		}
	}()
	for {
		p.mu.Lock()
		e := p.entry(k)
		if len(q.items) == 0 || e == nil || p.queues[k] != q {
			q.running = false
			if p.queues[k] == q && len(q.items) == 0 {
				// Nothing waits: the queue goes, so a finished task
				// leaves nothing behind but its config.
				q.cancel()
				delete(p.queues, k)
			}
			p.mu.Unlock()
			return
		}
		body := q.items[0]
		q.items = q.items[1:]
		config := copyConfig(e.config)
		p.mu.Unlock()
		delivering = true
		p.deliver(q.ctx, config, body)
		delivering = false
	}
}

// deliver makes up to MaxAttempts attempts at one notification.
func (p *Push) deliver(ctx context.Context, config *a2a.PushConfig, body []byte) {
	backoff := p.opts.InitialBackoff
	var err error
	for attempt := 1; ; attempt++ {
		var retry bool
		var asked time.Duration
		retry, asked, err = p.post(ctx, config, body)
		if err == nil {
			p.delivered.Add(1)
			return
		}
		if ctx.Err() != nil {
			p.dropped.Add(1) // deleted or shutting down: not the webhook's failure
			return
		}
		if !retry || attempt >= p.opts.MaxAttempts {
			break
		}
		if !p.wait(ctx, retryWait(backoff, asked, p.opts.MaxBackoff)) {
			p.dropped.Add(1)
			return
		}
		p.retried.Add(1)
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
	p.failed.Add(1)
	p.log.Warn("push notification given up", "task", config.TaskID, "config", config.ID,
		"webhook", redacted(config.URL), "err", err)
}

// retryWait is the wait before the next attempt: the backoff, or longer
// where the webhook asked for longer with Retry-After (RFC 9110 §10.2.3:
// a 429 or 503 says when the client may come back), but never past
// maxWait. The bound is the sender's, not the webhook's: a webhook asking
// for an hour would otherwise hold its config's queue for an hour.
func retryWait(backoff, asked, maxWait time.Duration) time.Duration {
	return max(backoff, min(asked, maxWait))
}

// sleepCtx waits d, false if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// post makes one attempt; retry says whether another may succeed, and
// asked how long the webhook asked to be left alone (its Retry-After on a
// 429 or 503), zero when it did not say.
func (p *Push) post(ctx context.Context, config *a2a.PushConfig, body []byte) (retry bool, asked time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, config.URL, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if config.Token != "" {
		req.Header.Set(NotificationTokenHeader, config.Token)
	}
	// 1.0 §4.3.3: "The agent MUST include authentication credentials in
	// the request headers as specified in the PushNotificationConfig.
	// authentication field."
	if config.Auth != nil && config.Auth.Credentials != "" {
		req.Header.Set("Authorization", config.Auth.Scheme+" "+config.Auth.Credentials)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return true, 0, fmt.Errorf("post: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBody))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, 0, nil
	case code >= 300 && code < 400:
		return false, 0, fmt.Errorf("webhook answered %s: redirects are not followed", resp.Status)
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return true, retryAfter(resp.Header.Get("Retry-After"), time.Now()), fmt.Errorf("webhook answered %s", resp.Status)
	case code == http.StatusRequestTimeout || code >= 500:
		return true, 0, fmt.Errorf("webhook answered %s", resp.Status)
	default:
		return false, 0, fmt.Errorf("webhook answered %s", resp.Status)
	}
}

// maxRetryAfterSeconds keeps a Retry-After in seconds within a Duration.
const maxRetryAfterSeconds = uint64(math.MaxInt64 / int64(time.Second))

// retryAfter reads a Retry-After value (RFC 9110 §10.2.3: delay-seconds or
// an HTTP-date) as a wait from now; zero for a value that is neither, or a
// date already past, so that a malformed header changes nothing.
func retryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(value, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// A number too large for a Duration is a very long wait, which
		// retryWait bounds; it must not wrap to a short one.
		return time.Duration(min(secs, maxRetryAfterSeconds)) * time.Second
	}
	if at, err := http.ParseTime(value); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}
