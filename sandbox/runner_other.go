//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// Runner is the sandbox's runner. Here it cannot run anything: the
// protections need Linux (namespaces, rlimits set in the child, waitid).
type Runner struct {
	opts Options
}

// errUnsupported says why nothing runs here.
var errUnsupported = fmt.Errorf("sandbox: untrusted code runs only on Linux, not on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// New returns a Runner whose Check and Run fail with an error wrapping
// errors.ErrUnsupported.
func New(opts Options) (*Runner, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Runner{opts: opts}, nil
}

// Check returns an error wrapping errors.ErrUnsupported.
func (r *Runner) Check(context.Context) (*Info, error) { return nil, errUnsupported }

// Info is nil: nothing is in force.
func (r *Runner) Info(time.Duration) *Info { return nil }

// Timeout is the default wall-clock limit of one run.
func (r *Runner) Timeout() time.Duration { return r.opts.Timeout }

// Python is empty: no interpreter was probed.
func (r *Runner) Python() string { return "" }

// Run returns an error wrapping errors.ErrUnsupported.
func (r *Runner) Run(context.Context, Request) (*Result, error) { return nil, errUnsupported }
