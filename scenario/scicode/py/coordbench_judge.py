"""coordbench judge: the trusted side of SciCode scoring.

This process never imports, compiles or runs the solver's code. It reads
the data set (test cases, targets) and the values the sandbox recorded, and
decides, with SciCode's comparison rules, whether each test case holds.

A SciCode test case is Python: setup statements, then assertions such as
``assert np.allclose(f(x), target)``, ``assert cmp_tuple_or_list(f(a),
target)`` or ``assert (np.isclose(0, B[:, 0] @ B[:, 3])) == target``,
sometimes inside a function the case defines and calls. The judge walks each
case statement by statement (Pass) and sorts every name into one of three
kinds:

* trusted: bound by a statement that uses only trusted names, allowed
  modules (numpy, scipy, math, sympy, ...), safe builtins, and functions the
  case itself defines from those; the judge runs the statement itself (the
  sandbox runs it too) and holds the value;
* judge-only: ``target`` and names bound from it; they never enter the
  sandbox (a statement that needs one there cannot be rewritten);
* dependent: anything the solver's code computed or could have changed (a
  call into its code, a mutable value passed to such a call, the global
  random streams once its code has run, names the case does not bind).

Each assertion is split into a skeleton the judge evaluates (comparisons,
comparison functions, arithmetic, indexing, trusted names, ``target``) and
leaves, the smallest dependent sub-expressions (``f(x)``, ``B``). The
sandbox's copy of the case has the assertion replaced by a call that records
the leaves' values; the judge decodes them (npy, JSON; never pickle;
anything but plain values refused), evaluates the skeleton with the real
target, and so decides. A form it cannot split is an error that says why,
never a pass.

Protocol (stdin/stdout, private descriptors): a request is a 4-byte
big-endian length and a JSON object, followed for "judge" by an 8-byte length
and the recorded bytes; the answer is a 4-byte length and a JSON object.
Requests: {"op": "hello"}; {"op": "plan", "step", "dependencies", "cases",
"targets"} (the answer lists the property cases, judge_null.py); {"op":
"judge", "step", "dependencies", "cases", "targets", "plan_sources",
"observe", "reference"}: with "reference" true a second 8-byte length and
the reference run's records follow the run's, and the property cases in
"observe" are checked against them (the answer's "unchecked" lists those
that could not be).

Process life: this process loads what every request needs and then only
reads requests; each request runs in a fork (serve), which answers through
a pipe and exits, so nothing a request allocates outlives it. A fork that
dies without answering is reported as {"ok": false, "died": ...}; one past
its CPU budget as over budget. Anything unexpected in this process's own
reading ends it: the green agent then kills it and starts another.
"""

import gc
import json
import os
import resource
import shutil
import signal
import struct
import sys
import traceback

import numpy as np

import scicode.compare.cmp  # noqa: F401 - loaded before the code directory goes
from judge_names import Unrewritable
from judge_null import check, index_observations, property_cases
from judge_pass import Outcome, Pass, index_records
from judge_records import TooLarge, parse_records
from judge_strict import StrictPass
from judge_targets import process_hdf5_to_tuple


class OverBudget(BaseException):
    """The request used up its CPU budget (SIGXCPU). A BaseException, so
    that no handler of the comparison's own exceptions takes it."""


def _over_budget(_signum, _frame):
    raise OverBudget()


def invalid(detail):
    return {"ok": True, "passed": False, "failure": {"case": 0, "kind": "invalid", "detail": detail}}


def op_plan(req):
    targets = None
    if req.get("targets"):
        # Which cases meet only boolean targets (judge_null.py); without the
        # targets, only the cases that name none are known.
        try:
            targets = process_hdf5_to_tuple(req["step"], len(req["cases"]), req["targets"])
        except (KeyError, TypeError, OSError):
            targets = None
    props = property_cases(req["cases"], targets)
    try:
        cases = Pass(req["step"], req.get("dependencies", ""), req["cases"], observe=props,
                     classes=req.get("classes") or ()).run()
    except Unrewritable as e:
        return {"ok": False, "error": str(e)}
    return {"ok": True, "cases": cases, "property_cases": props}


