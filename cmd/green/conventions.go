package main

import (
	"flag"

	"github.com/coordbench/coordbench/otelmap/assemble"
)

// registerConventionsFlag adds --conventions FILE: a convention map that
// teaches trace assembly a framework no built-in recognizer reads
// (docs/trace-assembly.md, "A convention map"). The file is loaded and
// validated while the flags are parsed, so a bad map stops the command
// with its line-precise errors before any work.
func registerConventionsFlag(fs *flag.FlagSet, conv **assemble.Conventions) {
	fs.Func("conventions", "a convention map (YAML or JSON) saying how your framework's spans name agents, tool calls, handoffs and control flow, read before the built-in recognizers (docs/trace-assembly.md)",
		func(path string) error {
			c, err := assemble.LoadConventions(path)
			if err != nil {
				return err
			}
			*conv = c
			return nil
		})
}
