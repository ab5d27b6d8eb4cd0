"""The ``hr`` commands (typer): each command's options and help here, its work in its own
module, imported when the command runs (:mod:`hr_cli.lazy`): ``hr --help`` and ``hr CMD
--help`` import neither hr_core (pandas) nor Prefect."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from typer.core import TyperOption

from hr_cli.lazy import (
    cancel_run_batches,
    check_judge,
    compare_arms,
    import_judge_verdicts,
    import_run_labels,
    judge_run_groundedness,
    make_report,
    plan_labels_run,
    plan_run,
    rescore_run_dir,
    run_demo,
    run_diff,
    run_spec,
    sample_labels,
    show_run,
    show_summary,
    start,
    status,
    stop,
    validate_judge,
)

__all__ = ["app", "console", "console_width", "judge_app", "label_app", "make_console",
           "server_app"]

def _flags_as_flags() -> None:
    """Typer's rich help shows a flag as ``--fresh <bool>``, as if it took a value: show
    flags bare (``--fresh``), like click's plain help does."""
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_hr_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None
        result: str | None = shown(self, ctx)
        return result

    display_type_rich._hr_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


_flags_as_flags()


def console_width() -> int | None:
    """The width hr prints at: ``COLUMNS`` when set, else the terminal's (``None``: rich
    asks it), else 140 for piped output (CI logs, ``make demo | tee``: a readable width
    instead of 80 columns). Tables leave out their least important columns to fit it
    (:func:`hr_cli.fit.print_fitted`)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if sys.stdout.isatty() else 140


def make_console() -> Console:
    """hr's console on this process's stdout."""
    return Console(highlight=False, emoji=False,  # data such as ":smile:" stays as written
                   width=console_width())


console = make_console()

app = typer.Typer(
    name="hr",
    help="hr: benchmark LLM arms on a labelled reference set, with honest error bars, "
    "judges checked against people, and an HTML report. Start with `hr demo`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
judge_app = typer.Typer(help="Validate a judge against people's labels, check its record, or "
                        "import stored verdicts.",
                        no_args_is_help=True)
app.add_typer(judge_app, name="judge")
label_app = typer.Typer(help="People's labels on a finished run's outputs: a random sample to "
                        "label, then accuracies corrected by them (PPI++).",
                        no_args_is_help=True)
app.add_typer(label_app, name="label")
server_app = typer.Typer(help="A local Prefect server for hr: faster runs, kept in the dashboard.",
                         no_args_is_help=True)
app.add_typer(server_app, name="server")

ExistingFile = Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True)]
ExistingDir = Annotated[Path, typer.Argument(exists=True, file_okay=False,
                                              help="A run directory: results/<name>/<run id>/")]
RunDir = Annotated[str, typer.Argument(
    help="A run directory, results/<name>/<run id>/, or its URL (s3://bucket/...)")]
Grounded = Annotated[bool, typer.Option("--groundedness", help="Label whether each answer is "
                                        "supported by its passages (hr judge groundedness).")]


@app.command()
def demo(
    store: Annotated[Path, typer.Option(help="Where results go.")] = Path("results"),
    judges: Annotated[Path, typer.Option(help="Where judge validation records go.")] = Path(
        "judges"),
) -> None:
    """Run the bundled document-QA demo offline, end to end, and write its report."""
    run_demo(console, store=store, judges=judges)


RUN_HELP = """Run the benchmark a YAML spec describes, with a live progress bar per arm.

Then print the summary, each arm's errors (count and most frequent messages) and
budget stops, write report.html and print where the results are.

