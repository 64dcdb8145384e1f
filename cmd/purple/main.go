// Command purple serves coordbench's base purple agent (package purple): an
// A2A agent (1.0 and 0.3 on one URL) that answers review requests alone or
// with its peers, and whose spans coordbench can see (OTLP through the
// standard OpenTelemetry environment, and Traceability Extension steps).
//
//	purple [--host H] [--port P] [--card-url URL] [--name N] [--role R]
//	       [--peers name=url,...] [--peer [name=]url ...] [--delegation D]
//	       [--solver-mode M] [--scicode-dir DIR] [fault flags]
//
// AgentBeats starts it as `purple --host 0.0.0.0 --port 9009 --card-url
// http://<name>:9009`; the rest are this agent's own. Flags go anywhere
// (internal/cli); -h prints the usage with examples. Exit status: 0 after a
// shutdown by SIGINT or SIGTERM (or -h), 1 on a failure while serving, 2 on
// bad usage.
//
// The command is the only place that reads the process's environment for
// the agent's options ($OTEL_SERVICE_NAME for --name, $COORDBENCH_SOLVER_MODE
// and $COORDBENCH_SCICODE_DIR for the solver roles); the OpenTelemetry and
// AGENTBEATS_LLM_* variables reach the agent as purple.Options.Getenv's
// default, the process's environment.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/purple"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// command is purple's command line: its usage and examples.
func command(stdout, stderr io.Writer) *cli.Command {
	c := cli.New("purple", "[--host HOST] [--port PORT] [--card-url URL] [--name NAME] [--role ROLE] [--peer [NAME=]URL ...] [flags]",
		"Serve coordbench's base purple agent over A2A (1.0 and 0.3) until SIGINT or SIGTERM: a reviewer,\n"+
			"a coordinator that asks its peers, or a solver; faults on demand.", stdout, stderr)
	c.Examples = []string{
		"purple --port 9019 --role reviewer --name reviewer-1",
		"purple --port 9018 --role coordinator --name coordinator --peer reviewer-1=http://127.0.0.1:9019/",
		"purple --port 9020 --role reviewer --name slow-reviewer --delay 2s --failure-rate 0.5",
	}
	return c
}

// envPeerTokensFile names the default of --peer-tokens-file.
const envPeerTokensFile = "COORDBENCH_PEER_TOKENS_FILE"

// peerList collects repeated --peer flags.
type peerList []string

func (p *peerList) String() string     { return strings.Join(*p, ",") }
func (p *peerList) Set(v string) error { *p = append(*p, v); return nil }

// run is the command: flags and environment to options, then the agent
// until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := command(stdout, stderr)
	o, code := options(c, args, getenv)
	if code >= 0 {
		return code
	}
	srv, err := purple.NewServer(ctx, o)
	if err != nil {
		return c.Fail(cli.ExitUsage, err)
	}
	if err := srv.Serve(ctx); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	return cli.ExitOK
}

