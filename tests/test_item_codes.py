"""Per-item counts by integer codes equal the string groupings they replace.

A stored run's ``runs.parquet`` has ``item_index`` (each row's item position in the
reference): ``item_codes`` codes items from it instead of hashing the ids. Whatever the
row order, with or without the column, the codes, counts and failure tables must be
what ``pd.factorize`` and ``groupby`` on the ids give.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.analysis.items import disagreements, excerpt, failed_runs, failure_counts
from hr_core.stats.accuracy import (
    ITEM_INDEX,
    item_accuracies,
    item_codes,
    item_counts,
    item_total,
    runs_made,
)

KINDS = [None, "wrong", "error", "budget_stop", "refusal"]


@st.composite
def tables(draw: st.DrawFn) -> pd.DataFrame:
    """A runs table with ``item_index`` consistent with the ids, rows in any order, marked
    as read from one runs.parquet (so its items are coded by position)."""
    n_items = draw(st.integers(1, 6))
    ids = draw(st.lists(st.text("abq9é", min_size=1, max_size=3), min_size=n_items,
                        max_size=n_items, unique=True))
    rows = draw(st.lists(st.tuples(st.sampled_from(["x", "y", "z"]),
                                   st.integers(0, n_items - 1),
                                   st.sampled_from([True, False, None]),
                                   st.sampled_from(KINDS)), min_size=0, max_size=30))
    table = pd.DataFrame({
        "run": np.array(draw(st.lists(st.integers(1, 3), min_size=len(rows),
                                      max_size=len(rows))), dtype=np.int64),
        "arm": pd.Series([r[0] for r in rows], dtype="str"),
        "item_id": pd.Series([ids[r[1]] for r in rows], dtype="str"),
        "correct": pd.array([r[2] for r in rows], dtype="boolean"),
        "failure_kind": pd.Series([r[3] for r in rows], dtype="str"),
        "output": draw(st.lists(st.sampled_from([None, "x", "yy", "zé"]), min_size=len(rows),
                                max_size=len(rows))),
        ITEM_INDEX: np.array([r[1] for r in rows], dtype=np.int32),
    })
    table.attrs[ITEM_INDEX] = "one runs.parquet"
    return table


def _old_item_counts(runs: pd.DataFrame, arm: str) -> pd.DataFrame:
    """``item_counts`` as it was: a groupby on the ids."""
    keep = (runs["arm"] == arm) & runs["correct"].notna() & runs_made(runs)
    rows = runs.loc[keep, ["item_id", "correct"]]
    grouped = (rows["correct"].astype("int64")
               .groupby(rows["item_id"].astype(str), sort=False).agg(["sum", "count"]))
    return grouped.rename(columns={"sum": "correct", "count": "scored"})


def _old_failure_counts(runs: pd.DataFrame) -> pd.DataFrame:
    failed = runs.loc[runs["failure_kind"].notna(), ["arm", "failure_kind"]]
    return failed.groupby(["arm", "failure_kind"]).size().unstack(fill_value=0)


@settings(max_examples=200, deadline=None)
@given(tables(), st.data())
def test_item_codes_are_factorize_of_the_ids_whatever_the_row_order(
        runs: pd.DataFrame, data: st.DataObject) -> None:
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(runs), max_size=len(runs))),
                    dtype=bool)
    for table in (runs, runs.drop(columns=ITEM_INDEX)):
        for rows, ids_of in ((None, runs["item_id"]), (mask, runs["item_id"][mask]),
                             (np.flatnonzero(mask)[::-1].copy(),
                              runs["item_id"].iloc[np.flatnonzero(mask)[::-1]])):
            codes, ids = item_codes(table, rows)
            expected_codes, expected_ids = pd.factorize(ids_of)
            assert codes.tolist() == expected_codes.tolist()
            assert ids.tolist() == list(expected_ids)
    assert item_total(runs) == runs["item_id"].nunique() == item_total(
        runs.drop(columns=ITEM_INDEX))


@settings(max_examples=200, deadline=None)
@given(tables())
def test_item_counts_and_failure_counts_equal_the_string_groupings(runs: pd.DataFrame) -> None:
    for arm in ("x", "y", "z"):
        expected = _old_item_counts(runs, arm)
        for table in (runs, runs.drop(columns=ITEM_INDEX)):
            got = item_counts(table, arm)
            assert got.index.tolist() == expected.index.tolist()
            assert got["correct"].tolist() == expected["correct"].tolist()
            assert got["scored"].tolist() == expected["scored"].tolist()
    pd.testing.assert_frame_equal(item_accuracies(runs),
                                  item_accuracies(runs.drop(columns=ITEM_INDEX)))
    old, new = _old_failure_counts(runs), failure_counts(runs)
    assert new.to_dict("index") == old.to_dict("index")
    assert new.index.tolist() == old.index.tolist()
    assert new.columns.tolist() == old.columns.tolist()


def test_a_stored_runs_summary_and_report_tables_equal_the_in_memory_tables(
        tmp_path: Path) -> None:
    """The summary of a stored run (counted by ``item_index``) is the summary of the same
    table held in memory (counted by the ids), partial scores included."""
    rng = np.random.default_rng(7)
    records = []
    for arm in ("a", "b"):
        for item in range(40):
            for run in (1, 2, 3):
                kind = rng.choice(["", "wrong", "budget_stop", "error"])
                records.append({"arm": arm, "item_id": f"q{item}", "run": run,
                                "correct": None if kind == "error" else bool(kind == ""),
                                "score": float(rng.random()),
                                "failure_kind": kind or None})
    table = runs_frame(records)
    stored = table.assign(**{ITEM_INDEX: np.repeat(np.arange(40, dtype=np.int32), 3).tolist()
                             * 2})
    stored.to_parquet(tmp_path / "runs.parquet", index=False)
    manifest = {"scorer": "f1", "reference_hash": "ab"}
    on_disk, in_memory = Benchmark.stored(manifest, tmp_path), Benchmark(table, manifest)
    assert ITEM_INDEX in on_disk.stat_runs()
    assert ITEM_INDEX not in Benchmark.stored(manifest, tmp_path).runs  # the SPEC table
    pd.testing.assert_frame_equal(on_disk.summary(), in_memory.summary(), check_exact=True)
    pd.testing.assert_series_equal(on_disk.item_scores("a"), in_memory.item_scores("a"),
                                   check_exact=True)
    assert on_disk.compare("a", "b") == in_memory.compare("a", "b")


@settings(max_examples=200, deadline=None)
@given(tables(), st.integers(1, 4))
def test_the_capped_failed_runs_are_the_head_of_each_group_of_the_sorted_ones(
        runs: pd.DataFrame, per_group: int) -> None:
    """``per_group`` picks by integer keys; without it the rows are sorted by pandas on
    (arm, kind, item id, run): the capped table is each group's head of that."""
    for table in (runs, runs.drop(columns=ITEM_INDEX)):
        everything = failed_runs(table, {})
        expected = everything.groupby(["arm", "failure_kind"], sort=False).head(per_group)
        capped = failed_runs(table, {}, per_group=per_group)
        pd.testing.assert_frame_equal(capped.reset_index(drop=True),
                                      expected.reset_index(drop=True))


