"""A finished run and comparisons between runs: the ``Benchmark``, its health and verdict,
outcome shares and single items, ``hr diff`` (``diff_runs``) and the regression check.
May import store, models, scoring, stats, data, results and core.
"""
