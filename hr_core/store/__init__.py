"""The run record and where it lives: the journal, the run folder, the runs table and
its columns, the run lock and stored outputs. May import models, scoring, stats, data,
results and core.
"""
