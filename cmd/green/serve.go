package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/scenario"
	"github.com/coordbench/coordbench/scenario/coordination"
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
	fs.StringVar(&f.scicodeDir, "scicode-dir", "", "SciCode data directory: problems_*.jsonl and the HDF5 targets (default $"+green.EnvSciCodeDir+", else ../shared/data/scicode when present)")
}

func (f *scenarioFlags) build() (map[string]scenario.Scenario, map[string]string) {
	gt, err := groundtruth.Resolve(f.groundTruth, os.Getenv)
	if err != nil {
		// The coordination scenario is then unavailable with this reason;
		// the built-in ground truth is not silently used instead.
		scenarios, unavailable := green.DefaultScenarios(coordination.Options{}, green.SciCodeOptions{DataDir: f.scicodeDir})
		delete(scenarios, scenario.Coordination)
		unavailable[scenario.Coordination] = err.Error()
		return scenarios, unavailable
	}
	return green.DefaultScenarios(coordination.Options{
		GroundTruth: gt,
		PeerReadDir: f.peerRead,
		TitlesOnly:  f.titlesOnly,
	}, green.SciCodeOptions{DataDir: f.scicodeDir})
}

// serve runs the A2A server until ctx ends (SIGINT or SIGTERM), then shuts
// down gracefully within --shutdown-timeout.
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("green serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", green.DefaultHost, "address to listen on (0.0.0.0 for every interface)")
	port := fs.Int("port", green.DefaultPort, "port to listen on (0 picks a free one)")
	cardURL := fs.String("card-url", "", "URL the agent card advertises (default http://HOST:PORT/)")
	otlpAddr := fs.String("otlp-addr", "", "optional second listener for the OTLP/HTTP receiver, e.g. :4318 (it is on the main listener at /v1/traces in any case)")
	progress := fs.Duration("progress-interval", green.DefaultProgressInterval, "longest silence of a running assessment before a working update")
	shutdown := fs.Duration("shutdown-timeout", green.DefaultShutdownTimeout, "how long a shutdown waits for open requests")
	var sf scenarioFlags
	sf.register(fs)
	var af authFlags
	af.register(fs, true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "green serve: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	auth, err := af.load(true)
	if err != nil {
		fmt.Fprintf(stderr, "green serve: %v\n", err)
		return 2
	}
	scenarios, unavailable := sf.build()
	judge := judgeFromEnv("green serve")
	srv, err := green.NewServer(ctx, green.ServerOptions{
		Host:             *host,
		Port:             *port,
		CardURL:          *cardURL,
		OTLPAddr:         *otlpAddr,
		Scenarios:        scenarios,
		Unavailable:      unavailable,
		Judge:            &judge,
		ProgressInterval: *progress,
		ShutdownTimeout:  *shutdown,
		A2AToken:         auth.a2aToken,
		OTLPToken:        auth.otlpToken,
		Messenger:        green.MessengerOptions{Credentials: auth.participants},
	})
	if err != nil {
		fmt.Fprintf(stderr, "green serve: %v\n", err)
		return 1
	}
	if serveReady != nil {
		serveReady(srv)
	}
	start := time.Now()
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintf(stderr, "green serve: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "green serve: stopped after %s\n", time.Since(start).Round(time.Second))
	return 0
}
