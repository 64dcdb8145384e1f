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
