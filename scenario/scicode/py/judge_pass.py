"""The judge's walk over a step's test cases (see coordbench_judge.py)."""

import ast
import builtins
import copy

import numpy as np

from judge_names import (LEAF, RECORD, Scope, Unrewritable, _MISSING, _immutable, _import_allowed, _is_global_random,
                         _is_seed, _uses_global_random, contains, loads, resolve, stores, trusted)
from judge_null import OBSERVE
from judge_verdicts import Judging, Outcome, _clip, _discrete, index_records  # noqa: F401 - Outcome, index_records: this module's API

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


class Pass(Judging):
    """One walk over a step's test cases: it builds the sandbox's copy of
    each case and, given targets and records, judges them (Judging)."""

    def __init__(self, step, dependencies, cases, targets=None, records=None, observe=(), classes=()):
        self.step = step
        # The classes the problem's steps define (their headers): an
        # instance of one is the solver's object, never a plain value.
        self.classes = {c for c in classes if isinstance(c, str)}
        # Names a case bound from a call of one of those classes.
        self.objects = set()
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
        # Whether SciCode's own comparison fails too: an assertion failed
        # that judge_strict's rules alone did not refuse (see StrictPass).
        self.upstream_failed = False
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
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                isinstance(node.value.func, ast.Name) and node.value.func.id in self.classes:
            self.objects |= names
        else:
            self.objects -= names
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
                try:
                    fn.__coordbench_objects__ = _object_params(node)
                except AttributeError:
                    pass
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
            if trusted(node.func, scope) and self._consumes_object(node, scope):
                # A function of the case that uses an argument as the
                # solver's object (calls its methods: 30.3's
                # test_gradient(configs, MultiplyWF(...), delta)): it runs
                # in the sandbox, and its result is the value recorded.
                return self.leaf(node, scope, leaves, seen)
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
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and \
                self._judged_comprehension(node, scope):
            # The judge iterates over the recorded value (35.3's `all(i >
            # 10**10 for i in A)`: A is recorded, not a generator).
            node.generators[0].iter = recurse(node.generators[0].iter)
            return node
        if isinstance(node, (ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Compare, ast.Tuple, ast.List,
                             ast.Set, ast.Dict, ast.IfExp, ast.Subscript, ast.Starred, ast.Slice)):
            for field, value in ast.iter_fields(node):
                if isinstance(value, ast.expr):
                    setattr(node, field, recurse(value))
                elif isinstance(value, list):
                    setattr(node, field, [recurse(v) if isinstance(v, ast.expr) else v for v in value])
            return node
        return self.leaf(node, scope, leaves, seen)

    def _consumes_object(self, node, scope):
        """Whether node calls a function of the case that uses one of its
        arguments as an object (see _object_params), and hands it a value
        the judge does not hold."""
        f = resolve(node.func, scope)
        objects = getattr(f, "__coordbench_objects__", None)
        if not objects:
            return False
        params, names = objects
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred):
                return not trusted(a, scope, judge_ok=True)
            if i < len(params) and params[i] in names and not trusted(a, scope, judge_ok=True):
                return True
        return any(k.arg is None and not trusted(k.value, scope, judge_ok=True) or
                   k.arg in names and not trusted(k.value, scope, judge_ok=True) for k in node.keywords)

    def _judged_comprehension(self, node, scope):
        """Whether the judge can evaluate a comprehension once its first
        iterable is recorded: everything else in it loads only the names
        it binds and names the judge holds."""
        bound = set()
        for g in node.generators:
            bound |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        inner = Scope({n: None for n in bound}, parent=scope)
        first = node.generators[0]
        rest = [first.target] + list(first.ifs)
        for g in node.generators[1:]:
            rest += [g.target, g.iter] + list(g.ifs)
        rest += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return all(trusted(n, inner, judge_ok=True) for n in rest)

    def leaf(self, node, scope, leaves, seen):
        if any(scope.kind(n) == "judge" for n in loads(node)):
            raise Unrewritable("%s: the target is needed inside the solver's computation %s"
                               % (self.name(), _clip(ast.unparse(node))))
        # A leaf must be able to hold a plain value: what is never one is a
        # step no answer can pass, a harness defect, refused here so that
        # the test over every step finds it.
        if isinstance(node, ast.Lambda):
            raise Unrewritable("%s: the value of `%s` is a function, never a plain value"
                               % (self.name(), _clip(ast.unparse(node))))
        cls = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in self.classes else node.id if isinstance(node, ast.Name) and node.id in self.objects else None
        if cls is not None:
            raise Unrewritable("%s: the value of `%s` is an instance of a class the solver defines, never a plain "
                               "value, and nothing in the case consumes it" % (self.name(), _clip(ast.unparse(node))))
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


def _object_params(fn):
    """(parameters in order, the names of those fn uses as objects): a
    method called or an attribute read that a plain value (an array, a
    list, a dict) does not have, or the parameter called."""
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args]
    known = set(params) | {x.arg for x in a.kwonlyargs}
    used = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in known and \
                n.attr not in PURE_ATTRS and n.attr not in PURE_METHODS:
            used.add(n.value.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in known:
            used.add(n.func.id)
    return (params, used) if used else None
