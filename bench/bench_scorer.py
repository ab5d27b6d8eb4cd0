"""Benchmark of the built-in scorers against a floor measured in the same run.

Scores N (output, label) pairs (default 1,000,000: strings, mappings,
ArmResults, numbers, several accepted labels, unlabelled items, 10% failures)
with ``hr_scorer_exact().fn``, the SQuAD-normalised ``hr_scorer_exact(normalise="squad").fn``
and ``hr_scorer_f1().fn``, and compares each rate with the floor: the bare
``" ".join(x.casefold().split())`` of both sides and ``==`` on the same pairs'
texts, pre-extracted. Prints outputs/s and the ratios (target: each within 4x).

``--fold-floors`` also times, on the same texts and in the same reps, what the official
SQuAD folding costs by itself: ``squad_fold`` of each answer compared with its label
folded beforehand (what any scorer folding answers as SQuAD must do at least, labels
being few), and the official script's own ``normalize_answer`` (tests/squad_official.py)
on both sides.

Usage:
    .venv/bin/python bench/bench_scorer.py [--n 1000000] [--repeat 10] [--by-kind]
        [--fold-floors]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hr_core import FAILURE_KINDS, ArmResult, Scorer, Usage, hr_scorer_exact
from hr_core.core.text import squad_fold
from hr_core.scoring import hr_scorer_f1

TARGET_RATIO = 4.0
TESTS = Path(__file__).resolve().parent.parent / "tests"
CITIES = ["Paris", "Lyon", "New York", "São Paulo", "Straße", "Zürich", "Tokyo", "Marseille"]
ANSWERS = [*CITIES, "The answer is Paris.", "I think it is Lyon", "paris, France"]


def _variant(rng: random.Random, text: str) -> str:
    """The text as an arm might write it: other case, stray white space."""
    roll = rng.random()
    if roll < 0.3:
        text = text.lower()
    elif roll < 0.4:
        text = text.upper()
    if rng.random() < 0.3:
        text = f"  {text}\n"
    if rng.random() < 0.1:
        text = text.replace(" ", "\u00a0 ")
    return text


def make_pairs(n: int, seed: int = 7) -> tuple[list[tuple[Any, Any]], list[str]]:
    """N (output, label) pairs in a realistic mix, and the kind of each output."""
    rng = random.Random(seed)
    pairs: list[tuple[Any, Any]] = []
    kinds: list[str] = []
    arm_results: dict[tuple[str, bool, Any], ArmResult] = {}

    def arm_result(answer: str, ok: bool = True, kind: Any = None) -> ArmResult:
        key = (answer, ok, kind)
        if key not in arm_results:  # a pool: pydantic models are built by arms, not by us
            arm_results[key] = ArmResult(
                ok=ok, answer=answer, text=f"{answer} (because ...)", failure_kind=kind,
                usage=Usage(tokens_in=120, tokens_out=8),
            )  # fmt: skip
        return arm_results[key]

    for _ in range(n):
        city = rng.choice(CITIES)
        answer = city if rng.random() < 0.6 else rng.choice(ANSWERS)
        roll = rng.random()
        label: Any = city
        if rng.random() < 0.15:
            label = [city, f"{city}, France", city.upper()]
        elif rng.random() < 0.03:
            label = None
        if roll < 0.10:  # failures: the arm says so, ok=False, or no text at all
            sub = rng.random()
            if sub < 0.3:
                output: Any = {"answer": answer, "failure_kind": rng.choice(FAILURE_KINDS)}
            elif sub < 0.5:
                output = arm_result(answer, ok=False, kind="error")
            elif sub < 0.7:
                output = None
            elif sub < 0.85:
                output = " \n"
            else:
                output = "NOT_IN_DOCUMENT"
            kind = "failure"
        elif roll < 0.50:
            output, kind = _variant(rng, answer), "str"
        elif roll < 0.70:
            output, kind = {"answer": _variant(rng, answer), "usage": {"tokens_in": 90}}, "mapping"
        elif roll < 0.85:
            output, kind = arm_result(_variant(rng, answer)), "ArmResult"
        else:
            number = rng.choice([100000, 100000.0, 2.5, 1e-05, 42, 1997])
            label = number if rng.random() < 0.8 else [number, str(number)]
            output = rng.choice([number, str(number), f" {number} ", "1e+05", 100000])
            kind = "number"
        pairs.append((output, label))
        kinds.append(kind)
    return pairs, kinds


def floor_texts(pairs: list[tuple[Any, Any]]) -> list[tuple[str, str]]:
    """The same pairs as two plain strings each, for the floor."""
    texts = []
    for output, label in pairs:
        if isinstance(output, str):
            out = output
        elif isinstance(output, dict):
            out = str(output.get("answer", ""))
        elif isinstance(output, ArmResult):
            out = output.answer or ""
        else:
            out = str(output)
        first = label[0] if isinstance(label, list) else label
        texts.append((out, str(first)))
    return texts


def run_floor(texts: list[tuple[str, str]]) -> int:
    same = 0
    for out, label in texts:
        if " ".join(out.casefold().split()) == " ".join(label.casefold().split()):
            same += 1
    return same


def run_squad_fold(folded: list[tuple[str, str]]) -> int:
    """``squad_fold`` of each answer, ``==`` its label folded beforehand."""
    same = 0
    for out, label in folded:
        if squad_fold(out) == label:
            same += 1
    return same


def run_official(texts: list[tuple[str, str]]) -> int:
    """The official evaluate-v2.0.py ``normalize_answer`` of both sides, ``==``."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    from squad_official import normalize_answer  # the tests' transcription of the script

    same = 0
    for out, label in texts:
        if normalize_answer(out) == normalize_answer(label):
            same += 1
    return same