[bold]The spec[/] (paths are relative to the spec's folder, which is also importable
while it runs, so `mymodule:my_arm` next to the spec works without PYTHONPATH):

  [bold]name[/]                 the benchmark's name, one folder (results/NAME/RUN_ID/)
  [bold]reference[/]            .jsonl, .csv or .parquet with id and label columns, or
                       {path, id, item, label, gold_contexts} to name the columns
                       (a SQuAD .json: {path, retrieval: true} for a retrieval benchmark)
  [bold]arms[/]                 name: pkg.module:function, or an LLM arm {model, prompt,
                       system, params, price_in, price_out, base_url, api_key_env,
                       retriever: {kind: bm25, corpus, k, within, query, format}
                       filling the prompt's {contexts}},
                       or {arm: ..., runs: N, timeout_s: S} for an arm's own
  [bold]scorer[/]               exact (default), exact_raw, pkg.module:fn, or {judge: {...}}
  [bold]runs[/]                 runs per (arm, item), default 1 (10,000,000 runs at most)
  [bold]budget[/]               {max_calls, max_tokens, max_cost_usd, max_seconds, per}
  [bold]concurrency[/]          runs in flight per arm, default 16
  [bold]timeout_s[/]            seconds per arm call (past it: an error run); none by default
  [bold]store[/]                results folder or fsspec URL, default results
  [bold]chunk_size[/]           runs per Prefect task, default 2000
  [bold]max_error_rate[/]       share of an arm's runs that may be errors, default 0.5
  [bold]require_valid_judge[/]  warn (default), refuse or ignore
  [bold]judge_store[/]          folder of judge validation records, default judges
  [bold]judge_min_items[/]      a valid judge's record needs this many items, default 50
  [bold]judge_min_agreement[/]  ... and agreement's lower bound at least this, default 0.7
  [bold]shared_cache[/]         true: LLM replies cached for the whole store, so fresh
                       runs replay them; default false (each run its own cache)
  [bold]slices[/]               [field, ...]: accuracy per value of these item fields (summary,
                       report, hr diff); not part of the run id
  [bold]stop[/]                 {when: clear, margin, level, min_items, batch, seed}: items
                       in a random order, batch by batch, stopping once the verdict is
                       clear (anytime-valid); a run without it makes the rest
  [bold]retrieval_k[/]          [k, ...]: depths of hit@k, recall@k, ... for arms returning
                       contexts, default [1, 3, 5, 10]; not part of the run id

Exit status: 0 done, 2 a mistake in the command or spec (one line names it),
3 results written but an arm's error rate was above max_error_rate, 4 the store
could not be written (the run stopped; path, cause and fallback named), 5 another
process runs this spec into this store (--wait waits), 6 the Prefect server stopped
answering mid-run (journal flushed, runs interrupted: start it, run again to resume),
130/143 Ctrl-C/SIGTERM (journal flushed: run again to resume).
"""


@app.command(help=RUN_HELP)
def run(
    spec: ExistingFile,
    runs: Annotated[int | None, typer.Option(min=1, help="Runs per (arm, item).")] = None,
    store: Annotated[str | None, typer.Option(
        help="Results folder or fsspec URL, e.g. s3://bucket/hr (default: the spec's).")
                     ] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start a new run instead of resuming."
                                        )] = False,
    budget_calls: Annotated[int | None, typer.Option(min=0, help="Max calls per arm.")] = None,
    budget_cost: Annotated[float | None, typer.Option(min=0.0, help="Max cost per arm, USD."
                                                      )] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Concurrent runs per arm.")
                           ] = None,
    max_error_rate: Annotated[float | None, typer.Option(
        min=0.0, max=1.0, help="Fail (exit 3, results still written) when an arm's share of "
        "errors is above this (default: the spec's, else 0.5; 1 never fails).")] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", help="If another process is running this spec into the same store, wait "
        "for it to finish (then resume) instead of refusing.")] = False,
    shared_cache: Annotated[bool, typer.Option(
        "--shared-cache", help="Replay LLM replies cached by any run of the store (default: "
        "only a resume of the same run replays; a fresh run calls the models).")] = False,
    stop_when_clear: Annotated[bool, typer.Option(
        "--stop-when-clear", help="Sequential mode: run the items batch by batch in a random "
        "order and stop once every comparison with the leading arm is decided (the spec's "
        "stop: settings, else margin 0.02, level 0.95, min 30 items, batches of 20).")] = False,
    submit_only: Annotated[bool, typer.Option("--submit-only", help="Batched arms and "
        "judges: submit pending requests as batches, return; `hr run` collects.")] = False,
) -> None:
    run_spec(console, spec, runs=runs, store=store, fresh=fresh, budget_calls=budget_calls,
             budget_cost=budget_cost, concurrency=concurrency, max_error_rate=max_error_rate,
             wait=wait, shared_cache=shared_cache, stop_when_clear=stop_when_clear,
             submit_only=submit_only)


@app.command()
def cancel(run_dir: RunDir) -> None:
    """Cancel a run's open batches (batch: true); a later `hr run` collects what they did."""
    cancel_run_batches(console, run_dir)


@app.command()
def plan(
    run_dir: RunDir,
    difference: Annotated[float, typer.Option(
        min=0.001, max=1.0, help="The difference to detect, as a share (0.05 = 5 points).")
                          ] = 0.05,
    power: Annotated[float, typer.Option(min=0.5, max=0.999, help="The chance to detect it.")
                     ] = 0.8,
    level: Annotated[float, typer.Option(min=0.5, max=0.999, help="The confidence level.")
                     ] = 0.95,
    label_width: Annotated[float | None, typer.Option(
        min=0.001, max=1.0, help="Plan human labels instead: how many a corrected accuracy "
        "(PPI++) needs for an interval this wide (0.1 = 10 points), and without PPI.")
                           ] = None,
    judge_record: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False, readable=True,
        help="With --label-width: plan from this judge validation record "
        "(judges/HASH.json); default: the run's pilot labels, else its judge's record.")
                            ] = None,
) -> None:
    """How many items a paired comparison needs, from a finished run (or a pilot): for each
    arm against the best, the smallest difference these items detect and the items needed
    to detect --difference (McNemar's discordant rates, normal approximation). With
    --label-width: how many human labels a judged run's corrected accuracy needs, from a
    pilot sample of labels or the judge's validation record."""
    if label_width is not None:
        plan_labels_run(console, run_dir, width=label_width, level=level,
                        judge_record=judge_record)
        return
    plan_run(console, run_dir, difference=difference, power=power, level=level)


