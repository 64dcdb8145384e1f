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
"""

import json
import math
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
        cases = Pass(req["step"], req.get("dependencies", ""), req["cases"], observe=props).run()
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
    p = StrictPass(req["step"], req.get("dependencies", ""), cases, targets=targets, records=idx, observe=observe)
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
    unchecked = []
    if failure is None and observe:
        if reference is None:
            unchecked = observe
        else:
            ref_records, _ = parse_records(reference)
            found, unchecked = check(observe, index_observations(records), index_observations(ref_records))
            if found is not None:
                case, detail = found
                if p.discrete:
                    # As for any failure where a target is a boolean: the
                    # case is not named (it would tell that its property held).
                    failure = {"case": 0, "kind": "failed", "detail": "a test case failed: " + detail}
                else:
                    failure = {"case": case, "kind": "failed", "detail": "%s: %s" % (p.name(case), detail)}
    return {"ok": True, "passed": failure is None, "failure": failure, "malformed": malformed or "",
            "cases": len(cases), "unchecked": unchecked if failure is None else [], "held": p.held()}


def op_hello(_req):
    import h5py
    import scipy
    import scipy.sparse  # noqa: F401 - loaded now rather than on the first request
    return {"ok": True, "python": sys.version.split()[0], "numpy": np.__version__,
            "scipy": scipy.__version__, "h5py": h5py.__version__}


def main():
    # The protocol runs on private descriptors: whatever a test case's own
    # statements print goes to stderr, and none of them reads the requests.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if len(sys.argv) > 1:
        limit = int(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The CPU budget of one request (seconds): past it the kernel sends
    # SIGXCPU, and the request ends as over budget.
    budget = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0
    if "--remove-own-directory" in sys.argv[1:]:
        # Everything is loaded: the temporary directory the green agent
        # wrote this code to goes now, whatever ends this process later.
        shutil.rmtree(os.path.dirname(os.path.abspath(__file__)), ignore_errors=True)

    def read_exact(n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = proto_in.readinto(view[got:])
            if not k:
                return None
            got += k
        return bytes(buf)

    while True:
        head = read_exact(4)
        if head is None:
            return
        (n,) = struct.unpack(">I", head)
        req = json.loads(read_exact(n).decode("utf-8"))
        data, reference = b"", None
        if req.get("op") == "judge":
            (m,) = struct.unpack(">Q", read_exact(8))
            data = read_exact(m) if m else b""
            if req.get("reference"):
                (m,) = struct.unpack(">Q", read_exact(8))
                reference = read_exact(m) if m else b""
        started = resource.getrusage(resource.RUSAGE_SELF)
        if budget:
            # The kernel repeats SIGXCPU each second past the soft limit;
            # outside a request the signal is ignored.
            signal.signal(signal.SIGXCPU, _over_budget)
            used = started.ru_utime + started.ru_stime
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            soft = math.ceil(used) + budget
            resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        op = req.get("op")
        try:
            try:
                if op == "plan":
                    resp = op_plan(req)
                elif op == "judge":
                    resp = op_judge(req, data, reference)
                elif op == "hello":
                    resp = op_hello(req)
                else:
                    resp = {"ok": False, "error": "unknown op %r" % op}
            finally:
                if budget:
                    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
                    resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
                    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        except OverBudget:
            if op == "judge":
                resp = invalid("the recorded values took more than the judge's CPU budget (%d s) to compare" % budget)
            else:
                resp = {"ok": False, "error": "judge: the request took more than its CPU budget (%d s)" % budget}
        except MemoryError:
            if op == "judge":
                resp = invalid("the recorded values are too large to compare")
            else:
                resp = {"ok": False, "error": "judge: out of memory"}
        except Exception as e:  # noqa: BLE001 - the judge's own failure, reported
            resp = {"ok": False, "error": "judge: %s" % "".join(traceback.format_exception_only(type(e), e)).strip()}
        ended = resource.getrusage(resource.RUSAGE_SELF)
        resp["cpu_ms"] = round(1000 * (ended.ru_utime - started.ru_utime + ended.ru_stime - started.ru_stime), 3)
        # The process's peak resident memory so far (Linux: KiB).
        resp["peak_rss_kib"] = ended.ru_maxrss
        body = json.dumps(resp).encode("utf-8")
        proto_out.write(struct.pack(">I", len(body)) + body)


if __name__ == "__main__":
    main()
