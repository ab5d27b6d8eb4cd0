"""docs/judges.md, "The whole workflow on the demo", runs as written: ``hr demo``, the demo
run judged by ``hr rescore`` with an offline judge, ``hr plan --label-width``, ``hr label
sample``, people's labels (answered here by a program, in the file the labelling sheet's
download writes), ``hr label import``, then the corrected accuracy in ``hr summary`` and
the report.

Each line of the section's ``bash`` block runs through the CLI in this process, in a
fresh folder; ``RUN_ID`` and ``JUDGED_ID`` are the ids the commands before printed.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from cli_support import hr

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "judges.md"
SECTION = "\n## The whole workflow on the demo"


def documented_commands() -> list[str]:
    """The command lines of the section's ``bash`` block, in order."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    block = re.search(r"```bash\n(.*?)```", text[start:end if end > 0 else len(text)],
                      flags=re.DOTALL)
    assert block is not None
    return [line.strip() for line in block.group(1).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _fold(text: str) -> str:
    return " ".join(str(text).casefold().split())


def person(row: dict) -> str:
    """A lenient person: an output is correct when it contains an accepted answer (the
    judge, like the exact scorer, wants the answer alone)."""
    try:
        accepted = json.loads(row["reference"])
    except ValueError:
        accepted = row["reference"]
    answers = accepted if isinstance(accepted, list) else [accepted]
    output = _fold(row["output"])
    right = bool(output) and any(_fold(a) and _fold(a) in output for a in answers)
    return "correct" if right else "incorrect"


def answer_sheet(run_dir: Path, target: Path) -> int:
    """Label every output of the sheet as :func:`person` would, into ``target`` in the
    format of the HTML sheet's download; returns the labels written."""
    rows = [json.loads(line) for line in
            (run_dir / "label_sheet.jsonl").read_text(encoding="utf-8").splitlines()]
    target.write_text("".join(json.dumps({"arm": r["arm"], "item": r["item"], "run": r["run"],
                                          "label": person(r)}) + "\n" for r in rows),
                      encoding="utf-8")
    return len(rows)


def test_the_section_is_the_whole_workflow() -> None:
    commands = documented_commands()
    assert [c.split()[1] for c in commands] == ["demo", "rescore", "plan", "label", "label",
                                                 "summary", "report"]


def test_the_documented_workflow_runs_to_a_corrected_accuracy(
        prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    ids: dict[str, str] = {}
    outputs: dict[str, str] = {}
    labels = 0
    for command in documented_commands():
        for name, value in ids.items():
            command = command.replace(name, value)
        args = shlex.split(command)
        assert args[0] == "hr"
        if args[1:3] == ["label", "import"]:
            labels = answer_sheet(Path(args[3]), Path(args[4]))
        code, out, err = hr(capsys, *args[1:])
        assert code == 0, f"{command}\n{out}\n{err}"
        text = " ".join(out.split())
        outputs[" ".join(args[1:3])] = text
        if args[1] == "demo":
            ids["RUN_ID"] = re.search(r"Results: results/docqa-demo/(\S+)", text).group(1)
        elif args[1] == "rescore":
            ids["JUDGED_ID"] = re.search(r"new run ([0-9a-f]+)", text).group(1)
    judged = tmp_path / "results" / "docqa-demo" / ids["JUDGED_ID"]
    assert "From judge record c57e0340bab5 (48 labelled items)" in outputs[
        "plan results/docqa-demo/" + ids["JUDGED_ID"]]
    assert (judged / "label_sheet.html").is_file()
    title = f"corrected by {labels} human labels (PPI++)"
    assert labels > 48  # every arm's runs of 48 items
    assert f"Imported {labels} label(s)" in outputs["label import"]
    for shown in (outputs["label import"], outputs["summary " + str(Path("results") /
                                                                     "docqa-demo" /
                                                                     ids["JUDGED_ID"])]):
        assert title in shown
    # the lenient person passes answers the judge failed: the corrected accuracy is higher
    line = re.search(r"keyword_overlap: ([0-9.]+)% \[[0-9., ]+\] \(judge ([0-9.]+)%",
                     outputs["label import"])
    assert line is not None and float(line.group(1)) > float(line.group(2))
    report = (judged / "report.html").read_text(encoding="utf-8")
    assert title in report
