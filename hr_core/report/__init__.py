"""The HTML report of a finished run (pure: pandas and hand-written SVG, no Prefect, no network).

Example (a stored run; not run as a doctest)::

    from hr_core.report import write_report
    write_report("results/demo/3f2a9c1e")  # -> PosixPath('results/demo/3f2a9c1e/report.html')
"""

from hr_core.report.html import REPORT_SECTIONS, render_report, write_report
from hr_core.report.inputs import (
    ReportError,
    ReportInputs,
    attach_comparison,
    attach_validation,
    load_report_inputs,
)

__all__ = [
    "REPORT_SECTIONS",
    "ReportError",
    "ReportInputs",
    "attach_comparison",
    "attach_validation",
    "load_report_inputs",
    "render_report",
    "write_report",
]
