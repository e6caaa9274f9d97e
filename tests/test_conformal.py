"""Calibrated forecast intervals: the Mondrian split-conformal half-widths against the
textbook quantile, their coverage against the nominal level (also per node-forecast level of
a synthetic node design), the coarser-group fallback, the clipped centre, the timing groups
against the schedule by hand, the empty calibration split, and the intervals in cards and
timelines."""

import json
import math
import shutil

import numpy as np
import pytest

from wdn_explain.conformal import (
    CONFIDENCE,
    SHARE_GROUPS,
    absolute_errors,
    calibrate,
    forecast_groups,
    half_widths,
    interval_risk,
    intervals,
    node_bins,
    node_level,
    share_level,
    timing,
    uncertainty_notice,
)
from wdn_explain.errors import DataError
from wdn_explain.scenario import ScenarioConfig


def _split_conformal_quantile(residuals: np.ndarray, confidence: float) -> float:
    """The textbook split-conformal half-width: the ceil((n + 1) c)-th smallest |error|."""
    ordered = np.sort(np.abs(residuals))
    rank = math.ceil((len(ordered) + 1) * confidence)
    return float(ordered[rank - 1]) if rank <= len(ordered) else math.inf


def test_half_widths_are_the_split_conformal_quantile_per_group():
    gen = np.random.default_rng(0)
    residuals = np.concatenate([gen.normal(0, 0.01, 400), gen.normal(0, 0.1, 300)])
    bins = np.array(["calm"] * 400 + ["switch"] * 300)
    record = calibrate(residuals, bins)
    assert record["confidence"] == CONFIDENCE
    for group, sel in (("calm", slice(0, 400)), ("switch", slice(400, None))):
        expected = _split_conformal_quantile(residuals[sel], CONFIDENCE)
        assert record["half_width"][group] == pytest.approx(expected)
    assert record["pooled_half_width"] == pytest.approx(
        _split_conformal_quantile(residuals, CONFIDENCE)
    )
    assert record["n_per_group"] == {"calm": 400, "switch": 300}


def test_coverage_matches_the_nominal_level_in_every_group():
    """Fresh errors of the same distributions fall inside at the nominal rate, per group
    (the pooled interval would over-cover the calm group and under-cover the other)."""
    gen = np.random.default_rng(1)
    scales = {"calm": 0.01, "switch": 0.1}
    calib_bins = np.repeat(list(scales), 2000)
    calib = gen.normal(0, [scales[b] for b in calib_bins])
    record = calibrate(calib, calib_bins)
    test_bins = np.repeat(list(scales), 20000)
    truth = gen.normal(0, [scales[b] for b in test_bins]) + 0.5
    lower, upper = intervals(record, np.full(len(truth), 0.5), test_bins)
    for group in scales:
        sel = test_bins == group
        coverage = ((truth[sel] >= lower[sel]) & (truth[sel] <= upper[sel])).mean()
        assert abs(coverage - CONFIDENCE) < 0.02, group


def test_share_levels_by_hand():
    forecast = np.array([-0.1, 0.0, 0.0099, 0.01, 0.3, 0.4999, 0.5, 1.0, 1.2])
    assert (
        share_level(forecast).tolist()
        == ["share < 0.01"] * 3 + ["share 0.01-0.5"] * 3 + ["share >= 0.5"] * 3
    )
    groups = forecast_groups(np.repeat("reservoir/constant/steady", 9), forecast, False)
    assert groups[-1] == "share >= 0.5/reservoir/constant/steady"
    old_card = {"confidence": 0.9, "half_width": {"reservoir": 0.04}, "pooled_half_width": 0.2}
    old_card["groups"] = "injection/pattern/timing"  # calibrated before the share's level
    sample = np.repeat("reservoir/constant/steady", 9)
    old_groups = forecast_groups(sample, forecast, False, groups=old_card["groups"])
    assert old_groups.tolist() == sample.tolist()
    assert (half_widths(old_card, old_groups) == 0.04).all()  # its group's, not the pooled


