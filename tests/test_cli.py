"""The ``hr`` command line: commands, output, and one clear line + exit 2 for user mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cli_support import hr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_data import fake_run_dir

from hr_cli import click_command
from hr_cli.app import app
from hr_cli.demo import example_path
from hr_cli.judges import load_judge
from hr_cli.tables import attribution_lines
from hr_core.analysis.benchmark import Benchmark

PAIRWISE = example_path("pairwise_judge.yaml")
GRADE = example_path("grade_judge.yaml")
LABELS = example_path("grade_judge_labels.jsonl")
REFERENCE = example_path("docqa_reference.jsonl")


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return fake_run_dir(tmp_path / "results" / "fake" / "0123")


@pytest.fixture
def small_spec(tmp_path: Path) -> Path:
    lines = REFERENCE.read_text(encoding="utf-8").splitlines()[:8]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: small\nreference: ref.jsonl\nruns: 2\nconcurrency: 4\n"
        "arms:\n"
        "  keyword_overlap: hr_core.examples.demo_arms:keyword_overlap\n"
        "  always_abstain: hr_core.examples.demo_arms:always_abstain\n",
        encoding="utf-8",
    )
    return spec


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "--help")
    assert code == 0
    for command in ("demo", "run", "summary", "report", "compare", "judge"):
        assert command in out


def test_judge_help_lists_validate_and_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "judge", "--help")
    assert code == 0 and "validate" in out and "check" in out


def test_run_help_shows_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "run", "--help")
    assert code == 0
    for option in ("--runs", "--store", "--fresh", "--budget-calls", "--budget-cost",
                   "--concurrency"):
        assert option in out


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every (visible) command and group of the click tree, with its path."""
    found = [(path, command)]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            found.extend(_command_paths(sub, (*path, name)))
    return found


def test_every_commands_help_names_its_subcommands_and_options(
        capsys: pytest.CaptureFixture[str]) -> None:
    paths = _command_paths(click_command(app))
    assert {("run",), ("judge", "validate"), ("server", "start")} <= {p for p, _ in paths}
    for path, command in paths:
        code, out, err = hr(capsys, *path, "--help")
        assert code == 0 and f"Usage: hr {' '.join(path)}".rstrip() in out, (path, err)
        for name in getattr(command, "commands", {}):
            assert name in out, (path, name)
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = ([param.name] if param.param_type_name == "argument"
                     else [*param.opts, *param.secondary_opts])
            for name in names:
                assert name.lower() in out.lower(), (path, name)


@pytest.mark.parametrize("group", [[], ["judge"], ["server"]])
def test_a_bare_group_prints_its_help_and_exits_2(
        capsys: pytest.CaptureFixture[str], group: list[str]) -> None:
    code, out, _ = hr(capsys, *group)
    assert code == 2 and f"Usage: hr {' '.join(group)}".rstrip() in out and "--help" in out


HEAVY = ("prefect", "pandas", "pyarrow", "numpy", "hr_core", "flows", "tasks", "yaml",
         "matplotlib")  # not pydantic: typer itself imports it to coerce a command's options


@pytest.mark.parametrize("args, status", [(["--help"], 0), (["run", "--help"], 0),
                                          (["judge", "validate", "--help"], 0), ([], 2)])
def test_the_hr_command_prints_help_without_importing_hr_core_or_prefect(
        args: list[str], status: int) -> None:
    """The ``hr`` script itself (its exit path included): typer renders the help, and no
    command's module is imported (each imports its own when it runs)."""
    hr_script = str(Path(sys.executable).with_name("hr"))
    done = subprocess.run([hr_script, *args], capture_output=True, text=True, timeout=120,
                          check=False, env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8",
                                            "PYTHONPROFILEIMPORTTIME": "1"})
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0]
               for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "typer" in modules and "hr_cli" in modules, done.stderr[-2000:]
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    assert done.returncode == status and "Usage: hr" in done.stdout, done.stderr[-2000:]


