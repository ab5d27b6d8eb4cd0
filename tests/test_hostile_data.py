"""Data is data (issue 20): strings from users and models never become markup, escape
sequences, HTML or paths outside the store, whatever they hold.

A hypothesis fuzz test feeds random strings made of Rich markup, ANSI/OSC escapes, HTML
and markdown through every table ``hr`` prints and through the markdown report, and
checks that they come out literal. The other tests pin the single cases found by the
hostile-input battery.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from rich.console import Console

from hr_cli.progress import ArmProgress
from hr_cli.show import run_table as show_table
from hr_cli.tables import comparison_table, summary_table, validation_table
from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.analysis.health import short_message
from hr_core.core.errors import RunNotFoundError, SpecError
from hr_core.core.safe import inside, markdown_text, safe_segment, visible
from hr_core.data.reference import hr_reference
from hr_core.data.yaml_file import MAX_ALIAS_NODES
from hr_core.report.markdown import report_markdown
from hr_core.run.session import (
    MAX_PLANNED_RUNS,
    BenchmarkSession,
    check_plan_size,
    plan_benchmark,
)
from hr_core.run.spec import load_spec
from hr_core.store.folder import RunStore

# -- the fuzz: random hostile strings through every table and the markdown report ---------

HOSTILE = ["[/]", "[bold]", "[/bold]", "[link=http://evil.example]", "[/link]", "[red]x",
           "\x1b[2J", "\x1b]0;TITLE\x07", "\x1b]8;;http://evil.example\x1b\\", "\x9b31m",
           "\x07", "\x08", "\r", "\u202e", "<img src=x onerror=alert(7)>", "<script>", "</td>",
           "&amp;", "&lt;", "*", "_", "`", "|", "\\", "[a](http://evil.example)", "![i](x)",
           ":smile:", "~~", "#", "> ", "<!--", "-->", "\x00", "\x7f"]

hostile_text = st.lists(
    st.one_of(st.sampled_from(HOSTILE),
              st.text(alphabet="ab[]/\\<>&=:*_`|#!()~-.\x1b\x07 ", min_size=1, max_size=6)),
    min_size=1, max_size=8).map("".join).filter(lambda s: s.strip() == s and s != "")


def _rendered(renderable: object) -> str:
    """What a table prints on a 1000-column terminal that shows no colours (so that every
    escape in the output would come from the data)."""
    out = io.StringIO()
    Console(file=out, width=1000, color_system=None, force_terminal=False, emoji=False,
            highlight=False).print(renderable)
    return out.getvalue()


def _one_line(text: str) -> str:
    return " ".join(visible(text).split())


def _assert_literal(output: str, *texts: str) -> None:
    assert "\x1b" not in output and "\x9b" not in output and "\x07" not in output
    flat = "".join(output.split())  # a title wraps at the table's width
    for text in texts:
        assert "".join(visible(text).split()) in flat, (text, output)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arm=hostile_text, other=hostile_text)
def test_every_printed_table_shows_hostile_strings_as_they_are(arm: str, other: str) -> None:
    summary = pd.DataFrame({"arm": [arm, other], "runs": [2, 2], "accuracy": [0.5, 0.25],
                            "ci_low": [0.1, 0.0], "ci_high": [0.9, 0.8]})
    _assert_literal(_rendered(summary_table(summary, title=f"Summary: {arm}")), arm, other)
    pairs = pd.DataFrame({"a": [arm], "b": [other], "n": [3], "win_rate": [0.5]})
    _assert_literal(_rendered(comparison_table(pairs, title=other)), arm, other)
    select = pd.DataFrame({"arm": [arm, other], "n": [3, 3], "share": [0.5, 0.5]})
    _assert_literal(_rendered(comparison_table(select)), arm, other)
    _assert_literal(_rendered(validation_table({"hash": arm, "n": 3}, title=other)), other)
    rows = [[arm, "wrong", "q1", "1", other, arm, other, arm]]
    _assert_literal(_rendered(show_table(f"runs of {arm}", ["arm", "kind", "item", "run",
                                                            f"{other}: output"], rows)),
                    arm, other)


@settings(max_examples=25, deadline=None)
@given(arm=hostile_text)
def test_the_progress_bars_show_a_hostile_arm_name_as_it_is(arm: str) -> None:
    out = io.StringIO()
    console = Console(file=out, width=300, color_system=None, force_terminal=True,
                      emoji=False)
    with ArmProgress(console) as progress:
        progress(arm, 1, 2, 0, 0)
    _assert_literal(out.getvalue().replace("\x1b[?25l", "").replace("\x1b[?25h", "")
                    .replace("\x1b[2K", "").replace("\x1b[1A", ""), arm)


class _Elements(HTMLParser):
    """The elements and the text of an HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def markdown_html(markdown: str) -> str:
    """The markdown as GitHub-like renderers (and Prefect's artifact pane) make it HTML:
    CommonMark with tables, raw HTML allowed."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]
                                                           ).render(markdown)


def _bench(arms: list[str], error: str, name: str) -> Benchmark:
    rows = [{"arm": a, "item_id": f"q{i}", "run": 1, "correct": i % 2 == 0, "output": "x"}
            for a in arms for i in range(4)]
    rows.append({"arm": arms[0], "item_id": "q9", "run": 1, "correct": None,
                 "failure_kind": "error", "error": error})
    return Benchmark(runs_frame(rows), {"name": name, "run_id": "r1", "scorer": "exact",
                                        "runs": 1, "status": "completed"})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arm=hostile_text, error=hostile_text, name=hostile_text)
def test_the_markdown_report_shows_hostile_strings_as_they_are(arm: str, error: str,
                                                                name: str) -> None:
    arms = [arm, "plain"] if arm != "plain" else [arm, "other"]
    report = report_markdown(_bench(arms, error, name))
    page = _Elements()
    page.feed(markdown_html(report))
    assert set(page.tags) <= {"h1", "h2", "p", "strong", "table", "thead", "tbody", "tr", "th",
                              "td", "ul", "li", "code", "blockquote"}, page.tags
    shown = " ".join("".join(page.text).split())
    assert _one_line(arm) in shown and _one_line(name) in shown
    assert _one_line(short_message(error)).replace("`", "'") in shown
    assert "\x1b" not in report and "\x07" not in report


def test_an_arm_named_as_html_is_text_in_report_md() -> None:
    """Before: report.md held ``<img src=x onerror=alert(7)>`` raw (the dashboard built it)."""
    arm = "<img src=x onerror=alert(7)>"
    report = report_markdown(_bench([arm, "b"], "boom", "demo"))
    assert "<img" not in report
    assert "&lt;img src=x onerror=alert\\(7\\)&gt;" in report
    assert "img" not in _tags(markdown_html(report))


def _tags(html: str) -> list[str]:
    page = _Elements()
    page.feed(html)
    return page.tags


def test_markdown_text_escapes_html_links_and_emphasis() -> None:
    assert markdown_text("a | b") == "a \\| b"
    assert markdown_text("<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;"
    assert _tags(markdown_html(markdown_text("[x](http://e) ![i](x) *e* `c` <i>"))) == ["p"]


# -- names that become paths ------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../escape", "..", ".", "a/b", "a\\b", "/etc", "x\x00y",
                                  "tab\there", " padded", "x" * 300, ""])
def test_a_name_that_is_no_path_segment_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(SpecError) as caught:
        safe_segment(name, "name")
    assert "\n" not in str(caught.value)


def test_plan_benchmark_refuses_a_name_outside_the_store(tmp_path: Path) -> None:
    """Before: ``name="../../escape"`` planned (and ran) into ``<store>/../../escape``."""
    with pytest.raises(SpecError, match=r"name '\.\./\.\./escape' would leave its folder"):
        plan_benchmark({"echo": str}, [{"id": "q1", "label": "x"}], store=str(tmp_path / "s"),
                       name="../../escape")


@pytest.mark.parametrize("name, run_id", [("..", "abc"), ("demo", ".."), ("../..", "x")])
def test_a_run_folder_outside_its_store_is_refused(tmp_path: Path, name: str,
                                                   run_id: str) -> None:
    with pytest.raises(SpecError, match="is not inside"):
        RunStore(str(tmp_path / "store"), name, run_id)
    assert not any(tmp_path.iterdir())


def test_inside_accepts_run_folders_below_the_store() -> None:
    assert inside(".", "./demo/abc", "run folder") == "./demo/abc"
    assert inside("s3://bucket/hr", "s3://bucket/hr/demo/abc", "run folder")
    with pytest.raises(SpecError):
        inside("s3://bucket/hr", "s3://bucket/hr/../x/abc", "run folder")


def test_a_judge_record_with_a_path_as_its_hash_is_not_written(tmp_path: Path) -> None:
    from hr_core.judge.validation import JudgeValidation, save_validation

    fields = {name: None for name, field in JudgeValidation.model_fields.items()
              if not field.is_required()}
    record = JudgeValidation.model_construct(**fields, hash="../../outside", config={})
    with pytest.raises(SpecError, match="would leave its folder"):
        save_validation(record, tmp_path / "judges")
    assert not (tmp_path / "outside.json").exists()


# -- bounded memory whatever the spec says ------------------------------------------------

BOMB = textwrap.dedent("""\
    name: bomb
    reference: ref.jsonl
    arms:
      llm:
        model: mock:reader
        prompt: "{question}"
        params:
          a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
          b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
          c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
          d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
          e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
          f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
          g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
          h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
          i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
