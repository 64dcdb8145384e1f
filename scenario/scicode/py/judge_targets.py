"""The judge's reader of a step's targets from an HDF5 file in SciCode's
layout (SciCode's own is scicode.parse.parse.process_hdf5_to_tuple). It
runs only in the judge: the targets never enter the sandbox.

``process_hdf5_to_tuple(step_id, test_num, h5py_file)`` returns the targets
of test cases 1..test_num of a step as a list, the i-th being what the
i-th test case compares with. The layout:

* group ``<step_id>/test<k>`` (k from 1) holds either one entry (the
  target) or entries ``var1..varN`` (a tuple target);
* an entry is a dataset (bytes are decoded as UTF-8 strings) or a group;
* a group with a subgroup ``list`` is a list of that subgroup's members;
  a group with a subgroup ``sparse_matrix`` is a scipy sparse matrix
  (datasets ``data`` and ``shape``, plus ``row`` and ``col`` for COO,
  ``indices``, ``indptr`` and ``blocksize`` for BSR, ``indices`` and
  ``indptr`` for CSR); any other group is a dict of its members, in which a
  member group is a sparse matrix, bytes are decoded, and a key that parses
  as a float becomes that float.

Members are read in the order h5py lists them (by name, so ``var10`` comes
before ``var2``), as SciCode's own reader does: targets written for that
reader compare right only in that order.

``h5py_file`` is a path.
"""

import h5py
import scipy.sparse

__all__ = ["process_hdf5_to_tuple"]


def _value(dataset):
    """A dataset's value, bytes decoded."""
    v = dataset[()]
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="strict")
    return v


def _sparse(group):
    data = group["data"][()]
    shape = tuple(group["shape"][()])
    if "row" in group and "col" in group:
        return scipy.sparse.coo_matrix((data, (group["row"][()], group["col"][()])), shape=shape)
    if "blocksize" in group:
        return scipy.sparse.bsr_matrix(
            (data, group["indices"][()], group["indptr"][()]),
            shape=shape, blocksize=tuple(group["blocksize"][()]))
    return scipy.sparse.csr_matrix((data, group["indices"][()], group["indptr"][()]), shape=shape)


def _list(group):
    # Raw values, as SciCode's reader returns them.
    return [group[name][()] for name in group.keys()]


def _dict(group):
    out = {}
    for name, member in group.items():
        if isinstance(member, h5py.Group):
            out[name] = _sparse(member["sparse_matrix"])
            continue
        v = member[()]
        if isinstance(v, bytes):
            out[name] = v.decode("utf-8", errors="strict")
            continue
        try:
            out[float(name)] = v
        except ValueError:
            out[name] = v
    return out


def _group(group):
    names = list(group.keys())
    if not names:
        return {}
    # SciCode decides by the first member's name.
    if names[0] == "list":
        return _list(group["list"])
    if names[0] == "sparse_matrix":
        return _sparse(group["sparse_matrix"])
    return _dict(group)


def _entry(obj):
    if isinstance(obj, h5py.Dataset):
        return _value(obj)
    return _group(obj)


def _open(h5py_file):
    return h5py.File(h5py_file, "r")


def process_hdf5_to_tuple(step_id, test_num, h5py_file):
    """The targets of test cases 1..test_num of step step_id."""
    targets = []
    with _open(h5py_file) as f:
        for k in range(1, test_num + 1):
            path = "%s/test%d" % (step_id, k)
            if path not in f:
                raise KeyError("no targets for %s in the targets file" % path)
            group = f[path]
            if not isinstance(group, h5py.Group):
                raise TypeError("%s in the targets file is not a group" % path)
            names = list(group.keys())
            if len(names) == 1:
                targets.append(_entry(group[names[0]]))
            else:
                targets.append(tuple(_entry(group[name]) for name in names))
    return targets
