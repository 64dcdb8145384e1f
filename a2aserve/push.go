package a2aserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// This file: push notifications (A2A 1.0 §3.1.7–3.1.10, §4.3, §13.2; 0.3
// §7.5–7.8, §9.5). Push is both the config store and the sender a2a-go's
// request handler takes (a2asrv.WithPushNotifications), because a2a-go's
// own pair does not fit a server whose clients are not trusted:
//
//   - a2a-go's HTTPPushSender posts in the event pipeline itself: a webhook
//     that hangs holds up the task's events for its 30 s timeout, one event
//     after another, and a failing one either stops the task (FailOnError)
//     or is given up at once. Push queues each event and returns; a worker
//     per config delivers them in order, each attempt bounded by a timeout,
//     retried a bounded number of times with exponential backoff (§13.2:
//     "Agents SHOULD implement retry logic with exponential backoff for
//     failed deliveries"), longer where a 429 or 503 asks for it with
//     Retry-After, up to the same bound. The assessment never waits for a
//     webhook.
//   - it sends the token as "A2A-Notification-Token"; both specifications
//     name "X-A2A-Notification-Token" (0.3 §6.8 and §9.5, 1.0 §6.6).
//   - it sends the 1.0 payload (a StreamResponse) to every client; a 0.3
//     client expects the Task (0.3 §9.5: "HTTP Body (Task object is sent
//     as JSON payload)"), as the Python a2a-sdk 0.3 sends it. Push
//     remembers the protocol version of the request that set each config
//     and sends that version's payload.
//   - its store accepts any URL and any number of configs, for task ids
//     that do not exist, and keeps them forever. Push checks the URL
//     (PushOptions.CheckURL: the operator's allow-list), bounds the configs
//     per task, and drops a task's configs when the TaskStore drops the
//     task.
//
// Redirects are never followed: the token and credentials would go to a
// URL the client never registered (Go's client keeps custom headers such
// as X-A2A-Notification-Token across redirects), and a 301/302 turns the
// POST into a GET. A 3xx answer is a failed delivery, not retried.
//
// Deliveries make no spans: a POST in a task's trace would be an unpaired
// client span, which trace assembly reads as a call to a virtual agent.

// NotificationTokenHeader carries PushConfig.Token to the webhook (0.3
// §6.8: "the server includes it in an X-A2A-Notification-Token header";
// 1.0 §6.6).
const NotificationTokenHeader = "X-A2A-Notification-Token"

// Push notification defaults.
const (
	DefaultPushTimeout        = 10 * time.Second // 1.0 §4.3.3: "recommended: 10-30 seconds"
	DefaultPushMaxAttempts    = 4
	DefaultPushInitialBackoff = time.Second
	DefaultPushMaxBackoff     = 30 * time.Second
	DefaultPushConfigsPerTask = 16
	DefaultPushQueue          = 64
)

// Bounds on what a client may store in a config.
const (
	maxWebhookURL   = 2048
	maxPushToken    = 1024
	maxPushConfigID = 256
	// maxAnswerBody is read of a webhook's answer before it is closed, so
	// the connection can be reused; the rest is left unread.
	maxAnswerBody = 64 << 10
)