def _plain_disagreements(runs: pd.DataFrame, a: str, b: str) -> list[tuple[str, str, str]]:
    """The items both arms scored whose share of correct runs differs, best arm right
    first (then by id), with each arm's first output in run order: plain Python."""
    sides: dict[str, dict[str, list[tuple[int, int, bool, object]]]] = {}
    for row, r in enumerate(runs.itertuples(index=False)):
        if r.arm in (a, b) and r.correct is not pd.NA and r.failure_kind != "budget_stop":
            sides.setdefault(r.item_id, {}).setdefault(r.arm, []).append(
                (r.run, row, bool(r.correct), r.output))
    rows = []
    for item, by_arm in sides.items():
        if a in by_arm and b in by_arm:
            share = {arm: sum(c for _, _, c, _ in v) / len(v) for arm, v in by_arm.items()}
            if share[a] != share[b]:
                first = {arm: next((o for _, _, _, o in sorted(v, key=lambda t: t[:2])
                                    if not pd.isna(o)), None) for arm, v in by_arm.items()}
                rows.append((share[b] - share[a], item, excerpt(first[a]), excerpt(first[b])))
    return [(item, out_a, out_b) for _, item, out_a, out_b in sorted(rows)]


@settings(max_examples=200, deadline=None)
@given(tables())
def test_disagreements_equal_a_plain_computation(runs: pd.DataFrame) -> None:
    expected = _plain_disagreements(runs, "x", "y")
    for table in (runs, runs.drop(columns=ITEM_INDEX)):
        got = disagreements(table, "x", "y", {})
        assert list(zip(got["item_id"], got["a_output"], got["b_output"], strict=True)) == expected
        assert got.attrs["total"] == len(expected)


