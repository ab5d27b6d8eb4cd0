"""How many human labels a target width needs (hr_core.stats.label_plan,
hr_core.judge.labels_needed, ``hr plan --label-width``): hand-computed examples, the
pilot and the judge record as evidence, and the CLI's lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from cli_support import hr

from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.human_labels import HumanLabelError, import_labels, read_labels, sample_run
from hr_core.judge.labels_needed import ArmLabelPlan, RunLabelPlan, judge_rates, plan_labels
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark
from hr_core.stats.intervals import effective_size_interval
from hr_core.stats.label_plan import LabelPlan, judge_moments, labels_for_width, ppi_se, true_share

Z = 1.959963984540054  # z for 95%


def _hand_se(n: int, big_n: int, var_y: float, var_f: float, cov: float) -> float:
    rest = big_n - n
    lam = min(max(cov / ((1 + n / rest) * var_f), 0.0), 1.0)
    return math.sqrt(lam * lam * var_f / rest + (var_y - 2 * lam * cov + lam * lam * var_f) / n)


def test_moments_of_a_judge_by_its_sensitivity_and_specificity() -> None:
    # p = 0.75, sens 0.9, spec 0.7: q = 0.675 + 0.075 = 0.75
    var_y, var_f, cov = judge_moments(0.75, 0.9, 0.7)
    assert var_y == pytest.approx(0.75 * 0.25)
    assert var_f == pytest.approx(0.75 * 0.25)
    assert cov == pytest.approx(0.75 * 0.25 * 0.6)  # p(1-p)(sens + spec - 1)
    # q = 0.6 judged correct, sens 0.9, spec 0.7: p = (0.6 + 0.7 - 1) / 0.6 = 0.5
    assert true_share(0.6, 0.9, 0.7) == pytest.approx(0.5)
    assert true_share(0.6, 0.5, 0.4) == 0.6  # a judge no better than chance says nothing
    with pytest.raises(ValueError, match="sensitivity must be between 0 and 1"):
        judge_moments(0.5, 1.5, 0.7)


def test_labels_for_a_width_by_hand() -> None:
    var_y, var_f, cov = 0.1875, 0.1875, 0.1125
    plan = labels_for_width(0.1, var_y, var_f, cov, judged=2000)
    # labels alone: z^2 var(y) / 0.05^2 = 3.8415 * 0.1875 / 0.0025 = 288.1 -> 289
    assert plan.labels_only == 289
    # PPI++: the first n with 2 z se(n) <= 0.1 (se(194) = 0.025540 > 0.025511 >= se(195))
    half = 0.05 / Z
    assert _hand_se(194, 2000, var_y, var_f, cov) > half >= _hand_se(195, 2000, var_y,
                                                                      var_f, cov)
    assert plan.labels_ppi == 195
    assert plan.lam == pytest.approx(0.1125 / ((1 + 195 / 1805) * 0.1875))
    assert plan.correlation == pytest.approx(0.6)
    # many judged items: n -> labels alone times (1 - rho^2) = 288.1 * 0.64 = 184.4
    assert labels_for_width(0.1, var_y, var_f, cov, judged=10**6).labels_ppi == 185
    se, _ = ppi_se(np.array([195]), 2000, var_y, var_f, cov)
    assert se[0] == pytest.approx(_hand_se(195, 2000, var_y, var_f, cov))


def test_the_shown_interval_needs_the_fewest_labels_that_give_its_width() -> None:
    """With the accuracy expected, the width is the one hr shows (the share interval of
    ppi_mean_ci): the planned n gives at most the width and n - 1 more."""
    var_y, var_f, cov = 0.1875, 0.1875, 0.1125
    plan = labels_for_width(0.1, var_y, var_f, cov, judged=2000, mean=0.75)
    normal = labels_for_width(0.1, var_y, var_f, cov, judged=2000)
    assert plan.labels_ppi is not None and plan.labels_only is not None
    assert normal.labels_ppi is not None and normal.labels_only is not None
    assert normal.labels_ppi <= plan.labels_ppi <= normal.labels_ppi * 1.1
    assert (plan.labels_only, plan.labels_ppi) == (309, 210)  # docs/statistics.md

    def shown(n: int) -> float:
        _, low, high = effective_size_interval(0.75, _hand_se(n, 2000, var_y, var_f, cov) ** 2,
                                               n, 2000)
        return high - low

    assert shown(plan.labels_ppi) <= 0.1 < shown(plan.labels_ppi - 1)
    alone = plan.labels_only
    widths = [effective_size_interval(0.75, var_y / n, n, n) for n in (alone - 1, alone)]
    assert widths[1].high - widths[1].low <= 0.1 < widths[0].high - widths[0].low


def test_a_useless_judge_needs_as_many_labels_and_too_narrow_is_none() -> None:
    plan = labels_for_width(0.1, 0.25, 0.25, 0.0, judged=5000)
    assert plan.labels_ppi == plan.labels_only == 385 and plan.lam == 0.0
    tight = labels_for_width(0.01, 0.25, 0.25, 0.2, judged=100)
    assert tight.labels_only is None and tight.labels_ppi is None


def test_judge_rates_from_a_validation_record() -> None:
    record = {"hash": "c57e", "config": {"mode": "grade"}, "n": 48,
              "confusion": {"pass": {"pass": 25, "fail": 7}, "fail": {"fail": 15, "pass": 1}}}
    assert judge_rates(record) == (25 / 32, 15 / 16)
    no_verdict = {**record, "confusion": {"pass": {"pass": 25, "no verdict": 7},
                                          "fail": {"fail": 15, "pass": 1}}}
    assert judge_rates(no_verdict) == (25 / 32, 15 / 16)  # a missing verdict is a mistake
    with pytest.raises(HumanLabelError, match="no item people labelled 'fail'"):
        judge_rates({**record, "confusion": {"pass": {"pass": 3}}})
    with pytest.raises(HumanLabelError, match="a 'pairwise' judge's record"):
        judge_rates({**record, "config": {"mode": "pairwise"}})


ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(60)]


def _good(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 4 else "nope"


def _bad(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 else "nope"


def _truth(arm: str, item: str, judged: bool) -> bool:
    """People disagree with the judge on items divisible by 3."""
    return not judged if int(item[1:]) % 3 == 0 else judged


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    config = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                             mode="grade")
    plan = plan_benchmark({"good": _good, "bad": _bad}, ITEMS, hr_scorer_judge(config),
                          runs=1, store=str(tmp_path / "store"), name="plan")
    apply_judge_policy(plan, "ignore", str(tmp_path / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


def _load(run_dir: Path):
    from hr_core.analysis.benchmark import Benchmark

    return Benchmark.load(run_dir)


def test_a_pilot_sample_gives_the_moments(run_dir: Path) -> None:
    bench = _load(run_dir)
    sample, _ = sample_run(bench, 20, seed=5)
    runs = bench.runs[["arm", "item_id", "correct"]]
    judged = {(r.arm, r.item_id): float(bool(r.correct)) for r in runs.itertuples()}
    import_labels(bench, [{"arm": arm, "item": item, "run": 1,
                           "label": _truth(arm, item, bool(judged[arm, item]))}
                          for arm in ("good", "bad") for item in sample.items])
    found = plan_labels(_load(run_dir), 0.3)
    assert found.source == "pilot" and found.sampled == 20
    assert "20 item(s)" in found.detail
    for arm in found.arms:
        y = np.array([float(_truth(arm.arm, i, bool(judged[arm.arm, i])))
                      for i in sample.items])
        f = np.array([judged[arm.arm, i] for i in sample.items])
        every = np.array([judged[arm.arm, f"q{i}"] for i in range(60)])
        by_hand = labels_for_width(0.3, float(y.var(ddof=1)), float(every.var()),
                                   float(np.cov(y, f)[0, 1]), judged=60, mean=y.mean())
        assert arm.plan[:5] == by_hand[:5]  # width, level, judged and both counts
        assert arm.plan[5:] == pytest.approx(by_hand[5:])
        assert arm.accuracy == pytest.approx(y.mean())
    assert found.items_with_ppi == max(a.plan.labels_ppi for a in found.arms)
    assert len(read_labels(run_dir)) == 40
    record = {"hash": "h", "config": {"mode": "grade"}, "n": 48,
              "confusion": {"pass": {"pass": 25, "fail": 7}, "fail": {"fail": 15, "pass": 1}}}
    named = plan_labels(_load(run_dir), 0.3, record=record, pilot=False)  # --judge-record
    assert named.source == "record" and "sensitivity 78.1%" in named.detail
    assert plan_labels(_load(run_dir), 0.3, record=record).source == "pilot"


def test_hr_plan_label_width_from_a_record_and_without_evidence(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = hr(capsys, "plan", run_dir, "--label-width", "0.3")
    assert code == 2
    assert "no pilot labels and no validation record" in " ".join((out + err).split())
    assert "Traceback" not in out + err
    record = tmp_path / "record.json"
    record.write_text(json.dumps({
        "hash": "ab" * 32, "config": {"mode": "grade"}, "n": 48, "agreement": 0.83,
        "agreement_ci": None, "kappa": None, "consistency": None, "no_consensus": 0,
        "parse_failures": 0, "errors": 0, "version": "0",
        "confusion": {"pass": {"pass": 25, "fail": 7}, "fail": {"fail": 15, "pass": 1}}}))
    code, out, _ = hr(capsys, "plan", run_dir, "--label-width", "0.3", "--judge-record",
                      record)
    assert code == 0, out
    text = " ".join(out.split())
    assert "sensitivity 78.1%, specificity 93.8%" in text
    expected = plan_labels(_load(run_dir), 0.3, record=json.loads(record.read_text()))
    need = expected.items_with_ppi
    assert need is not None
    assert f"Label {need} of the run's 60 items" in text and f"--n {need}" in text
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    code, out, err = hr(capsys, "plan", run_dir, "--label-width", "0.3", "--judge-record", bad)
    assert code == 2 and "not a judge validation record" in out + err


def test_an_arm_on_fewer_items_sizes_the_sample() -> None:
    """The sample is drawn from every item; an arm that ran on 45 of 69 gets labels on
    about 45/69 of it, so its 31 labelled items need 31 * 69 / 45 = 47.5 -> 48 sampled."""
    def arm(name: str, judged: int, ppi: int | None, alone: int | None) -> ArmLabelPlan:
        return ArmLabelPlan(name, 0.5, 0.5, LabelPlan(0.35, 0.95, judged, alone, ppi, 0.2, 0.5))

    found = RunLabelPlan("record", "", None, [arm("a", 69, 26, 37), arm("b", 45, 31, 37)], 69)
    assert found.items_with_ppi == 48 and found.items_alone == 57  # ceil(37 * 69 / 45)
    assert found.out_of_reach == []
    short = RunLabelPlan("record", "", None, [arm("a", 69, 26, 37), arm("b", 45, None, None)],
                         69)
    assert short.items_with_ppi == 26 and short.out_of_reach == ["b"]
