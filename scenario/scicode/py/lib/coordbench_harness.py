"""coordbench harness: runs a SciCode step's test cases in the sandbox and
records values; it decides nothing.

The step's script imports this module first (before any of the solver's
code), then runs the dependencies, the previous steps' code and the answer,
then calls run_cases with the test cases as the trusted judge rewrote them:
each assertion became a call of record(case, assertion, thunk, ...) whose
thunks evaluate the values the judge needs (the solver's results), never
the target, which is not here. run_cases executes the cases in order in the
script's namespace (a later case may use what an earlier one defined, and
all share one random stream) and writes, on the record channel (file
descriptor 3, a pipe the runner reads), one record per event:

    begin {case}     a case starts
    assert {case, assertion, leaves: [value, ...]}
    observe {case, index, kind, value}   in a property case (judge_null.py):
                     the names handed to a call into the solver's code
                     ("args", a tuple) or the names it bound ("value")
    error {case, exception, traceback}   the case raised; nothing more runs
    end {case}       a case ran to its end
    done             every case ran

A record is a frame: a 4-byte big-endian length and a JSON header, then a
4-byte count of binary blobs, each an 8-byte length and its bytes. A value is
a JSON tree: {"none"}, {"bool"}, {"int": "digits"}, {"float"} (nan and
infinities as strings), {"complex": [re, im]}, {"str"}, {"bytes": hex},
{"list"} (a generator's items too), {"tuple"}, {"dict": [[key, value], ...]}, {"npy": blob} (an .npy
file without pickled objects), {"scalar": blob} (a numpy scalar as a 0-d
.npy), {"objarray": {"shape", "items"}}, {"sparse": format, "shape", "data",
"row", "col"} (blobs of the COO form), {"symbol": name}, {"error": text} (the
thunk raised), {"unsupported": type}. Nothing is pickled.

The solver's code runs in this interpreter and can replace any of this; it
gains nothing by it: whatever arrives is only a claim of what its code
computed, read strictly and compared by the judge, which holds the targets.
"""

import io
import itertools
import json
import linecache
import math
import os
import struct
import sys
import traceback
import types

import numpy as np

__all__ = ["run_cases", "record", "observe"]

FD = 3
MAX_DEPTH = 32
TRACEBACK_CHARS = 8000
MAX_GENERATED = 1_000_000


def _write(header, blobs=()):
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    parts = [struct.pack(">I", len(head)), head, struct.pack(">I", len(blobs))]
    for b in blobs:
        parts.append(struct.pack(">Q", len(b)))
        parts.append(b)
    data = b"".join(parts)
    view = memoryview(data)
    while view:
        n = os.write(FD, view)
        view = view[n:]


def _npy(arr, blobs):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array(arr, order="C", copy=False), allow_pickle=False)
    blobs.append(buf.getvalue())
    return len(blobs) - 1


def _float(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def encode(value, blobs, depth=0):
    """The JSON tree of a value (see the module doc); blobs collects the
    binary parts."""
    if depth > MAX_DEPTH:
        return {"unsupported": "nesting deeper than %d" % MAX_DEPTH}
    t = type(value)
    if value is None:
        return {"none": True}
    if t is bool:
        return {"bool": value}
    if t is int:
        return {"int": str(value)}
    if t is float:
        return {"float": _float(value)}
    if t is complex:
        return {"complex": [_float(value.real), _float(value.imag)]}
    if t is str:
        return {"str": value}
    if t is bytes:
        return {"bytes": value.hex()}
    if t is list or t is tuple:
        return {t.__name__: [encode(v, blobs, depth + 1) for v in value]}
    if t is dict:
        return {"dict": [[encode(k, blobs, depth + 1), encode(v, blobs, depth + 1)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        arr = np.array(value, copy=True, subok=False)
        if arr.dtype.hasobject:
            return {"objarray": {"shape": list(arr.shape),
                                 "items": [encode(v, blobs, depth + 1) for v in arr.ravel().tolist()]}}
        return {"npy": _npy(arr, blobs)}
    if isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            return {"unsupported": t.__name__}
        return {"scalar": _npy(arr.reshape(()), blobs)}
    module = getattr(t, "__module__", "") or ""
    if module.startswith("scipy.sparse") and hasattr(value, "tocoo"):
        coo = value.tocoo()
        return {"sparse": value.format, "shape": [int(n) for n in coo.shape],
                "data": _npy(np.asarray(coo.data), blobs), "row": _npy(np.asarray(coo.row), blobs),
                "col": _npy(np.asarray(coo.col), blobs)}
    if module.startswith("sympy") and t.__name__ == "Symbol":
        return {"symbol": str(value.name)}
    if isinstance(value, types.GeneratorType) and value.gi_code.co_filename.startswith("<test case "):
        # A generator a test case's own expression made (`all(x > 0 for x
        # in f())` where the judge cannot iterate itself): its items, as
        # the skeleton that consumes it would see them. (One the solver's
        # code returns is not a value, as in SciCode's comparisons.)
        items = list(itertools.islice(value, MAX_GENERATED + 1))
        if len(items) > MAX_GENERATED:
            return {"unsupported": "a generator of more than %d items" % MAX_GENERATED}
        return {"list": [encode(v, blobs, depth + 1) for v in items]}
    # Subclasses of the plain types become the plain value; anything else
    # (an object that says it equals everything) is not a value.
    for plain in (bool, int, float, complex, str, bytes, list, tuple, dict):
        if isinstance(value, plain):
            try:
                return encode(plain(value), blobs, depth + 1)
            except Exception as e:  # noqa: BLE001 - a value that will not convert
                return {"unsupported": "%s (%s)" % (t.__name__, type(e).__name__)}
    return {"unsupported": t.__name__}


def record(case, assertion, *thunks):
    """Evaluates each thunk and records the values for the judge."""
    leaves, blobs = [], []
    for thunk in thunks:
        try:
            value = thunk()
        except BaseException as e:  # noqa: BLE001 - recorded, the judge decides
            leaves.append({"error": _exception_line(e)})
            continue
        try:
            leaves.append(encode(value, blobs))
        except Exception as e:  # noqa: BLE001 - a value that cannot be written
            leaves.append({"unsupported": "%s (%s)" % (type(value).__name__, _exception_line(e))})
    _write({"t": "assert", "case": case, "assertion": assertion, "leaves": leaves}, blobs)


def observe(case, index, kind, thunk):
    """Records a value the judge compares with the reference run's."""
    blobs = []
    try:
        value = encode(thunk(), blobs)
    except BaseException as e:  # noqa: BLE001 - recorded, the judge decides
        value = {"error": _exception_line(e)}
        blobs = []
    _write({"t": "observe", "case": case, "index": index, "kind": kind, "value": value}, blobs)


def _exception_line(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()[-1000:]


def run_cases(ns, cases):
    """Runs the rewritten test cases [(filename, source), ...] in ns."""
    ns["__coordbench_record__"] = record
    ns["__coordbench_observe__"] = observe
    for i, (filename, source) in enumerate(cases, 1):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        _write({"t": "begin", "case": i})
        try:
            code = compile(source, filename, "exec")
            ns["__coordbench_record__"] = record
            ns["__coordbench_observe__"] = observe
            exec(code, ns)  # noqa: S102 - the test case, as the judge rewrote it
        except BaseException as e:  # noqa: BLE001 - recorded, the judge decides
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            sys.stderr.write(tb)
            sys.stderr.flush()
            _write({"t": "error", "case": i, "exception": _exception_line(e), "traceback": tb[-TRACEBACK_CHARS:]})
            return
        _write({"t": "end", "case": i})
    _write({"t": "done"})
