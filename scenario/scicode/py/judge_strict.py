"""The judge's comparison by the target's rules (see coordbench_judge.py).

SciCode compares with numpy, and numpy broadcasts: ``np.allclose(a, b)``
holds for an empty array of shape (0, 1, 1, ...) against any target, a
one-element array stands for a scalar, a scalar for a whole array. An
answer that computes nothing can pass that way. So before any tolerance
check, wherever a value computed from the solver's records meets the
target, the recorded value must have the target's structure:

* the same shape (no broadcasting either way; an empty array only where the
  target is the same empty array), a numeric dtype where the target is
  numeric, a bool where it is a bool, a string where it is a string;
* for tuples and lists the same length and, element by element, the same
  structure (a tuple of numbers and an array of that shape are the same
  structure, as numpy compares them); for dicts the same keys and values of
  the same structure; None only where the target is None.

"Meets" is read off the assertion's skeleton: an operand of a call, an
arithmetic operation or a comparison is *recorded* when it holds a recorded
value and no judge-only name (the target and what is bound from it),
*target* when it holds a judge-only name and no recorded value. Where a
recorded operand meets a target operand, the rule applies. Where a
recorded operand is compared for equality (``==``, ``np.allclose``,
``cmp_tuple_or_list``, ...) with a value the judge computed itself (a
constant, a self-checking case's ``expected_output``), that value stands for
the target. The structure rule never names the target's shape or value:
the reason speaks of the recorded value.

Two more rules where SciCode's comparison is weaker than equality:

* a comparison function the case defines itself (10.6's
  ``are_equivalent(a, b)``: each row of ``a`` is some row of ``b``), called
  with a recorded value and the target where the assertion asserts it (the
  whole test, or an operand of a top-level ``and``), must hold both ways:
  an equivalence is symmetric, and one way only lets nk copies of one
  g-point pass. One way only reads as the assertion failing, the same
  words as failing the first way;
* a recorded value holding NaN may not be ordered (``<``, ``<=``, ``>``,
  ``>=``): NaN satisfies no ordering, so a case whose target says an
  ordering does not hold (``(np.sum(T1) > np.sum(T2)) == target`` with a
  False target) passes with NaN.

Where these rules or the structure rule refuse an assertion that SciCode's
own comparison accepts, the walk says so (``strict_only``): the verdict is
the strict one, and the result reports that SciCode's would differ.

Comparisons are also bounded in memory: an elementwise operation on a
recorded value may not broadcast to more elements than its larger operand
holds (``(n, 1)`` against ``(1, n)`` is n² elements from 2n).
"""

import ast
import cmath
import math
import operator

import numpy as np
import scipy.sparse

import scicode.compare.cmp as scicmp
from judge_names import LEAF
from judge_pass import Outcome, Pass
from judge_records import Invalid

CALL, BINOP, COMPARE = "__coordbench_call__", "__coordbench_binop__", "__coordbench_compare__"

# Functions that decide whether two values are equal (within a tolerance):
# a recorded value compared by one of them with a value the judge computed
# must have that value's structure.
EQUALITY_FUNCTIONS = {
    np.allclose, np.isclose, np.array_equal, np.array_equiv, np.equal, np.not_equal,
    np.testing.assert_allclose, np.testing.assert_array_equal, np.testing.assert_array_almost_equal,
    np.testing.assert_almost_equal, np.testing.assert_equal, math.isclose, cmath.isclose,
    scicmp.cmp_tuple_or_list, scicmp.are_dicts_close,
}
# numpy's array functions dispatch through wrappers; compare by name too.
EQUALITY_NAMES = {(getattr(f, "__module__", None), getattr(f, "__name__", None)) for f in EQUALITY_FUNCTIONS}

BINOPS = {
    "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
    "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow, "MatMult": operator.matmul,
    "LShift": operator.lshift, "RShift": operator.rshift, "BitOr": operator.or_, "BitXor": operator.xor,
    "BitAnd": operator.and_,
}
COMPARES = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt,
    "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
    "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b,
}
EQUALITY_COMPARES = {"Eq", "NotEq"}


