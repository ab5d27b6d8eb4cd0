"""The ``hr-compare-files`` flow: a comparison started from files (a deployment's
"Custom run"): the run folder, the arms and the judge file are its parameters.

``hr compare RUN_DIR --judge JUDGE.yaml --arms A B`` as a flow: it reads the judge file
(its model, which may name a key variable, is resolved here and never stored), runs the
``hr-compare`` flow as a subflow, attaches the summary to the run and refreshes its
report, as the command does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import get_run_logger

from flows.compare import hr_compare_async
from flows.hrflow import hr_flow
from hr_core.judge._file import judge_model, load_judge
from hr_core.report import attach_comparison, write_report

__all__ = ["compare_files_flow"]


@hr_flow(name="hr-compare-files", persist_result=False)
async def compare_files_flow(run_dir: str, arms: list[str], judge: str,
                             concurrency: int = 16, chunk_size: int = 500) -> dict[str, Any]:
    """Compare ``arms`` of the stored run in ``run_dir`` with the pairwise or select judge
    of the YAML file ``judge``.

    Args:
        run_dir: the finished benchmark's run folder (or fsspec URL).
        arms: two arms (pairwise: A first) or several (select).
        judge: the judge file (``hr compare``'s ``--judge``).
        concurrency: judgements in flight.
        chunk_size: (item, run) rows per Prefect task.

    Returns:
        The judge's hash, where the pairs were saved, and the summary's rows.
    """
    config = load_judge(judge)
    model = judge_model(judge)
    comparison = await hr_compare_async(run_dir, arms, config, concurrency=concurrency,
                                        chunk_size=chunk_size,
                                        **({} if model is None else {"model": model}))
    summary = comparison.summary()
    attach_comparison(run_dir, {**config.to_dict(), "hash": config.hash}, summary)
    if "://" not in run_dir and (Path(run_dir) / "report.html").exists():
        get_run_logger().info("hr-compare-files: report updated: %s", write_report(run_dir))
    return {"judge_hash": config.hash, "saved_to": comparison.manifest.get("saved_to"),
            "summary": summary.to_dict(orient="records")}