// options reads the flags (their defaults from getenv) into the agent's
// options. A code of 0 or more means stop there and exit with it.
func options(c *cli.Command, args []string, getenv func(string) string) (purple.Options, int) {
	fs := c.Flags
	var o purple.Options
	var f purple.Faults
	var solver purple.SolverOptions
	fs.StringVar(&o.Host, "host", purple.DefaultHost, "address to listen on (0.0.0.0 for every interface)")
	fs.IntVar(&o.Port, "port", purple.DefaultPort, "port to listen on (0 picks a free one)")
	fs.StringVar(&o.CardURL, "card-url", "", "URL the agent card advertises (default http://HOST:PORT/)")
	fs.StringVar(&o.Name, "name", getenv("OTEL_SERVICE_NAME"), "agent name: card, gen_ai.agent.name and service.name (default $OTEL_SERVICE_NAME, else the role)")
	fs.StringVar(&o.Role, "role", purple.RoleReviewer, "role: "+strings.Join(purple.RoleNames(purple.StandardRoles(solver)), ", "))
	peersFlag := fs.String("peers", "", "peers as name=url pairs separated by commas")
	var peerFlags peerList
	fs.Var(&peerFlags, "peer", "a peer as name=url or url (repeatable)")
	fs.StringVar(&o.Delegation, "delegation", "", "how to call the peers: "+strings.Join(purple.Delegations(), ", ")+" (default fan_out for a coordinator, consult otherwise)")
	fs.StringVar(&o.Description, "description", "", "the card's description")
	fs.StringVar(&o.OTLPEndpoint, "otlp-endpoint", "", "also export spans to this OTLP/HTTP endpoint (e.g. the green agent's http://green:9009); OTEL_EXPORTER_OTLP_ENDPOINT works as usual")
	fs.BoolVar(&o.NoIngestToken, "no-ingest-token", false, "ignore the ingest token an assessor hands the agent (coordbench.ingest metadata): export without its header and do not hand it on to peers")
	fs.BoolVar(&o.NoExtension, "no-extension", false, "never return steps through the A2A Traceability Extension")
	fs.DurationVar(&o.ExportInterval, "export-interval", 0, "longest an ended span waits in the batcher before export (default $OTEL_BSP_SCHEDULE_DELAY milliseconds, else 100ms)")
	fs.BoolVar(&o.FlushOnResponse, "flush-on-response", false, "export a request's spans before its response ends (no settle interval can miss them; adds the export to the caller's latency)")
	fs.DurationVar(&o.PeerTimeout, "peer-timeout", purple.DefaultPeerTimeout, "bound on one call to a peer")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", purple.DefaultShutdownTimeout, "bound on the graceful shutdown")
	fs.IntVar(&o.TaskLimits.MaxTasks, "max-tasks", a2aserve.DefaultMaxTasks, "finished A2A tasks kept for tasks/get and ListTasks; the oldest go first")
	fs.DurationVar(&o.TaskLimits.MaxAge, "task-max-age", a2aserve.DefaultTaskMaxAge, "how long a finished A2A task is kept after its last update")
	solverMode := fs.String("solver-mode", getenv(purple.EnvSolverMode), "mode of the role solver: oracle, repair or llm (default $"+purple.EnvSolverMode+", else llm with an LLM, oracle without)")
	fs.StringVar(&solver.DataDir, "scicode-dir", getenv(purple.EnvSciCodeDir), "SciCode data directory of the solver's oracle (default $"+purple.EnvSciCodeDir+", else ../shared/data/scicode when present)")
	fs.DurationVar(&f.Delay, "delay", 0, "fault: wait this long before working on a request")
	fs.Float64Var(&f.FailureRate, "failure-rate", 0, "fault: probability (0..1) that a request's task fails")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the failure-rate draw")
	fs.BoolVar(&f.Hang, "hang", false, "fault: never answer")
	fs.BoolVar(&f.Malformed, "malformed", false, "fault: answer without a decision")
	fs.BoolVar(&f.Crash, "crash", false, "fault: cut the connection in the middle of the response")
	fs.BoolVar(&f.NoSpans, "no-spans", false, "fault: emit no spans at all (no OTLP, no extension steps)")
	a2aTokenFile := fs.String("a2a-token-file", getenv(a2aserve.EnvA2ATokenFile),
		"file holding the token every A2A request must carry (default $"+a2aserve.EnvA2ATokenFile+"; or the token itself in $"+a2aserve.EnvA2AToken+"; none: open)")
	peerTokensFile := fs.String("peer-tokens-file", getenv(envPeerTokensFile),
		"file of credentials for peers that require them, one \"URL-prefix token\" a line (default $"+envPeerTokensFile+")")
	faultTasks := fs.String("fault-tasks", "", "apply the faults only to these task ids (comma-separated; default every request)")
	verbose := fs.Bool("v", false, "log at debug level")
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code
	}
	if len(positional) > 0 {
		return o, c.UsageError("unexpected arguments %q", positional)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	o.Logger = slog.New(slog.NewTextHandler(c.Stderr, &slog.HandlerOptions{Level: level}))

	peers, err := purple.ParsePeers(strings.Join(append([]string{*peersFlag}, peerFlags...), ","))
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err)
	}
	o.Peers = peers
	if o.A2AToken, err = a2aserve.ReadToken(getenv, a2aserve.EnvA2AToken, *a2aTokenFile); err != nil {
		return o, c.Fail(cli.ExitUsage, fmt.Errorf("A2A token: %w", err))
	}
	if o.PeerCredentials, err = a2acall.LoadCredentials(*peerTokensFile); err != nil {
		return o, c.Fail(cli.ExitUsage, fmt.Errorf("peer tokens: %w", err))
	}
	for _, id := range strings.Split(*faultTasks, ",") {
		if id = strings.TrimSpace(id); id != "" {
			f.Tasks = append(f.Tasks, id)
		}
	}
	o.Faults = f
	solver.Mode = purple.SolverMode(strings.ToLower(strings.TrimSpace(*solverMode)))
	if err := solver.Validate(); err != nil {
		return o, c.Fail(cli.ExitUsage, err)
	}
	o.Roles = purple.StandardRoles(solver)
	return o, -1
}