// PushOptions configure NewPush. The zero value takes every default and
// allows any http or https webhook.
type PushOptions struct {
	// CheckURL refuses a webhook URL, with the reason (the green agent's
	// participant allow-list: a2acall.AllowList.CheckURL). It is asked
	// when a config is set; nil allows every host.
	CheckURL func(rawURL string) error
	// Transport makes the webhook requests; nil is a clone of
	// http.DefaultTransport. With an allow-list it should also check each
	// address a host name resolves to when connecting
	// (a2acall.AllowList.Transport), which CheckURL cannot.
	Transport http.RoundTripper
	// Timeout bounds one delivery attempt, answer included (default
	// DefaultPushTimeout).
	Timeout time.Duration
	// MaxAttempts bounds the attempts at one notification (default
	// DefaultPushMaxAttempts); the waits between them start at
	// InitialBackoff and double up to MaxBackoff.
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxConfigsPerTask bounds the configs of one task (default
	// DefaultPushConfigsPerTask); one more is refused as invalid params.
	MaxConfigsPerTask int
	// MaxQueue bounds the notifications waiting for one config (default
	// DefaultPushQueue); past it the oldest waiting one is dropped (a later
	// one says more) and counted.
	MaxQueue int
	// Logger receives a warning for each notification given up; nil
	// discards.
	Logger *slog.Logger
}

// PushStats count what Push did.
type PushStats struct {
	// Configs is the number of configs held now.
	Configs int `json:"configs"`
	// Delivered notifications were answered 2xx; Retried counts the
	// attempts after a first one failed; Failed notifications were given up
	// after their last attempt or at a permanent refusal (a 3xx or a 4xx
	// other than 408 and 429); Dropped ones never got a (whole) attempt
	// (queue full, config deleted, shutting down).
	Delivered uint64 `json:"delivered"`
	Retried   uint64 `json:"retried"`
	Failed    uint64 `json:"failed"`
	Dropped   uint64 `json:"dropped"`
}

// Push stores a server's push notification configs and delivers their
// notifications (see the comment at the top of this file). Pass it as
// Options.Push to one handler; Close ends its deliveries.
type Push struct {
	opts   PushOptions
	client *http.Client
	log    *slog.Logger

	ctx    context.Context // ends at Close; every delivery runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	tasks atomic.Pointer[TaskStore] // for 0.3 payloads, set by NewHandler

	mu      sync.Mutex
	configs map[a2a.TaskID][]*pushEntry // in order of creation
	queues  map[pushKey]*pushQueue
	closed  bool

	delivered, retried, failed, dropped atomic.Uint64

	// wait sleeps d between two attempts, false if ctx ended first; a
	// field so that tests can see the waits without sleeping them.
	wait func(ctx context.Context, d time.Duration) bool
}

var (
	_ push.ConfigStore = (*Push)(nil)
	_ push.Sender      = (*Push)(nil)
)

type pushKey struct {
	task a2a.TaskID
	id   string
}

// pushEntry is a stored config and the protocol version of the request
// that set it.
type pushEntry struct {
	config  *a2a.PushConfig
	version string
}

// pushQueue holds the notifications waiting for one config; a worker runs
// while it is not empty. cancel stops the worker's attempt under way (the
// config was deleted).
type pushQueue struct {
	items   [][]byte
	running bool
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewPush returns an empty Push; negative options are an error.
func NewPush(opts PushOptions) (*Push, error) {
	if opts.Timeout < 0 || opts.MaxAttempts < 0 || opts.InitialBackoff < 0 || opts.MaxBackoff < 0 ||
		opts.MaxConfigsPerTask < 0 || opts.MaxQueue < 0 {
		return nil, errors.New("a2aserve: push options must not be negative")
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultPushTimeout
	}
	if opts.MaxAttempts == 0 {
		opts.MaxAttempts = DefaultPushMaxAttempts
	}
	if opts.InitialBackoff == 0 {
		opts.InitialBackoff = DefaultPushInitialBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultPushMaxBackoff
	}
	if opts.MaxConfigsPerTask == 0 {
		opts.MaxConfigsPerTask = DefaultPushConfigsPerTask
	}
	if opts.MaxQueue == 0 {
		opts.MaxQueue = DefaultPushQueue
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Push{
		opts: opts,
		client: &http.Client{
			Transport: opts.Transport,
			Timeout:   opts.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		log:     opts.Logger,
		ctx:     ctx,
		cancel:  cancel,
		configs: map[a2a.TaskID][]*pushEntry{},
		queues:  map[pushKey]*pushQueue{},
		wait:    sleepCtx,
	}, nil
}

// Stats returns the counters.
func (p *Push) Stats() PushStats {
	p.mu.Lock()
	n := 0
	for _, es := range p.configs {
		n += len(es)
	}
	p.mu.Unlock()
	return PushStats{Configs: n, Delivered: p.delivered.Load(), Retried: p.retried.Load(),
		Failed: p.failed.Load(), Dropped: p.dropped.Load()}
}

// Close stops taking notifications, waits until those queued are delivered
// or given up or ctx ends, then ends the attempts still under way and
// waits for their workers. It returns ctx's error if it had to cut them.
func (p *Push) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("push notifications cut at shutdown: %w", ctx.Err())
	}
	p.cancel()
	<-done
	return err
}

// attach makes p read 0.3 payloads from tasks and drop the configs of the
// tasks it drops. A Push serves one task store.
func (p *Push) attach(tasks *TaskStore) error {
	if !p.tasks.CompareAndSwap(nil, tasks) && p.tasks.Load() != tasks {
		return errors.New("a2aserve: a Push serves one task store")
	}
	tasks.setOnDrop(func(id a2a.TaskID) { _ = p.DeleteAll(context.Background(), id) })
	return nil
}

// invalid is an Invalid params error (-32602) saying why a config was
// refused.
func invalid(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, "push notification config: "+fmt.Sprintf(format, args...))
}

// validate checks a config a client sets: an absolute http(s) URL the
// operator allows, and a token and credentials that fit in a header.
func (p *Push) validate(c *a2a.PushConfig) error {
	if c == nil {
		return invalid("missing")
	}
	if c.URL == "" {
		return invalid("url is required")
	}
	if len(c.URL) > maxWebhookURL {
		return invalid("url longer than %d bytes", maxWebhookURL)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return invalid("url: %v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return invalid("url %q is not an absolute http or https URL", u.Redacted())
	}
	if p.opts.CheckURL != nil {
		if err := p.opts.CheckURL(c.URL); err != nil {
			return invalid("webhook %s refused: %v", u.Redacted(), err)
		}
	}
	if len(c.ID) > maxPushConfigID {
		return invalid("id longer than %d bytes", maxPushConfigID)
	}
	if len(c.Token) > maxPushToken || !headerSafe(c.Token) {
		return invalid("token must be at most %d printable characters", maxPushToken)
	}
	if c.Auth != nil {
		if c.Auth.Credentials != "" && !isToken(c.Auth.Scheme) {
			return invalid("authentication scheme %q is not an HTTP authentication scheme name", c.Auth.Scheme)
		}
		if len(c.Auth.Credentials) > maxPushToken || !headerSafe(c.Auth.Credentials) {
			return invalid("authentication credentials must be at most %d printable characters", maxPushToken)
		}
	}
	return nil
}

// headerSafe reports whether s may be sent as a header value: no control
// characters (a CR or LF would start another header).
func headerSafe(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token, as an authentication
// scheme name is (§11.1).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", c) {
			return false
		}
	}
	return true
}

