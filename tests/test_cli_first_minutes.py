"""The first ten minutes: help that describes the spec, misspelt fields, arms next to the spec,
``hr compare``'s usage."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_support import hr

from hr_cli.demo import example_path
from hr_core.core.errors import SpecError
from hr_core.run.spec import BenchmarkSpec, load_spec, spec_import_path


def test_run_help_describes_every_spec_field_and_shows_flags_as_flags(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "run", "--help")
    assert code == 0
    fields = [n for n, f in BenchmarkSpec.model_fields.items() if not f.exclude]
    for field in fields:
        assert f" {field} " in out, field
    assert "--fresh <bool>" not in " ".join(out.split()) and "<bool>" not in out
    assert "--max-error-rate" in out and "3 results written" in out


def test_compare_usage_has_no_stray_argument(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "compare", "--help")
    assert code == 0
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    assert usage.split() == ["Usage:", "hr", "compare", "[OPTIONS]", "{run_dir}"]
    assert "EXTRA" not in out.upper()


@pytest.mark.parametrize("line, suggestion", [
    ("runz: 2", "did you mean `runs`?"),
    ("concurency: 2", "did you mean `concurrency`?"),
    ("budget: {max_call: 3}", "did you mean `max_calls`?"),
    ("max_eror_rate: 0.2", "did you mean `max_error_rate`?"),
])
def test_a_misspelt_field_suggests_the_right_one(tmp_path: Path, line: str,
                                                 suggestion: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reference: ref.jsonl\narms: {{a: m:f}}\n{line}\n")
    with pytest.raises(SpecError, match=r"line 3, field .*" + suggestion.replace("?", r"\?")):
        load_spec(spec)


def test_an_unknown_field_without_a_close_one_lists_the_fields(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("reference: ref.jsonl\narms: {a: m:f}\nbanana: 1\n")
    with pytest.raises(SpecError, match=r"fields here: name, reference, arms"):
        load_spec(spec)


def _spec_with_local_arm(folder: Path, module: str) -> Path:
    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:4]
    (folder / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (folder / f"{module}.py").write_text(
        "def shout(payload):\n    return payload['question'].upper()\n")
    spec = folder / "spec.yaml"
    spec.write_text(f"name: local\nreference: ref.jsonl\narms:\n  shout: {module}:shout\n")
    return spec


@pytest.mark.usefixtures("prefect_harness")
def test_an_arm_module_next_to_the_spec_imports_without_pythonpath(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = _spec_with_local_arm(tmp_path, "hr_local_arms_xyz")
    before = list(sys.path)
    code, out, err = hr(capsys, "run", spec, "--store", tmp_path / "results")
    assert code == 0, err
    assert "shout" in out
    assert sys.path == before  # the spec's folder is on the path only while it runs


def test_an_arm_that_cannot_be_imported_says_where_modules_are_found(tmp_path: Path) -> None:
    from flows.benchmark import plan_from_spec

    spec = _spec_with_local_arm(tmp_path, "hr_local_arms_abc")
    spec.write_text(spec.read_text().replace("hr_local_arms_abc:", "hr_no_such_module:"))
    with pytest.raises(SpecError, match="a module in the spec's folder is importable while "
                                        "the spec runs"):
        plan_from_spec(spec, store=str(tmp_path / "results"))


def test_spec_import_path_leaves_an_existing_entry(tmp_path: Path) -> None:
    sys.path.insert(0, str(tmp_path))
    try:
        with spec_import_path(tmp_path):
            pass
        assert sys.path[0] == str(tmp_path)
    finally:
        sys.path.remove(str(tmp_path))