def test_share_design_gets_each_levels_known_quantile_and_covers_it():
    """A synthetic share design whose error scale is known per (sample group, share level):
    normal errors of sd 0.001 below a share of 0.01, 0.01 between and 0.03 from 0.5, doubled
    in the reservoir group. Each group's half-width is its known 90 % quantile of |error|
    (1.645 sd), and a fresh draw is covered at the nominal level in every share level; the
    sample groups alone (the grouping before the share level) under-cover high shares."""
    gen = np.random.default_rng(4)
    sd = {"share < 0.01": 0.001, "share 0.01-0.5": 0.01, "share >= 0.5": 0.03}
    samples = np.array(["booster/constant/steady", "reservoir/intermittent/switch ahead"])

    def draw(n: int) -> tuple[np.ndarray, ...]:
        sample = gen.choice(samples, n)
        forecast = gen.choice([0.0, 0.2, 0.7], n, p=[0.2, 0.6, 0.2]) + gen.uniform(0, 0.005, n)
        scale = np.array([sd[v] for v in share_level(forecast)])
        scale *= np.where(sample == samples[1], 2.0, 1.0)
        return forecast, forecast + gen.normal(0, 1, n) * scale, sample

    forecast, truth, sample = draw(40_000)
    record = calibrate(
        absolute_errors(truth, forecast, (-np.inf, np.inf)),
        forecast_groups(sample, forecast, False),
    )
    z90 = 1.6449  # the standard normal's 95 % quantile: |error| <= z90 sd 90 % of the time
    for group, width in record["half_width"].items():
        if group.count("/") == 3:
            factor = 2.0 if "reservoir" in group else 1.0
            assert width == pytest.approx(z90 * sd[group.split("/")[0]] * factor, rel=0.06)
    forecast, truth, sample = draw(40_000)
    level = share_level(forecast)
    shared = calibrate(absolute_errors(truth, forecast, (-np.inf, np.inf)), sample)
    for rec, bins in ((record, forecast_groups(sample, forecast, False)), (shared, sample)):
        lower, upper = intervals(rec, forecast, bins, (-np.inf, np.inf))
        covered = (truth >= lower) & (truth <= upper)
        high = covered[level == "share >= 0.5"].mean()
        if rec is shared:
            assert high < CONFIDENCE - 0.1
            continue
        for name in sd:
            assert abs(covered[level == name].mean() - CONFIDENCE) < 0.015, name


def test_node_levels_by_hand():
    forecast = np.array([-0.3, 0.0, 0.0049, 0.005, 0.049, 0.05, 0.19, 0.2, 0.49, 0.5, 2.0])
    assert node_level(forecast).tolist() == [
        "dry/< 0.005",
        "dry/< 0.005",
        "dry/< 0.005",
        "dry/0.005-0.05",
        "dry/0.005-0.05",
        "chlorinated/0.05-0.2",
        "chlorinated/0.05-0.2",
        "chlorinated/0.2-0.5",
        "chlorinated/0.2-0.5",
        "chlorinated/>= 0.5",
        "chlorinated/>= 0.5",
    ]
    bins = node_bins(
        np.array(["booster/constant/steady", "reservoir/failure/steady"]), [[0, 1]] * 2
    )
    assert bins.tolist() == [
        ["booster/constant/steady/dry/< 0.005", "booster/constant/steady/chlorinated/>= 0.5"],
        ["reservoir/failure/steady/dry/< 0.005", "reservoir/failure/steady/chlorinated/>= 0.5"],
    ]


def test_small_and_unseen_groups_take_the_coarser_group():
    """A group with too few errors for 90 % (5 < 9) and a group never calibrated take the
    textbook quantile of their longest calibrated prefix; a group with no calibrated prefix
    takes the pooled one."""
    gen = np.random.default_rng(2)
    residuals = np.abs(np.concatenate([gen.normal(0, 0.1, 200), gen.normal(0, 1.0, 5)]))
    residuals = np.concatenate([residuals, np.abs(gen.normal(0, 0.01, 100))])
    bins = np.array(["a/wide"] * 200 + ["a/rare"] * 5 + ["b"] * 100)
    record = calibrate(residuals, bins)
    a = _split_conformal_quantile(residuals[:205], CONFIDENCE)
    assert set(record["half_width"]) == {"a", "a/wide", "b"}
    assert record["n_per_group"] == {"a": 205, "a/wide": 200, "b": 100}
    assert record["half_width"]["a"] == pytest.approx(a)
    served = half_widths(record, np.array([["a/rare", "a/never"], ["c/never", "b"]]))
    expected = [
        [a, a],
        [_split_conformal_quantile(residuals, CONFIDENCE), record["half_width"]["b"]],
    ]
    np.testing.assert_allclose(served, expected)


