"""The driver of the batched judge's kill -9 test (tests/test_batch_judge_kill.py):
``python tests/batch_judge_kill_driver.py STATE_DIR LEDGER_DIR OUT`` compares two answer
sets over 40 items with a 2-order pairwise judge through the file-backed fake provider
(tests/batch_file_fake.py: 80 requests, batches of at most 25), polling every 10 ms, and
writes the verdicts to ``OUT`` (JSON) once every one is in."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from batch_fakes import FakeBatchAdapter
from batch_file_fake import FileBatchClient

from hr_core.judge import hr_judge_config
from hr_core.judge.pairwise import ComparisonRow, judge_rows

ARMS = ["right", "half"]


def config(batch: bool) -> Any:
    """The pairwise judge (hr's mock judge: the reference's answer wins, else the first
    shown)."""
    return hr_judge_config({"model": "mock-model", "batch": batch},
                           "Which answer is the reference's?", mode="pairwise")


def rows() -> list[ComparisonRow]:
    """40 items: the right arm always right, the half arm right in other words on odd
    items (each order of a pair is a request of its own)."""
    return [ComparisonRow(f"q{i}", 1, f"Which city is number {i}?", f"Paris{i}",
                          (f"Paris{i}", f"It is Paris{i}" if i % 2 else "no idea"))
            for i in range(40)]


def main(state: str, ledger: str, out: str) -> None:
    from hr_core.run.batch.adapters import register_adapter
    from hr_core.run.batch.judging import BatchJudging

    register_adapter("mock", lambda spec, model: FakeBatchAdapter(
        None, spec.model, client=FileBatchClient(Path(state))))
    judge = config(batch=True)
    judging = BatchJudging(Path(ledger), judge, judge.chat_model(), command="the driver",
                           poll_s=0.01)

    async def judge_pass(model: Any) -> list[dict[str, Any]]:
        return await judge_rows(judge, model, rows(), ARMS)

    records = asyncio.run(judging.run(judge_pass))
    Path(out).write_text(json.dumps(records, sort_keys=True))
    print(f"done {len(records)}", flush=True)


if __name__ == "__main__":
    # ended as an `hr` process ends (hr_cli.process_exit): Python's exit steps, then
    # os._exit; a normal exit tears C++ libraries down under running daemon threads and
    # once aborted here ("terminate called without an active exception", exit -6)
    from hr_cli.process_exit import run_then_end

    run_then_end(lambda: main(sys.argv[1], sys.argv[2], sys.argv[3]))
