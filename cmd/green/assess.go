package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/internal/cli"
	"github.com/coordbench/coordbench/otelmap/assemble"
)

// fileList collects repeated --otlp flags.
type fileList []string

func (f *fileList) String() string     { return fmt.Sprint(*f) }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// assessOptions are `green assess`'s flags and arguments, read.
type assessOptions struct {
	files  []string
	config evals.Config
	output string
	conv   *assemble.Conventions
}

// assess is `green assess`: OTLP JSON files assessed offline.
func assess(ctx context.Context, c *cli.Command, args []string) int {
	o, code, ok := assessFlags(c, args)
	if !ok {
		return code
	}
	return runAssess(ctx, c, o)
}

func assessFlags(c *cli.Command, args []string) (assessOptions, int, bool) {
	var o assessOptions
	var files fileList
	c.Flags.Var(&files, "otlp", "an OTLP JSON file to assess (repeatable; the files may also be given as arguments)")
	configArg := c.Flags.String("config", "", `evaluator config as JSON or @file, e.g. {"evaluators": {"judge": false}}`)
	c.Flags.StringVar(&o.output, "output", "", "write the JSON result to this file instead of stdout")
	registerConventionsFlag(c.Flags, &o.conv)
	positional, code, ok := c.Parse(args)
	if !ok {
		return o, code, false
	}
	o.files = append(files, positional...)
	if len(o.files) == 0 {
		return o, c.UsageError("no OTLP files given"), false
	}
	cfg, err := parseEvalConfig(*configArg)
	if err != nil {
		return o, c.Fail(cli.ExitUsage, err), false
	}
	o.config = cfg
	return o, 0, true
}

func runAssess(ctx context.Context, c *cli.Command, o assessOptions) int {
	res, err := green.AssessOTLPFiles(ctx, o.files, green.OfflineOptions{
		Judge:       judgeFromEnv(c.Name),
		Config:      o.config,
		Logger:      slog.Default(),
		Conventions: o.conv,
	})
	if err != nil {
		var inputErr *green.InputError
		if errors.As(err, &inputErr) {
			return c.Fail(cli.ExitUsage, err)
		}
		return c.Fail(cli.ExitFailure, err)
	}
	if err := writeJSON(res, o.output, c.Stdout); err != nil {
		return c.Fail(cli.ExitFailure, err)
	}
	return cli.ExitOK
}
