package a2aserve

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// The push config store: what a client may set (push.go says why each
// check), and the a2a-go push.ConfigStore methods over it.

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
