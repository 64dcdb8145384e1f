"""The judge's check of property-only test cases against the reference run
(see coordbench_judge.py and docs/scicode.md, "Cases a null answer passes").

Some SciCode test cases compare no value of the solver's with a real target:
they check a property (78.2: the final angle is within 0.1 of the harmonic
solution, below the start, not NaN; 29.3's first: two columns are
orthogonal) and their target, where there is one, is a boolean. An answer
that computes nothing (zeros of the right shape, the input handed back) can
satisfy the property. Such a case is a *property case*: no assertion of it
meets a target other than booleans.

For a property case the sandbox's copy also records *observations*: before
each statement that binds names from a call into the solver's code, the
values of the plain names handed to that call ("args"), and after it the
values bound ("value"). Where the split ships the step's reference code,
the reference is run on the same test cases (in the sandbox, never seen by
the solver) and its observations are what a real answer's values look
like. A solver's value is refused as *degenerate* where it is, and the
reference's is not:

* constant along an axis (it varies there less than a thousandth of what
  the reference's does, and the reference's variation exceeds numpy's
  allclose tolerance at its scale);
* unchanged between most consecutive entries along an axis where the
  reference's changes between (nearly) every pair (a trajectory that only
  moves its last point);
* far rougher along an axis where the reference's is smooth (noise: its
  total variation over its range more than five times the reference's, or
  more than five times as many turning points: a random walk);
* turning (changing direction) less than a quarter as often along an axis
  as the reference's, where the reference's turns at least four times (a
  straight line where a real answer oscillates);
* equal (np.allclose) to one of the values the case handed the call;
* NaN or infinite where the reference's is finite.

Each rule compares a value with the reference's on the same inputs, never
with a constant, so a correct constant (10.10's 0.0, which the reference
also returns) and an honest different method (another integrator, whose
values vary, change and are smooth where the reference's are) pass. The
bounds are loose on purpose: a value either computes something of the
reference's kind or does not.

A property case none of whose observations could be compared (no
reference, no observation of a number array of the reference's shape) is
*unchecked*: a pass that rests on it is reported as such, not silently.
"""

import ast

import numpy as np

from judge_records import Decoder, Invalid, LeafRaised

OBSERVE = "__coordbench_observe__"

# A solver's variation along an axis below this share of the reference's is
# none at all.
FLAT_SHARE = 1e-3
# The reference changes between at least this share of consecutive entries;
# the solver's must change between at least half as many.
MOVING_SHARE = 0.9
# Roughness: total variation over range, per line along an axis. The rule
# applies where the reference's is at most a tenth of the line's length
# (smooth, ordered), and refuses a solver's past ROUGH_FACTOR times it.
ROUGH_FACTOR = 5.0
MIN_ROUGH_LEN = 8
# Turning points: where the reference's values turn at least MIN_TURNS
# times along an axis (an oscillation), the solver's must turn at least a
# quarter as often.
MIN_TURNS = 4
TURN_SHARE = 0.25


def _all_bool(v, depth=0):
    if depth > 8:
        return False
    if isinstance(v, (bool, np.bool_)):
        return True
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "b":
            return True
        if v.dtype.kind == "O" and v.size:
            return all(_all_bool(x, depth + 1) for x in v.ravel()[:1000])
        return False
    if isinstance(v, (list, tuple)) and v:
        return all(_all_bool(x, depth + 1) for x in v[:1000])
    return False


def property_cases(cases, targets):
    """The 1-based indices of the cases whose assertions meet no target but
    booleans: the case does not name `target`, or its target is all
    booleans. targets is None where the targets are not at hand (the test
    split here): then only the first criterion is known."""
    out = []
    for i, source in enumerate(cases, 1):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        names = any(isinstance(n, ast.Name) and n.id == "target" for n in ast.walk(tree))
        if not names or (targets is not None and i - 1 < len(targets) and _all_bool(targets[i - 1])):
            out.append(i)
    return out


