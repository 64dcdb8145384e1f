package assemble

import "fmt"

// WithoutFamily returns opts with the built-in family of a framework's own
// namespace called name ("vercel_ai", "genkit", "voltagent") turned off:
// what a capture reads as when no built-in family knows its framework.
func WithoutFamily(opts Options, name string) Options {
	for _, fam := range []uint8{famVercelAI, famGenkit, famVoltAgent} {
		if recognizerNames[fam] == name {
			opts.withoutFamilies |= 1 << fam
			return opts
		}
	}
	panic(fmt.Sprintf("WithoutFamily: %q is no family of a framework's own namespace", name))
}
