"""``hr diff RUN_A RUN_B``: what changed between two runs, in the terminal (no Prefect import).

Every string from a run (arm names, item texts, outputs, manifest values) is printed
as a :func:`hr_cli.literal.cell` (rich ``Text``, control characters visible), never
parsed as markup.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hr_cli._options import name_pairs
from hr_cli.fit import print_fitted
from hr_cli.literal import cell
from hr_core.analysis.diff import ArmDiff, Flip, RunDiff
from hr_core.analysis.diff_corrected import CORRECTED_NOTE, corrected_text
from hr_core.judge.corrected_diff import diff_runs_corrected
from hr_core.report.costs import cost_by_kind
from hr_core.report.diff_html import write_diff_html

__all__ = ["arm_pairs", "print_diff", "run_diff"]


def arm_pairs(values: list[str]) -> dict[str, str]:
    """``--arm old=new`` options as ``{old: new}`` (``hr_cli._options``' rule: white
    space around ``=`` is dropped).

    Example:
        >>> arm_pairs(["a=b", "c = c"])
        {'a': 'b', 'c': 'c'}
    """
    return name_pairs(values, "--arm",
                      "give OLD=NEW (an arm of the first run = an arm of the second)")


_WIDE = {"question", "label", "then: output", "now: output", "then", "now", "key", "arm",
         "verdict", "value"}


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=cell(title), title_justify="left", box=box.SIMPLE_HEAD,
                  header_style="bold", pad_edge=False)
    for column in columns:
        wide = column in _WIDE
        table.add_column(cell(column), overflow="fold", no_wrap=not wide,
                         max_width=40 if wide else None)
    return table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _points(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f}"


def _ci(low: float | None, high: float | None, points: bool = False) -> str:
    if low is None or high is None:
        return "–"
    return (f"[{_points(low)}, {_points(high)}]" if points else f"[{low:.1%}, {high:.1%}]")


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:.1f} ms"


def _usd(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


_STYLE = {"worse": "bold red", "better": "bold green"}

_ARMS_DROP = ("flips r→w/w→r (flaky)", "p", "items", "then", "now")
"""The per-arm table's columns a narrow terminal leaves out, least important first: the
arm, its difference, interval and verdict stay."""


def _arm_row(arm: ArmDiff) -> list[Text]:
    p = "–" if arm.p_value is None else f"{arm.p_value:.2g}"
    flips = (f"{arm.right_to_wrong}/{arm.wrong_to_right} "
             f"({arm.flaky_right_to_wrong}/{arm.flaky_wrong_to_right})")
    return [cell(arm.label, style="bold"), cell(_pct(arm.accuracy_a)),
            cell(_pct(arm.accuracy_b)), cell(str(arm.n_items)), cell(_points(arm.diff)),
            cell(_ci(arm.ci_low, arm.ci_high, points=True)), cell(p),
            cell(arm.verdict, style=_STYLE.get(arm.verdict, "")), cell(flips)]


def print_diff(console: Console, diff: RunDiff, *, limit: int | None = 20) -> None:
    """Print a :class:`~hr_core.analysis.diff.RunDiff`: what changed, each arm's verdict, the flips
    (the first ``limit`` of each direction, with each direction's count; ``None``: all),
    failure-kind transitions, new errors, latency and cost."""
    console.print(Text.assemble(("hr diff ", "bold"), cell(diff.id_a or diff.run_a, "bold"),
                                " → ", cell(diff.id_b or diff.run_b, "bold")))
    console.print(cell(f"then: {diff.run_a}\nnow:  {diff.run_b}", style="dim"))
    ref = diff.reference
    if ref.same:
        console.print(cell(f"Reference: the same {ref.items_b} items."))
    else:
        line = (f"Reference: {ref.items_a} → {ref.items_b} items, {ref.common} in common; "
                f"{ref.added} added, {ref.removed} removed, {ref.changed} changed")
        for what, ids in (("added", ref.added_ids), ("removed", ref.removed_ids),
                          ("changed", ref.changed_ids)):
            if ids:
                line += f"\n  {what}: {', '.join(ids)}" + (" …" if len(ids) >= 20 else "")
        console.print(cell(line))
    if diff.changes:
        table = _table("What differs (manifests)", ["part", "arm", "key", "then", "now"])
        for c in diff.changes:
            table.add_row(*(cell(v) for v in (c.part, c.arm or "", c.key, c.before, c.after)))
        print_fitted(console, table, ())  # every column folds: none is left out
    else:
        console.print(cell("Manifests: no difference in arms, scorer, judge, runs, budget or "
                           "versions."))
    level = f"{diff.level:.0%}"
    interval = "CI" if diff.stop_rule is None else "confidence sequence"
    table = _table(f"Per arm: accuracy, and now - then over the items both runs scored "
                   f"(points, {level} {interval})",
                   ["arm", "then", "now", "items", "diff", "CI" if diff.stop_rule is None
                    else "CS", "p", "verdict", "flips r→w/w→r (flaky)"])
    for arm in diff.arms:
        table.add_row(*_arm_row(arm))
    print_fitted(console, table, _ARMS_DROP)
    if diff.arms:
        console.print(cell(diff.verdict_text, style="dim"))
    for line in corrected_text(diff.corrected):
        console.print(cell(line))
    if diff.corrected:
        console.print(cell(CORRECTED_NOTE, style="dim"))
    if not diff.arms:
        console.print(cell("No arm in common: give --arm OLD=NEW to pair arms.", style="yellow"))
    for arm in diff.arms:
        _print_arm(console, diff, arm, limit)
    worse = diff.worse
    if worse:
        console.print(cell(f"Worse: {', '.join(worse)} (exit status 1)", style="bold red"))


def _print_arm(console: Console, diff: RunDiff, arm: ArmDiff, limit: int | None) -> None:
    console.rule(cell(arm.label), align="left")
    flaky = [f"then {_pct(arm.flaky_a)}" if arm.flaky_a is not None else None,
             f"now {_pct(arm.flaky_b)}" if arm.flaky_b is not None else None]
    shown = [f for f in flaky if f]
    console.print(cell(
        f"accuracy {_pct(arm.accuracy_a)} {_ci(*arm.ci_a)} → {_pct(arm.accuracy_b)} "
        f"{_ci(*arm.ci_b)}; parts changed: {', '.join(arm.parts_changed) or 'none'}\n"
        f"runs per item {arm.runs_a} → {arm.runs_b}; latency {_ms(arm.latency_a)} → "
        f"{_ms(arm.latency_b)}; cost {_usd(arm.cost_a)} → {_usd(arm.cost_b)}"
        + (f"; flaky items {', '.join(shown)}" if shown else "")))
    if arm.cost_kinds_a or arm.cost_kinds_b:  # cache reads and writes, output: then, now

        console.print(cell(f"cost by kind: {cost_by_kind(arm.cost_kinds_a or {}) or '–'} → "
                           f"{cost_by_kind(arm.cost_kinds_b or {}) or '–'}"))
    for direction, total, what in (("right→wrong", arm.right_to_wrong, "broke"),
                                   ("wrong→right", arm.wrong_to_right, "fixed")):
        _print_flips(console, [f for f in diff.flips if f.arm == arm.label
                               and f.direction == direction][:limit], total,
                     f"{total} {what} ({direction})")
    if arm.slices:
        table = _table("By slice: now - then over the paired items (points)",
                       ["slice", "value", "items", "then", "now", "diff", "CI", "p",
                        "verdict"])
        for row in arm.slices:
            table.add_row(cell(row.slice), cell(row.value), cell(str(row.n_items)),
                          cell(_pct(row.accuracy_then)), cell(_pct(row.accuracy_now)),
                          cell(_points(row.diff)), cell(_ci(row.ci_low, row.ci_high, True)),
                          cell("–" if row.p_value is None else f"{row.p_value:.2g}"),
                          cell(row.verdict, style=_STYLE.get(row.verdict, "")))
        print_fitted(console, table, ("p", "then", "now", "items"))
    if arm.retrieval:
        table = _table("Retrieval: now - then over the paired items (points)",
                       ["figure", "items", "then", "now", "diff", "CI", "p", "verdict"])
        for r in arm.retrieval:
            table.add_row(cell(r.figure), cell(str(r.n_items)), cell(f"{r.then:.3f}"),
                          cell(f"{r.now:.3f}"),
                          cell("–" if r.diff is None else _points(r.diff)),
                          cell(_ci(r.ci_low, r.ci_high, True)),
                          cell("–" if r.p_value is None else f"{r.p_value:.2g}"),
                          cell(r.decision, style=_STYLE.get(r.decision, "")))
        console.print(table)
    if arm.flipped_blame:
        table = _table(f"Why the {arm.right_to_wrong} answer(s) that flipped right→wrong "
                       "failed now (runs; 95% CI, items clustered)",
                       ["attribution", "runs", "share", "CI"])
        for b in arm.flipped_blame:
            table.add_row(cell(b.attribution), cell(f"{b.count} of {b.attributed}"),
                          cell(_pct(b.share)), cell(_ci(b.ci_low, b.ci_high)))
        console.print(table)
    if arm.transitions:
        table = _table("Failure kinds that moved (items)", ["then", "now", "items"])
        for t in arm.transitions[:12]:
            table.add_row(cell(t.before), cell(t.after), cell(str(t.items)))
        console.print(table)
    if arm.new_errors:
        console.print(cell(f"{arm.new_errors} item(s) with new errors:", style="yellow"))
        for message, count in arm.new_error_messages:
            console.print(cell(f"  {count}× {message}"))


def _print_flips(console: Console, flips: list[Flip], total: int, title: str) -> None:
    """One direction's flipped items (worst first), with its count."""
    if not total:
        console.print(cell(f"{title}: none."))
        return
    if len(flips) < total:
        title += f", showing the first {len(flips)} (--all: every one)"
    contexts = any(f.contexts_a or f.contexts_b for f in flips)
    table = _table(title, ["item", "flip", "flaky", "question", "label", "then: output",
                           "then", "now: output", "now",
                           *(["then: contexts", "now: contexts"] if contexts else [])])
    for f in flips:
        passages = [cell(f.contexts_a or ""), cell(f.contexts_b or "")] if contexts else []
        table.add_row(cell(f.item_id), cell(f.direction, style="red" if
                                            f.direction == "right→wrong" else "green"),
                      cell("flaky" if f.flaky else ""), cell(f.question), cell(f.label),
                      cell(f.output_a), cell(f"{f.kind_a} ({f.share_a:.0%})"),
                      cell(f.output_b), cell(f"{f.kind_b} ({f.share_b:.0%})"), *passages)
    print_fitted(console, table, ("flaky", "label", "then", "now", "question"))


def run_diff(console: Console, run_a: str, run_b: str, arms: list[str], output: str | None,
             limit: int | None) -> int:
    """``hr diff``: compare, print (the first ``limit`` flipped items of each direction,
    ``None``: all), write the HTML page when asked; the exit status."""
    found = diff_runs_corrected(run_a, run_b, arms=arm_pairs(arms),
                      flips_per_arm=None if limit is None else max(limit, 50))
    print_diff(console, found, limit=limit)
    if output is not None:
        written = write_diff_html(found, output)
        console.print(cell(f"Wrote {written}"))
    return found.exit_status
