"""Prefect deployments of hr's flows: ``prefect.yaml``, ``serve`` and the deployment checks.
Imports flows, tasks, hr_server and hr_core, never hr_cli.
"""