""")


def _limited(code: str, cwd: Path, gigabytes: float = 1.5) -> subprocess.CompletedProcess[str]:
    """``code`` in a Python process that may use ``gigabytes`` of memory at most."""
    limit = int(gigabytes * 2**30)

    def cap() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120, preexec_fn=cap, check=False)


def test_a_yaml_alias_bomb_in_a_spec_is_refused_in_one_line(tmp_path: Path) -> None:
    """Before: a 9-level alias chain under params grew past the process's memory (here a
    1.5 GB cap: MemoryError); after: one line naming the file and line."""
    (tmp_path / "bomb.yaml").write_text(BOMB)
    done = _limited("from hr_core.run.spec import load_spec\n"
                    "from hr_core.core.errors import SpecError\n"
                    "try:\n    load_spec('bomb.yaml')\n"
                    "except SpecError as exc:\n    print(exc)\n", tmp_path)
    assert done.returncode == 0, done.stderr[-500:]
    assert re.fullmatch(
        rf"bomb\.yaml, line 1\d: YAML aliases repeat more than {MAX_ALIAS_NODES:,} values "
        r"\(an alias bomb\?\); write the values out or use fewer aliases\n", done.stdout)


def test_a_few_yaml_anchors_still_work(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(textwrap.dedent("""\
        reference: ref.jsonl
        arms:
          one: &base {model: "mock:reader", prompt: "{question}"}
          two: *base
          three: {<<: *base, system: "be brief"}
    """))
    assert sorted(load_spec(tmp_path / "spec.yaml").arms) == ["one", "three", "two"]


def test_a_recursive_yaml_anchor_is_refused(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("reference: r.jsonl\narms: &a {x: *a}\n")
    with pytest.raises(SpecError, match="line 2: a YAML anchor holds an alias of itself"):
        load_spec(tmp_path / "spec.yaml")


def test_a_plan_above_the_bound_is_refused_naming_the_number_and_the_limit() -> None:
    with pytest.raises(SpecError) as caught:
        check_plan_size(4, {"a": 1_000_000_000})
    assert str(caught.value).startswith(
        f"the plan has 4,000,000,000 runs (4 item(s) x runs per arm, a: 1,000,000,000), "
        f"more than the {MAX_PLANNED_RUNS:,} one benchmark may make")
    assert check_plan_size(4, {"a": MAX_PLANNED_RUNS // 4}) == MAX_PLANNED_RUNS


def test_a_huge_plan_leaves_nothing_behind(tmp_path: Path) -> None:
    """Before: ``runs=1_000_000_000`` on 4 items was planned and grew past 3 GB (here the
    process's 1.5 GB cap); after: refused before the store is touched."""
    code = textwrap.dedent("""\
        from hr_core.run.session import BenchmarkSession, plan_benchmark
        from hr_core.core.errors import RunNotFoundError, SpecError
        try:
            plan = plan_benchmark({"echo": str}, [{"id": f"q{i}", "label": "x"}
                                                  for i in range(4)],
                                  runs=1_000_000_000, store="store", name="huge")
            BenchmarkSession(plan).run_sync()
        except SpecError as exc:
            print(exc)
    """)
    done = _limited(code, tmp_path)
    assert done.returncode == 0, done.stderr[-500:]
    assert "the plan has 4,000,000,000 runs" in done.stdout
    assert not (tmp_path / "store").exists()


def test_a_spec_with_a_byte_that_is_not_utf8_names_file_line_and_byte(tmp_path: Path) -> None:
    """Before: ``UnicodeDecodeError`` without the file's name (``hr: internal error``)."""
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"name: demo\nreference: ref.jsonl\narms: {a: m\xff:f}\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == (f"{path}, line 3, column 12: byte 0xff is not UTF-8; save "
                                 "the spec as UTF-8")