class Mismatch(BaseException):
    """A recorded value whose structure is not the target's. A
    BaseException, so that the skeleton's own handling of exceptions (a
    comparison that raises is a crash, as in SciCode) does not take it."""

    def __init__(self, detail):
        super().__init__(detail)
        self.detail = detail


class Unordered(Mismatch):
    """A recorded value holding NaN met an ordering."""


# ---------------------------------------------------------------- structure


def _describe(v):
    """What a recorded value is, in words that say nothing of any target."""
    if v is None:
        return "None"
    if isinstance(v, (bool, np.bool_)):
        return "a bool"
    if isinstance(v, np.ndarray):
        if v.size == 0:
            return "an empty array of shape %s" % (v.shape,)
        return "an array of shape %s and dtype %s" % (v.shape, v.dtype)
    if isinstance(v, (int, float, complex, np.number)):
        return "a number (%s)" % type(v).__name__
    if isinstance(v, (str, np.str_, bytes)):
        return "a string"
    if scipy.sparse.issparse(v):
        return "a sparse matrix of shape %s" % (v.shape,)
    if isinstance(v, (list, tuple)):
        return "a %s of %d items" % (type(v).__name__, len(v))
    if isinstance(v, dict):
        return "a dict of %d keys" % len(v)
    return "a %s" % type(v).__name__


def _kind(dtype):
    k = dtype.kind
    if k == "b":
        return "bool"
    if k in "iufc":
        return "number"
    if k in "USa":
        return "string"
    return "other:" + k


def _as_array(x):
    """x as a plain (non-object) array, or None when numpy would make it
    an object array or cannot make one (ragged sequences)."""
    if isinstance(x, np.ndarray):
        return x if not x.dtype.hasobject else None
    try:
        a = np.asarray(x)
    except (ValueError, TypeError, OverflowError):
        return None
    return None if a.dtype.hasobject else a


def _is_scalar(x):
    return isinstance(x, (bool, int, float, complex, str, bytes, np.generic))


def structure_diff(v, r, depth=0):
    """None when the recorded value v has the structure of r (the target,
    or the value standing for it), else why not, in terms of v alone."""
    if depth > 64:
        return "nesting deeper than the target's"
    bad = lambda: "%s where the target is of another type or structure" % _describe(v)  # noqa: E731
    if r is None:
        return None if v is None else "%s where the target is None" % _describe(v)
    if v is None:
        return "None where the target is a value"
    if isinstance(r, dict):
        if not isinstance(v, dict):
            return bad()
        rk = scicmp._names_for_symbols(r)
        vk = scicmp._names_for_symbols(v)
        if rk.keys() != vk.keys():
            return "a dict whose keys are not the target's"
        for k in rk:
            d = structure_diff(vk[k], rk[k], depth + 1)
            if d is not None:
                return "in the dict's value for %r: %s" % (k, d)
        return None
    if scipy.sparse.issparse(r):
        if scipy.sparse.issparse(v) or isinstance(v, np.ndarray):
            if v.shape != r.shape:
                return "%s where the target has another shape" % _describe(v)
            if _kind(v.dtype) != _kind(r.dtype) and not (_kind(v.dtype) == _kind(r.dtype) == "number"):
                return "%s where the target's dtype is of another kind" % _describe(v)
            return None
        return bad()
    if isinstance(r, (list, tuple)):
        if isinstance(v, (list, tuple)):
            if len(v) != len(r):
                return "a %s of %d items where the target has another length" % (type(v).__name__, len(v))
            for i, (a, b) in enumerate(zip(v, r)):
                d = structure_diff(a, b, depth + 1)
                if d is not None:
                    return "item %d: %s" % (i, d)
            return None
        if isinstance(v, np.ndarray):
            ra = _as_array(r)
            if ra is None:
                return bad()
            return structure_diff(v, ra, depth + 1)
        return bad()
    if isinstance(r, (str, np.str_, bytes, np.bytes_)):
        return None if isinstance(v, (str, np.str_, bytes, np.bytes_)) else bad()
    if isinstance(r, np.ndarray) and r.dtype.hasobject:
        # Variable-length strings from HDF5: the shape alone.
        return None if np.shape(v) == r.shape else "%s where the target has another shape" % _describe(v)
    if isinstance(r, (bool, np.bool_, int, float, complex, np.number, np.ndarray)):
        ra = _as_array(r)
        if ra is None:
            return bad()
        if isinstance(v, (dict, str, bytes, np.str_)) or scipy.sparse.issparse(v) or v is None:
            return bad()
        if not (_is_scalar(v) or isinstance(v, (np.ndarray, list, tuple))):
            return bad()
        va = _as_array(v)
        if va is None:
            return "%s that is not a plain array where the target is one" % _describe(v)
        if va.shape != ra.shape:
            return "%s where the target has another shape" % _describe(va if not _is_scalar(v) else v)
        vk, rk = _kind(va.dtype), _kind(ra.dtype)
        if vk != rk:
            return "%s where the target's dtype is of another kind" % _describe(v if _is_scalar(v) else va)
        return None
    # Anything else the target may be (a sympy symbol): the same type.
    return None if type(v) is type(r) else bad()


