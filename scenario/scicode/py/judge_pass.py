"""The judge's walk over a step's test cases (see coordbench_judge.py)."""

import ast
import builtins
import copy
import random

import numpy as np

from judge_names import (LEAF, RECORD, Scope, Unrewritable, _MISSING, _immutable, _import_allowed, _is_global_random,
                         _is_seed, _uses_global_random, contains, loads, resolve, stores, trusted)
from judge_null import OBSERVE
from judge_records import Decoder, Invalid, LeafRaised

# Attributes and methods the judge may apply to a recorded value: after
# decoding it is a plain value (an ndarray, a list, a dict...), so these are
# numpy's and Python's own.
PURE_ATTRS = {"T", "shape", "ndim", "size", "dtype", "real", "imag", "nnz"}
PURE_METHODS = {
    "any", "all", "sum", "mean", "max", "min", "prod", "std", "var", "conj", "conjugate",
    "flatten", "ravel", "reshape", "astype", "tolist", "item", "copy", "toarray", "todense",
    "keys", "values", "items", "transpose", "squeeze", "round", "argmax", "argmin", "cumsum",
    "trace", "diagonal", "dot", "count", "index", "get",
}

class Assertion:
    def __init__(self, case, index, source, skeleton, leaves):
        self.case = case
        self.index = index
        self.source = source
        self.skeleton = skeleton
        self.leaves = leaves


class Outcome(Exception):
    """The first failure of the step, which ends the pass."""

    def __init__(self, case, kind, detail, assertion="", traceback_text=""):
        super().__init__(detail)
        self.case, self.kind, self.detail = case, kind, detail
        self.assertion, self.traceback = assertion, traceback_text


