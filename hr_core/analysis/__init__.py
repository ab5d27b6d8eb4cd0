"""Analyses of finished runs: a run against another (diff, regression), health."""
