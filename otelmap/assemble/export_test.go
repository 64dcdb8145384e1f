package assemble

import (
	"fmt"

	"github.com/coordbench/coordbench/otelmap/assemble/families"
)

// WithoutFamily returns opts with the built-in family called name
// ("vercel_ai", "genkit", "voltagent", "langfuse", ...) turned off: what a
// capture reads as when no built-in family knows its framework.
func WithoutFamily(opts Options, name string) Options {
	reg, err := families.Default().Without(name)
	if err != nil {
		panic(fmt.Sprintf("WithoutFamily: %v", err))
	}
	opts.Families = reg
	return opts
}

// KeepWorkspaces switches the reuse of assemblies' working arrays
// (workspace.go) on or off, returning the setting it replaced; off, every
// assembly starts from fresh memory, as before there were workspaces.
func KeepWorkspaces(on bool) bool {
	old := keepWorkspaces
	keepWorkspaces = on
	return old
}
