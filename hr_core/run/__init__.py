"""Running a benchmark: the spec, the plan, arms, budgets, one chunk's execution, the session
that drives chunks, stopping rules, re-scoring and writing a finished run's results. The top
layer of hr_core: may import every other package but examples.
"""
