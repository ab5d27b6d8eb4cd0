"""The report's figures, written directly as inline SVG text.

Every chart of the report is a handful of bars, dots and labels per arm, so it
is drawn here as SVG elements rather than through a plotting library: a figure
is cheap and needs no GUI, fonts cache or backend (matplotlib's import and text
layout were most of a report's time).

Each function takes plain data and returns one ``<svg>`` element as a string.
The size of a figure depends on the number of arms (or judge labels), never on
the number of runs: latency is drawn as quantiles per arm.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hr_core.analysis.outcomes import OUTCOMES, PairedRow
from hr_core.core.frames import records
from hr_core.stats.accuracy import arms_in_order, name_codes

__all__ = [
    "LATENCY_QUANTILES",
    "OUTCOME_COLOURS",
    "accuracy_figure",
    "confusion_figure",
    "forest_figure",
    "latency_cost_figure",
    "latency_quantiles",
    "outcome_figure",
    "win_rate_figure",
]

OUTCOME_COLOURS: dict[str, str] = {
    "correct": "#2e8b57",
    "wrong": "#d1495b",
    "not_in_document": "#4f86c6",
    "refusal": "#edae49",
    "parse_failure": "#8e6bbf",
    "error": "#3d3d3d",
    "budget_stop": "#9aa5b1",
    "unscored": "#e2e2e2",
}
LATENCY_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
_INK = "#222222"
_GRID = "#e5e5e5"
_ACCENT = "#1f5f99"
_LOSS = "#d1495b"
_ROW = 30  # px per arm
_TOP = 12
_AXIS = 46  # below the plot: ticks, their labels and the axis title
_CHAR = 6.6  # approximate width of a 12 px sans-serif character


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"


def _finite(*values: Any) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


class _Canvas:
    """SVG elements in pixel coordinates (y down)."""

    def __init__(self, width: float, height: float, title: str) -> None:
        self.width, self.height, self.title = width, height, title
        self.parts: list[str] = []

    def line(self, x1: float, y1: float, x2: float, y2: float, colour: str = _INK,
             width: float = 1.0, dash: bool = False, opacity: float = 1.0) -> None:
        extra = ' stroke-dasharray="4 3"' if dash else ""
        extra += f' stroke-opacity="{opacity}"' if opacity < 1 else ""
        self.parts.append(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" '
                          f'y2="{_num(y2)}" stroke="{colour}" stroke-width="{width}"{extra}/>')

    def rect(self, x: float, y: float, w: float, h: float, fill: str,
             stroke: str | None = None, tip: str = "") -> None:
        extra = f' stroke="{stroke}" stroke-width="0.8"' if stroke else ""
        self._shape(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(max(w, 0.0))}" '
                    f'height="{_num(max(h, 0.0))}" fill="{fill}"{extra}', "rect", tip)

    def _shape(self, opening: str, tag: str, tip: str) -> None:
        """An element, with a hover tooltip when ``tip`` is given."""
        self.parts.append(f"{opening}><title>{html.escape(tip)}</title></{tag}>" if tip
                          else f"{opening}/>")

    def dot(self, x: float, y: float, colour: str, square: bool = False, r: float = 5.0,
            tip: str = "") -> None:
        if square:
            self.rect(x - r, y - r, 2 * r, 2 * r, colour, tip=tip)
        else:
            self._shape(f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" '
                        f'fill="{colour}"', "circle", tip)

    def text(self, x: float, y: float, text: str, anchor: str = "start", size: int = 12,
             colour: str = _INK, bold: bool = False, rotate: bool = False) -> None:
        extra = ' font-weight="bold"' if bold else ""
        extra += f' transform="rotate(-90 {_num(x)} {_num(y)})"' if rotate else ""
        self.parts.append(f'<text x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" '
                          f'dominant-baseline="middle" font-size="{size}" fill="{colour}"'
                          f"{extra}>{html.escape(text)}</text>")

    def svg(self) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(self.width)}" '
                f'height="{_num(self.height)}" viewBox="0 0 {_num(self.width)} '
                f'{_num(self.height)}" role="img" font-family="Helvetica, Arial, sans-serif">'
                f"<title>{html.escape(self.title)}</title>"
                f'<rect width="100%" height="100%" fill="white"/>{"".join(self.parts)}</svg>')


class _Scale:
    """Values to x pixels, linear or log10."""

    def __init__(self, low: float, high: float, left: float, right: float,
                 log: bool = False) -> None:
        self.log = log
        self.low, self.high = (math.log10(low), math.log10(high)) if log else (low, high)
        if self.high <= self.low:
            self.high = self.low + 1.0
        self.left, self.right = left, right

    def __call__(self, value: float) -> float:
        v = math.log10(max(value, 10 ** self.low)) if self.log else value
        v = min(max(v, self.low), self.high)
        return self.left + (v - self.low) / (self.high - self.low) * (self.right - self.left)

    def ticks(self) -> list[float]:
        if self.log:
            return [10.0 ** e for e in range(math.ceil(self.low), math.floor(self.high) + 1)]
        span = self.high - self.low
        raw = span / 5
        magnitude = 10 ** math.floor(math.log10(raw))
        step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
        first = math.ceil(self.low / step - 1e-9) * step
        count = math.floor((self.high - first) / step + 1e-9) + 1
        return [round(first + i * step, 10) for i in range(count)]


def _axis(canvas: _Canvas, scale: _Scale, top: float, bottom: float, title: str,
          label: Any = None, zero: float | None = None) -> None:
    """Vertical grid lines with tick labels under the plot, and the axis title."""
    label = label or (lambda v: f"{v:g}")
    for tick in scale.ticks():
        x = scale(tick)
        canvas.line(x, top, x, bottom, _GRID)
        canvas.text(x, bottom + 10, label(tick), anchor="middle", size=10, colour="#555555")
    canvas.line(scale.left, bottom, scale.right, bottom, "#999999")
    if zero is not None:
        canvas.line(scale(zero), top, scale(zero), bottom, "#888888", dash=True)
    canvas.text((scale.left + scale.right) / 2, bottom + 28, title, anchor="middle", size=11)


def _label_width(labels: Iterable[str]) -> float:
    return min(max([len(str(label)) for label in labels] + [4]) * _CHAR + 16, 240.0)


def _rows(canvas: _Canvas, labels: Sequence[str], x: float) -> list[float]:
    """Row labels right-aligned at ``x``; returns each row's centre y."""
    ys = [_TOP + _ROW * (i + 0.5) for i in range(len(labels))]
    for y, label in zip(ys, labels, strict=True):
        canvas.text(x, y, str(label), anchor="end")
    return ys


