package assemble

import (
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap/assemble/convmap"
	"github.com/coordbench/coordbench/otelmap/assemble/families"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Conventions is a loaded, validated convention map (package convmap
// loads and matches it; docs/trace-assembly.md, "A convention map"). It is
// one more convention family, "conventions", whose word comes before every
// built-in family's. A nil *Conventions reads nothing.
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
	// Families are the convention families spans are read with; nil for
	// the built-in ones (families.Default).
	Families *recognize.Registry

	// Conventions, when set, is a user's convention map, read before the
	// families.
	Conventions *Conventions

	// Joined are other traces whose spans are read as part of this one:
	// fragments of one run that span links join (docs/trace-assembly.md,
	// "A trace that begins with a received call"). Their spans keep their
	// own trace ids (each step says its own); links into them count as
	// links into the trace. The spans given may hold them all.
	Joined []trace.TraceID

	// WithoutSteps leaves out what only the steps carry, for a reader of
	// the graph alone (the Collector connector without a logs pipeline):
	// td.Steps is empty, every agent's Steps and Errors are 0 and the
	// warnings about steps' attributes are not written. The agents, the
	// interactions and the rest of the coverage are as without it. Building
	// the steps is most of what an assembly allocates (their messages,
	// parameters and ids).
	WithoutSteps bool
}

// withMap caches the registry of each convention map and the families it
// comes before: a process loads its map once and assembles many traces.
var withMap sync.Map // mapAndFamilies -> *recognize.Registry

type mapAndFamilies struct {
	conv *Conventions
	base *recognize.Registry
}

// registry returns the registry the options read by.
func (o Options) registry() *recognize.Registry {
	base := o.Families
	if base == nil {
		base = families.Default()
	}
	if o.Conventions == nil {
		return base
	}
	key := mapAndFamilies{o.Conventions, base}
	if reg, ok := withMap.Load(key); ok {
		return reg.(*recognize.Registry)
	}
	fams := []recognize.Family{o.Conventions}
	for _, f := range base.Families() {
		if f.Spec().Name != "conventions" { // a map given before: this one replaces it
			fams = append(fams, f)
		}
	}
	reg, err := recognize.NewRegistry(fams...)
	if err != nil {
		// Only a registry already at its limits (64 families or keys of
		// coverage.recognized) leaves no room for a map: a program's
		// mistake, not its input's.
		panic(fmt.Sprintf("assemble: a convention map and %d families: %v", len(fams)-1, err))
	}
	actual, _ := withMap.LoadOrStore(key, reg)
	return actual.(*recognize.Registry)
}