def test_help_imports_neither_prefect_nor_pandas() -> None:
    code = ("import sys\nfrom hr_cli import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in ('prefect', 'pandas', 'flows', 'matplotlib') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip().endswith("[]"), done.stdout + done.stderr


def test_summary_prints_every_arm_with_accuracy(capsys: pytest.CaptureFixture[str],
                                                 run_dir: Path) -> None:
    code, out, _ = hr(capsys, "summary", run_dir)
    assert code == 0
    assert "fake-docqa" in out
    for arm in ("keyword", "numbers", "abstain"):
        assert arm in out
    assert "90.9%" in out  # keyword's accuracy in the fake run


def test_report_writes_the_html_and_prints_its_path(capsys: pytest.CaptureFixture[str],
                                                    run_dir: Path) -> None:
    code, out, _ = hr(capsys, "report", run_dir)
    assert code == 0
    assert (run_dir / "report.html").is_file()
    assert str(run_dir / "report.html") in out.replace("\n", "")


def test_report_to_another_file(capsys: pytest.CaptureFixture[str], run_dir: Path,
                                tmp_path: Path) -> None:
    code, _, _ = hr(capsys, "report", run_dir, "-o", tmp_path / "out.html")
    assert code == 0 and (tmp_path / "out.html").is_file()


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "bad.yaml": "name: [unclosed\n",
        "unknown_field.yaml": "reference: r.jsonl\narms: {a: 'x:y'}\ncolour: red\n",
        "no_module.yaml": f"reference: {REFERENCE}\narms: {{a: 'no_such_module_hr:f'}}\n",
        "bad_judge.yaml": "model: mock-model\nmode: judge-dredd\nrubric: Right?\n",
        "judge_extra.yaml": "model: mock-model\nmode: grade\nrubric: Right?\ntemperature: 2\n",
        "labels.jsonl": '{"item": "q", "answer": "a"}\n',
        "missing_ref.yaml": "reference: nope.jsonl\narms: {a: 'hr_core.examples.demo_arms:f'}\n",
        "unfinished/manifest.json": '{"status": "running"}',
    }
    (tmp_path / "unfinished").mkdir(exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return {name: tmp_path / name for name in files}


MISTAKES = {
    "missing spec": (["run", "{tmp}/missing.yaml"], "missing.yaml"),
    "missing reference set": (["run", "{tmp}/missing_ref.yaml"], "nope.jsonl does not exist"),
    "spec is not YAML": (["run", "{tmp}/bad.yaml"], "not valid YAML"),
    "unknown spec field": (["run", "{tmp}/unknown_field.yaml"], "colour"),
    "arm that cannot be imported": (["run", "{tmp}/no_module.yaml"], "no_such_module_hr"),
    "runs below one": (["run", "{tmp}/unknown_field.yaml", "--runs", "0"], "--runs"),
    "unknown option": (["run", "{tmp}/bad.yaml", "--frobnicate"], "--frobnicate"),
    "missing run dir": (["summary", "{tmp}/nowhere"], "nowhere"),
    "folder that is not a run": (["summary", "{tmp}"], "manifest.json"),
    "report of a folder that is not a run": (["report", "{tmp}"], "manifest.json"),
    "run that has not finished": (["summary", "{tmp}/unfinished"], "has not finished"),
    "unknown arm": (["compare", "{run}", "--judge", str(PAIRWISE), "--arms", "keyword",
                     "nope"], "nope"),
    "one arm for a pairwise judge": (["compare", "{run}", "--judge", str(PAIRWISE), "--arms",
                                      "keyword"], "exactly two"),
    "grade judge to compare": (["compare", "{run}", "--judge", str(GRADE), "--arms", "keyword",
                                "numbers"], "grade judge"),
    "bad judge mode": (["judge", "check", "{tmp}/bad_judge.yaml"], "mode"),
    "unknown judge field": (["judge", "check", "{tmp}/judge_extra.yaml"], "temperature"),
    "judge file that is not YAML": (["judge", "check", "{tmp}/bad.yaml"], "not valid YAML"),
    "labels without the mode's columns": (["judge", "validate", str(GRADE),
                                           "{tmp}/labels.jsonl"], "labels.jsonl"),
}


@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_user_mistake_is_one_clear_line_and_exit_2(
    case: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, run_dir: Path
) -> None:
    _bad_files(tmp_path)
    template, needle = MISTAKES[case]
    args = [a.replace("{tmp}", str(tmp_path)).replace("{run}", str(run_dir)) for a in template]
    code, out, err = hr(capsys, *args)
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    assert err.startswith("hr: error:") and len(err.strip().splitlines()) == 1, (out, err)
    assert needle in err, err


def test_judge_check_without_a_record_says_not_validated(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    code, out, _ = hr(capsys, "judge", "check", GRADE, "--store", tmp_path)
    assert code == 1
    said = " ".join(out.split())  # the line wraps at the terminal's width, after the path
    assert "not validated" in said and "hr judge validate" in said


def _save_record(store: Path, judge: Path) -> None:
    from hr_core.judge import JudgeValidation, save_validation

    config = load_judge(judge)
    save_validation(JudgeValidation(
        hash=config.hash, config=config.to_dict(), n=60, agreement=0.9,
        agreement_ci=(0.79, 0.96), kappa=0.8, confusion={"pass": {"pass": 20}},
        consistency=1.0, no_consensus=0, parse_failures=0, errors=0, version="0.1.0",
    ), store)


def test_judge_check_with_a_record_says_valid(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    _save_record(tmp_path / "judges", GRADE)
    code, out, _ = hr(capsys, "judge", "check", GRADE, "--store", tmp_path / "judges")
    assert code == 0
    assert "valid" in out and "90.0%" in out


def test_judge_check_names_the_fields_changed_since_the_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _save_record(tmp_path / "judges", GRADE)
    changed = tmp_path / "judge.yaml"
    changed.write_text(GRADE.read_text().replace("Is the response's answer", "Is the answer"))
    code, out, _ = hr(capsys, "judge", "check", changed, "--store", tmp_path / "judges")
    assert code == 1
    assert "not validated" in out and "changed config" in out and "rubric" in out


@pytest.mark.usefixtures("prefect_harness")
def test_run_shows_progress_summary_and_paths_and_respects_the_budget(
    capsys: pytest.CaptureFixture[str], small_spec: Path, tmp_path: Path
) -> None:
    code, out, err = hr(capsys, "run", small_spec, "--store", tmp_path / "store",
                        "--budget-calls", "5", "--concurrency", "2")
    assert code == 0, err
    assert "keyword_overlap" in out and "always_abstain" in out
    # the progress bars: 5 of 8 items x 2 runs ran, the 11 the budget stopped complete each bar
    assert "16/16" in out and out.count("budget stop (11 runs)") == 2
    results = next((tmp_path / "store" / "small").iterdir())
    assert f"Results: {results}" in out and "Report:" in out
    assert (results / "report.html").is_file()
    runs = pd.read_parquet(results / "runs.parquet")
    stopped = runs[runs["failure_kind"] == "budget_stop"].groupby("arm").size().to_dict()
    assert stopped == {"always_abstain": 11, "keyword_overlap": 11}
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["budget"]["max_calls"] == 5 and manifest["runs"] == 2


@pytest.mark.usefixtures("prefect_harness")
def test_judge_validate_saves_prints_and_attaches_the_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, run_dir: Path
) -> None:
    code, out, err = hr(capsys, "judge", "validate", GRADE, LABELS, "--store",
                        tmp_path / "judges", "--attach", run_dir)
    assert code == 0, err
    config = load_judge(GRADE)
    assert (tmp_path / "judges" / f"{config.hash}.json").is_file()
    assert (run_dir / "validations" / f"{config.hash}.json").is_file()
    assert "agreement" in out and "kappa" in out
    code, out, _ = hr(capsys, "judge", "check", GRADE, "--store", tmp_path / "judges")
    # the example's 48 labelled rows are below the default min_items 50: not valid, and why
    assert code == 1 and "not valid" in out and "too few items: 48 < min_items 50" in out
    lowered = tmp_path / "judge.yaml"
    lowered.write_text(GRADE.read_text() + "min_items: 40\nmin_agreement: 0.6\n")
    code, out, _ = hr(capsys, "judge", "check", lowered, "--store", tmp_path / "judges")
    assert code == 0 and "valid" in out and "min_items 40" in out


@pytest.mark.usefixtures("prefect_harness")
def test_compare_judges_two_arms_prints_and_attaches_to_the_report(
    capsys: pytest.CaptureFixture[str], small_spec: Path, tmp_path: Path
) -> None:
    code, _, err = hr(capsys, "run", small_spec, "--store", tmp_path / "store")
    assert code == 0, err
    results = next((tmp_path / "store" / "small").iterdir())
    code, out, err = hr(capsys, "compare", results, "--judge", PAIRWISE, "--arms",
                        "keyword_overlap", "always_abstain")
    assert code == 0, err
    assert "Pairwise comparison" in out and "keyword_overlap" in out
    attached = list((results / "comparisons").glob("*.json"))
    assert len(attached) == 1
    row = json.loads(attached[0].read_text())["summary"][0]
    assert (row["a"], row["b"]) == ("keyword_overlap", "always_abstain")
    assert row["n"] + row["no_verdict"] == 16
    assert "Report updated" in out
    assert 'id="fig-win-rate"' in (results / "report.html").read_text(encoding="utf-8")


@pytest.mark.usefixtures("prefect_harness")
def test_a_judge_file_can_point_at_an_openai_compatible_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, openai_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HR_TEST_JUDGE_KEY", "sk-hr-cli-test-key-0042")
    judge = tmp_path / "served_judge.yaml"
    judge.write_text(
        "model: openai-compatible:grader\n"
        f"base_url: {openai_server.url}\n"
        "api_key_env: HR_TEST_JUDGE_KEY\n"
        "mode: grade\n"
        "rubric: Is the response's answer the reference's?\n",
        encoding="utf-8",
    )
    code, out, err = hr(capsys, "judge", "validate", judge, LABELS, "--store", tmp_path / "j")
    assert code == 0, err
    assert len(openai_server.requests) >= 2 * 48  # two orders per labelled item
    assert "83.3%" in out  # the server answers with hr's mock rules
    written = [p.read_text(errors="replace") for p in (tmp_path / "j").rglob("*") if p.is_file()]
    assert written and not any("sk-hr-cli-test-key-0042" in text for text in written)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_a_judge_file_of_any_text_is_read_or_refused_with_a_spec_error(
    tmp_path: Path, text: str
) -> None:
    from hr_cli.judges import JudgeFile, read_judge_file
    from hr_core.core.errors import SpecError

    path = tmp_path / "judge.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        assert isinstance(read_judge_file(path), JudgeFile)
    except SpecError as exc:
        assert str(path) in str(exc)


_JUDGE_VALUES = st.one_of(st.none(), st.integers(-3, 5), st.text(max_size=12),
                          st.sampled_from(["mock-model", "grade", "pairwise", "select", "pass"]),
                          st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=st.dictionaries(
    st.sampled_from(["model", "rubric", "mode", "orders", "schema", "positive", "extra"]),
    _JUDGE_VALUES, max_size=6))
def test_any_judge_mapping_gives_a_config_or_a_spec_error(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    import yaml

    from hr_core.core.errors import SpecError

    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(fields), encoding="utf-8")
    try:
        config = load_judge(path)
    except SpecError as exc:
        assert str(path) in str(exc)
    else:
        assert config.mode in ("select", "grade", "pairwise") and len(config.hash) == 64


@pytest.mark.usefixtures("prefect_harness")
def test_run_again_with_a_larger_budget_resumes_and_finishes(
    capsys: pytest.CaptureFixture[str], small_spec: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    assert hr(capsys, "run", small_spec, "--store", store, "--budget-calls", "3")[0] == 0
    code, _, err = hr(capsys, "run", small_spec, "--store", store, "--budget-calls", "100")
    assert code == 0, err
    (results,) = list((store / "small").iterdir())  # the same run, resumed
    runs = pd.read_parquet(results / "runs.parquet")
    assert len(runs) == 32 and not (runs["failure_kind"] == "budget_stop").any()
    code, _, _ = hr(capsys, "run", small_spec, "--store", store, "--fresh")
    assert code == 0 and len(list((store / "small").iterdir())) == 2


def _rendered(table: Any) -> str:
    from rich.console import Console

    console = Console(width=160, record=True)
    console.print(table)
    return console.export_text()


def test_the_comparison_and_validation_tables_show_position_bias() -> None:
    from hr_cli.tables import position_bias_line, validation_table

    summary = pd.DataFrame([{"a": "x", "b": "y", "n": 10, "a_wins": 6, "b_wins": 4, "ties": 0,
                             "win_rate": 0.6, "ci_low": 0.3, "ci_high": 0.85,
                             "consistency": 0.8, "no_verdict": 2, "pairs": 10,
                             "order_disagreements": 4, "favoured_position_1": 0.3,
                             "favoured_position_2": 0.1, "decisive_games": 20,
                             "first_position_win_rate": 0.55, "parsed_pairs": 10,
                             "strict_flip_rate": 0.2}])
    assert position_bias_line(summary) == (
        "position bias: of 10 judgement(s), 30.0% chose shown position 1 in every order, "
        "10.0% position 2; the first shown won 55.0% of 20 decisive game(s); strict flips "
        "20.0% of 10")
    record = {"hash": "ab" * 32, "n": 3, "position_bias": {
        "pairs": 2, "order_disagreements": 2, "favoured_position_1": 1.0,
        "favoured_position_2": 0.0, "favoured_position_3": 0.0}}
    text = _rendered(validation_table(record))
    assert "position bias" in text and "100.0% chose shown position 1" in text
    record["agreement_conventions"] = {
        "hr": {"agreement": 0.5, "n": 4, "ci_low": 0.1, "ci_high": 0.9},
        "inconsistent_as_tie": {"agreement": 0.75, "n": 4, "ci_low": 0.2, "ci_high": 0.99},
        "without_ties": {"agreement": 1.0, "n": 2, "ci_low": 0.16, "ci_high": 1.0}}
    text = _rendered(validation_table(record))
    assert "inconsistent as tie" in text and "without ties" in text


@pytest.mark.usefixtures("prefect_harness")
def test_hr_run_computes_summary_verdict_and_health_once(
    capsys: pytest.CaptureFixture[str], small_spec: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # before (issue 21): one hr run computed the summary twice, the health check three
    # times (markdown report, flow, terminal) and the verdict twice (markdown, HTML report);
    # after: once each, the flow, the terminal and both reports read the same objects
    import hr_core.analysis.benchmark as benchmark
    import hr_core.analysis.health as health
    import hr_core.analysis.verdict as verdict
    import hr_core.report.sections as sections
    from hr_core.analysis.benchmark import Benchmark

    counts = {"summary": 0, "health": 0, "verdict": 0}

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(Benchmark, "_summary", counted("summary", Benchmark._summary))
    monkeypatch.setattr(health, "assess_runs", counted("health", health.assess_runs))
    monkeypatch.setattr(verdict, "verdict", counted("verdict", verdict.verdict))
    monkeypatch.setattr(sections, "verdict", verdict.verdict)  # the modules that call it
    monkeypatch.setattr(benchmark, "verdict", verdict.verdict)
    code, out, err = hr(capsys, "run", small_spec, "--store", tmp_path / "store")
    assert code == 0, err
    assert "Summary: small" in out and "Report:" in out
    assert counts == {"summary": 1, "health": 1, "verdict": 1}


@pytest.mark.usefixtures("prefect_harness")
def test_run_prints_retrieval_and_why_it_failed_as_the_report_words_them(
    capsys: pytest.CaptureFixture[str], small_spec: Path, tmp_path: Path
) -> None:
    """hr run (not only hr summary) prints where the failed answers' chain broke, with the
    report's numbers: the demo's keyword_overlap returns the passages it used."""
    code, out, err = hr(capsys, "run", small_spec, "--store", tmp_path / "store")
    assert code == 0, err
    results = next((tmp_path / "store" / "small").iterdir())
    assert "Retrieval (relevance: gold passages; 95% CI)" in out
    assert "Why it failed: failed runs of items with gold passages" in out
    lines = attribution_lines(Benchmark.load(results).attribution_summary())
    assert lines and all(line in " ".join(out.split()) for line in lines)
    report = (results / "report.md").read_text("utf-8")  # arm names escaped: keyword\_overlap
    assert all(line.split(": ", 1)[1] in report for line in lines)