func copyConfig(c *a2a.PushConfig) *a2a.PushConfig {
	out := *c
	if c.Auth != nil {
		auth := *c.Auth
		out.Auth = &auth
	}
	return &out
}

// Save implements push.ConfigStore: it creates or replaces a config of the
// task (a new one gets an id when the client gave none).
func (p *Push) Save(ctx context.Context, taskID a2a.TaskID, config *a2a.PushConfig) (*a2a.PushConfig, error) {
	if err := p.validate(config); err != nil {
		return nil, err
	}
	c := copyConfig(config)
	c.TaskID = taskID
	if c.ID == "" {
		c.ID = rand.Text()
	}
	version := ProtocolVersion(ctx)
	if version == "" {
		version = version1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	entries := p.configs[taskID]
	for _, e := range entries {
		if e.config.ID == c.ID {
			e.config, e.version = c, version
			return copyConfig(c), nil
		}
	}
	if len(entries) >= p.opts.MaxConfigsPerTask {
		return nil, invalid("task %s already has %d configs, the most it may have", taskID, p.opts.MaxConfigsPerTask)
	}
	p.configs[taskID] = append(entries, &pushEntry{config: c, version: version})
	return copyConfig(c), nil
}

// Get implements push.ConfigStore. A config that does not exist is
// TaskNotFoundError (1.0 §3.1.8: "TaskNotFoundError: The push notification
// configuration does not exist."). A 0.3 request may leave the id out (0.3
// §7.6.1: "Server will return one of the associated configurations if
// config id is not specified"): it gets the first.
func (p *Push) Get(ctx context.Context, taskID a2a.TaskID, configID string) (*a2a.PushConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.configs[taskID] {
		if e.config.ID == configID || (configID == "" && ProtocolVersion(ctx) == version03) {
			return copyConfig(e.config), nil
		}
	}
	return nil, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("push notification config %q of task %s not found", configID, taskID))
}

