"""The run manifest as a typed, versioned record: written and read through one pair of
functions; older manifests read, a newer format refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import hr
from report_data import fake_run_dir

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import CorruptRunError
from hr_core.store.manifest import (
    FORMAT_VERSION,
    RunManifest,
    manifest_text,
    read_manifest,
    write_manifest,
)
from hr_core.store.stored_reference import read_stored_reference

FIXTURES = Path(__file__).parent / "fixtures" / "manifests"


def _fixture(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return fake_run_dir(tmp_path / "results" / "fake" / "0123", with_judges=False)


def _set_manifest(run_dir: Path, **fields: object) -> None:
    path = run_dir / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}), encoding="utf-8")


def test_a_manifest_written_reads_back_the_same_with_its_format_and_unknown_keys(
        tmp_path: Path) -> None:
    manifest = RunManifest.model_validate({
        "name": "demo", "run_id": "r1", "status": "completed", "runs": 2,
        "judge": {"hash": "ab" * 32, "validation": "valid", "differences": []},
        "sequential": {"stopped": True, "items_used": 40, "planned": {"a": 100}},
        "from_a_plugin": {"kept": [1, 2]}})
    write_manifest(tmp_path, manifest)
    written = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert written["format_version"] == FORMAT_VERSION
    assert written["from_a_plugin"] == {"kept": [1, 2]}
    assert "error" not in written and "halts" not in written  # only the keys it has
    found = read_manifest(tmp_path)
    assert found.to_dict() == {**manifest.to_dict(), "format_version": FORMAT_VERSION}
    assert found.judge is not None and found.judge.validation == "valid"
    assert found.sequential is not None and found.sequential.planned == {"a": 100}
    assert read_manifest(tmp_path / "manifest.json") == found  # the file, or its folder


def test_today_s_manifest_is_written_back_byte_for_byte_plus_its_format() -> None:
    raw = _fixture("before_format_version.json")
    found = RunManifest.model_validate(raw)
    assert manifest_text(found) == json.dumps({**raw, "format_version": FORMAT_VERSION},
                                              indent=2, sort_keys=True)
    assert found.format_version is None  # written before formats were numbered
    assert found.fingerprints is not None and found.fingerprints.arms is not None
    assert sorted(found.fingerprints.arms) == ["abstain", "costly", "flaky", "partial"]
    assert found.scorer == "f1" and found.runs == 2 and found.max_error_rate == 1.0


def test_the_first_manifests_hr_wrote_still_read_and_show(
        capsys: pytest.CaptureFixture[str], run_dir: Path) -> None:
    first = _fixture("first.json")
    (run_dir / "manifest.json").write_text(json.dumps(first), encoding="utf-8")
    found = read_manifest(run_dir)
    assert (found.name, found.status, found.n_items, found.engine_seconds) == (
        "docqa", "completed", 69, 3.912)
    assert found.slices is None and found.sequential is None and found.halts is None
    bench = Benchmark.load(run_dir)
    assert bench.run_id == "5c1f0e9a7b3d2e41" and bench.scorer == "exact"
    code, out, err = hr(capsys, "summary", run_dir)
    assert code == 0, err
    assert "docqa" in out and "5c1f0e9a7b3d2e41" in out


def test_older_key_names_read_under_today_s_names() -> None:
    found = RunManifest.model_validate({
        "finished_at": "2026-11-29T21:00:09Z", "start_time": "2026-11-29T21:00:00Z",
        "hr_version": "0.0.9", "commit": "deadbeef", "items": 12,
        "judge_validation": {"status": "stale"}, "judge_hash": "c0ffee"})
    assert (found.ended_at, found.started_at, found.version, found.git_commit,
            found.n_items) == ("2026-11-29T21:00:09Z", "2026-11-29T21:00:00Z", "0.0.9",
                               "deadbeef", 12)
    assert found.judge is not None
    assert (found.judge.hash, found.judge.validation) == ("c0ffee", "stale")
    assert "finished_at" not in found.to_dict()


@pytest.mark.parametrize("command", [["show"], ["summary"], ["report"], ["diff", "twice"]])
def test_a_manifest_of_a_newer_format_is_refused_in_one_line(
        capsys: pytest.CaptureFixture[str], run_dir: Path, tmp_path: Path,
        command: list[str]) -> None:
    _set_manifest(run_dir, format_version=FORMAT_VERSION + 1, from_the_future=True)
    args: list[str | Path] = [command[0], run_dir]
    if command[0] == "diff":
        args.append(run_dir)
    elif command[0] == "report":
        args += ["-o", tmp_path / "report.html"]
    code, _, err = hr(capsys, *args)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{run_dir}/manifest.json was written by a newer hr" in err
    assert "upgrade hr" in err


def test_a_newer_format_is_refused_by_the_python_api_too(run_dir: Path) -> None:
    _set_manifest(run_dir, format_version=FORMAT_VERSION + 1)
    with pytest.raises(CorruptRunError, match=r"manifest\.json was written by a newer hr"):
        Benchmark.load(run_dir)


def test_a_key_of_the_wrong_type_is_a_corrupt_manifest_naming_the_key(run_dir: Path) -> None:
    _set_manifest(run_dir, runs="many")
    with pytest.raises(CorruptRunError, match=r"manifest\.json is corrupt .*runs: "):
        read_manifest(run_dir)


def test_the_manifest_read_as_a_dict_still_answers_with_a_warning(run_dir: Path) -> None:
    bench = Benchmark.load(run_dir)
    with pytest.deprecated_call():
        assert bench.manifest["name"] == "fake-docqa"
    with pytest.deprecated_call():
        assert "run_id" in bench.manifest and "sequential" not in bench.manifest
    with pytest.raises(KeyError), pytest.deprecated_call():
        bench.manifest["sequential"]
    assert bench.manifest.name == "fake-docqa"


def test_the_stored_reference_is_read_by_one_function(run_dir: Path) -> None:
    stored = read_stored_reference(run_dir)
    assert stored is not None
    items = stored.items()
    assert items[0].id == "q00" and items[0].label == "answer 0"
    assert [r["id"] for r in stored.records()] == [i.id for i in items]
    assert stored.reference().hash == Benchmark.load(run_dir).reference.hash  # type: ignore
    (run_dir / "reference.jsonl").unlink()
    assert read_stored_reference(run_dir) is None


def test_a_stored_reference_line_that_is_no_item_is_named_with_its_line(run_dir: Path) -> None:
    path = run_dir / "reference.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[0], '["q01"]', *lines[2:]]) + "\n", encoding="utf-8")
    stored = read_stored_reference(run_dir)
    assert stored is not None
    with pytest.raises(CorruptRunError, match=r"reference\.jsonl is corrupt or truncated "
                                              r"\(line 2, "):
        stored.items()