def _pct(value: float) -> str:
    return f"{value:.0%}"


def accuracy_figure(summary: pd.DataFrame, prefix: str = "fig-accuracy") -> str:
    """Dot plot of each arm's accuracy with its 95% interval, best arm on top.

    Example:
        >>> frame = pd.DataFrame({"arm": ["a"], "accuracy": [0.5], "ci_low": [0.3],
        ...                       "ci_high": [0.7]})
        >>> accuracy_figure(frame).startswith("<svg")
        True
    """
    data = summary.sort_values("accuracy", ascending=False, na_position="last")
    labels = [str(a) for a in data["arm"]]
    left = _label_width(labels)
    canvas = _Canvas(720, _TOP + _ROW * max(len(labels), 1) + _AXIS, "Accuracy per arm")
    scale = _Scale(0.0, 1.0, left, 720 - 60)
    bottom = _TOP + _ROW * max(len(labels), 1)
    _axis(canvas, scale, _TOP, bottom, "accuracy (dot) and 95% interval (bar)", _pct)
    ys = _rows(canvas, labels, left - 8)
    for y, acc, low, high in zip(ys, data["accuracy"], data["ci_low"], data["ci_high"],
                                 strict=True):
        if _finite(low, high):
            canvas.line(scale(float(low)), y, scale(float(high)), y, _ACCENT, 5, opacity=0.45)
        if _finite(acc):
            canvas.dot(scale(float(acc)), y, _ACCENT, tip=f"{float(acc):.1%}")
            end = float(high) if _finite(high) else float(acc)
            canvas.text(scale(end) + 7, y, f"{float(acc):.0%}", size=11)
    return canvas.svg()


