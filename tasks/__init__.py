"""Prefect tasks: thin wrappers over hr_core that make each step of a flow a task run in the
dashboard (chunks, results, artifacts, regression, remote chunks). Imports hr_core and
hr_server, never flows or hr_cli.
"""
