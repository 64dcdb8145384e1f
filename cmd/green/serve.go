package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
	"github.com/coordbench/coordbench/scenario/scicode"
)

// serveReady, when set (by tests), is called with the server once it
// listens, before it serves.
var serveReady func(*green.Server)

// scenarioFlags are the flags that locate the scenarios' data, shared by
// serve and run.
type scenarioFlags struct {
	groundTruth string
	peerRead    string
	titlesOnly  bool
	scicodeDir  string
}

func (f *scenarioFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.groundTruth, "ground-truth", "", "coordination scenario ground truth file (default $"+groundtruth.EnvFile+", else the built-in one)")
	fs.StringVar(&f.peerRead, "peerread", "", "PeerRead data directory (default $"+coordination.EnvPeerReadDir+", else ../shared/data/peerread when present)")
	fs.BoolVar(&f.titlesOnly, "titles-only", false, "send paper titles only, even when PeerRead is present")
	fs.StringVar(&f.scicodeDir, "scicode-dir", "", "SciCode data directory: problems_*.jsonl and the HDF5 targets (default $"+scicode.EnvDir+", else ../shared/data/scicode when present)")
}

func (f *scenarioFlags) build() (map[string]scenario.Scenario, map[string]string) {
	gt, err := groundtruth.Resolve(f.groundTruth, os.Getenv)
	if err != nil {
		// The coordination scenario is then unavailable with this reason;
		// the built-in ground truth is not silently used instead.
		scenarios, unavailable := green.DefaultScenarios(coordination.Options{}, scicode.Options{DataDir: f.scicodeDir})
		delete(scenarios, scenario.Coordination)
		unavailable[scenario.Coordination] = err.Error()
		return scenarios, unavailable
	}
	return green.DefaultScenarios(coordination.Options{
		GroundTruth: gt,
		PeerReadDir: f.peerRead,
		TitlesOnly:  f.titlesOnly,
	}, scicode.Options{DataDir: f.scicodeDir})
}

// registerAllowFlag adds --allow-participants, which sets *allow.
func registerAllowFlag(fs *flag.FlagSet, allow **a2acall.AllowList) {
	fs.Func("allow-participants", "comma-separated hosts the green agent may call: host names, *.domain, IP addresses, CIDR prefixes (e.g. purple,10.0.0.0/8); applies to participant URLs, the URLs in their cards, redirects and push notification webhooks (default: any host)",
		func(v string) error {
			a, err := a2acall.ParseAllowList(v)
			if err != nil {
				return err
			}
			*allow = a
			return nil
		})
}

// closeScenarios closes the scenarios that hold resources (SciCode's judge
// process) once the green agent is done with them.
func closeScenarios(scenarios map[string]scenario.Scenario) {
	for name, sc := range scenarios {
		if c, ok := sc.(io.Closer); ok {
			if err := c.Close(); err != nil {
				slog.Warn("close scenario", "scenario", name, "err", err)
			}
		}
	}
}

// serve is `green serve`: the A2A server until ctx ends (SIGINT or
// SIGTERM), then a graceful shutdown within --shutdown-timeout.
func serve(ctx context.Context, c *cli.Command, args []string) int {
	o, code, ok := serveFlags(c, args)
	if !ok {
		return code
	}
	return runServer(ctx, c, o)
}

// serveFlags reads the flags into the server's options.
func serveFlags(c *cli.Command, args []string) (green.ServerOptions, int, bool) {
	var o green.ServerOptions
	c.Flags.StringVar(&o.Host, "host", green.DefaultHost, "address to listen on (0.0.0.0 for every interface)")
	c.Flags.IntVar(&o.Port, "port", green.DefaultPort, "port to listen on (0 picks a free one)")
	c.Flags.StringVar(&o.CardURL, "card-url", "", "URL the agent card advertises (default http://HOST:PORT/)")
	c.Flags.StringVar(&o.MCPURL, "mcp-url", "", "base URL participants reach the per-task MCP endpoints at, e.g. http://green:9009/mcp/ (default the card URL's base + /mcp/; docs/mcp.md)")
	c.Flags.StringVar(&o.OTLPAddr, "otlp-addr", "", "optional second listener for the OTLP/HTTP receiver, e.g. :4318 (it is on the main listener at /v1/traces in any case)")
	c.Flags.DurationVar(&o.ProgressInterval, "progress-interval", green.DefaultProgressInterval, "longest silence of a running assessment before a working update")
	c.Flags.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", green.DefaultShutdownTimeout, "how long a shutdown waits for open requests")
	c.Flags.IntVar(&o.TaskLimits.MaxTasks, "max-tasks", a2aserve.DefaultMaxTasks, "finished A2A tasks (assessment results) kept for tasks/get and ListTasks; the oldest go first")
	c.Flags.DurationVar(&o.TaskLimits.MaxAge, "task-max-age", a2aserve.DefaultTaskMaxAge, "how long a finished A2A task is kept after its last update")
	c.Flags.DurationVar(&o.Push.Timeout, "push-timeout", a2aserve.DefaultPushTimeout, "bound on one push notification attempt to a client's webhook")
	c.Flags.IntVar(&o.Push.MaxAttempts, "push-attempts", a2aserve.DefaultPushMaxAttempts, "attempts at one push notification before it is given up (backoff from 1s, doubling, at most 30s)")
	registerAllowFlag(c.Flags, &o.Messenger.Allow)
	registerConventionsFlag(c.Flags, &o.Conventions)
	registerAdmissionFlags(c.Flags, &o.StoreLimits.Admission)
	var sf scenarioFlags
	sf.register(c.Flags)
	var af authFlags
	af.register(c.Flags, true)
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional), false
	}
	o.Scenarios, o.Unavailable = sf.build()
	judge := judgeFromEnv(c.Name)
	o.Judge = &judge
	auth, err := af.load(true)
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	o.A2AToken, o.OTLPToken = auth.a2aToken, auth.otlpToken
	o.Messenger.Credentials = auth.participants
	return o, 0, true
}

// runServer serves until ctx ends; the scenarios are closed when it
// returns, whether the server started or not.
func runServer(ctx context.Context, c *cli.Command, o green.ServerOptions) int {
	defer closeScenarios(o.Scenarios)
	srv, err := green.NewServer(ctx, o)
	if err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	if serveReady != nil {
		serveReady(srv)
	}
	start := time.Now()
	if err := srv.Serve(ctx); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	fmt.Fprintf(c.Stderr, "%s: stopped after %s\n", c.Name, time.Since(start).Round(time.Second))
	return cli.ExitOK
}