def test_interval_is_centred_on_the_forecast_within_the_label_range():
    """A negative node forecast: the error counts from 0 (the centre served), and the
    interval is [0, half-width], not the empty-looking [0, 0] of the raw forecast."""
    record = {"half_width": {"g": 0.1}, "pooled_half_width": 1.0}
    forecast, truth = np.array([-0.5, 0.3, 1.2]), np.array([0.0, 0.0, 1.0])
    lower, upper = intervals(record, forecast, np.array(["g"] * 3), (0.0, 1.0))
    np.testing.assert_allclose(lower, [0.0, 0.2, 0.9])
    np.testing.assert_allclose(upper, [0.1, 0.4, 1.0])
    np.testing.assert_allclose(absolute_errors(truth, forecast, (0.0, 1.0)), [0.0, 0.3, 0.0])


def test_node_design_covers_the_nominal_level_in_every_forecast_level():
    """A synthetic node design: dry nodes (truth 0, forecasts of either sign near 0) and
    chlorinated ones whose errors are largest at the front (0.05-0.2 mg/L), in two sample
    groups. Intervals calibrated on one draw cover a fresh draw at the nominal level in every
    (sample group, forecast level) and in every sample group (binomial tolerance)."""
    gen = np.random.default_rng(3)
    spread = {"0.05-0.2": 0.3, "0.2-0.5": 0.1, ">= 0.5": 0.05}

    def draw(n: int) -> tuple[np.ndarray, ...]:
        samples = np.repeat(["booster/constant/steady", "reservoir/failure/switch ahead"], n)
        forecast = gen.choice([0.0, 0.1, 0.3, 1.0], size=(2 * n, 8), p=[0.6, 0.1, 0.1, 0.2])
        forecast = forecast + gen.normal(0, 0.002, forecast.shape)
        level = node_level(forecast)
        scale = np.array([[spread.get(v.split("/")[-1], 0.0) for v in row] for row in level])
        scale *= np.where(samples == "booster/constant/steady", 1.0, 2.0)[:, None]
        truth = np.where(
            np.char.startswith(level, "dry"),
            0.0,
            np.abs(forecast + gen.normal(0, 1, scale.shape) * scale),
        )
        return forecast, truth, node_bins(samples, forecast), samples

    forecast, truth, bins, _ = draw(1500)
    record = calibrate(absolute_errors(truth, forecast, (0.0, np.inf)), bins)
    forecast, truth, bins, samples = draw(4000)
    lower, upper = intervals(record, forecast, bins, (0.0, np.inf))
    covered = (truth >= lower) & (truth <= upper)
    for groups in (bins, np.repeat(samples[:, None], bins.shape[1], axis=1)):
        for group in np.unique(groups):
            sel = covered[groups == group]
            assert abs(sel.mean() - CONFIDENCE) < 4 * math.sqrt(0.09 / len(sel)) + 0.01, group


def test_trace_forecasts_of_a_dry_node_get_their_known_conditional_quantile():
    """Dry node forecasts: 90 % sure ones (0.001 mg/L, truth 0) and 10 % traces (0.02 mg/L)
    where chlorine arrives in 3 of 10 cases (truth 0.02 + U(0, 0.2)), else the truth is 0.
    The traces' 90 % quantile of |error| solves 0.7 + 0.3 q / 0.2 = 0.9: q = 0.4 / 3 mg/L.
    Split by trace, their half-width is that quantile and a fresh draw of traces is covered
    at the nominal level; one dry group gives them the sure ones' half-width (0.02 at most),
    and the arrivals go uncovered."""
    gen = np.random.default_rng(5)

    def draw(n: int) -> tuple[np.ndarray, ...]:
        trace = gen.random((n, 4)) < 0.1
        forecast = np.where(trace, 0.02, 0.001)
        arrives = trace & (gen.random(trace.shape) < 0.3)
        truth = np.where(arrives, 0.02 + gen.uniform(0, 0.2, trace.shape), 0.0)
        return forecast, truth, trace, arrives, np.repeat("booster/constant/steady", n)

    forecast, truth, _, _, samples = draw(20000)
    errors = absolute_errors(truth, forecast, (0.0, np.inf))
    split = calibrate(errors, node_bins(samples, forecast))
    one = calibrate(errors, np.full(forecast.shape, "dry"))
    forecast, truth, trace, arrives, samples = draw(20000)
    bins = node_bins(samples, forecast)
    assert half_widths(split, bins)[trace] == pytest.approx(0.4 / 3, rel=0.05)
    lower, upper = intervals(split, forecast, bins, (0.0, np.inf))
    covered = (truth >= lower) & (truth <= upper)
    assert abs(covered[trace].mean() - CONFIDENCE) < 0.02
    assert covered[arrives].mean() == pytest.approx(2 / 3, abs=0.03)
    lower, upper = intervals(one, forecast, np.full(bins.shape, "dry"), (0.0, np.inf))
    assert ((truth >= lower) & (truth <= upper))[arrives].mean() < 0.1


