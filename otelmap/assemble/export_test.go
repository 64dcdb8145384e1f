package assemble

import (
	"fmt"

	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// WithoutFamily returns opts with the built-in family of a framework's own
// namespace called name ("vercel_ai", "genkit", "voltagent", "langfuse") turned off:
// what a capture reads as when no built-in family knows its framework.
func WithoutFamily(opts Options, name string) Options {
	fam, ok := recognize.FrameworkFamily(name)
	if !ok {
		panic(fmt.Sprintf("WithoutFamily: %q is no family of a framework's own namespace", name))
	}
	opts.withoutFamilies |= 1 << fam
	return opts
}