def _check(v, r):
    try:
        d = structure_diff(v, r)
    except (ValueError, TypeError, OverflowError, RecursionError) as e:
        d = "%s that cannot be laid against the target (%s)" % (_describe(v), type(e).__name__)
    if d is not None:
        raise Mismatch(d)


# ---------------------------------------------------------------- bounds


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _guard_broadcast(values, matmul=False):
    """Refuses an operation whose result would hold more elements than its
    largest operand (numpy's broadcasting, or a matrix product's outer
    dimensions), before numpy allocates it."""
    shapes = [v.shape for v in values if isinstance(v, np.ndarray) or scipy.sparse.issparse(v)]
    if len(shapes) < 2 and not matmul:
        return
    largest = max((_size(s) for s in shapes), default=1)
    if matmul and len(values) == 2:
        a, b = (getattr(x, "shape", ()) for x in values)
        if len(a) >= 2 and len(b) >= 2:
            try:
                batch = np.broadcast_shapes(a[:-2], b[:-2])
            except ValueError:
                return  # numpy raises, as SciCode's run would
            out = _size(batch) * int(a[-2]) * int(b[-1])
            if out > max(largest, 1):
                raise Invalid("a matrix product of the recorded values would make %d elements out of at most %d"
                              % (out, largest))
        return
    try:
        out = _size(np.broadcast_shapes(*shapes))
    except ValueError:
        return  # shapes numpy cannot broadcast: it raises, as in SciCode
    if out > largest:
        raise Invalid("broadcasting the recorded values would make %d elements out of at most %d" % (out, largest))


# ---------------------------------------------------------------- the skeleton


def _is_equality(f):
    try:
        return f in EQUALITY_FUNCTIONS or \
            (getattr(f, "__module__", None), getattr(f, "__name__", None)) in EQUALITY_NAMES
    except Exception:  # noqa: BLE001 - an odd callable is not one of them
        return False


def _pairs(tags, values, equality):
    """Checks each recorded operand against each target operand and, for
    an equality, against each operand the judge computed."""
    refs = [v for t, v in zip(tags, values) if t == "T"]
    if equality:
        refs += [v for t, v in zip(tags, values) if t == "C"]
    if not refs:
        return
    for t, v in zip(tags, values):
        if t == "L":
            for r in refs:
                _check(v, r)


# The module name of the functions a test case defines (judge_pass.Pass
# runs them in a namespace of that name).
CASE_MODULE = "__coordbench_judge__"
ORDERINGS = {"Lt", "LtE", "Gt", "GtE"}
# Marks, at the end of a call's tags, a call whose truth the assertion
# asserts (the whole test, or an operand of a top-level `and`): only there
# may the symmetric rule make it false.
ASSERTED = "!"