// List implements push.ConfigStore: the task's configs in the order they
// were created.
func (p *Push) List(_ context.Context, taskID a2a.TaskID) ([]*a2a.PushConfig, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*a2a.PushConfig, 0, len(p.configs[taskID]))
	for _, e := range p.configs[taskID] {
		out = append(out, copyConfig(e.config))
	}
	return out, nil
}

// Delete implements push.ConfigStore. It is idempotent (1.0 §3.1.10), and
// what was queued for the config is dropped: "No further notifications
// will be sent to the configured webhook after deletion."
func (p *Push) Delete(_ context.Context, taskID a2a.TaskID, configID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	entries := p.configs[taskID]
	for i, e := range entries {
		if e.config.ID == configID {
			entries = append(entries[:i:i], entries[i+1:]...)
			break
		}
	}
	if len(entries) == 0 {
		delete(p.configs, taskID)
	} else {
		p.configs[taskID] = entries
	}
	p.forget(pushKey{taskID, configID})
	return nil
}

// DeleteAll implements push.ConfigStore.
func (p *Push) DeleteAll(_ context.Context, taskID a2a.TaskID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.configs[taskID] {
		p.forget(pushKey{taskID, e.config.ID})
	}
	delete(p.configs, taskID)
	return nil
}

// forget drops what is queued for k and ends its attempt under way. p.mu
// is held.
func (p *Push) forget(k pushKey) {
	q := p.queues[k]
	if q == nil {
		return
	}
	p.dropped.Add(uint64(len(q.items)))
	q.items = nil
	q.cancel()
	delete(p.queues, k)
}

// entry is the stored config of k, nil once deleted. p.mu is held.
func (p *Push) entry(k pushKey) *pushEntry {
	for _, e := range p.configs[k.task] {
		if e.config.ID == k.id {
			return e
		}
	}
	return nil
}

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

// work delivers q's notifications in order until it is empty.
func (p *Push) work(k pushKey, q *pushQueue) {
	defer p.wg.Done()
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
		p.deliver(q.ctx, config, body)
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

// pushProtoNames are the multi-word fields of the 1.0 push config methods'
// params, by their proto names and their JSON names.
var pushProtoNames = map[string]string{"task_id": "taskId", "page_size": "pageSize", "page_token": "pageToken"}

// withJSONNames gives the params of a 1.0 push config method their JSON
// field names where a client used the proto ones ("task_id" for
// "taskId"), as the A2A conformance suite's JSON-RPC client does. 1.0 §5.5
// says serializations "MUST use camelCase" and that this "follows the
// ProtoJSON specification", whose parsers "accept both the lowerCamelCase
// name (or the one specified by the json_name option) and the original
// proto field name" (protobuf.dev/programming-guides/json); a2a-go decodes
// with encoding/json, which knows only the first, and read such a request
// as one for task "". Only the top level of params is renamed: deeper keys
// may be a client's own (metadata). Other bodies pass unchanged.
func withJSONNames(body []byte) []byte {
	if !bytes.Contains(body, []byte("PushNotificationConfig")) || !bytes.Contains(body, []byte("_")) {
		return body // not decoded twice: most bodies are messages
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var method string
	if json.Unmarshal(req["method"], &method) != nil || !strings.HasSuffix(method, "TaskPushNotificationConfig") && method != "ListTaskPushNotificationConfigs" {
		return body
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(req["params"], &params) != nil {
		return body
	}
	renamed := false
	for proto, name := range pushProtoNames {
		if v, ok := params[proto]; ok {
			if _, both := params[name]; !both {
				params[name] = v
			}
			delete(params, proto)
			renamed = true
		}
	}
	if !renamed {
		return body
	}
	var err error
	if req["params"], err = json.Marshal(params); err != nil {
		return body
	}
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}
