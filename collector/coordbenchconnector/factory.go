package coordbenchconnector

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
)

// Type is the connector's component type, as configs name it.
var Type = component.MustNewType("coordbench")

// Stability of both signal pairs (traces to metrics, traces to logs).
const Stability = component.StabilityLevelDevelopment

// scopeName names the connector's instrumentation scope, on what it emits
// and on its own telemetry.
const scopeName = "github.com/coordbench/coordbench/collector/coordbenchconnector"

// NewFactory returns the connector's factory. One connector id used in a
// metrics and a logs pipeline is one assessor: both pipelines' instances
// share it, so each trace is assembled and evaluated once, whatever
// signals are taken from it.
func NewFactory() connector.Factory {
	f := &factory{cores: map[component.ID]*core{}}
	return connector.NewFactory(Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithTracesToMetrics(f.createTracesToMetrics, Stability),
		connector.WithTracesToLogs(f.createTracesToLogs, Stability),
	)
}

// factory holds the assessors of the connector ids built by one factory.
type factory struct {
	mu    sync.Mutex
	cores map[component.ID]*core
}

func (f *factory) createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	c, err := f.coreFor(set, cfg)
	if err != nil {
		return nil, err
	}
	c.setMetrics(next)
	return &instance{core: c, factory: f, id: set.ID, ingests: true}, nil
}

func (f *factory) createTracesToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	c, err := f.coreFor(set, cfg)
	if err != nil {
		return nil, err
	}
	c.setLogs(next)
	return &instance{core: c, factory: f, id: set.ID}, nil
}

func (f *factory) coreFor(set connector.Settings, cfg component.Config) (*core, error) {
	config, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("coordbench connector: config is %T, not *Config", cfg)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cores[set.ID]; c != nil {
		c.refs++
		return c, nil
	}
	c, err := newCore(set, config)
	if err != nil {
		return nil, fmt.Errorf("coordbench connector %s: %w", set.ID, err)
	}
	c.refs = 1
	f.cores[set.ID] = c
	return c, nil
}

// release drops one instance's reference to the core of id.
func (f *factory) release(id component.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cores[id]; c != nil {
		c.refs--
		if c.refs <= 0 {
			delete(f.cores, id)
		}
	}
}