def outcome_figure(counts: pd.DataFrame, prefix: str = "fig-outcomes") -> str:
    """Stacked bars: each arm's runs split into correct, each failure kind and unscored."""
    labels = [str(a) for a in counts.index]
    totals = counts.sum(axis=1).replace(0, 1)
    shown = [o for o in OUTCOMES if o in counts.columns and counts[o].sum() > 0]
    left = _label_width(labels)
    legend_rows = math.ceil(len(shown) / 4)
    bottom = _TOP + _ROW * max(len(labels), 1)
    canvas = _Canvas(720, bottom + _AXIS + 20 * legend_rows + 6, "How each arm's runs ended")
    scale = _Scale(0.0, 1.0, left, 720 - 24)
    _axis(canvas, scale, _TOP, bottom, "share of runs", _pct)
    ys = _rows(canvas, labels, left - 8)
    for y, arm, row, total in zip(ys, labels, records(counts), totals, strict=True):
        start = 0.0
        for outcome in shown:
            share = float(row[outcome]) / float(total)
            if share > 0:
                canvas.rect(scale(start), y - 10, scale(start + share) - scale(start), 20,
                            OUTCOME_COLOURS[outcome], stroke="white",
                            tip=f"{arm}: {outcome.replace('_', ' ')} {int(row[outcome]):,} "
                                f"({share:.1%})")
            start += share
    for i, outcome in enumerate(shown):
        x = left + (i % 4) * 150
        y = bottom + _AXIS + 20 * (i // 4) + 4
        canvas.rect(x, y - 6, 12, 12, OUTCOME_COLOURS[outcome])
        canvas.text(x + 17, y, outcome.replace("_", " "), size=11)
    return canvas.svg()


def forest_figure(rows: Sequence[PairedRow], prefix: str = "fig-forest") -> str:
    """Forest plot of paired accuracy differences against the best arm (0 = no difference),
    in points as the report's tables."""
    labels = [r.arm for r in rows]
    left = _label_width(labels)
    bottom = _TOP + _ROW * max(len(rows), 1)
    canvas = _Canvas(720, bottom + _AXIS, "Paired differences against the best arm")
    low = min([r.ci_low for r in rows if _finite(r.ci_low)] + [-0.1])
    scale = _Scale(max(-1.0, low - 0.05), 0.6, left, 720 - 150)
    baseline = rows[0].baseline if rows else "best arm"
    _axis(canvas, scale, _TOP, bottom,
          f"accuracy(arm) - accuracy({baseline}) in points, paired over items, 95% interval",
          lambda v: f"{v * 100:+.0f}" if round(v * 100) else "0", zero=0.0)
    ys = _rows(canvas, labels, left - 8)
    for y, row in zip(ys, rows, strict=True):
        colour = _LOSS if _finite(row.ci_high) and row.ci_high < 0 else _ACCENT
        if _finite(row.ci_low, row.ci_high):
            canvas.line(scale(row.ci_low), y, scale(row.ci_high), y, colour, 5, opacity=0.5)
        if _finite(row.diff):
            canvas.dot(scale(row.diff), y, colour, square=True, r=4.5)
            p = "" if not _finite(row.p_value) else f"  p={row.p_value:.3g}"
            end = max(row.ci_high, row.diff) if _finite(row.ci_high) else row.diff
            canvas.text(scale(end) + 7, y, f"{row.diff * 100:+.1f}{p}  (n={row.n_items})",
                        size=10)
    return canvas.svg()


def _numbers(runs: pd.DataFrame, column: str) -> np.ndarray:
    if column not in runs.columns:
        return np.full(len(runs), np.nan)
    return np.asarray(pd.to_numeric(runs[column], errors="coerce"), dtype=float)


def latency_quantiles(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm (in order of appearance): runs with a latency and its quantiles in seconds.

    Columns ``n`` and ``q5, q25, q50, q75, q95`` (``LATENCY_QUANTILES``); the cost
    is a few vectorised passes over the runs, whatever their number.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 3, "latency_s": [0.1, 0.2, 0.3]})
        >>> float(latency_quantiles(runs).loc["a", "q50"])
        0.2
    """
    arms = arms_in_order(runs)
    codes = name_codes(arms, runs["arm"])  # no hashing of a million arm names
    latency = _numbers(runs, "latency_s")
    known = ~np.isnan(latency)
    names = [f"q{round(q * 100)}" for q in LATENCY_QUANTILES]
    rows = []
    order = np.argsort(codes[known], kind="stable")
    grouped = np.split(latency[known][order], np.cumsum(np.bincount(
        codes[known], minlength=len(arms)))[:-1]) if len(arms) else []
    for values in grouped:
        quantiles = (np.quantile(values, LATENCY_QUANTILES) if len(values)
                     else [math.nan] * len(names))
        rows.append([len(values), *quantiles])
    table = pd.DataFrame(rows, columns=["n", *names], index=pd.Index(arms, name=None))
    table["n"] = table["n"].astype(int)
    return table


def _sums(runs: pd.DataFrame, codes: np.ndarray, arms: int,
          columns: Sequence[str]) -> np.ndarray:
    """Per arm code, the sum of ``columns`` (missing values as 0)."""
    total = np.zeros(len(runs))
    for column in columns:
        total += np.nan_to_num(_numbers(runs, column))
    return np.bincount(codes, weights=total, minlength=arms)


def _ms(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.3g} s"
    return f"{value:.3g} ms"


def latency_cost_figure(runs: pd.DataFrame, prefix: str = "fig-latency-cost") -> str:
    """Latency quantiles per arm (whiskers 5-95%, box 25-75%, median) and total cost per arm.

    Drawn from ``latency_quantiles`` and per-arm sums: the figure has the same
    size for ten runs or ten million.
    """
    quant = latency_quantiles(runs) * np.array([1] + [1000] * len(LATENCY_QUANTILES))
    arms = [str(a) for a in quant.index]
    codes = name_codes(arms, runs["arm"])
    cost = _sums(runs, codes, len(arms), ["cost_usd"])
    tokens = _sums(runs, codes, len(arms), ["tokens_in", "tokens_out"])
    left = _label_width(arms)
    width = 860.0
    split = left + (width - left) * 0.58
    bottom = _TOP + _ROW * max(len(arms), 1)
    canvas = _Canvas(width, bottom + _AXIS, "Latency and cost per arm")
    positive = quant[["q5", "q95"]].to_numpy().ravel()
    positive = positive[np.isfinite(positive) & (positive > 0)]
    low, high = (float(positive.min()), float(positive.max())) if len(positive) else (1.0, 10.0)
    log = high / low > 50
    if log:
        lat = _Scale(10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high)),
                     left, split - 90, log=True)
    else:
        lat = _Scale(0.0, high * 1.05, left, split - 90)
    _axis(canvas, lat, _TOP, bottom, "latency per run (ms" + (", log scale)" if log else ")"),
          lambda v: f"{v:g}")
    ys = _rows(canvas, arms, left - 8)
    for y, (_, q) in zip(ys, quant.iterrows(), strict=True):
        if not _finite(q["q5"], q["q25"], q["q50"], q["q75"], q["q95"]):
            canvas.text(lat.left + 4, y, "no latency recorded", size=10, colour="#777777")
            continue
        canvas.line(lat(q["q5"]), y, lat(q["q95"]), y, "#555555", 1.2)
        for end in ("q5", "q95"):
            canvas.line(lat(q[end]), y - 5, lat(q[end]), y + 5, "#555555", 1.2)
        canvas.rect(lat(q["q25"]), y - 8, lat(q["q75"]) - lat(q["q25"]), 16, "#cfe0f1",
                    stroke=_ACCENT, tip=f"n={int(q['n']):,}: 5% {_ms(q['q5'])}, 25% "
                    f"{_ms(q['q25'])}, median {_ms(q['q50'])}, 75% {_ms(q['q75'])}, "
                    f"95% {_ms(q['q95'])}")
        canvas.line(lat(q["q50"]), y - 8, lat(q["q50"]), y + 8, _ACCENT, 2.5)
        canvas.text(lat.right + 8, y, f"p50 {_ms(q['q50'])}", size=10)
    money = _Scale(0.0, max(float(cost.max()) if len(cost) else 0.0, 1e-6) * 1.8,
                   split + 10, width - 16)
    _axis(canvas, money, _TOP, bottom, "total cost (USD)", lambda v: f"{v:.3g}")
    for y, c, t in zip(ys, cost, tokens, strict=True):
        canvas.rect(money(0.0), y - 9, money(float(c)) - money(0.0), 18, "#edae49")
        note = f"${float(c):.4f}" + (f"  {int(t):,} tokens" if t else "")
        canvas.text(money(float(c)) + 5, y, note, size=10)
    return canvas.svg()


def _blue(share: float) -> str:
    """White to dark blue (``share`` in 0..1), like matplotlib's "Blues"."""
    light, dark = (247, 251, 255), (8, 48, 107)
    share = min(max(share, 0.0), 1.0)
    return "#" + "".join(f"{round(a + (b - a) * share):02x}" for a, b in
                         zip(light, dark, strict=True))