@app.command()
def summary(run_dir: RunDir) -> None:
    """Print the summary table of a finished run."""
    show_summary(console, run_dir)


@app.command()
def rescore(
    run_dir: RunDir,
    scorer: Annotated[str, typer.Option(
        help="The scorer: a built-in name (exact, exact_raw, f1, includes, pattern, numeric, "
             "choice, json_field), one with options as YAML ('{f1: {threshold: 0.8}}'), or "
             "an import path pkg.module:scorer (modules in the current folder import).")],
    judge_store: Annotated[Path, typer.Option(
        help="Where a judge scorer's validation records are (its standing is recorded).")
    ] = Path("judges"),
) -> None:
    """Score a finished run's stored outputs with another scorer, calling no arm; the
    result is a new run beside the original (hr summary / hr report work on it)."""
    rescore_run_dir(console, run_dir, scorer, judge_store)


@app.command()
def report(
    run_dir: RunDir,
    output: Annotated[Path | None, typer.Option("-o", "--output",
                                                help="HTML file (default RUN_DIR/report.html)."
                                                )] = None,
) -> None:
    """Write the self-contained HTML report of a finished run."""
    make_report(console, run_dir, output)


@app.command(context_settings={"allow_extra_args": True})
def compare(
    ctx: typer.Context,
    run_dir: ExistingDir,
    judge: Annotated[Path, typer.Option(exists=True, dir_okay=False,
                                        help="A pairwise or select judge YAML file.")],
    arms: Annotated[list[str], typer.Option(
        "--arms", help="Arms to compare: --arms A B (two for pairwise, two or more for "
        "select; --arms A --arms B and --arms A,B work too).")],
    submit_only: Annotated[bool, typer.Option("--submit-only", help="A judge with batch: "
        "true: submit its requests as batches, return; the same hr compare collects.")
                           ] = False,
) -> None:
    """Compare arms of a finished run with a judge (--arms A B)."""
    compare_arms(console, run_dir, judge, [*arms, *ctx.args], submit_only=submit_only)


