package assemble

import (
	"github.com/coordbench/coordbench/otelmap/assemble/convmap"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Conventions is a loaded, validated convention map (package convmap
// loads and matches it; docs/trace-assembly.md, "A convention map"). It is
// one more recognizer family, "conventions", first in the precedence after
// coordbench.call_type (package recognize). A nil *Conventions reads nothing.
type Conventions = convmap.Map

// LoadConventions reads and validates a convention map file.
func LoadConventions(path string) (*Conventions, error) { return convmap.Load(path) }

// ParseConventions validates a convention map; source names it in errors
// ("conventions.yaml:7:5: ..."). All errors are reported, in line order.
func ParseConventions(data []byte, source string) (*Conventions, error) {
	return convmap.Parse(data, source)
}

// Options configure TraceWith.
type Options struct {
	// Conventions, when set, is a user's convention map, read before the
	// built-in families.
	Conventions *Conventions

	// withoutFamilies turns built-in families of a framework's own
	// namespace off (bits by family): for tests that show what a capture
	// reads as without its family (export_test.go).
	withoutFamilies recognize.Families
}