def confusion_figure(confusion: Mapping[str, Mapping[str, Any]], prefix: str,
                     order: Sequence[str] = ()) -> str:
    """Heat map of a judge's confusion: people's labels (rows) against the judge's verdicts.

    ``order`` (e.g. the grades, positive first) sorts rows and columns; other
    labels (such as ``no_verdict``) follow.
    """
    def ranked(labels: list[str]) -> list[str]:
        known = [x for x in order if x in labels]
        return known + [x for x in labels if x not in known]

    humans = ranked(list(confusion))
    judged = ranked(list(dict.fromkeys(
        [*order, *(v for row in confusion.values() for v in row)])))
    judged = [j for j in judged if j in order or any(j in row for row in confusion.values())]
    grid = [[int(confusion[h].get(j, 0) or 0) for j in judged] for h in humans]
    cell_w = max(70.0, max([len(str(j)) for j in judged] + [1]) * _CHAR + 14)
    cell_h = 36.0
    left = 30 + _label_width(humans)
    top = 10.0
    width = left + cell_w * max(len(judged), 1) + 20
    height = top + cell_h * max(len(humans), 1) + 48
    canvas = _Canvas(width, height, "Judge confusion: people (rows) against the judge (columns)")
    peak = max([max(r) for r in grid if r] + [1])
    for i, (human, row) in enumerate(zip(humans, grid, strict=True)):
        y = top + cell_h * i
        canvas.text(left - 8, y + cell_h / 2, str(human), anchor="end")
        for j, value in enumerate(row):
            x = left + cell_w * j
            canvas.rect(x, y, cell_w, cell_h, _blue(value / (peak * 1.3)), stroke="white",
                        tip=f"people {human}, judge {judged[j]}: {value}")
            canvas.text(x + cell_w / 2, y + cell_h / 2, str(value), anchor="middle", size=13,
                        colour="white" if value > peak * 0.65 else _INK)
    bottom = top + cell_h * max(len(humans), 1)
    for j, verdict in enumerate(judged):
        canvas.text(left + cell_w * (j + 0.5), bottom + 12, str(verdict), anchor="middle",
                    size=11)
    canvas.text(left + cell_w * max(len(judged), 1) / 2, bottom + 34, "judge", anchor="middle",
                size=11)
    canvas.text(12, top + cell_h * max(len(humans), 1) / 2, "people", anchor="middle",
                size=11, rotate=True)
    return canvas.svg()