def test_risk_bands_give_each_band_its_known_conditional_quantile_and_the_lower_tail_rule():
    """Chlorinated node forecasts whose error is uniform on (-w, w), w known per band of the
    risk of non-compliance (0.01, 0.2, 0.4 mg/L): the 90 % quantile of |error| in a band is
    0.9 w. Calibrated with the risk bands, each band's half-width is that quantile and a fresh
    draw is covered at the nominal level in every band; without them one half-width for all
    under-covers the widest band. Where the risk is at least (1 - 0.9) / 2, the lower bound
    is 0 (the truth is below the line with more than the interval's lower tail)."""
    gen = np.random.default_rng(11)
    width = {0.02: 0.01, 0.5: 0.2, 0.95: 0.4}  # a risk in each band -> its error's half-range

    def draw(n: int) -> tuple[np.ndarray, ...]:
        risk = gen.choice(list(width), size=(n, 4))
        forecast = gen.uniform(0.6, 1.5, size=risk.shape)
        w = np.vectorize(width.get)(risk)
        truth = forecast + gen.uniform(-1, 1, size=risk.shape) * w
        return forecast, truth, risk, np.repeat("booster/constant/steady", n)

    forecast, truth, risk, samples = draw(6000)
    errors = absolute_errors(truth, forecast, (0.0, np.inf))
    banded = calibrate(errors, node_bins(samples, forecast, risk)) | {"risk_bands": [0.1, 0.9]}
    plain = calibrate(errors, node_bins(samples, forecast))
    forecast, truth, risk, samples = draw(6000)
    bins = node_bins(samples, forecast, risk)
    assert np.allclose(half_widths(banded, bins), 0.9 * np.vectorize(width.get)(risk), rtol=0.05)
    assert interval_risk(plain, risk) is None and interval_risk(banded, risk) is risk
    lower, upper = intervals(banded, forecast, bins, (0.0, np.inf), risk)
    reaches = risk >= (1 - CONFIDENCE) / 2
    assert (lower[reaches] == 0).all()
    half = half_widths(banded, bins)
    assert np.allclose(lower[~reaches], forecast[~reaches] - half[~reaches])
    covered = (truth >= lower) & (truth <= upper)
    assert abs(covered[risk == 0.02].mean() - CONFIDENCE) < 0.02  # both bounds conformal
    for band in (0.5, 0.95):  # the lower bound at 0: the upper one's tail only is missed
        assert abs(covered[risk == band].mean() - (1 + CONFIDENCE) / 2) < 0.02, band
    lower, upper = intervals(plain, forecast, node_bins(samples, forecast), (0.0, np.inf))
    assert ((truth >= lower) & (truth <= upper))[risk == 0.95].mean() < 0.8


def test_empty_calibration_is_one_line():
    with pytest.raises(DataError, match=r"^calibration split of 'x' is empty$"):
        calibrate(np.array([]), np.array([], dtype=str), where="'x'")


def test_timing_groups_follow_the_schedule_by_hand():
    config = ScenarioConfig(
        duration_s=3600,
        injection_mode="intermittent",
        injection_start_s=600,
        intermittent_on_s=900,
        intermittent_off_s=900,
    )
    times = np.arange(0, 3601, 300)
    # on at 600..1200, off 1500..2100, on 2400..3000, off 3300..: switches at 600, 1500, 2400, 3300
    switches = np.array([600, 1500, 2400, 3300])
    expected = []
    for t in times:
        if ((switches > t) & (switches <= t + 2 * 300)).any():
            expected.append("switch ahead")
        elif ((switches <= t) & (switches > t - 2 * 300)).any():
            expected.append("just switched")
        else:
            expected.append("steady")
    assert timing(config, times, horizon=2).tolist() == expected


def test_wide_interval_notice_in_plain_words():
    record = {"confidence": 0.9}
    times = np.array([0, 300, 600])
    assert uncertainty_notice(record, np.array([0.1] * 3), np.array([0.2] * 3), times) is None
    notice = uncertainty_notice(record, np.array([0.1, 0.1, 0.3]), np.array([0.2, 0.5, 0.4]), times)
    assert notice.startswith("uncertain forecast at 1 of 3 steps: the model's 90% interval")
    assert "widest at 5 min: 0.10-0.50" in notice


