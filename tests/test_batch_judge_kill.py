"""kill -9 at 15 moments of a batched pairwise comparison (80 judge requests in 4
batches), then the same comparison to the end: no request submitted twice, every
verdict in and equal to the live judge's. Each moment is a number of lines of the
batch ledger (intents, batch ids, outcomes, ends) seen written, so the kills land in
every phase whatever the machine's load. The provider is the fake whose state is files
(tests/batch_file_fake.py), so it outlives each killed process."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from batch_file_fake import submissions
from batch_judge_kill_driver import ARMS, config, rows

from hr_core.judge.pairwise import judge_rows

DRIVER = Path(__file__).with_name("batch_judge_kill_driver.py")


def _start(state: Path, ledger: Path, out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), str(Path(__file__).parents[1]),
         os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(DRIVER), str(state), str(ledger), str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _lines(journal: Path) -> int:
    try:
        return journal.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_at(process: subprocess.Popen[str], journal: Path, lines: int) -> bool:
    """SIGKILL the driver once the ledger has ``lines`` lines; False: it ended first."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if _lines(journal) >= lines:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate()
            return True
        time.sleep(0.002)
    raise AssertionError("the driver neither ended nor wrote its ledger within 120 s")


def test_kill_9_at_15_moments_of_a_batched_comparison_pays_no_request_twice(
        tmp_path: Path) -> None:
    judge = config(batch=False)
    live = asyncio.run(judge_rows(judge, judge.chat_model(), rows(), ARMS))
    rng = random.Random(34)
    kills, trials, moments = 0, 0, []
    while kills < 15:  # trials: a fresh comparison killed until one reaches its end
        trials += 1
        state, ledger, out = (tmp_path / f"provider{trials}", tmp_path / f"cmp{trials}",
                              tmp_path / f"verdicts{trials}.json")
        journal = ledger / "batches" / "ledger.jsonl"
        while True:
            process = _start(state, ledger, out)
            if kills < 15:
                target = _lines(journal) + rng.randint(1, 40)
                if _kill_at(process, journal, target):
                    kills += 1
                    moments.append(target)
                    continue
            stdout, stderr = process.communicate(timeout=120)
            assert process.returncode == 0, stderr[-2000:]
            assert "done 40" in stdout
            counts = submissions(state)
            assert sum(counts.values()) == 80  # 40 pairs x 2 orders
            assert max(counts.values()) == 1  # no request submitted twice
            assert json.loads(out.read_text()) == json.loads(json.dumps(live))
            break
    assert kills == 15
    print(f"{kills} kills -9 over {trials} comparisons, at ledger lines {sorted(moments)}: "
          "every request submitted once, every verdict the live one")