def op_judge(req, data, reference):
    cases = req["cases"]
    observe = [c for c in req.get("observe") or [] if isinstance(c, int)]
    targets = process_hdf5_to_tuple(req["step"], len(cases), req["targets"])
    try:
        records, malformed = parse_records(data)
    except TooLarge as e:
        return invalid("the record channel holds %s" % e)
    idx = index_records(records)
    p = StrictPass(req["step"], req.get("dependencies", ""), cases, targets=targets, records=idx, observe=observe,
                   classes=req.get("classes") or ())
    failure = None
    try:
        out = p.run()
    except Unrewritable as e:
        return {"ok": False, "error": str(e)}
    except Outcome as o:
        failure = {"case": o.case, "kind": o.kind, "detail": o.detail, "assertion": o.assertion,
                   "traceback": o.traceback}
        out = None
    if out is not None and [c["source"] for c in out] != req.get("plan_sources"):
        return {"ok": False, "error": "the test cases as judged differ from the ones the sandbox ran"}
    if failure is None and not idx["done"]:
        failure = {"case": len(cases), "kind": "missing", "detail": "the run ended before it recorded its end"}
    if malformed and (failure is None or failure["kind"] == "missing"):
        # A malformed record explains the values that are missing after it.
        failure = {"case": 0, "kind": "invalid", "detail": "the record channel holds a " + malformed}
    # SciCode's own comparison would pass where only the judge's stricter
    # rules refused (the structure rule, an equivalence both ways, NaN in
    # an ordering; below, the comparison with the reference run).
    strict_only = failure is not None and failure["kind"] == "failed" and not malformed and \
        p.strict_only_failure()
    unchecked = []
    if failure is None and observe:
        if reference is None:
            unchecked = observe
        else:
            ref_records, _ = parse_records(reference)
            found, unchecked = check(observe, index_observations(records), index_observations(ref_records))
            if found is not None:
                case, kind, detail = found
                if p.discrete:
                    # As for any failure where a target is a boolean: the
                    # case is not named (it would tell that its property held).
                    failure = {"case": 0, "kind": kind, "detail": "a test case failed: " + detail}
                else:
                    failure = {"case": case, "kind": kind, "detail": "%s: %s" % (p.name(case), detail)}
                strict_only = kind == "failed"
    return {"ok": True, "passed": failure is None, "failure": failure, "malformed": malformed or "",
            "cases": len(cases), "unchecked": unchecked if failure is None else [], "held": p.held(),
            "strict_only": strict_only}


def op_hello(_req):
    import h5py
    import scipy
    return {"ok": True, "python": sys.version.split()[0], "numpy": np.__version__,
            "scipy": scipy.__version__, "h5py": h5py.__version__}


# A request is at most this large: the test cases of a step are kilobytes;
# each payload part is a run's records, which the sandbox caps at 64 MiB.
MAX_REQUEST = 16 << 20
MAX_PART = 256 << 20
# An answer is at most this large (judge.go's judgeMaxAnswer): a plan of
# the largest step is about 100 KiB; texts taken from records are clipped.
MAX_ANSWER = 16 << 20
# Past the CPU budget SIGXCPU raises OverBudget; this much later the
# kernel kills the fork (a computation inside C code may not return to the
# interpreter to raise).
BUDGET_GRACE = 5


def handle(op, req, data, reference, budget):
    """One request, in the fork that serves it."""
    try:
        if op == "plan":
            return op_plan(req)
        if op == "judge":
            return op_judge(req, data, reference)
        if op == "hello":
            return op_hello(req)
        return {"ok": False, "error": "unknown op %r" % op}
    except OverBudget:
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        return over_budget(op, budget)
    except MemoryError:
        if op == "judge":
            return invalid("the recorded values are too large to compare")
        return {"ok": False, "error": "judge: out of memory"}
    except Exception as e:  # noqa: BLE001 - the judge's own failure, reported
        return {"ok": False, "error": "judge: %s" % "".join(traceback.format_exception_only(type(e), e)).strip()[:2000]}


def over_budget(op, budget):
    if op == "judge":
        return invalid("the recorded values took more than the judge's CPU budget (%d s) to compare" % budget)
    return {"ok": False, "error": "judge: the request took more than its CPU budget (%d s)" % budget}