def test_monitoring_model_intervals_cover_near_nominal(monitoring_model):
    """The tiny design's card: intervals from the calibration split, coverage on the test
    split near the nominal level (54 forecasts: within three binomial standard errors)."""
    _, card = monitoring_model
    conformal, metrics = card["conformal"], card["metrics"]
    assert conformal["confidence"] == CONFIDENCE and conformal["n_calibration"] > 0
    n = metrics["n_samples"]
    assert metrics["coverage"] >= CONFIDENCE - 3 * math.sqrt(0.09 / n)
    for rows in metrics["per_factor"].values():
        assert all(0 <= r["coverage"] <= 1 for r in rows)


def test_calibrating_without_calibration_scenarios_writes_nothing(
    tmp_path, monitoring_model, monitoring_dir
):
    from wdn_explain.training import calibrate_model
    from wdn_explain.waq import MANIFEST

    model_dir = tmp_path / "model"
    shutil.copytree(monitoring_model[0], model_dir)
    small = tmp_path / "small"
    small.mkdir()
    manifest = json.loads((monitoring_dir / MANIFEST).read_text())
    (small / MANIFEST).write_text(json.dumps({**manifest, "n_scenarios": 4}))
    for i in range(4):
        name = f"scenario_{i:05d}.npz"
        shutil.copy(monitoring_dir / name, small / name)
    before = (model_dir / "card.json").read_bytes()
    with pytest.raises(DataError, match=r"calibration split of '.*small' is empty \(0 of 4"):
        calibrate_model(model_dir, small)
    assert (model_dir / "card.json").read_bytes() == before


def test_share_card_groups_are_the_ones_calibrate_and_serving_form(
    tmp_path, monitoring_model, monitoring_dir
):
    """Round trip through the card: ``calibrate`` rewrites the card with the half-widths
    recomputed here from the calibration split's errors, each grouped by hand (the sample's
    share forecast's band, then the sample's schedule group); the timeline of a scenario serves each
    step the half-width of its own hand-formed group (or its longest calibrated prefix)."""
    from wdn_explain.conformal import mondrian_bins, prefixes
    from wdn_explain.dataset import WaqDataset
    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.training import calibrate_model, predict

    model_dir = tmp_path / "model"
    shutil.copytree(monitoring_model[0], model_dir)
    calibrate_model(model_dir, monitoring_dir)
    model, card = load_model(model_dir)
    calib = WaqDataset.for_card(card, monitoring_dir, "calib")
    pred = predict(model, calib)
    band = np.array(["share < 0.01", "share 0.01-0.5", "share >= 0.5"])
    by_hand = np.char.add(
        np.char.add(band[np.digitize(pred, [0.01, 0.5])], "/"), calib.mondrian_bins()
    )
    expected = calibrate(np.abs(calib.targets() - np.clip(pred, 0, 1)), by_hand)
    assert card.conformal["groups"] == SHARE_GROUPS
    assert any(g.startswith("share 0.01-0.5/") for g in card.conformal["half_width"])
    assert card.conformal["half_width"] == pytest.approx(expected["half_width"])

    spec = ScenarioConfig(
        duration_s=3600, injection_node="12", injection_mode="intermittent", seed=3
    )
    timeline, _ = explain_scenario(spec, model_dir)
    net = load_network(card.data.network.name)
    sample = mondrian_bins(spec, timeline.times_s, card.input_spec.horizon, net.reservoirs)
    groups = np.char.add(
        np.char.add(band[np.digitize(timeline.forecast, [0.01, 0.5])], "/"), sample
    )
    table = card.conformal["half_width"]
    pooled = card.conformal["pooled_half_width"]
    half = np.array([next((table[p] for p in prefixes(g) if p in table), pooled) for g in groups])
    centre = np.clip(timeline.forecast, 0, 1)
    inside = timeline.upper < 1  # not clipped to the share's range
    assert inside.any()
    np.testing.assert_allclose((timeline.upper - centre)[inside], half[inside], atol=1e-6)


def test_timeline_holds_the_interval(tmp_path, monitoring_model):
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.timeline import Timeline

    spec = ScenarioConfig(
        duration_s=3600, injection_node="12", injection_mode="intermittent", seed=3
    )
    out = tmp_path / "t.npz"
    timeline, _ = explain_scenario(spec, monitoring_model[0], out=out)
    share = np.clip(timeline.forecast, 0, 1)  # the interval lies within [0, 1]
    assert (timeline.lower <= share + 1e-6).all() and (share <= timeline.upper + 1e-6).all()
    assert timeline.meta["interval"]["confidence"] == CONFIDENCE
    back = Timeline.load(out)
    np.testing.assert_array_equal(back.lower, timeline.lower)
    np.testing.assert_array_equal(back.upper, timeline.upper)
    assert back.meta["uncertainty"] == timeline.meta["uncertainty"]