class Pass:
    """One walk over a step's test cases: it builds the sandbox's copy of
    each case and, given targets and records, judges them."""

    def __init__(self, step, dependencies, cases, targets=None, records=None, observe=()):
        self.step = step
        # Property cases (judge_null.py): their calls into the solver's
        # code are observed for the comparison with the reference run.
        self.observe = set(observe)
        self.observations = 0
        self.dependencies = dependencies or ""
        self.cases = cases
        self.targets = targets
        self.judging = records is not None
        self.records = records
        self.case = 0
        self.assertions = 0
        self.listed = []
        self.g = Scope({"__builtins__": builtins, "__name__": "__coordbench_judge__"})
        self.out = []
        # Statements the judge ran itself whose values the sandbox may not
        # need (see prune).
        self.droppable = set()
        # The first failure of a comparison with a target, reported only
        # once the run is known to be complete (see judge_assertion).
        self.deferred = None
        # Cases that ran to their end, and those a comparison failed in
        # (for "held", the tests' census of what a null answer passes).
        self.closed, self.failed = [], set()
        self.discrete = self.judging and any(_discrete(t) for t in (targets or []))

    def name(self, i=None):
        return "test case %d of %d" % (i or self.case, len(self.cases))

    # ---- the walk

    def run(self):
        self._dependencies()
        bodies, listed = [], []
        for i, source in enumerate(self.cases, 1):
            self.case, self.assertions, self.listed, self.observations = i, 0, [], 0
            self.g.values["target"] = self.targets[i - 1] if self.judging else None
            self.g.trust(["target"], judge_only=True)
            try:
                tree = ast.parse(source)
            except SyntaxError as e:
                raise Unrewritable("%s is not valid Python: %s" % (self.name(), e))
            bodies.append(self.block(tree.body, self.g, run=True))
            listed.append(self.listed)
            if self.judging:
                self.close_case(i)
                self.closed.append(i)
        if self.judging:
            if not self.records["done"]:
                raise Outcome(len(self.cases), "missing", "the run ended before it recorded its end")
            if self.deferred is not None:
                raise self.deferred
        self.prune(bodies)
        for i, body in enumerate(bodies, 1):
            module = ast.Module(body=body or [ast.Pass()], type_ignores=[])
            ast.fix_missing_locations(module)
            self.out.append({"filename": "<%s>" % self.name(i), "source": ast.unparse(module) + "\n",
                             "assertions": listed[i - 1]})
        return self.out

    # ---- what the sandbox gets

    def prune(self, bodies):
        """Takes out of the sandbox's copy every statement the judge ran
        itself whose values nothing the sandbox runs later needs: an
        expected value a case computes (78.1's `expected_output`), a helper
        only the judged skeleton calls. The solver's code could read them
        from its caller's frame; the sandbox must hold the solver's inputs
        and nothing else. A statement stays if a later statement of any case
        (the cases share one namespace), or any function or lambda that
        stays, loads a name it binds; statements that draw from a random
        stream, mutate a value or call what the judge cannot resolve are
        never candidates (see _pure)."""
        always = set()
        while True:
            dropped = self._prune_pass(bodies, always)
            free = set()
            for body in bodies:
                for stmt in body:
                    if id(stmt) in dropped:
                        continue
                    for n in ast.walk(stmt):
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                            free |= loads(n)
            if free <= always:
                break
            always |= free
        for k, body in enumerate(bodies):
            bodies[k] = [stmt for stmt in body if id(stmt) not in dropped]
            for stmt in bodies[k]:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        not contains(stmt, (ast.Global, ast.Nonlocal)):
                    inner = [stmt.body]
                    gone = self._prune_pass(inner, always)
                    stmt.body = [x for x in stmt.body if id(x) not in gone] or [ast.Pass()]

    def _prune_pass(self, bodies, always):
        """The ids of the droppable statements of bodies (in order) that
        bind no name loaded after them or in always."""
        live, dropped = set(always), set()
        for body in reversed(bodies):
            for stmt in reversed(body):
                if id(stmt) in self.droppable and not (stores(stmt) & live):
                    dropped.add(id(stmt))
                    continue
                live |= loads(stmt)
        return dropped

    def _dependencies(self):
        try:
            tree = ast.parse(self.dependencies)
        except SyntaxError:
            return  # the sandbox reports it
        for node in tree.body:
            names = stores(node)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _import_allowed(node):
                if self._exec(node, self.g):
                    continue
            self.g.depend(names)

    def _exec(self, node, scope):
        """Runs a trusted statement in the judge; False if it raised."""
        try:
            code = compile(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[])),
                           "<%s>" % self.name(), "exec")
            exec(code, scope.globals(), scope.locals())  # noqa: S102 - the data set's own statement
        except Exception:  # noqa: BLE001 - the sandbox will see the same, or the solver's
            return False
        return True

    def block(self, stmts, scope, run):
        out = []
        for node in stmts:
            observed = self.observed(node, scope)
            new = self.statement(node, scope, run)
            if new is None:
                continue
            if observed and new is node:
                before, after = observed
                out += [before, new, after]
            else:
                out.append(new)
        return out

    def observed(self, node, scope):
        """For an assignment to plain names from a call into the solver's
        code, in a property case: the statements that record the plain
        names it hands the call and, after it, the names it binds."""
        if self.case not in self.observe or not isinstance(node, ast.Assign) or len(node.targets) != 1:
            return None
        target = node.targets[0]
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        if not all(isinstance(e, ast.Name) for e in elts):
            return None
        calls = [c for c in ast.walk(node.value) if isinstance(c, ast.Call) and
                 (resolve(c.func, scope) is _MISSING or not trusted(c.func, scope))]
        if not calls:
            return None
        args = []
        for c in calls:
            args += [a.id for a in list(c.args) + [k.value for k in c.keywords]
                     if isinstance(a, ast.Name) and a.id not in args]
        index = self.observations
        self.observations += 1

        def call(kind, names):
            value = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
            if kind == "value" and not isinstance(target, (ast.Tuple, ast.List)):
                value = ast.Name(id=names[0], ctx=ast.Load())
            thunk = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                  kw_defaults=[], kwarg=None, defaults=[]), body=value)
            return ast.copy_location(ast.Expr(value=ast.Call(
                func=ast.Name(id=OBSERVE, ctx=ast.Load()),
                args=[ast.Constant(self.case), ast.Constant(index), ast.Constant(kind), thunk], keywords=[])), node)
        return call("args", args), call("value", [e.id for e in elts])

    def statement(self, node, scope, run):
        names = stores(node)
        uses_judge = any(scope.kind(n) == "judge" for n in loads(node))
        if isinstance(node, ast.Assert):
            return self.assertion(node, scope)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self.function(node, scope, run, uses_judge)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if run and _import_allowed(node) and self._exec(node, scope):
                scope.trust(names)
            else:
                scope.depend(names)
            return node
        if contains(node, ast.Assert):
            # A compound statement holding assertions (a loop, an if, a
            # with): it runs in the sandbox only; its assertions are
            # judged with what is known where they stand.
            self._after_dependent(node, scope)
            return self.rewrite_compound(node, scope)
        if uses_judge:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass)) and \
                    trusted(node, scope, judge_ok=True):
                if run and self.judging:
                    if self._exec(node, scope):
                        scope.trust(names, judge_only=True)
                    else:
                        scope.depend(names)
                else:
                    scope.trust(names, judge_only=True)
                    for n in names:
                        scope.values.setdefault(n, None)
                return None  # not in the sandbox
            raise Unrewritable("%s uses the target where the sandbox would need it: %s"
                               % (self.name(), _clip(ast.unparse(node))))
        if run and not isinstance(node, (ast.ClassDef, ast.Global, ast.Nonlocal, ast.Return,
                                         ast.Raise, ast.Delete)) and trusted(node, scope):
            if self._exec(node, scope):
                scope.trust(names)
                self._after_trusted(node, scope)
                if _pure(node, scope):
                    self.droppable.add(id(node))
                return node
        scope.depend(names)
        self._after_dependent(node, scope)
        return node

    def _after_trusted(self, node, scope):
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                f = resolve(n.func, scope)
                if f is np.random.seed:
                    scope.rng["numpy"] = True
                elif _is_seed(f):
                    scope.rng["python"] = True

    def _after_dependent(self, node, scope):
        """After code the judge does not run (a statement, an assertion's
        leaves): the mutable values it was handed or assigned into may have
        changed, and if it called the solver's code, so may the global
        random streams."""
        untrusted = False
        touched = set()
        for c in ast.walk(node):
            if isinstance(c, ast.Call):
                if resolve(c.func, scope) is _MISSING or not trusted(c.func, scope):
                    untrusted = True
                for a in list(c.args) + [k.value for k in c.keywords]:
                    touched |= loads(a)
                if isinstance(c.func, ast.Attribute):
                    touched |= loads(c.func.value)
            elif isinstance(c, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                for t in (c.targets if isinstance(c, (ast.Assign, ast.Delete)) else [c.target]):
                    for sub in ast.walk(t):
                        if isinstance(sub, (ast.Subscript, ast.Attribute)):
                            touched |= loads(sub.value)
        for name in touched:
            if scope.kind(name) == "trusted" and not _immutable(scope.value(name)):
                scope.depend([name])
        if untrusted:
            scope.reset_rng()

    def function(self, node, scope, run, uses_judge):
        if not contains(node, ast.Assert) and not uses_judge:
            if run and trusted(node, scope) and self._exec(node, scope):
                scope.trust([node.name])
                fn = scope.value(node.name)
                if _uses_global_random(node, scope):
                    try:
                        fn.__coordbench_random__ = True
                    except AttributeError:
                        pass
                elif not node.decorator_list:
                    self.droppable.add(id(node))
            else:
                scope.depend([node.name])
            return node
        # A function holding assertions (the case calls it): its body is
        # walked now, in a scope of its own; its parameters are unknown.
        local = Scope({}, parent=scope)
        a = node.args
        params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        params |= {x.arg for x in (a.vararg, a.kwarg) if x}
        local.depend(params)
        new = copy.copy(node)
        new.body = self.block(node.body, local, run=run) or [ast.Pass()]
        scope.depend([node.name])
        return new

    def rewrite_compound(self, node, scope):
        inner = Scope({}, parent=scope)
        inner.depend(stores(node))
        new = copy.copy(node)
        for field in ("body", "orelse", "finalbody"):
            if hasattr(node, field):
                setattr(new, field, self.block(getattr(node, field), inner, run=False) or
                        ([ast.Pass()] if field == "body" else []))
        if hasattr(node, "handlers"):
            new.handlers = []
            for h in node.handlers:
                h2 = copy.copy(h)
                h2.body = self.block(h.body, inner, run=False) or [ast.Pass()]
                new.handlers.append(h2)
        if isinstance(node, ast.Match):
            new.cases = []
            for c in node.cases:
                c2 = copy.copy(c)
                c2.body = self.block(c.body, inner, run=False) or [ast.Pass()]
                new.cases.append(c2)
        scope.depend(stores(node))
        return new

    # ---- assertions

    def assertion(self, node, scope):
        index = self.assertions
        self.assertions += 1
        leaves = []
        skeleton = self.split(copy.deepcopy(node.test), scope, leaves, {})
        a = Assertion(self.case, index, _clip(ast.unparse(node), 500), skeleton, leaves)
        self.listed.append({"source": a.source, "judged": ast.unparse(skeleton),
                            "recorded": [ast.unparse(x) for x in leaves]})
        if self.judging:
            self.judge_assertion(a, scope)
        # The leaves run in the sandbox, where they may change what they
        # are handed.
        self._after_dependent(ast.Expr(value=ast.Tuple(elts=copy.deepcopy(leaves), ctx=ast.Load())), scope)
        call = ast.Call(func=ast.Name(id=RECORD, ctx=ast.Load()),
                        args=[ast.Constant(self.case), ast.Constant(index)] +
                        [ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                       kw_defaults=[], kwarg=None, defaults=[]), body=leaf)
                         for leaf in leaves],
                        keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)

    def split(self, node, scope, leaves, seen):
        """The skeleton of an assertion's expression: what the judge can
        evaluate stays, each dependent sub-expression becomes a leaf."""
        if trusted(node, scope, judge_ok=True):
            return node
        recurse = lambda n: self.split(n, scope, leaves, seen)  # noqa: E731
        if isinstance(node, ast.Call):
            if trusted(node.func, scope):
                node.args = [recurse(x) for x in node.args]
                for k in node.keywords:
                    k.value = recurse(k.value)
                return node
            if isinstance(node.func, ast.Attribute) and node.func.attr in PURE_METHODS:
                node.func.value = recurse(node.func.value)
                node.args = [recurse(x) for x in node.args]
                for k in node.keywords:
                    k.value = recurse(k.value)
                return node
            return self.leaf(node, scope, leaves, seen)
        if isinstance(node, ast.Attribute):
            if node.attr in PURE_ATTRS or node.attr in PURE_METHODS:
                node.value = recurse(node.value)
                return node
            return self.leaf(node, scope, leaves, seen)
        if isinstance(node, ast.Subscript) and any(scope.kind(n) == "judge" for n in loads(node.value)) and \
                not trusted(node.slice, scope, judge_ok=True):
            # The solver's values would choose which part of the target is
            # compared (a loop's index, say).
            raise Unrewritable("%s: the solver's values would index the target: %s"
                               % (self.name(), _clip(ast.unparse(node))))
        if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Compare, ast.Tuple, ast.List,
                             ast.Set, ast.Dict, ast.IfExp, ast.Subscript, ast.Starred, ast.Slice)):
            for field, value in ast.iter_fields(node):
                if isinstance(value, ast.expr):
                    setattr(node, field, recurse(value))
                elif isinstance(value, list):
                    setattr(node, field, [recurse(v) if isinstance(v, ast.expr) else v for v in value])
            return node
        return self.leaf(node, scope, leaves, seen)

    def leaf(self, node, scope, leaves, seen):
        if any(scope.kind(n) == "judge" for n in loads(node)):
            raise Unrewritable("%s: the target is needed inside the solver's computation %s"
                               % (self.name(), _clip(ast.unparse(node))))
        key = ast.dump(node) if isinstance(node, ast.Name) else None
        if key is not None and key in seen:
            k = seen[key]
        else:
            k = len(leaves)
            leaves.append(node)
            if key is not None:
                seen[key] = k
        return ast.Call(func=ast.Name(id=LEAF, ctx=ast.Load()), args=[ast.Constant(k)], keywords=[])

    # ---- judging

    def judge_assertion(self, a, scope):
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
                self._defer(o)
                return

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
        tb = e.get("traceback") if isinstance(e.get("traceback"), str) else ""
        return Outcome(case, "crashed", "%s (in %s)" % (_clip(exc, 300), self.name(case)), "", tb)

    def close_case(self, i):
        r = self.records
        if i in r["errors"]:
            raise self._error(i)
        if i not in r["begins"]:
            raise Outcome(i, "missing", "%s did not start" % self.name(i))
        if i not in r["ends"]:
            raise Outcome(i, "missing", "%s did not run to its end" % self.name(i))


def _pure(node, scope):
    """Whether dropping node from the sandbox's copy changes nothing the
    sandbox computes besides the names it binds: an assignment to plain
    names whose value calls only functions the judge resolved, none of
    them drawing from or seeding a random stream, none writing through
    `out=`."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return False
    for t in targets:
        for sub in ast.walk(t):
            if isinstance(sub, (ast.Subscript, ast.Attribute, ast.Starred)):
                return False
    for n in ast.walk(value):
        if isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Call):
            f = resolve(n.func, scope)
            if f is _MISSING or _is_global_random(f) or _is_seed(f) or getattr(f, "__coordbench_random__", False):
                return False
            if any(k.arg == "out" for k in n.keywords):
                return False
    return True


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


