"""Comparison helpers that SciCode test cases import.

A test case compares the step's result with its target, e.g.
``assert cmp_tuple_or_list(f(x), target)``. The rules:

* ``cmp_tuple_or_list(a, b)``: same length, then element by element:
  dicts by ``are_dicts_close``, sparse matrices by ``np.allclose`` of their
  dense forms, Python bools by equality, anything else by ``np.allclose``
  (by equality when ``np.allclose`` cannot compare the two, e.g. strings).
* ``are_dicts_close(a, b, atol=1e-8, rtol=1e-5)``: sympy symbols, as keys
  or values, become their names; then the key sets must be equal, and each
  value pair must agree: strings by equality, sparse matrices densely by
  ``np.allclose``, anything else by ``np.allclose`` with the given
  tolerances (by equality when that cannot compare them).
"""

import sys

import numpy as np
import scipy.sparse

__all__ = ["cmp_tuple_or_list", "are_dicts_close"]


def _dense(x):
    """A sparse matrix as a dense array; anything else unchanged."""
    if scipy.sparse.issparse(x):
        return x.toarray()
    return x


def _is_symbol(x):
    # sympy is imported only where a symbol can exist: where sympy is
    # already loaded (importing it takes a second).
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(x, sympy.Symbol)


def _names_for_symbols(d):
    """A copy of d in which sympy symbols, keys or values, are strings."""
    out = {}
    for key, value in d.items():
        if _is_symbol(key):
            key = str(key)
        if _is_symbol(value):
            value = str(value)
        out[key] = value
    return out


def _close(a, b, atol, rtol):
    """np.allclose, falling back to equality for values it cannot compare
    (strings, objects, shapes that do not broadcast)."""
    try:
        return bool(np.allclose(a, b, atol=atol, rtol=rtol))
    except (ValueError, TypeError):
        pass
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def are_dicts_close(dict1, dict2, atol=1e-8, rtol=1e-5):
    """Whether two dicts have the same keys and close values."""
    a = _names_for_symbols(dict1)
    b = _names_for_symbols(dict2)
    if a.keys() != b.keys():
        return False
    for key, v1 in a.items():
        v2 = b[key]
        if isinstance(v1, str):
            if not v1 == v2:
                return False
        elif scipy.sparse.issparse(v1):
            if not np.allclose(_dense(v1), _dense(v2), atol=atol, rtol=rtol):
                return False
        elif not _close(v1, v2, atol, rtol):
            return False
    return True


def cmp_tuple_or_list(var1, var2):
    """Whether two sequences agree element by element (see the module doc)."""
    if len(var1) != len(var2):
        return False
    for v1, v2 in zip(var1, var2):
        if isinstance(v1, dict):
            if not are_dicts_close(v1, v2):
                return False
        elif scipy.sparse.issparse(v1):
            if not np.allclose(_dense(v1), _dense(v2)):
                return False
        elif isinstance(v1, bool):
            if not v1 == v2:
                return False
        elif not _close(v1, v2, 1e-8, 1e-5):
            return False
    return True