# -- litter, labels ---------------------------------------------------------------------

def test_a_write_killed_midway_leaves_a_temporary_the_next_run_removes(tmp_path: Path) -> None:
    """A process killed by SIGKILL while writing ``runs.parquet`` leaves
    ``runs.parquet.<pid>.tmp``; before, it stayed for good; after, the next run of the
    folder removes it (a live process's temporary is kept)."""
    reference = [{"id": f"q{i}", "label": "Q"} for i in range(3)]
    plan = plan_benchmark({"upper": str.upper}, reference, store=str(tmp_path), name="litter")
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""\
            import sys, time
            from hr_core.store.folder import RunStore
            def stall(handle):
                handle.write(b"partial")
                handle.flush()
                print("writing", flush=True)
                time.sleep(60)
            RunStore({str(tmp_path)!r}, "litter", {plan.run_id!r}).write_file("runs.parquet",
                                                                             stall)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()
    folder = tmp_path / "litter" / plan.run_id
    stale = folder / f"runs.parquet.{writer.pid}.tmp"
    assert stale.read_bytes() == b"partial"
    live = folder / f"manifest.json.{os.getppid()}.tmp"  # a live process's: kept
    live.write_bytes(b"")
    BenchmarkSession(plan).run_sync()
    assert not stale.exists()
    assert live.exists()
    assert sorted(p.name for p in folder.glob("*.tmp")) == [live.name]


