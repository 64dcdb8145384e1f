package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/scenario"
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
	fs.StringVar(&f.groundTruth, "ground-truth", "", "coordination scenario ground truth file (default $"+green.EnvGroundTruth+", else data/ground_truth.json)")
	fs.StringVar(&f.peerRead, "peerread", "", "PeerRead data directory (default $"+green.EnvPeerReadDir+", else ../shared/data/peerread when present)")
	fs.BoolVar(&f.titlesOnly, "titles-only", false, "send paper titles only, even when PeerRead is present")
	fs.StringVar(&f.scicodeDir, "scicode-dir", "", "SciCode data directory: problems_*.jsonl and the HDF5 targets (default $"+scicode.EnvDir+", else ../shared/data/scicode when present)")
}

func (f *scenarioFlags) build() (map[string]scenario.Scenario, map[string]string) {
	return green.DefaultScenarios(green.CoordinationOptions{
		GroundTruthPath: f.groundTruth,
		PeerReadDir:     f.peerRead,
		TitlesOnly:      f.titlesOnly,
	}, scicode.Options{DataDir: f.scicodeDir})
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
	scenarios, unavailable := sf.build()
	srv, err := green.NewServer(ctx, green.ServerOptions{
		Host:             *host,
		Port:             *port,
		CardURL:          *cardURL,
		OTLPAddr:         *otlpAddr,
		Scenarios:        scenarios,
		Unavailable:      unavailable,
		ProgressInterval: *progress,
		ShutdownTimeout:  *shutdown,
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