def run_scorer(scorer: Scorer, pairs: list[tuple[Any, Any]]) -> int:
    fn = scorer.fn
    same = 0
    for output, label in pairs:
        if fn(None, output, label).correct:
            same += 1
    return same


def run_exact(pairs: list[tuple[Any, Any]]) -> int:
    return run_scorer(hr_scorer_exact(), pairs)


SCORERS: dict[str, Callable[[], Scorer]] = {
    "exact": hr_scorer_exact,
    "exact squad": lambda: hr_scorer_exact(normalise="squad"),
    "f1": hr_scorer_f1,
}


def rep_times(works: list[Callable[[], int]], repeat: int) -> list[list[float]]:
    """The CPU time of each piece of work in each rep, passes interleaved (the machine is
    shared: CPU time of this process, not wall time, so other processes' load does not
    count); ``[work][rep]``."""
    times: list[list[float]] = [[] for _ in works]
    for _ in range(repeat):
        for index, work in enumerate(works):
            gc.collect()
            gc.disable()
            start = time.process_time()
            work()
            times[index].append(time.process_time() - start)
            gc.enable()
    return times


def best_times(works: list[Callable[[], int]], repeat: int) -> list[float]:
    """The best CPU time of each piece of work over interleaved reps."""
    return [min(t) for t in rep_times(works, repeat)]


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation (``statistics.quantiles``' inclusive method)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="pairs to score")
    parser.add_argument("--repeat", type=int, default=10,
                        help="interleaved reps (median and p90 of each rep's ratio)")
    parser.add_argument("--by-kind", action="store_true", help="also time each kind of output")
    parser.add_argument("--scorer", choices=["all", *SCORERS], default="all",
                        help="which scorer to time (default: all)")
    parser.add_argument("--fold-floors", action="store_true",
                        help="also time squad_fold alone and the official normalize_answer")
    args = parser.parse_args(argv)

    pairs, kinds = make_pairs(args.n)
    texts = floor_texts(pairs)
    mix = {k: kinds.count(k) for k in sorted(set(kinds))}
    several = sum(isinstance(label, list) for _, label in pairs)
    unlabelled = sum(label is None for _, label in pairs)
    print(f"pairs: {args.n:,}  mix: {mix}  several labels: {several:,}  no label: {unlabelled:,}")

    names = list(SCORERS) if args.scorer == "all" else [args.scorer]
    scorers = [SCORERS[name]() for name in names]
    works: list[Callable[[], int]] = [lambda: run_floor(texts)]
    works += [lambda s=scorer: run_scorer(s, pairs) for scorer in scorers]  # type: ignore[misc]
    if args.fold_floors:
        folded = [(out, squad_fold(label)) for out, label in texts]
        works += [lambda: run_squad_fold(folded), lambda: run_official(texts)]
    floor_reps, *scorer_reps = rep_times(works, args.repeat)
    fold_reps = scorer_reps[len(scorers):]
    scorer_reps = scorer_reps[:len(scorers)]
    floor_s = quantile(floor_reps, 0.5)
    print(f"floor (casefold+split/join+==): {args.n / floor_s:>12,.0f} outputs/s  "
          f"(median {floor_s:.3f} s of {args.repeat} reps)")
    for name, scorer, reps in zip(names, scorers, scorer_reps, strict=True):
        ratios = [s / f for s, f in zip(reps, floor_reps, strict=True)]  # each rep's own floor
        median, p90 = quantile(ratios, 0.5), quantile(ratios, 0.9)
        verdict = "within" if median <= TARGET_RATIO else "MISSES"
        correct = run_scorer(scorer, pairs)
        seconds = quantile(reps, 0.5)
        print(f"{name + ' (.fn)':<31} {args.n / seconds:>12,.0f} outputs/s  "
              f"ratio median {median:.2f}x p90 {p90:.2f}x best {min(ratios):.2f}x "
              f"({verdict} the {TARGET_RATIO:.0f}x target)  correct {correct:,}")

    for name, reps in zip(["squad_fold(answer) == folded label", "official normalize_answer x2"],
                          fold_reps, strict=False):  # none without --fold-floors
        ratios = [s / f for s, f in zip(reps, floor_reps, strict=True)]
        print(f"{name:<36} {args.n / quantile(reps, 0.5):>10,.0f} outputs/s  ratio median "
              f"{quantile(ratios, 0.5):.2f}x p90 {quantile(ratios, 0.9):.2f}x "
              f"best {min(ratios):.2f}x")

    if args.by_kind:
        first = scorers[0]
        print(f"by kind of output ({names[0]}):")
        for kind in mix:
            subset = [p for p, k in zip(pairs, kinds, strict=True) if k == kind]
            sub_texts = floor_texts(subset)
            sub_floor, sub_scorer = best_times(
                [lambda t=sub_texts: run_floor(t), lambda s=subset: run_scorer(first, s)],  # type: ignore[misc]
                args.repeat,
            )
            print(
                f"  {kind:<10} {len(subset) / sub_scorer:>12,.0f} outputs/s  "
                f"ratio {sub_scorer / sub_floor:.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