def _has_nan(v, depth=0):
    if depth > 8:
        return False
    if isinstance(v, (list, tuple)):
        return any(_has_nan(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return any(_has_nan(x, depth + 1) for x in v.values())
    try:
        a = np.asarray(v)
    except Exception:  # noqa: BLE001 - not an array: no NaN
        return False
    return a.dtype.kind in "fc" and bool(np.isnan(a).any())


def strict_call(f, tags, *args, **kwargs):
    asserted = tags.endswith(ASSERTED)
    tags = tags.rstrip(ASSERTED)
    positional = list(args[:len(tags)])
    equality = _is_equality(f)
    _pairs(tags, positional, equality)
    if equality or isinstance(f, np.ufunc):
        if any(t in "LM" for t in tags):
            _guard_broadcast(positional)
    result = f(*args, **kwargs)
    if asserted and getattr(f, "__module__", None) == CASE_MODULE and len(args) == 2 and not kwargs and \
            sorted(tags) in (["L", "T"], ["M", "T"]) and _truthy(result):
        # The case's own comparison of a recorded value with the target,
        # asserted: an equivalence holds both ways. One way only reads as
        # the assertion failing, as if it had failed the first way: the
        # solver is not told which (that every one of its rows is a
        # target's row would be a probe).
        try:
            back = _truthy(f(args[1], args[0]))
        except Exception:  # noqa: BLE001 - it does not hold the other way
            back = False
        if not back:
            return False
    return result


def _truthy(v):
    try:
        return bool(v)
    except Exception:  # noqa: BLE001 - an array of many values: as the skeleton's own bool() would raise
        return False


def strict_binop(op, tags, a, b):
    _pairs(tags, [a, b], False)
    if any(t in "LM" for t in tags):
        _guard_broadcast([a, b], matmul=op == "MatMult")
    return BINOPS[op](a, b)


def strict_compare(op, tags, a, b):
    if op not in ("Is", "IsNot", "In", "NotIn"):
        _pairs(tags, [a, b], op in EQUALITY_COMPARES)
        if any(t in "LM" for t in tags):
            _guard_broadcast([a, b])
        if op in ORDERINGS:
            for t, v in zip(tags, (a, b)):
                if t in "LM" and _has_nan(v):
                    raise Unordered("a recorded value holds NaN, which satisfies no ordering (and its negation "
                                    "every one)")
    return COMPARES[op](a, b)


# SciCode's own comparison, with the judge's bounds (the evaluation that
# finds where the strict rules alone refused an assertion).


def bounded_call(f, tags, *args, **kwargs):
    tags = tags.rstrip(ASSERTED)
    if (_is_equality(f) or isinstance(f, np.ufunc)) and any(t in "LM" for t in tags):
        _guard_broadcast(list(args[:len(tags)]))
    return f(*args, **kwargs)


def bounded_binop(op, tags, a, b):
    if any(t in "LM" for t in tags):
        _guard_broadcast([a, b], matmul=op == "MatMult")
    return BINOPS[op](a, b)


def bounded_compare(op, tags, a, b):
    if op not in ("Is", "IsNot", "In", "NotIn") and any(t in "LM" for t in tags):
        _guard_broadcast([a, b])
    return COMPARES[op](a, b)


class _Instrument(ast.NodeTransformer):
    """Routes each call, arithmetic operation and comparison of a skeleton
    through the strict functions, with its operands' tags."""

    def __init__(self, scope, asserted=()):
        self.scope = scope
        self.asserted = set(asserted)
        # Names a comprehension binds from a recorded value (`i` in `i > 0
        # for i in <leaf>`): they stand for recorded values.
        self.derived = set()

    def tag(self, node):
        leaf = judge = False
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == LEAF:
                leaf = True
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in self.derived:
                    leaf = True
                elif self.scope.kind(n.id) == "judge":
                    judge = True
        return "M" if leaf and judge else "L" if leaf else "T" if judge else "C"

    def visit_ListComp(self, node):
        saved = set(self.derived)
        for g in node.generators:
            if self.tag(g.iter) in "LM":
                self.derived |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.generic_visit(node)
        self.derived = saved
        return node

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == LEAF:
            return node
        tags = "".join("*" if isinstance(a, ast.Starred) else self.tag(a) for a in node.args)
        if "*" in tags:
            tags = tags[:tags.index("*")]
        if id(node) in self.asserted:
            tags += ASSERTED
        self.generic_visit(node)
        return ast.copy_location(ast.Call(func=ast.Name(id=CALL, ctx=ast.Load()),
                                          args=[node.func, ast.Constant(tags)] + node.args,
                                          keywords=node.keywords), node)

    def visit_BinOp(self, node):
        tags = self.tag(node.left) + self.tag(node.right)
        self.generic_visit(node)
        return ast.copy_location(ast.Call(func=ast.Name(id=BINOP, ctx=ast.Load()),
                                          args=[ast.Constant(type(node.op).__name__), ast.Constant(tags),
                                                node.left, node.right], keywords=[]), node)

    def visit_Compare(self, node):
        operands = [node.left] + list(node.comparators)
        tags = [self.tag(x) for x in operands]
        self.generic_visit(node)
        operands = [node.left] + list(node.comparators)
        pairs = []
        for i, op in enumerate(node.ops):
            pairs.append(ast.Call(func=ast.Name(id=COMPARE, ctx=ast.Load()),
                                  args=[ast.Constant(type(op).__name__), ast.Constant(tags[i] + tags[i + 1]),
                                        operands[i], operands[i + 1]], keywords=[]))
        # A chain a < b < c is (a < b) and (b < c); the operands of a
        # skeleton have no side effects (recorded values are cached).
        new = pairs[0] if len(pairs) == 1 else ast.BoolOp(op=ast.And(), values=pairs)
        return ast.copy_location(new, node)


def _asserted(node):
    """The ids of the calls whose truth the assertion asserts: the test
    itself, or an operand of a top-level `and`."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        out = set()
        for v in node.values:
            out |= _asserted(v)
        return out
    return {id(node)} if isinstance(node, ast.Call) else set()


def instrument(skeleton, scope):
    return _Instrument(scope, _asserted(skeleton)).visit(skeleton)


class StrictPass(Pass):
    """The judge's walk (judge_pass.Pass) with the structure rule and the
    bounds above applied to every assertion it judges."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.g.values[CALL] = strict_call
        self.g.values[BINOP] = strict_binop
        self.g.values[COMPARE] = strict_compare
        # Cases with an assertion that only the strict rules refused.
        self.strict_only = set()

    def judge_assertion(self, a, scope):
        import copy
        plain = a.skeleton
        a.skeleton = ast.fix_missing_locations(instrument(copy.deepcopy(plain), scope))
        try:
            o = self.evaluate(a, scope)
        except Mismatch as m:
            if isinstance(m, Unordered):
                why = "%s failed: `%s`: %s" % (self.name(), a.source, m.detail)
            else:
                why = "%s failed: `%s`: the recorded value differs in structure from the target: %s" % (
                    self.name(), a.source, m.detail)
            o = Outcome(a.case, "failed", why, a.source)
        if o is not None:
            if o.kind == "failed" and self._holds_plainly(a, plain, scope):
                self.strict_only.add(a.case)
            else:
                self.upstream_failed = True
            # Through the same deferral as every other comparison's failure
            # (Pass._defer): held to the end of the walk, and naming no case
            # where a target of the step is a boolean.
            self._defer(o)

    def _holds_plainly(self, a, plain, scope):
        """Whether SciCode's own comparison (the judge's bounds kept)
        accepts the recorded values of the assertion."""
        import copy
        from judge_pass import Assertion
        b = Assertion(a.case, a.index, a.source, ast.fix_missing_locations(instrument(copy.deepcopy(plain), scope)),
                      a.leaves)
        saved = {k: self.g.values[k] for k in (CALL, BINOP, COMPARE)}
        self.g.values.update({CALL: bounded_call, BINOP: bounded_binop, COMPARE: bounded_compare})
        try:
            return self.evaluate(b, scope) is None
        except (Outcome, Mismatch, Invalid):
            return False
        finally:
            self.g.values.update(saved)

    def strict_only_failure(self):
        """Whether the walk's failure is the strict rules' alone: every
        case ran, and SciCode's own comparison accepts every assertion."""
        return bool(self.strict_only) and not self.upstream_failed