@app.command()
def show(
    run_dir: Annotated[str, typer.Argument(
        help="A run directory (results/<name>/<run id>/, or an fsspec URL).")],
    arm: Annotated[str | None, typer.Option(help="Only this arm's runs.")] = None,
    kind: Annotated[str | None, typer.Option(
        help="Only this failure kind: wrong, error, refusal, parse_failure, not_in_document, "
             "budget_stop, or unscored.")] = None,
    item: Annotated[str | None, typer.Option(help="Only this item id.")] = None,
    diff: Annotated[tuple[str, str] | None, typer.Option(
        help="Two arms: the items where they disagree, side by side.")] = None,
    limit: Annotated[int, typer.Option(min=0, help="Rows at most (0: all).")] = 50,
) -> None:
    """Print a finished run's failed runs (item, question, label, output, error) as a table,
    or with --diff A B the items where two arms disagree."""
    show_run(console, run_dir, arm=arm, kind=kind, item=item, diff=diff, limit=limit)


DIFF_HELP = """What changed between two finished runs (RUN_A then, RUN_B now), item by item.

From the manifests: the reference (items added, removed, changed), each arm's
fingerprint parts (model, endpoint, prompt, params, code), scorer, judge, runs,
budget and versions. Per arm (matched by name, or --arm OLD=NEW): accuracy then
and now, the paired difference over the items both scored with its CI, p-value
and verdict; the items that flipped (flaky ones marked), failure kinds that
moved, new errors, latency and cost.

Exit status: 0 no arm is significantly worse, 1 an arm is worse (its paired
difference's CI is below zero: for CI gates), 2 a mistake in the command.
"""


@app.command(help=DIFF_HELP)
def diff(
    run_a: Annotated[str, typer.Argument(help="The earlier run folder (or fsspec URL).")],
    run_b: Annotated[str, typer.Argument(help="The later run folder (or fsspec URL).")],
    arm: Annotated[list[str] | None, typer.Option(
        "--arm", help="Pair renamed arms: --arm OLD=NEW (repeatable).")] = None,
    output: Annotated[str | None, typer.Option(
        "-o", "--output", help="Also write the diff as a self-contained HTML page.")] = None,
    limit: Annotated[int, typer.Option(
        min=0, help="Flipped items shown per arm and direction (broke, fixed).")] = 20,
    every: Annotated[bool, typer.Option(
        "--all", help="Show every flipped item, not the first --limit of each direction.")
    ] = False,
) -> int:

    return run_diff(console, run_a, run_b, arm or [], output, None if every else limit)


@judge_app.command("validate")
def judge_validate(
    judge: ExistingFile,
    labels: ExistingFile,
    store: Annotated[Path, typer.Option(help="Where validation records go.")] = Path("judges"),
    attach: Annotated[Path | None, typer.Option(
        file_okay=False, help="Also attach the record to this run directory's report.")] = None,
    submit_only: Annotated[bool, typer.Option("--submit-only", help="A judge with batch: "
        "true: submit its requests as batches, return; the same command collects.")
                           ] = False,
) -> None:
    """Judge items people labelled and save the agreement record (JUDGE.yaml LABELS)."""
    validate_judge(console, judge, labels, store=store, attach=attach, submit_only=submit_only)


