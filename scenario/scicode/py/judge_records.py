"""The judge's reading of the record channel: frames, and values decoded
strictly into plain values (see coordbench_harness.py for the format)."""

import collections
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
# JSON values in the records' headers, counted (brackets, braces and commas)
# before any is parsed: a parsed value costs the judge 30 to 200 bytes per
# byte of JSON at worst (`[[],[],...]`: 63 MiB of it took 1.7 GB), a count
# bounds it (4 M values: under 1 GB). Arrays travel as .npy blobs, which
# this does not count; a Python list of numbers is two values an item.
MAX_JSON_VALUES = 4_000_000
# Keys of a dict that share one hash: a dict of keys crafted to collide
# costs quadratic time to build (integers n + k(2**61 - 1) all hash alike).
MAX_SAME_HASH = 8


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
    values = 0
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
            values += sum(data.count(c, pos, pos + hl) for c in (b"[", b"{", b","))
            if values > MAX_JSON_VALUES:
                raise TooLarge("more than %d JSON values" % MAX_JSON_VALUES)
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

    def decode(self, v):
        """The plain value of a recorded value tree. Every failure to build
        it is the record's (Invalid): numpy's and scipy's own errors on a
        forged shape or index, memory, recursion."""
        try:
            return self._decode(v, 0)
        except (Invalid, LeafRaised):
            raise
        except MemoryError:
            raise Invalid("a value too large to build")
        except RecursionError:
            raise Invalid("nesting too deep to build")
        except Exception as e:  # noqa: BLE001 - whatever a forged value makes numpy raise
            raise Invalid("a value that cannot be built (%s)" % type(e).__name__)

    def _count(self, n, what):
        self.items += n
        if self.items > MAX_ITEMS:
            raise Invalid("more than %d %s" % (MAX_ITEMS, what))

    def _decode(self, v, depth):
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
            items = [self._decode(e, depth + 1) for e in x]
            return items if key == "list" else tuple(items)
        if key == "dict" and isinstance(x, list):
            pairs = []
            for pair in x:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise Invalid("a malformed dict")
                pairs.append((self._decode(pair[0], depth + 1), self._decode(pair[1], depth + 1)))
            try:
                hashes = collections.Counter(hash(k) for k, _ in pairs)
            except TypeError:
                raise Invalid("an unhashable dict key")
            if hashes and max(hashes.values()) > MAX_SAME_HASH:
                raise Invalid("a dict whose keys share one hash (%d of them)" % max(hashes.values()))
            return dict(pairs)
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
                    not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_ITEMS for d in shape) or \
                    not isinstance(items, list):
                raise Invalid("a malformed object array")
            if math.prod(shape) != len(items):
                raise Invalid("an object array of the wrong size")
            arr = np.empty(len(items), dtype=object)
            for i, e in enumerate(items):
                arr[i] = self._decode(e, depth + 1)
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
            self._count(shape[0] * shape[1], "elements in a sparse matrix's dense form")
            data, row, col = self._blob(v.get("data")), self._blob(v.get("row")), self._blob(v.get("col"))
            if not (data.ndim == row.ndim == col.ndim == 1 and len(data) == len(row) == len(col)) or \
                    row.dtype.kind not in "iu" or col.dtype.kind not in "iu" or data.dtype.kind not in "biufc":
                raise Invalid("a malformed sparse matrix")
            if len(row) and (row.min() < 0 or col.min() < 0 or row.max() >= shape[0] or col.max() >= shape[1]):
                raise Invalid("a sparse matrix with an entry outside its shape")
            # So does what its format stores beyond the dense form's count: a
            # DIA matrix stores one row of shape[1] per diagonal (a 1 x K
            # matrix of K entries has K diagonals: K x K numbers), LIL two
            # Python lists per row, DOK a dict entry per stored value.
            if fmt == "dia" and len(row):
                self._count(len(np.unique(col.astype(np.int64) - row.astype(np.int64))) * (int(col.max()) + 1),
                            "numbers in a DIA matrix's storage")
            elif fmt == "lil":
                self._count(16 * shape[0], "numbers in a LIL matrix's storage")
            elif fmt == "dok":
                self._count(16 * len(data), "numbers in a DOK matrix's storage")
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


