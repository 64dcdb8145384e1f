package a2acall

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/tracedata"
)

// This file: the messenger pool. A Messenger keeps one a2a-go client per
// participant URL, made from the agent's card on first use and reused by
// every later call; Close closes them all. The URLs callers give are parsed
// once each too.

// maxTargets bounds the participant URLs a Messenger remembers parsed;
// beyond it a URL is parsed on every call (callers name a few participants,
// so this is a bound on a misuse, not a working limit).
const maxTargets = 4096

// target is a participant URL as a caller gave it, parsed once: its base
// (normalizeURL) and the invoke_agent span's attributes known before the
// call (operation, call type, server.address and server.port).
type target struct {
	base string
	// spanAttrs is shared by every call; its capacity is its length, so a
	// call that appends to it gets a copy.
	spanAttrs []attribute.KeyValue
}

// target returns the parsed form of the participant URL raw, or ErrClosed
// after Close.
func (m *Messenger) target(raw string) (*target, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if t := m.targets[raw]; t != nil {
		return t, nil
	}
	base, err := normalizeURL(raw)
	if err != nil {
		return nil, err
	}
	attrs := append([]attribute.KeyValue{
		otelmap.AttrGenAIOperationName.String(otelmap.OpInvokeAgent),
		otelmap.AttrCallType.String(string(tracedata.CallAgent)),
	}, serverAttrs(base)...)
	t := &target{base: base, spanAttrs: slices.Clip(attrs)}
	if len(m.targets) < maxTargets {
		m.targets[raw] = t
	}
	return t, nil
}

// clientEntry is one participant URL's client. lock is held (a one-slot
// channel, so that waiting for it honours the caller's context) while the
// card is fetched, so concurrent first calls fetch it once; a failed fetch
// leaves p nil and the next call tries again, since a participant may come
// up late.
type clientEntry struct {
	lock chan struct{}
	p    *participant // guarded by Messenger.mu for writes and unlocked reads
}

// participant returns the client of the participant at base, creating it
// from the agent's card on first use.
func (m *Messenger) participant(ctx context.Context, base string) (*participant, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	e := m.clients[base]
	if e == nil {
		e = &clientEntry{lock: make(chan struct{}, 1)}
		m.clients[base] = e
	}
	if p := e.p; p != nil {
		m.mu.Unlock()
		return p, nil
	}
	m.mu.Unlock()

	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the agent card: %w", ctx.Err())
	}
	defer func() { <-e.lock }()
	m.mu.Lock()
	p := e.p
	m.mu.Unlock()
	if p != nil { // another call fetched it while this one waited
		return p, nil
	}
	p, err := m.connect(ctx, base)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = p.client.Destroy()
		return nil, ErrClosed
	}
	e.p = p
	return p, nil
}

// Close closes every client and the connections they kept. Calls under way
// fail; later calls return ErrClosed. Close is idempotent.
func (m *Messenger) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	for id, cancel := range m.calls {
		cancel(ErrClosed)
		delete(m.calls, id)
	}
	entries := m.clients
	m.clients = map[string]*clientEntry{}
	var errs []error
	for u, e := range entries {
		if e.p == nil {
			continue
		}
		if err := e.p.client.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("close client of %s: %w", u, err))
		}
	}
	m.mu.Unlock()
	m.base.CloseIdleConnections()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("messenger close: %w", err)
	}
	return nil
}
