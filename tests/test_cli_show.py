"""``hr show RUN_DIR``: failed runs and disagreements as a table, without Prefect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import hr
from report_data import fake_run_dir


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = fake_run_dir(tmp_path / "results" / "fake" / "0123", with_judges=False)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "run_id": "0123"}))
    return folder


def test_show_lists_failed_runs_with_question_label_output_and_error(
        capsys: pytest.CaptureFixture[str], run_dir: Path) -> None:
    code, out, err = hr(capsys, "show", run_dir, "--arm", "numbers", "--kind", "error",
                        "--limit", "0")
    assert code == 0, err
    assert "2 failed run(s) in fake-docqa 0123 (arm numbers, kind error)" in out
    rows = [line for line in out.splitlines() if line.strip().startswith("numbers")]
    assert len(rows) == 2
    assert all("error" in r and "TimeoutError: slow" in r for r in rows)
    assert "What is answer" in out  # the question, from reference.jsonl


def test_show_caps_rows_and_says_so(capsys: pytest.CaptureFixture[str], run_dir: Path) -> None:
    code, out, _ = hr(capsys, "show", run_dir, "--limit", "3")
    assert code == 0
    assert "showing 3 (--limit 0 for all)" in out


def test_show_an_item_gives_every_arm_s_runs(capsys: pytest.CaptureFixture[str],
                                             run_dir: Path) -> None:
    code, out, _ = hr(capsys, "show", run_dir, "--item", "q00")
    assert code == 0
    assert "6 run(s) in fake-docqa" in out  # 3 arms x 2 runs, correct ones included
    assert "correct" in out


def test_show_diff_puts_two_arms_side_by_side(capsys: pytest.CaptureFixture[str],
                                              run_dir: Path) -> None:
    code, out, _ = hr(capsys, "show", run_dir, "--diff", "keyword", "numbers")
    assert code == 0
    assert "item(s) where keyword and numbers disagree" in out
    assert "keyword: output" in out and "numbers: output" in out


@pytest.mark.parametrize("args, message", [
    (["--arm", "nope"], "--arm 'nope': not in this run (known: keyword, numbers, abstain)"),
    (["--kind", "wrongg"], "--kind 'wrongg': not in this run"),
    (["--item", "q99"], "--item 'q99': no run of this item"),
    (["--diff", "keyword", "nope"], "--diff 'nope': not in this run"),
])
def test_show_names_a_bad_filter_in_one_line(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                             args: list[str], message: str) -> None:
    code, _, err = hr(capsys, "show", run_dir, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_show_imports_neither_prefect_nor_matplotlib(run_dir: Path) -> None:
    code = ("import sys\nfrom hr_cli import main\ntry:\n"
            f"    main(['show', {str(run_dir)!r}, '--diff', 'keyword', 'numbers'])\n"
            "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('prefect', 'matplotlib', 'flows')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_show_reads_a_run_in_an_fsspec_store(capsys: pytest.CaptureFixture[str],
                                             run_dir: Path) -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    for path in run_dir.iterdir():
        if path.is_file():
            fs.pipe(f"/hr-show/fake/0123/{path.name}", path.read_bytes())
    code, out, err = hr(capsys, "show", "memory://hr-show/fake/0123", "--kind", "error")
    assert code == 0, err
    assert "failed run(s) in fake-docqa 0123 (kind error)" in out and "What is answer" in out


@pytest.mark.usefixtures("prefect_harness")
def test_show_a_run_whose_question_holds_line_separators(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    # before (issue 31): hr run, summary and report were fine, hr show exited 1 with
    # "internal error: JSONDecodeError" (reference.jsonl split with str.splitlines, which
    # ends a line at U+2028 and U+0085 too)
    question = "Which\u2028city\x85is the capital?"
    rows = [{"id": "q1", "document": "Paris is the capital.", "question": question,
             "label": "Paris"},
            {"id": "q2", "document": "It rains.", "question": "Is it dry?", "label": "no"}]
    (tmp_path / "ref.jsonl").write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: seps\nreference: ref.jsonl\n"
                    "arms:\n  always_abstain: hr_core.examples.demo_arms:always_abstain\n",
                    encoding="utf-8")
    code, _, err = hr(capsys, "run", spec, "--store", tmp_path / "store")
    assert code == 0, err
    results = next((tmp_path / "store" / "seps").iterdir())
    code, out, err = hr(capsys, "show", results, "--item", "q1", "--limit", "0")
    assert code == 0, err
    assert "1 run(s) in seps" in out
    assert "Which city is the capital?" in " ".join(out.split()), out


def test_show_names_a_garbled_reference_line_in_one_line(
        capsys: pytest.CaptureFixture[str], run_dir: Path) -> None:
    reference = run_dir / "reference.jsonl"
    lines = reference.read_text(encoding="utf-8").split("\n")
    reference.write_text("\n".join([lines[0], '{"id": "q01", "payl', *lines[2:]]),
                         encoding="utf-8")
    code, _, err = hr(capsys, "show", run_dir, "--kind", "error")
    assert code == 2 and err.count("\n") == 1, err
    assert "reference.jsonl is corrupt or truncated" in err and "internal error" not in err
