"""The uncertainty notice (issue 31) against an oracle that knows which scenarios are bad:
synthetic held-out scenarios whose error the test sets by a rule (intermittent boosters at
two trunk junctions err 6x, stronger sources err more), the notice designed on one draw and
measured on another; the features counted by hand from a schedule; a timeline carries the
notice its card's record gives."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from wdn_explain.errors import DataError
from wdn_explain.model_folder import write_card
from wdn_explain.notice import (
    MIN_SCENARIOS,
    design_notice,
    expected_maes,
    hard_scenario_notice,
    scenario_features,
)
from wdn_explain.scenario import ScenarioConfig

NODES = ["2", "3", "12", "20", "28", "reservoir"]
PATTERNS = ["constant", "intermittent", "failure"]


def draw(n: int, seed: int) -> tuple[list[dict[str, float]], np.ndarray, np.ndarray]:
    """n scenarios' features, their MAE by the oracle's rule (with noise) and which are bad."""
    rng = np.random.default_rng(seed)
    features, mae, bad = [], [], []
    for _ in range(n):
        node, pattern = rng.choice(NODES), rng.choice(PATTERNS)
        strength, demand = rng.uniform(0.3, 2.0), rng.uniform(0.7, 1.3)
        hard = node in ("2", "3") and pattern == "intermittent"
        features.append(
            {
                f"node={node}": 1.0,
                f"pattern={pattern}": 1.0,
                "strength_mg_l": strength,
                "demand_scale": demand,
                "switch_share": rng.uniform(0, 0.4),
            }
        )
        mae.append(0.01 * (6.0 if hard else 1.0) * (0.5 + strength / 2) * rng.lognormal(0, 0.15))
        bad.append(hard)
    return features, np.array(mae), np.array(bad)


def test_notice_fires_on_the_bad_scenarios_and_rarely_on_the_good():
    features, mae, bad = draw(300, seed=1)
    record = design_notice(features, mae)
    assert record["fires_on_worst"] >= 0.7 and record["fires_on_best_half"] <= 0.1
    fresh, fresh_mae, fresh_bad = draw(600, seed=2)  # measured on another draw
    fires = np.array([hard_scenario_notice(record, f) is not None for f in fresh])
    worst = fresh_mae >= np.quantile(fresh_mae, 0.95)
    assert fresh_bad[worst].all()  # the worst 5 % are the rule's
    assert fires[worst].mean() >= 0.9 and fires[fresh_bad].mean() >= 0.6
    assert fires[fresh_mae <= np.median(fresh_mae)].mean() <= 0.05
    assert fires[~fresh_bad].mean() <= 0.05  # seldom where the rule says good
    # the expected error follows the rule (additively in logs: the pair's node and schedule)
    hard = {"node=2": 1.0, "pattern=intermittent": 1.0, "strength_mg_l": 1.0}
    easy = {"node=12": 1.0, "pattern=constant": 1.0, "strength_mg_l": 1.0}
    ratio = expected_maes(record, [hard, easy])
    assert ratio[0] / ratio[1] > 2.5
    # said in the forecast's unit: the expected error and how many times the typical it is
    expected, typical = expected_maes(record, [hard])[0], record["typical_mae"]
    text = hard_scenario_notice(record, hard, node_level=True)
    assert text.startswith("uncertain forecast: on scenarios like this one the model is usually")
    assert f"off by about {expected:.2g} mg/L per node, {expected / typical:.1f} times" in text
    share = hard_scenario_notice(record, hard)
    assert f"off by about {100 * expected:.2g}% of the nodes" in share
    # the typical error is said to be the median scenario's, not the test MAE (a mean)
    assert f"the median scenario it was not trained on ({100 * typical:.2g}% of the nodes;" in share


def test_notice_needs_enough_finite_scenarios():
    features, mae, _ = draw(MIN_SCENARIOS - 1, seed=3)
    with pytest.raises(DataError, match=rf"at least {MIN_SCENARIOS} held-out scenarios \(got"):
        design_notice(features, mae)
    features, mae, _ = draw(MIN_SCENARIOS, seed=3)
    mae[4] = np.nan
    with pytest.raises(DataError, match="finite MAE"):
        design_notice(features, mae)


def test_scenario_features_counted_by_hand():
    """A booster at 12 starting at 30 min in a 1-hour scenario at 5-minute reports, horizon 4:
    the forecasts at 10, 15, 20 and 25 min (of 0-40) see the switch on within 20 min."""
    config = ScenarioConfig(
        duration_s=3600,
        reporting_step_s=300,
        injection_node="12",
        injection_start_s=1800,
        injection_strength_mg_l=1.5,
    )
    times = np.arange(0, 3601, 300)
    got = scenario_features(config, times, 4, ("1",))
    assert got["node=12"] == 1.0 and got["pattern=constant"] == 1.0
    assert got["switch_share"] == pytest.approx(4 / 9)
    assert got["strength_mg_l"] == 1.5 and got["start_h"] == 0.5
    at_reservoir = scenario_features(
        config.model_copy(update={"injection_node": "1"}), times, 4, ("1",)
    )
    assert "node=reservoir" in at_reservoir


def test_timeline_carries_the_cards_notice(tmp_path, monitoring_model):
    from wdn_explain.pipeline import explain_scenario

    folder = tmp_path / "model"
    shutil.copytree(monitoring_model[0], folder)
    card = json.loads((folder / "card.json").read_text())
    spec = ScenarioConfig(duration_s=3600, injection_node="12", injection_mode="intermittent")
    record = {
        "method": "test",
        "intercept": np.log(0.02),
        "coefficients": {"node=12": np.log(3.0)},  # scenarios at 12 err 3x
        "typical_mae": 0.02,
        "n_scenarios": 100,
    }
    for threshold, fires in ((0.05, True), (0.07, False)):
        write_card(folder, card | {"notice": record | {"threshold_mae": threshold}})
        timeline, _ = explain_scenario(spec, folder, out=tmp_path / f"{threshold}.npz")
        notice = timeline.meta["uncertainty"]
        assert (notice is not None) == fires
        if fires:
            assert (
                "off by about 6% of the nodes, 3.0 times its error on the median scenario it "
                "was not trained on (2% of the nodes; the test MAE under the model's name is "
                "the mean over every test forecast)"
            ) in notice
