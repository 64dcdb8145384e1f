"""coordbench's stand-in for the ``scicode`` package.

SciCode's test cases import their comparison helpers from
``scicode.compare.cmp`` and SciCode's harness reads the targets with
``scicode.parse.parse.process_hdf5_to_tuple``. The coordbench runner puts
this package on PYTHONPATH so that a step's test script runs unchanged,
without installing SciCode (or its dependencies) on the assessor. The code
here is coordbench's own, written to the semantics documented in
docs/scicode.md.
"""