def index_observations(records):
    """{(case, index, kind): [(value, blobs), ...]} of the observe records."""
    out = {}
    for header, blobs in records:
        if header.get("t") != "observe":
            continue
        case, index, kind = header.get("case"), header.get("index"), header.get("kind")
        if not isinstance(case, int) or not isinstance(index, int) or kind not in ("args", "value"):
            continue
        out.setdefault((case, index, kind), []).append((header.get("value"), blobs))
    return out


def _decode(value, blobs):
    try:
        return True, Decoder(blobs).decode(value)
    except (Invalid, LeafRaised):
        return False, None


def _numeric(x):
    """x as a float or complex array, or None."""
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        return None
    try:
        a = np.asarray(x)
    except Exception:  # noqa: BLE001 - not an array
        return None
    if a.dtype.kind not in "iufc" or a.size == 0:
        return None
    return a.astype(complex if a.dtype.kind == "c" else float)


def _pairs(s, r, depth=0):
    """The (solver, reference) number arrays at the same place of two
    values of the same structure."""
    if depth > 8:
        return
    if isinstance(r, (list, tuple)) and isinstance(s, (list, tuple)) and len(r) == len(s):
        ra = _numeric(r)
        if ra is not None and ra.ndim >= 1 and all(not isinstance(x, (list, tuple, dict)) for x in r):
            sa = _numeric(s)
            if sa is not None:
                yield sa, ra
                return
        for a, b in zip(s, r):
            yield from _pairs(a, b, depth + 1)
        return
    if isinstance(r, dict) and isinstance(s, dict):
        for k in r:
            if k in s:
                yield from _pairs(s[k], r[k], depth + 1)
        return
    ra, sa = _numeric(r), _numeric(s)
    if ra is not None and sa is not None:
        yield sa, ra


def _deviation(x, axis):
    return float(np.max(np.abs(x - np.take(x, [0], axis=axis)))) if x.shape[axis] > 1 else 0.0


def _changes(x, axis, tol):
    """The share of consecutive entries along axis that differ by more than
    tol anywhere."""
    d = np.abs(np.diff(x, axis=axis))
    other = tuple(i for i in range(x.ndim) if i != axis)
    per = np.max(d, axis=other) if other else d
    return float(np.mean(per > tol))


def _roughness(x, axis, lines):
    """Median over the given lines along axis of total variation / range."""
    m = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])[lines].real
    rng = np.ptp(m, axis=1)
    tv = np.sum(np.abs(np.diff(m, axis=1)), axis=1)
    ok = rng > 0
    if not ok.any():
        return None
    return float(np.median(tv[ok] / rng[ok]))


def _turns(x, axis, lines, tol):
    """Median over the given lines along axis of the number of turning
    points (sign changes of the steps larger than tol)."""
    m = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])[lines].real
    counts = []
    for line in np.diff(m, axis=1):
        steps = np.sign(line[np.abs(line) > tol])
        counts.append(int(np.count_nonzero(steps[1:] != steps[:-1])))
    return float(np.median(counts)) if counts else 0.0