def _die_with_parent():
    """The fork is killed when the judge process dies (PR_SET_PDEATHSIG);
    best effort: the green agent kills the judge's process group anyway."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux, or no libc: the group kill remains
        pass


def _write_all(fd, body):
    view = memoryview(body)
    while view:
        view = view[os.write(fd, view):]


def serve(op, req, data, reference, budget, private_fds):
    """Runs one request in a fork of this process and returns the answer's
    bytes. The fork holds everything the request allocates and ends with
    it: nothing of one request (a participant's values, memory, a reference
    cycle) reaches the next. A fork that dies without answering is
    reported, never taken for an answer."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(rfd)
            for fd in private_fds:
                os.close(fd)
            _die_with_parent()
            if budget:
                signal.signal(signal.SIGXCPU, _over_budget)
                resource.setrlimit(resource.RLIMIT_CPU, (budget, budget + BUDGET_GRACE))
            resp = handle(op, req, data, reference, budget)
            signal.signal(signal.SIGXCPU, signal.SIG_IGN)
            used = resource.getrusage(resource.RUSAGE_SELF)
            resp["cpu_ms"] = round(1000 * (used.ru_utime + used.ru_stime), 3)
            # The fork's peak resident memory (Linux: KiB).
            resp["peak_rss_kib"] = used.ru_maxrss
            body = json.dumps(resp).encode("utf-8")
            if len(body) > MAX_ANSWER:
                body = json.dumps({"ok": False, "error": "judge: an answer of %d bytes" % len(body)}).encode()
            _write_all(wfd, body)
            status = 0
        finally:
            os._exit(status)
    os.close(wfd)
    chunks, size = [], 0
    with os.fdopen(rfd, "rb", buffering=0) as r:
        while True:
            chunk = r.read(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ANSWER:
                os.kill(pid, signal.SIGKILL)
                chunks = None
                break
            chunks.append(chunk)
    _, status, used = os.wait4(pid, 0)
    if chunks is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return b"".join(chunks)
    cpu = used.ru_utime + used.ru_stime
    if budget and cpu >= budget:
        resp = over_budget(op, budget)
    elif chunks is None:
        resp = {"ok": False, "error": "judge: an answer of more than %d bytes" % MAX_ANSWER}
    elif os.WIFSIGNALED(status):
        resp = {"ok": False, "died": "the process that served the request was killed by %s"
                % signal.Signals(os.WTERMSIG(status)).name}
    else:
        resp = {"ok": False, "died": "the process that served the request exited with status %d"
                % os.WEXITSTATUS(status)}
    resp["cpu_ms"] = round(1000 * cpu, 3)
    resp["peak_rss_kib"] = used.ru_maxrss
    return json.dumps(resp).encode("utf-8")


_imported = set()


def preload(req):
    """Imports, in this process, the allowed modules the request's test
    cases and dependencies import (sympy takes a second), so that each
    fork finds them loaded. They are the data set's, never a participant's."""
    import ast
    import importlib
    from judge_names import _import_allowed
    sources = [req.get("dependencies") or ""] + list(req.get("cases") or [])
    for source in sources:
        if not isinstance(source, str) or "import" not in source:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or not _import_allowed(node):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in names:
                if name and name not in _imported:
                    _imported.add(name)
                    try:
                        importlib.import_module(name)
                    except Exception:  # noqa: BLE001 - the fork meets the same error, where it belongs
                        pass
    gc.freeze()


def main():
    # The protocol runs on private descriptors: whatever a test case's own
    # statements print goes to stderr, and none of them reads the requests.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    if len(sys.argv) > 1:
        limit = int(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The CPU budget of one request (seconds), in the fork that serves it.
    budget = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0
    # What every request needs, loaded once; forks share it.
    import h5py  # noqa: F401
    import scipy.sparse  # noqa: F401
    gc.freeze()
    if "--remove-own-directory" in sys.argv[1:]:
        # Everything is loaded: the temporary directory the green agent
        # wrote this code to goes now, whatever ends this process later.
        shutil.rmtree(os.path.dirname(os.path.abspath(__file__)), ignore_errors=True)
    private = [proto_in.fileno(), proto_out.fileno()]

    def read_exact(n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = proto_in.readinto(view[got:])
            if not k:
                raise EOFError("the request ends early")
            got += k
        return buf

    # This process only reads requests and forks: it holds nothing of any
    # request once answered. Anything unexpected here (a malformed frame
    # from the green agent) ends it; the green agent then starts another.
    while True:
        head = proto_in.read(4)
        if not head:
            return
        if len(head) < 4:
            head += read_exact(4 - len(head))
        (n,) = struct.unpack(">I", head)
        if n > MAX_REQUEST:
            raise ValueError("a request of %d bytes" % n)
        req = json.loads(read_exact(n).decode("utf-8"))
        op = req.get("op")
        data, reference = b"", None
        if op == "judge":
            parts = [None] * (2 if req.get("reference") else 1)
            for i in range(len(parts)):
                (m,) = struct.unpack(">Q", read_exact(8))
                if m > MAX_PART:
                    raise ValueError("a payload of %d bytes" % m)
                parts[i] = read_exact(m) if m else b""
            data = parts[0]
            reference = parts[1] if len(parts) > 1 else None
        preload(req)
        body = serve(op, req, data, reference, budget, private)
        del req, data, reference
        proto_out.write(struct.pack(">I", len(body)) + body)


if __name__ == "__main__":
    main()