def win_rate_figure(summary: pd.DataFrame, prefix: str = "fig-win-rate") -> str:
    """Each pair's win rate of ``a`` over ``b`` (ties half) with its 95% interval."""
    records = summary.to_dict("records")
    labels = [f"{r['a']} vs {r['b']}" for r in records]
    left = _label_width(labels)
    bottom = _TOP + _ROW * max(len(records), 1)
    canvas = _Canvas(720, bottom + _AXIS + 14, "Pairwise win rates")
    scale = _Scale(0.0, 1.0, left, 720 - 90)
    _axis(canvas, scale, _TOP, bottom,
          "win rate of the first arm (ties count half), 95% interval", _pct, zero=0.5)
    canvas.text((scale.left + scale.right) / 2, bottom + _AXIS, "labels: wins-ties-losses",
                anchor="middle", size=10, colour="#555555")
    ys = _rows(canvas, labels, left - 8)
    for y, row in zip(ys, records, strict=True):
        low, high, rate = (row.get(k, math.nan) for k in ("ci_low", "ci_high", "win_rate"))
        if _finite(low, high):
            canvas.line(scale(float(low)), y, scale(float(high)), y, _ACCENT, 5, opacity=0.5)
        if _finite(rate):
            canvas.dot(scale(float(rate)), y, _ACCENT, tip=f"{float(rate):.1%}")
        end = float(high) if _finite(high) else (float(rate) if _finite(rate) else 0.5)
        canvas.text(scale(end) + 7, y, f"{row['a_wins']}-{row['ties']}-{row['b_wins']}",
                    size=10)
    return canvas.svg()
