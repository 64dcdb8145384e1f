package a2aserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// Push notifications (A2A 1.0 §3.1.7–3.1.10, §4.3, §13.2; 0.3 §7.5–7.8,
// §9.5): this file holds the Push and its options, push_config.go the
// configs a client may set, push_deliver.go the deliveries. Push is both the config store and the sender a2a-go's
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