def _stored_run(tmp_path: Path) -> Path:
    """A real finished run whose report shows items: one arm right on even items only."""
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    items = [{"id": f"q{i}", "question": f"Question {i}?", "label": f"a{i}"} for i in range(30)]
    plan = plan_benchmark({"half": lambda p: "a" + p["question"][9:-1] if
                           int(p["question"][9:-1]) % 2 == 0 else "no",
                           "never": lambda p: "no"}, items, store=str(tmp_path), name="t")
    BenchmarkSession(plan).run_sync()
    return tmp_path / "t" / plan.run_id


def test_the_report_finds_item_texts_by_reference_position_without_an_id_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hr_core.report import write_report
    from hr_core.report.inputs import _LazyItems

    run_dir = _stored_run(tmp_path)
    made = write_report(run_dir, tmp_path / "a.html").read_text()
    assert "Question 1?" in made and "Question 28?" in made  # failed runs, disagreements

    def no_index(self: _LazyItems) -> dict[str, int]:
        raise AssertionError("every id was indexed")

    with monkeypatch.context() as patched:  # the lines at the items' positions suffice
        patched.setattr(_LazyItems, "_index", no_index)
        assert write_report(run_dir, tmp_path / "b.html").read_text() == made.replace(
            "a.html", "b.html")

    # lines in another order (a file not written by hr): each text is found by its id
    lines = (run_dir / "reference.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "reference.jsonl").write_text("".join(reversed(lines)))
    assert write_report(run_dir, tmp_path / "c.html").read_text() == made.replace(
        "a.html", "c.html")


def test_a_damaged_reference_line_is_reported_with_its_file_and_line(tmp_path: Path) -> None:
    from hr_core.core.errors import HrError
    from hr_core.report import write_report

    run_dir = _stored_run(tmp_path)
    lines = (run_dir / "reference.jsonl").read_text().splitlines(keepends=True)
    lines[1] = '{"id": "q1", "payload": {"question": "Question 1?"\n'  # cut short
    (run_dir / "reference.jsonl").write_text("".join(lines))
    with pytest.raises(HrError, match=r"reference.jsonl, line 2: not a readable JSON record"):
        write_report(run_dir, tmp_path / "a.html")


def test_runs_of_two_references_in_one_table_are_not_merged_by_position() -> None:
    """``item_index`` is a position in one run's reference: two runs.parquet files of
    different references concatenated hold different items at the same positions."""
    def run_of(prefix: str, right: bool) -> pd.DataFrame:
        return pd.DataFrame({
            "arm": "x", "item_id": [f"{prefix}{i}" for i in range(3)], "run": 1,
            "correct": pd.array([right] * 3, dtype="boolean"), "failure_kind": None,
            ITEM_INDEX: np.arange(3, dtype=np.int32)})

    both = pd.concat([run_of("a", True), run_of("b", False)], ignore_index=True)
    assert item_total(both) == 6
    counts = item_counts(both, "x")
    assert counts.index.tolist() == ["a0", "a1", "a2", "b0", "b1", "b2"]
    assert counts["correct"].tolist() == [1, 1, 1, 0, 0, 0]
    pd.testing.assert_frame_equal(item_accuracies(both),
                                  item_accuracies(both.drop(columns=ITEM_INDEX)))


def test_stat_tables_of_two_stored_runs_concatenated_are_checked_against_the_ids(
        tmp_path: Path) -> None:
    """A table read from one runs.parquet is coded by position alone (its attrs name the
    file); two such tables concatenated lose that mark and are checked."""
    from hr_core.store.runs_file import STAT_COLUMNS, RunsFile

    tables = []
    for prefix, right in (("a", True), ("b", False)):
        path = tmp_path / f"{prefix}.parquet"
        runs_frame([{"arm": "x", "item_id": f"{prefix}{i}", "run": 1, "correct": right}
                    for i in range(3)]).assign(
            **{ITEM_INDEX: np.arange(3, dtype=np.int32)}).to_parquet(path, index=False)
        tables.append(RunsFile.at(str(path)).read(STAT_COLUMNS))
    assert all(t.attrs.get(ITEM_INDEX) for t in tables)
    assert tables[0][tables[0]["run"] == 1].attrs == tables[0].attrs  # kept by selections
    both = pd.concat(tables, ignore_index=True)
    assert item_total(both) == 6
    assert item_counts(both, "x")["correct"].tolist() == [1, 1, 1, 0, 0, 0]
