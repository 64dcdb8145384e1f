"""coordbench's stand-in for the ``scicode`` package.

SciCode's test cases import their comparison helpers from
``scicode.compare.cmp``. The judge compares with this package; the sandbox
has it on PYTHONPATH too, so that a test case's import works there,
without installing SciCode (or its dependencies) on the assessor. The code
here is coordbench's own, written to the semantics documented in
docs/scicode.md.
"""
