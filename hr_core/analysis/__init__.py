"""A finished run and comparisons between runs: the ``Benchmark``, run health, ``hr diff``
(``diff_runs``) and the regression check.
"""
