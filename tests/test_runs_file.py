"""A stored run's table read lazily: whole for ``.runs``, a few columns for the numbers,
the texts of the shown rows only for the report; every figure as from the whole table."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_data import fake_manifest, fake_reference, fake_runs

from hr_core import Benchmark
from hr_core.analysis.benchmark import runs_frame
from hr_core.analysis.health import assess_benchmark, assess_runs
from hr_core.analysis.items import item_texts
from hr_core.core.errors import CorruptRunError
from hr_core.report import ReportInputs, load_report_inputs, render_report
from hr_core.report.markdown import report_markdown
from hr_core.store.runs_file import STAT_COLUMNS, RowTexts, RunsFile


def _stored(tmp_path: Path, runs: pd.DataFrame, row_group: int = 7) -> Path:
    """A finished run folder with ``runs`` in small row groups (as the session streams it)."""
    run_dir = tmp_path / "demo" / "0123456789abcdef"
    run_dir.mkdir(parents=True)
    runs.to_parquet(run_dir / "runs.parquet", index=False, row_group_size=row_group)
    Benchmark(runs, {}).summary().to_parquet(run_dir / "summary.parquet")
    manifest = {**fake_manifest(), "max_error_rate": 0.5}
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run_dir / "reference.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in fake_reference()), encoding="utf-8")
    return run_dir


def _mixed_runs() -> pd.DataFrame:
    """fake_runs with a score, judge statuses, unicode, the arms not in accuracy order, and
    items whose first run has no output (the disagreements show the next run's)."""
    runs = fake_runs(n_items=30, runs=2, seed=11)
    runs = pd.concat([runs[runs["arm"] == a] for a in ("abstain", "keyword", "numbers")],
                     ignore_index=True)
    runs["score"] = np.where(runs["correct"].fillna(False).to_numpy(dtype=bool), 1.0, 0.25)
    runs["judge_status"] = [("no_consensus", "error", None, None)[i % 4] for i in range(len(runs))]
    runs["output"] = [None if (i % 5 == 0) else (f"{v} ✓ ü" if isinstance(v, str) else v)
                      for i, v in enumerate(runs["output"])]
    runs["error"] = [f"KeyError: 'ä{i % 3}'" if k == "error" else None
                     for i, k in enumerate(runs["failure_kind"])]
    records = runs.astype(object).where(runs.notna(), None).to_dict("records")
    return runs_frame(records, judge=True)


def test_a_loaded_run_reads_only_the_columns_its_numbers_need(tmp_path: Path) -> None:
    runs = _mixed_runs()
    run_dir = _stored(tmp_path, runs)
    memory = Benchmark(runs, fake_manifest())
    stored = Benchmark.load(run_dir)

    pd.testing.assert_frame_equal(stored.summary(), memory.summary(), check_exact=True)
    assert stored.arms == memory.arms and stored.has_scores
    assert stored.compare("keyword", "numbers") == memory.compare("keyword", "numbers")
    assert stored.coverage_warnings() == memory.coverage_warnings()
    pd.testing.assert_series_equal(stored.item_scores("keyword"), memory.item_scores("keyword"))
    memory.run_dir = stored.run_dir
    assert report_markdown(stored) == report_markdown(memory)
    assert assess_benchmark(stored) == assess_runs(runs)
    assert stored._runs is None and set(stored._columns) <= set(STAT_COLUMNS)
    assert "output" not in stored._columns and "error" not in stored._columns

    pd.testing.assert_frame_equal(stored.runs, runs, check_exact=True)  # whole, on first use
    assert stored.runs is stored.runs and not stored._columns


def test_the_report_of_a_stored_run_reads_the_shown_rows_texts_and_equals_the_whole_table_s(
        tmp_path: Path) -> None:
    runs = _mixed_runs()
    run_dir = _stored(tmp_path, runs)
    inputs = load_report_inputs(run_dir)
    assert "output" not in inputs.runs.columns and inputs.texts is not None
    whole = ReportInputs(inputs.manifest, runs, inputs.summary, run_dir=inputs.run_dir,
                         items=item_texts(fake_reference()))
    page = render_report(whole)
    assert render_report(inputs) == page
    assert "✓ ü" in page and "KeyError: &#x27;ä1&#x27;" in page


def test_row_texts_follow_a_reordering_across_row_groups(tmp_path: Path) -> None:
    runs = _mixed_runs()
    file = RunsFile.at(str(_stored(tmp_path, runs, row_group=4) / "runs.parquet"))
    rows = np.array([len(runs) - 1, 0, 9, 5, 9])
    assert RowTexts(file).get(rows, "output") == [
        None if pd.isna(v) else v for v in runs["output"].iloc[rows]]
    order = np.arange(len(runs))[::-1]
    assert RowTexts(file).take(order).get([0, 1], "error") == [
        None if pd.isna(v) else v for v in runs["error"].iloc[order[:2]]]
    assert RowTexts(file).get([1], "no such column") == [None]


def test_a_truncated_runs_table_is_named_when_loaded(tmp_path: Path) -> None:
    run_dir = _stored(tmp_path, _mixed_runs())
    path = run_dir / "runs.parquet"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CorruptRunError, match=r"runs\.parquet is corrupt or truncated"):
        Benchmark.load(run_dir)


def test_a_loaded_run_pickles_and_reads_its_table_again(tmp_path: Path) -> None:
    runs = _mixed_runs()
    stored = Benchmark.load(_stored(tmp_path, runs))
    stored.summary()
    again = pickle.loads(pickle.dumps(stored))
    assert again._runs is None and not again._columns
    pd.testing.assert_frame_equal(again.summary(), stored.summary(), check_exact=True)
    pd.testing.assert_frame_equal(again.runs, runs, check_exact=True)
    memory = pickle.loads(pickle.dumps(Benchmark(runs, fake_manifest())))
    pd.testing.assert_frame_equal(memory.runs, runs, check_exact=True)


def test_a_small_tables_columns_read_together_equal_those_read_one_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 25: a table of at most TOGETHER_UP_TO rows reads its stat columns in two passes
    # (plain, coded) instead of one a column; the frame must be the same (dtypes, categories)
    from hr_core.store import runs_file

    runs = _mixed_runs()
    path = str(_stored(tmp_path, runs, row_group=4) / "runs.parquet")
    wanted = [*STAT_COLUMNS, "no such column"]
    together = RunsFile.at(path).read(wanted)
    monkeypatch.setattr(runs_file, "TOGETHER_UP_TO", 0)
    one_at_a_time = RunsFile.at(path).read(wanted)
    pd.testing.assert_frame_equal(together, one_at_a_time, check_exact=True)
    assert str(together["arm"].dtype) == "category" and len(together) == len(runs)
    assert list(together.columns) == [c for c in STAT_COLUMNS if c in together.columns]