def degenerate(s, r, inputs):
    """Why solver value s is degenerate where reference value r (same
    shape) is not, or None. inputs are the reference run's values handed to
    the call."""
    if s.shape != r.shape:
        return None
    finite_r = np.isfinite(r)
    if finite_r.all() and not np.isfinite(s).all():
        return "holds NaN or infinity where a real answer's values are finite"
    for x in inputs:
        if x.shape == s.shape and np.allclose(s, x, equal_nan=False) and not np.allclose(r, x):
            return "equals a value the test case handed the function (the input returned unchanged)"
    if r.size < 2 or not finite_r.all():
        return None
    scale = float(np.max(np.abs(r)))
    tol = 1e-8 + 1e-5 * scale
    for axis in range(r.ndim):
        n = r.shape[axis]
        if n < 2:
            continue
        dr, ds = _deviation(r, axis), _deviation(s, axis)
        if dr > tol and ds <= FLAT_SHARE * dr:
            return "is constant along axis %d where a real answer's values vary" % axis
        if n >= 4:
            cr = _changes(r, axis, tol)
            if cr >= MOVING_SHARE and _changes(s, axis, tol) < cr / 2:
                return ("stays unchanged between most consecutive entries along axis %d where a real answer's "
                        "values change at (nearly) every one" % axis)
        if n >= MIN_ROUGH_LEN:
            m = np.moveaxis(r, axis, -1).reshape(-1, n)
            lines = np.flatnonzero(np.ptp(m.real, axis=1) > tol)
            if lines.size:
                rr = _roughness(r, axis, lines)
                rs = _roughness(s, axis, lines)
                if rr is not None and rs is not None and rr <= n / 10 and rs > ROUGH_FACTOR * rr + 2:
                    return ("is far rougher along axis %d than a real answer's values (noise where they are "
                            "smooth)" % axis)
                tr, ts = _turns(r, axis, lines, tol), _turns(s, axis, lines, tol)
                if rr is not None and rr <= n / 10 and ts > ROUGH_FACTOR * tr + 10:
                    return ("turns far more often along axis %d than a real answer's values (%g times where "
                            "they turn about %g times: noise where they are smooth)" % (axis, ts, tr))
                if tr >= MIN_TURNS and ts < tr * TURN_SHARE:
                    return ("turns far fewer times along axis %d than a real answer's values (%g times where "
                            "they turn about %g times)" % (axis, ts, tr))
    return None


def check(cases, solver_obs, reference_obs):
    """Compares the solver's observations of each property case with the
    reference's. Returns (failure, unchecked): failure is (case, kind,
    detail) of the first value that is degenerate ("failed") or cannot be
    compared ("invalid"), or None; unchecked the property cases no
    observation of which could be compared. Every failure here is the
    solver's: the reference's observations are the harness's own run,
    and one that does not decode is skipped."""
    from judge_strict import structure_diff  # judge_strict imports this module's users
    unchecked = []
    for case in cases:
        compared = False
        keys = sorted(k for k in reference_obs if k[0] == case and k[2] == "value")
        for key in keys:
            ok, r = _decode(*reference_obs[key][0])
            if not ok:
                continue
            inputs = []
            args = reference_obs.get((case, key[1], "args"))
            if args:
                okA, a = _decode(*args[0])
                if okA and isinstance(a, tuple):
                    inputs = [x for x in (_numeric(v) for v in a) if x is not None]
            occurrences = solver_obs.get(key)
            if not occurrences:
                return (case, "failed", "the run recorded no value for a result the test case computes from the "
                                        "function"), unchecked
            for value, blobs in occurrences:
                okS, s = _decode(value, blobs)
                if not okS:
                    return (case, "invalid", "a result the test case computes from the function could not be "
                                             "read"), unchecked
                try:
                    # The structure rule, with the reference's value for the
                    # target: a result of another shape (one row for a
                    # trajectory) computes nothing the case compares.
                    diff = structure_diff(s, r)
                    if diff is not None:
                        return (case, "failed", "the function's result differs in structure from a real answer's: "
                                                "%s; the test case checks only a property, which an answer that "
                                                "computes nothing can satisfy" % diff.replace("the target", "a real answer's")), unchecked
                    for sa, ra in _pairs(s, r):
                        if sa.shape != ra.shape:
                            continue
                        compared = True
                        why = degenerate(sa, ra, inputs)
                        if why:
                            return (case, "failed", "the function's result " + why + "; the test case checks only a "
                                                    "property, which an answer that computes nothing can satisfy"), unchecked
                except (MemoryError, RecursionError, ValueError, TypeError, ArithmeticError, IndexError) as e:
                    return (case, "invalid", "a result the test case computes from the function cannot be compared "
                                             "with a real answer's (%s)" % type(e).__name__), unchecked
        if not compared:
            unchecked.append(case)
    return None, unchecked