@judge_app.command("import", context_settings={"allow_extra_args": True})
def judge_import(
    ctx: typer.Context,
    judge: ExistingFile,
    verdicts: ExistingFile,
    column: Annotated[list[str] | None, typer.Option(
        "--column", help="Map one of hr's columns to the table's: --column "
        "item_id=question_id (repeatable; item_id=question_id+turn joins two).")] = None,
    arms: Annotated[list[str] | None, typer.Option(
        "--arms", help="The candidates to compare (--arms A B); default: the one pair the "
        "table names.")] = None,
    store: Annotated[Path, typer.Option(help="Where validation records go.")] = Path("judges"),
    run: Annotated[Path | None, typer.Option(
        file_okay=False, exists=True,
        help="A run directory: compare its arms' outputs, attach to its report.")] = None,
) -> None:
    """Import stored per-order verdicts (JSONL/CSV/Parquet) made by the judge JUDGE.yaml
    describes: validated, compared and reported as if hr's judge had made them."""

    extra = [*ctx.args]
    if extra and not arms:
        raise typer.BadParameter(f"unexpected argument(s): {' '.join(extra)}")
    import_judge_verdicts(console, judge, verdicts, columns=column or [],
                          arms=[*(arms or []), *extra], store=store, run_dir=run)


@judge_app.command("groundedness")
def judge_groundedness(run_dir: RunDir, model: Annotated[str, typer.Option(
        help="The judge's model (as an LLM arm's).")],
    orders: Annotated[int, typer.Option(min=1, max=2, help="Presentation orders.")] = 2,
    store: Annotated[Path, typer.Option(help="Where judge records are.")] = Path("judges"),
) -> None:
    """Judge whether each answer is supported by its own run's retrieved passages."""
    judge_run_groundedness(console, run_dir, model, orders, store)


@judge_app.command("check")
def judge_check(
    judge: ExistingFile,
    store: Annotated[Path, typer.Option(help="Where validation records are.")] = Path("judges"),
) -> None:
    """Say whether a judge is validated, or which fields changed since its last record."""
    check_judge(console, judge, store=store)


@label_app.command("sample")
def label_sample(
    run_dir: RunDir,
    n: Annotated[int, typer.Option("--n", min=1, help="Items to sample (every arm's runs of "
                                   "each are to be labelled).")] = 200,
    seed: Annotated[int | None, typer.Option(
        min=0, help="The sampling seed (default: a random one, recorded).")] = None,
    grow: Annotated[bool, typer.Option(
        "--grow", help="Grow the run's sample to --n items: the new ones drawn uniformly "
                       "from the rest of its frame, with a sheet of their own.")] = False,
    groundedness: Grounded = False,
) -> None:
    """Draw a uniformly random, seeded sample of a finished run's items and write a
    labelling sheet (CSV and JSONL); the seed and sampling frame are recorded in the run."""
    sample_labels(console, run_dir, n, seed, grow=grow, groundedness=groundedness)


@label_app.command("import")
def label_import(run_dir: RunDir, labels: ExistingFile, groundedness: Grounded = False) -> None:
    """Read people's labels (JSONL/CSV/Parquet: arm, item, run, label as correct/incorrect
    or 1/0) into the run and print the accuracies they correct."""
    import_run_labels(console, run_dir, labels, groundedness=groundedness)


@server_app.command("start")
def server_start(
    port: Annotated[int | None, typer.Option(min=1, max=65535, help=(
        "Port on 127.0.0.1 (default 4200 when free, else any free port)."))] = None,
    timeout: Annotated[float, typer.Option(min=1.0, help="Seconds to wait for it to answer.")
                       ] = 120.0,
) -> None:
    """Start the hr server (a Prefect server on 127.0.0.1) in the background."""
    start(console, port=port, timeout=timeout)


@server_app.command("stop")
def server_stop() -> None:
    """Stop the hr server and every process it started."""
    stop(console)


@server_app.command("status")
def server_status() -> None:
    """Print whether the hr server runs, and its dashboard URL (exit 1 when it does not)."""
    status(console)
