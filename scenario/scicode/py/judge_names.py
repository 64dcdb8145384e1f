"""The judge's analysis of names: which a test case's statements load and
bind, and what the judge knows of each (see coordbench_judge.py)."""

import ast
import builtins
import random
import types

import numpy as np

ALLOWED_MODULES = {
    "numpy", "scipy", "math", "cmath", "sympy", "itertools", "functools", "operator",
    "collections", "fractions", "decimal", "string", "re", "heapq", "bisect", "copy",
    "random", "statistics", "numbers", "scicode",
}

SAFE_BUILTINS = {
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "dict",
    "divmod", "enumerate", "filter", "float", "format", "frozenset", "hasattr", "hash", "hex",
    "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "oct",
    "ord", "pow", "print", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str",
    "sum", "tuple", "type", "zip", "True", "False", "None", "Ellipsis", "NotImplemented",
}
SAFE_BUILTINS |= {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
                  and issubclass(getattr(builtins, n), BaseException)}

RECORD = "__coordbench_record__"
LEAF = "__coordbench_leaf__"


class Unrewritable(Exception):
    """A test case the judge cannot split; the step cannot be scored."""


# ---------------------------------------------------------------- names


class _Loads(ast.NodeVisitor):
    """The free names an AST loads (names bound in nested scopes inside it
    excluded)."""

    def __init__(self):
        self.names = set()
        self.bound = []

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and not any(node.id in b for b in self.bound):
            self.names.add(node.id)

    def _scoped(self, bound, nodes):
        self.bound.append(bound)
        for n in nodes:
            self.visit(n)
        self.bound.pop()

    def _args(self, args):
        for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(d)
        names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        if args.vararg:
            names.add(args.vararg.arg)
        if args.kwarg:
            names.add(args.kwarg.arg)
        return names

    def visit_Lambda(self, node):
        self._scoped(self._args(node.args), [node.body])

    def visit_FunctionDef(self, node):
        for d in node.decorator_list:
            self.visit(d)
        bound = self._args(node.args) | stores_in(node.body)
        self._scoped(bound, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        for b in node.bases + [k.value for k in node.keywords] + node.decorator_list:
            self.visit(b)
        self._scoped(stores_in(node.body), node.body)

    def _comp(self, node, elts):
        gens = node.generators
        self.visit(gens[0].iter)
        bound = set()
        for g in gens:
            bound |= {n.id for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        rest = [gens[0].target] + gens[0].ifs
        for g in gens[1:]:
            rest += [g.target, g.iter] + g.ifs
        self._scoped(bound, rest + elts)

    def visit_ListComp(self, node):
        self._comp(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comp(node, [node.key, node.value])


def loads(node):
    v = _Loads()
    v.visit(node)
    return v.names


def stores_in(stmts):
    """Names a block binds at its own level (not in nested scopes)."""
    out = set()
    for s in stmts:
        out |= stores(s)
    return out


def stores(node):
    out = set()

    def walk(n):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            return
        elif isinstance(n, ast.Lambda):
            return
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for sub in ast.walk(n):  # walrus targets leak; comprehension targets do not
                if isinstance(sub, ast.NamedExpr):
                    out.add(sub.target.id)
            return
        for c in ast.iter_child_nodes(n):
            walk(c)

    walk(node)
    return out


def contains(node, kinds):
    return any(isinstance(n, kinds) for n in ast.walk(node))


# ---------------------------------------------------------------- values


def _is_global_random(v):
    """A function drawing from (or seeding) a global random stream."""
    owner = getattr(v, "__self__", None)
    return owner is np.random.mtrand._rand or owner is random._inst


def _is_seed(v):
    return v is np.random.seed or (getattr(v, "__self__", None) is random._inst and getattr(v, "__name__", "") == "seed")


def _immutable(v, depth=0):
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes, range, np.generic,
                                   types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
        return True
    if isinstance(v, (tuple, frozenset)) and depth < 4:
        return all(_immutable(x, depth + 1) for x in v)
    return False


_MISSING = object()


class Scope:
    """A namespace under analysis: the module's (one per step, shared by its
    cases) or a function's."""

    def __init__(self, values, parent=None):
        self.values = values          # trusted and judge-only names → values
        self.judge_only = set()       # names the sandbox never has
        self.dependent = set()        # names the sandbox binds and the judge does not know
        self.parent = parent
        self.rng = {"numpy": False, "python": False}

    def kind(self, name):
        if name in self.dependent:
            return "dependent"
        if name in self.judge_only:
            return "judge"
        if name in self.values:
            return "trusted"
        if self.parent is not None:
            return self.parent.kind(name)
        if name in SAFE_BUILTINS:
            return "trusted"
        return "dependent"

    def value(self, name):
        if name in self.values:
            return self.values[name]
        if self.parent is not None:
            return self.parent.value(name)
        if name in SAFE_BUILTINS:
            return getattr(builtins, name, _MISSING)
        return _MISSING

    def depend(self, names):
        for n in names:
            self.values.pop(n, None)
            self.judge_only.discard(n)
            self.dependent.add(n)

    def trust(self, names, judge_only=False):
        for n in names:
            self.dependent.discard(n)
            if judge_only:
                self.judge_only.add(n)
            else:
                self.judge_only.discard(n)

    def globals(self):
        return self.parent.globals() if self.parent is not None else self.values

    def locals(self):
        return self.values if self.parent is not None else None

    def reset_rng(self):
        s = self
        while s is not None:
            s.rng = {"numpy": False, "python": False}
            s = s.parent


def resolve(node, scope):
    """The value of a Name or an attribute chain over trusted values, or
    _MISSING."""
    if isinstance(node, ast.Name):
        if scope.kind(node.id) != "trusted":
            return _MISSING
        return scope.value(node.id)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, scope)
        if base is _MISSING:
            return _MISSING
        try:
            return getattr(base, node.attr)
        except Exception:  # noqa: BLE001
            return _MISSING
    return _MISSING


def trusted(node, scope, judge_ok=False):
    """Whether the judge can compute node itself: every name it loads is
    trusted (or judge-only, where allowed), and it draws from no global
    random stream that the solver's code may have moved."""
    for name in loads(node):
        k = scope.kind(name)
        if k == "dependent" or (k == "judge" and not judge_ok):
            return False
    for n in ast.walk(node):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)):
            return False
        if isinstance(n, ast.Call):
            f = resolve(n.func, scope)
            if f is _MISSING:
                continue  # a method of a trusted value, a lambda...
            if _is_global_random(f) and not _is_seed(f):
                kind = "numpy" if getattr(f, "__self__", None) is np.random.mtrand._rand else "python"
                if not scope.rng[kind]:
                    return False
            if getattr(f, "__coordbench_random__", False) and not (scope.rng["numpy"] and scope.rng["python"]):
                return False
    return True


def _uses_global_random(fn_node, scope):
    for n in ast.walk(fn_node):
        if isinstance(n, (ast.Name, ast.Attribute)):
            v = resolve(n, scope)
            if v is not _MISSING and (_is_global_random(v) or v is np.random or v is random):
                return True
    return False


def _import_allowed(node):
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return False
        mods = [node.module or ""]
    else:
        mods = [a.name for a in node.names]
    for m in mods:
        top = m.split(".")[0]
        if top not in ALLOWED_MODULES:
            return False
        if top == "scicode" and not m.startswith("scicode.compare"):
            return False
    return True


