"""The judge's reading of the record channel: frames, and values decoded
strictly into plain values (see coordbench_harness.py for the format)."""

import io
import json
import math
import struct

import numpy as np

MAX_DEPTH = 32
MAX_ITEMS = 10_000_000
# The record stream as a whole: the sandbox stops a run past 64 MiB of
# records (limit "records"); the judge refuses more than that itself, and
# more frames than a run's test cases could need, before decoding any.
MAX_BYTES = 64 << 20
MAX_FRAMES = 200_000


class Invalid(Exception):
    """A recorded value that is malformed or not a plain value."""


class TooLarge(Exception):
    """A record stream past the judge's bounds: the run's values are not
    decoded at all."""


class LeafRaised(Exception):
    """The sandbox could not compute a leaf: its exception line."""


def parse_records(data):
    """Splits the record stream into (header, blobs) pairs; a malformed
    frame ends the stream and is reported; a stream past the bounds raises
    TooLarge."""
    out, pos, n = [], 0, len(data)
    if n > MAX_BYTES:
        raise TooLarge("%d bytes of records, more than the judge reads (%d)" % (n, MAX_BYTES))
    while pos < n:
        if len(out) >= MAX_FRAMES:
            raise TooLarge("more than %d records" % MAX_FRAMES)
        try:
            if pos + 4 > n:
                raise Invalid("a truncated frame")
            (hl,) = struct.unpack_from(">I", data, pos)
            pos += 4
            if hl > 16 << 20 or pos + hl + 4 > n:
                raise Invalid("a frame longer than what was recorded")
            header = json.loads(data[pos:pos + hl].decode("utf-8"))
            pos += hl
            (nb,) = struct.unpack_from(">I", data, pos)
            pos += 4
            blobs = []
            for _ in range(nb):
                if pos + 8 > n:
                    raise Invalid("a truncated blob")
                (bl,) = struct.unpack_from(">Q", data, pos)
                pos += 8
                if pos + bl > n:
                    raise Invalid("a blob longer than what was recorded")
                blobs.append(bytes(data[pos:pos + bl]))
                pos += bl
            if not isinstance(header, dict) or not isinstance(header.get("t"), str):
                raise Invalid("a record without a type")
            out.append((header, blobs))
        except (Invalid, ValueError, UnicodeDecodeError, struct.error) as e:
            return out, "malformed record at byte %d: %s" % (pos, e)
        except RecursionError:
            # JSON nested past the interpreter's recursion limit.
            return out, "malformed record at byte %d: nesting too deep to read" % pos
    return out, None


class Decoder:
    """Turns a recorded value tree into a plain value, strictly."""

    def __init__(self, blobs):
        self.blobs = blobs
        self.items = 0

    def _blob(self, i):
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self.blobs):
            raise Invalid("a value refers to a missing blob")
        try:
            arr = np.lib.format.read_array(io.BytesIO(self.blobs[i]), allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - anything but a plain .npy
            raise Invalid("not a plain .npy array (%s)" % type(e).__name__)
        if arr.dtype.hasobject:
            raise Invalid("an array of objects")
        self.items += arr.size
        if self.items > MAX_ITEMS:
            raise Invalid("more than %d numbers" % MAX_ITEMS)
        return arr

    def _float(self, x):
        if isinstance(x, str) and x in ("nan", "inf", "-inf"):
            return float(x)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x)
        raise Invalid("a malformed number")

    def decode(self, v, depth=0):
        if depth > MAX_DEPTH:
            raise Invalid("nesting deeper than %d" % MAX_DEPTH)
        if not isinstance(v, dict) or len(v) != 1 and "sparse" not in v:
            raise Invalid("a malformed value")
        self.items += 1
        if self.items > MAX_ITEMS:
            raise Invalid("more than %d values" % MAX_ITEMS)
        (key, x), = list(v.items())[:1]
        if key == "none":
            return None
        if key == "bool" and isinstance(x, bool):
            return x
        if key == "int" and isinstance(x, str) and len(x) < 5000:
            try:
                return int(x)
            except ValueError:
                raise Invalid("a malformed integer")
        if key == "float":
            return self._float(x)
        if key == "complex" and isinstance(x, list) and len(x) == 2:
            return complex(self._float(x[0]), self._float(x[1]))
        if key == "str" and isinstance(x, str):
            return x
        if key == "bytes" and isinstance(x, str):
            try:
                return bytes.fromhex(x)
            except ValueError:
                raise Invalid("malformed bytes")
        if key in ("list", "tuple") and isinstance(x, list):
            items = [self.decode(e, depth + 1) for e in x]
            return items if key == "list" else tuple(items)
        if key == "dict" and isinstance(x, list):
            out = {}
            for pair in x:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise Invalid("a malformed dict")
                k = self.decode(pair[0], depth + 1)
                try:
                    out[k] = self.decode(pair[1], depth + 1)
                except TypeError:
                    raise Invalid("an unhashable dict key")
            return out
        if key == "npy":
            return self._blob(x)
        if key == "scalar":
            arr = self._blob(x)
            if arr.shape != ():
                raise Invalid("a scalar that is not one")
            return arr[()]
        if key == "objarray" and isinstance(x, dict):
            shape = x.get("shape")
            items = x.get("items")
            if not isinstance(shape, list) or len(shape) > MAX_DEPTH or \
                    not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) or \
                    not isinstance(items, list):
                raise Invalid("a malformed object array")
            if math.prod(shape) != len(items):
                raise Invalid("an object array of the wrong size")
            arr = np.empty(len(items), dtype=object)
            for i, e in enumerate(items):
                arr[i] = self.decode(e, depth + 1)
            return arr.reshape(shape)
        if key == "sparse":
            import scipy.sparse
            fmt = v.get("sparse")
            if fmt not in ("coo", "csr", "csc", "bsr", "dia", "lil", "dok"):
                raise Invalid("an unknown sparse format")
            shape = v.get("shape")
            if not isinstance(shape, list) or len(shape) != 2 or \
                    not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                raise Invalid("a malformed sparse shape")
            # Comparisons make a sparse matrix dense: its dense form counts.
            self.items += shape[0] * shape[1]
            if self.items > MAX_ITEMS:
                raise Invalid("a sparse matrix of more than %d elements in its dense form" % MAX_ITEMS)
            data, row, col = self._blob(v.get("data")), self._blob(v.get("row")), self._blob(v.get("col"))
            if not (data.ndim == row.ndim == col.ndim == 1 and len(data) == len(row) == len(col)):
                raise Invalid("a malformed sparse matrix")
            try:
                m = scipy.sparse.coo_matrix((data, (row, col)), shape=tuple(shape))
                return m.asformat(fmt)
            except Exception as e:  # noqa: BLE001
                raise Invalid("a malformed sparse matrix (%s)" % type(e).__name__)
        if key == "symbol" and isinstance(x, str) and len(x) < 1000:
            import sympy
            return sympy.Symbol(x)
        if key == "error" and isinstance(x, str):
            raise LeafRaised(x[-1000:])
        if key == "unsupported" and isinstance(x, str):
            raise Invalid("a %s, not a plain value (numbers, strings, arrays, lists, tuples, dicts, "
                          "sparse matrices)" % x[:200])
        raise Invalid("a malformed value")


