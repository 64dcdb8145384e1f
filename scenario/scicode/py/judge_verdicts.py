"""The judge's side of the walk (judge_pass.Pass): each assertion's
skeleton evaluated on the recorded values, failures held to the end of the
walk, and the record stream indexed (see coordbench_judge.py)."""

import ast

import numpy as np

from judge_names import LEAF
from judge_records import Decoder, Invalid, LeafRaised


class Outcome(Exception):
    """The first failure of the step, which ends the pass."""

    def __init__(self, case, kind, detail, assertion="", traceback_text=""):
        super().__init__(detail)
        self.case, self.kind, self.detail = case, kind, detail
        self.assertion, self.traceback = assertion, traceback_text


class Judging:
    """The judging methods of judge_pass.Pass: they use its walk's state
    (records, targets, the case being walked)."""

    def judge_assertion(self, a, scope):
        o = self.evaluate(a, scope)
        if o is not None:
            self.upstream_failed = True
            self._defer(o)

    def evaluate(self, a, scope):
        """Evaluates an assertion's skeleton on each recorded occurrence of
        its leaves: None where every occurrence holds, else the first
        failure (held back by the caller, see _defer). A record that does
        not decode, or an assertion never recorded, raises at once."""
        occurrences = self.records["asserts"].get((a.case, a.index), [])
        if not occurrences:
            raise self._missing(a)
        code = compile(ast.fix_missing_locations(ast.Expression(body=a.skeleton)), "<%s>" % self.name(), "eval")
        for leaves, blobs in occurrences:
            if not isinstance(leaves, list) or len(leaves) != len(a.leaves):
                raise Outcome(a.case, "invalid", "%s: the record of `%s` has %s values, not %d"
                              % (self.name(), a.source, len(leaves) if isinstance(leaves, list) else "no",
                                 len(a.leaves)), a.source)
            dec = Decoder(blobs)
            cache = {}

            def leaf(k, leaves=leaves, dec=dec, cache=cache):
                if k not in cache:
                    try:
                        cache[k] = (True, dec.decode(leaves[k]))
                    except (Invalid, LeafRaised) as e:
                        cache[k] = (False, e)
                ok, v = cache[k]
                if not ok:
                    raise v
                return v

            env = dict(scope.globals())
            env.update(scope.locals() or {})
            env[LEAF] = leaf
            try:
                try:
                    held = bool(eval(code, env))  # noqa: S307 - the skeleton of the data set's assertion
                except LeafRaised as e:
                    raise Outcome(a.case, "crashed", "%s: %s" % (self.name(), e), a.source)
                except Invalid as e:
                    o = Outcome(a.case, "invalid", "%s: a value recorded for `%s` is %s" % (self.name(), a.source, e), a.source)
                    # A record that does not decode is unreadable whatever
                    # the targets are: it is told at once, ahead of a run
                    # cut short after it, and tells nothing of a target.
                    # What the comparison itself refuses (judge_strict's
                    # bounds) depends on the target's size and is held.
                    o.decoding = any(c[0] is False and c[1] is e for c in cache.values())
                    raise o
                except MemoryError:
                    raise Outcome(a.case, "invalid", "%s: the values of `%s` are too large to compare" % (self.name(), a.source), a.source)
                except Exception as e:  # noqa: BLE001 - as SciCode's own run would raise in the test case
                    # The type only: the message could describe the target.
                    raise Outcome(a.case, "crashed", "%s: the comparison `%s` raised %s" % (self.name(), a.source, type(e).__name__), a.source)
                if not held:
                    raise Outcome(a.case, "failed", "%s failed: `%s` does not hold" % (self.name(), a.source), a.source)
            except Outcome as o:
                if getattr(o, "decoding", False):
                    raise
                # Nothing of the walk is kept with it (the frames of its
                # traceback hold the decoded values).
                o.__traceback__ = None
                o.__context__ = None
                return o
        return None

    def _defer(self, o):
        """Keeps the first comparison's failure for the end of the walk. A
        run that did not complete (a case missing, crashed or cut short, no
        `done`) fails as such whatever its values, so that which case the
        solver's code stops in cannot probe which earlier comparisons held.
        Where a target is a boolean (any case's, any part of it), the
        failure names neither the case nor the assertion: the solver
        learns that the step failed, not which target it missed."""
        self.failed.add(o.case)
        if self.deferred is not None:
            return
        if self.discrete:
            kind = o.kind if o.kind in ("failed", "invalid") else "failed"
            o = Outcome(0, kind, "a test case failed (which one is not said: a target of this step is a "
                        "boolean, and naming the case would tell it)")
        self.deferred = o

    def held(self):
        """The cases that ran to their end with every assertion holding."""
        return [i for i in self.closed if i not in self.failed]

    def _missing(self, a):
        r = self.records
        if a.case in r["errors"]:
            return self._error(a.case)
        if a.case not in r["begins"]:
            return Outcome(a.case, "missing", "%s did not start" % self.name(a.case), a.source)
        return Outcome(a.case, "missing", "%s recorded no value for `%s`" % (self.name(), a.source), a.source)

    def _error(self, case):
        e = self.records["errors"][case]
        exc = e.get("exception") if isinstance(e.get("exception"), str) else "an exception"
        # The harness writes at most 8000 characters; a forged record may
        # hold megabytes.
        tb = e.get("traceback")[-8000:] if isinstance(e.get("traceback"), str) else ""
        return Outcome(case, "crashed", "%s (in %s)" % (_clip(exc, 300), self.name(case)), "", tb)

    def close_case(self, i):
        r = self.records
        if i in r["errors"]:
            raise self._error(i)
        if i not in r["begins"]:
            raise Outcome(i, "missing", "%s did not start" % self.name(i))
        if i not in r["ends"]:
            raise Outcome(i, "missing", "%s did not run to its end" % self.name(i))


def _discrete(v, depth=0):
    """Whether a target (or a part of it) is a boolean: a value of two,
    which a solver told which case failed learns in a turn or two. (An
    integer or a float takes too many values to be learnt that way within
    the turns a step has; the step's pass or fail, one bit a turn, is
    what any target leaks, as in SciCode.)"""
    if depth > 8:
        return False
    if isinstance(v, (bool, np.bool_)):
        return True
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "b":
            return True
        if v.dtype.kind == "O":
            return any(_discrete(x, depth + 1) for x in v.ravel()[:1000])
        return False
    if isinstance(v, (list, tuple)):
        return any(_discrete(x, depth + 1) for x in v[:1000])
    if isinstance(v, dict):
        return any(_discrete(x, depth + 1) for x in list(v.values())[:1000])
    return False


def _clip(s, n=200):
    s = " ".join(s.split())
    return s if len(s) <= n else s[:n] + "…"


def index_records(records):
    idx = {"begins": set(), "ends": set(), "errors": {}, "asserts": {}, "done": False}
    for header, blobs in records:
        t = header.get("t")
        case = header.get("case")
        if t == "done":
            idx["done"] = True
        elif not isinstance(case, int) or isinstance(case, bool):
            continue
        elif t == "begin":
            idx["begins"].add(case)
        elif t == "end":
            idx["ends"].add(case)
        elif t == "error":
            idx["errors"].setdefault(case, header)
        elif t == "assert" and isinstance(header.get("assertion"), int):
            idx["asserts"].setdefault((case, header["assertion"]), []).append((header.get("leaves"), blobs))
    return idx
