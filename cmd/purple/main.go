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
// http://<name>:9009`; the rest are this agent's own. Exit status: 0 after a
// shutdown by SIGINT or SIGTERM, 1 on a failure while serving, 2 on bad
// usage.
//
// The command is the only place that reads the process's environment for
// the agent's options ($OTEL_SERVICE_NAME for --name, $COORDBENCH_SOLVER_MODE
// and $COORDBENCH_SCICODE_DIR for the solver roles); the OpenTelemetry and
// AGENTBEATS_LLM_* variables reach the agent as purple.Options.Getenv's
// default, the process's environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/coordbench/coordbench/purple"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr))
}

// peerList collects repeated --peer flags.
type peerList []string

func (p *peerList) String() string     { return strings.Join(*p, ",") }
func (p *peerList) Set(v string) error { *p = append(*p, v); return nil }

// run is the command: flags and environment to options, then the agent
// until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	o, code := options(args, getenv, stderr)
	if code >= 0 {
		return code
	}
	srv, err := purple.NewServer(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "purple: %v\n", err)
		return 2
	}
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintf(stderr, "purple: %v\n", err)
		return 1
	}
	return 0
}

// options reads the flags (their defaults from getenv) into the agent's
// options. A code of 0 or more means stop there and exit with it.
func options(args []string, getenv func(string) string, stderr io.Writer) (purple.Options, int) {
	fs := flag.NewFlagSet("purple", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	fs.BoolVar(&o.NoExtension, "no-extension", false, "never return steps through the A2A Traceability Extension")
	fs.DurationVar(&o.ExportInterval, "export-interval", 0, "longest an ended span waits in the batcher before export (default $OTEL_BSP_SCHEDULE_DELAY milliseconds, else 100ms)")
	fs.BoolVar(&o.FlushOnResponse, "flush-on-response", false, "export a request's spans before its response ends (no settle interval can miss them; adds the export to the caller's latency)")
	fs.DurationVar(&o.PeerTimeout, "peer-timeout", purple.DefaultPeerTimeout, "bound on one call to a peer")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", purple.DefaultShutdownTimeout, "bound on the graceful shutdown")
	solverMode := fs.String("solver-mode", getenv(purple.EnvSolverMode), "mode of the role solver: oracle, repair or llm (default $"+purple.EnvSolverMode+", else llm with an LLM, oracle without)")
	fs.StringVar(&solver.DataDir, "scicode-dir", getenv(purple.EnvSciCodeDir), "SciCode data directory of the solver's oracle (default $"+purple.EnvSciCodeDir+", else ../shared/data/scicode when present)")
	fs.DurationVar(&f.Delay, "delay", 0, "fault: wait this long before working on a request")
	fs.Float64Var(&f.FailureRate, "failure-rate", 0, "fault: probability (0..1) that a request's task fails")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of the failure-rate draw")
	fs.BoolVar(&f.Hang, "hang", false, "fault: never answer")
	fs.BoolVar(&f.Malformed, "malformed", false, "fault: answer without a decision")
	fs.BoolVar(&f.Crash, "crash", false, "fault: cut the connection in the middle of the response")
	fs.BoolVar(&f.NoSpans, "no-spans", false, "fault: emit no spans at all (no OTLP, no extension steps)")
	faultTasks := fs.String("fault-tasks", "", "apply the faults only to these task ids (comma-separated; default every request)")
	verbose := fs.Bool("v", false, "log at debug level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0
		}
		return o, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "purple: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return o, 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	o.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	peers, err := purple.ParsePeers(strings.Join(append([]string{*peersFlag}, peerFlags...), ","))
	if err != nil {
		fmt.Fprintf(stderr, "purple: %v\n", err)
		return o, 2
	}
	o.Peers = peers
	for _, id := range strings.Split(*faultTasks, ",") {
		if id = strings.TrimSpace(id); id != "" {
			f.Tasks = append(f.Tasks, id)
		}
	}
	o.Faults = f
	solver.Mode = purple.SolverMode(strings.ToLower(strings.TrimSpace(*solverMode)))
	if err := solver.Validate(); err != nil {
		fmt.Fprintf(stderr, "purple: %v\n", err)
		return o, 2
	}
	o.Roles = purple.StandardRoles(solver)
	return o, -1
}
