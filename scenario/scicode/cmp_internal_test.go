package scicode

import (
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/sandbox"
)

// TestCompareHelpers runs our scicode.compare.cmp in the sandbox on
// the cases its documentation names.
func TestCompareHelpers(t *testing.T) {
	r, err := sandbox.New(sandbox.Options{Lib: sandboxLib(), Modules: []string{"numpy", "scipy", "h5py", "sympy"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Check(t.Context()); err != nil {
		testenv.Missing(t, "%v", err)
	}
	script := `import numpy as np, scipy.sparse, sympy
from scicode.compare.cmp import cmp_tuple_or_list, are_dicts_close
x = sympy.Symbol('x')
m = scipy.sparse.csr_matrix(np.eye(3))
cases = [
    (cmp_tuple_or_list((1.0, 2.0), (1.0, 2.0 + 1e-12)), True),
    (cmp_tuple_or_list((1.0, 2.0), (1.0, 2.1)), False),
    (cmp_tuple_or_list((1.0,), (1.0, 2.0)), False),
    (cmp_tuple_or_list([True, 'a'], [True, 'a']), True),
    (cmp_tuple_or_list([True], [False]), False),
    (cmp_tuple_or_list(['a'], ['b']), False),
    (cmp_tuple_or_list([m], [scipy.sparse.coo_matrix(np.eye(3))]), True),
    (cmp_tuple_or_list([m], [np.zeros((3, 3))]), False),
    (cmp_tuple_or_list([{'a': 1.0}], [{'a': 1.0 + 1e-10}]), True),
    (cmp_tuple_or_list([np.arange(3)], [np.arange(3)]), True),
    (are_dicts_close({x: 1.0, 'b': 'u'}, {'x': 1.0, 'b': 'u'}), True),
    (are_dicts_close({'a': x}, {'a': 'x'}), True),
    (are_dicts_close({'a': 1.0}, {'a': 1.1}), False),
    (are_dicts_close({'a': 1.0}, {'a': 1.05}, rtol=0.1), True),
    (are_dicts_close({'a': 1.0}, {'b': 1.0}), False),
    (are_dicts_close({'m': m}, {'m': m.copy()}), True),
]
bad = [i for i, (got, want) in enumerate(cases) if got != want]
assert not bad, bad
print('all', len(cases), 'cases agree')
`
	res, err := r.Run(t.Context(), sandbox.Request{Name: "cmp", Script: script, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited() {
		t.Fatalf("%s: %s\n%s", res.Reason, res.Detail, res.Output)
	}
}