def test_labels_that_read_as_no_label_are_counted_in_a_warning(tmp_path: Path) -> None:
    """Before: ``[]`` and JSON ``NaN`` silently became "unlabelled"; after: one warning
    with the count and the first rows."""
    path = tmp_path / "ref.jsonl"
    path.write_text('{"id": "a", "label": []}\n{"id": "b", "label": NaN}\n'
                    '{"id": "c", "label": null}\n{"id": "d", "label": "x"}\n'
                    '{"id": "e", "label": [null]}\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reference = hr_reference(path)
    assert [item.label for item in reference] == [None, None, None, "x", None]
    assert [str(w.message) for w in caught] == [
        f"{path}: 3 item(s) have a 'label' of [] or NaN (row 1, row 2, row 5), read as no "
        "label (like null): they are unscored; give the accepted answers, or null for no "
        "label"]


def test_null_labels_and_dataframe_nans_give_no_warning() -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "label": [float("nan"), 1.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hr_reference(frame)
        hr_reference([{"id": "a", "label": None}, {"id": "b", "label": "x"}])


def test_visible_shows_every_control_character() -> None:
    text = "".join(map(chr, range(0x00, 0xa0))) + "\u202e\u2066\ufeff"
    shown = visible(text, newlines=False)
    assert all(ch.isprintable() for ch in shown)
    assert json.dumps(shown, ensure_ascii=False)


def test_a_rescore_of_a_run_folder_path_ending_in_dotdot_writes_nothing(tmp_path: Path) -> None:
    """``rescore_run("store/fake/0123/..")`` was read as run id ``..`` of a store inside the
    run folder; now it is the folder it names (``store/fake``: no run there), never a path
    that leaves its store."""
    from report_data import fake_run_dir

    from hr_core.run.rescore import rescore_plan

    run_dir = fake_run_dir(tmp_path / "store" / "fake" / "0123", with_judges=False)
    before = sorted(p.name for p in run_dir.iterdir())
    with pytest.raises(RunNotFoundError, match=r"no manifest\.json"):
        rescore_plan(f"{run_dir}/..", "f1")
    with pytest.raises(SpecError, match="is not inside"):
        RunStore(str(run_dir), "..", "..")
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_an_alias_bomb_in_the_scorer_option_is_refused() -> None:
    from hr_cli.commands import parse_scorer_option

    chain = "{a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"
    for name, alias in zip("bcdefg", "abcdef", strict=True):
        chain += f", {name}: &{name} [" + ", ".join([f"*{alias}"] * 10) + "]"
    with pytest.raises(SpecError, match="--scorer, line 1: YAML aliases repeat more than"):
        parse_scorer_option(chain + "}")
    assert parse_scorer_option("{f1: {threshold: 0.8}}") == {"f1": {"threshold": 0.8}}


def test_a_run_folder_given_as_dot_is_the_folder_itself(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``hr show .`` inside a run folder: read as that folder, not refused as ``..`` names."""
    from report_data import fake_run_dir

    run_dir = fake_run_dir(tmp_path / "store" / "fake" / "0123", with_judges=False)
    monkeypatch.chdir(run_dir)
    store = RunStore.at(".")
    assert (store.name, store.run_id) == ("fake", "0123")
    assert Benchmark.load(".").run_id == Benchmark.load(run_dir).run_id
