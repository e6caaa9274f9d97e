"""The compliance share a node model serves (wdn_explain.compliance): the estimator per kind
of injection chosen by MAEs recomputed here with plain loops, served row by row, and a card
whose choice is damaged refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wdn_explain.compliance import compliance_share, fit_compliance
from wdn_explain.errors import DataError

MINIMUM = 0.2
SHIPPED = Path(__file__).resolve().parents[1] / "models" / "hanoi-nodes"


def design(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A calibration design of 4 nodes where the truth is known: on booster rows the forecast
    is exact and the risk says 0.5 everywhere (thresholding wins); on reservoir rows every
    node's truth is below the minimum with probability 0.3, the forecast sits just above the
    line (thresholding counts none) and the risk says 0.3 (the mean risk wins)."""
    rng = np.random.default_rng(seed)
    n_rows, n = 400, 4
    kinds = np.where(np.arange(n_rows) % 2 == 0, "booster", "reservoir")
    truth = rng.uniform(0.0, 1.0, (n_rows, n))
    forecast, risk = truth.copy(), np.full((n_rows, n), 0.5)
    reservoir = kinds == "reservoir"
    below = rng.random((reservoir.sum(), n)) < 0.3
    truth[reservoir] = np.where(below, 0.1, 0.5)
    forecast[reservoir], risk[reservoir] = 0.25, 0.3
    return forecast, risk, truth, kinds


def plain_mae(estimate: list[float], truth: list[float]) -> float:
    return sum(abs(e - t) for e, t in zip(estimate, truth)) / len(truth)


def test_the_estimator_per_kind_is_the_one_with_the_lower_calibration_mae():
    forecast, risk, truth, kinds = design()
    record = fit_compliance(forecast, risk, truth, kinds, MINIMUM)
    for kind in ("booster", "reservoir", "any"):
        rows = [i for i in range(len(kinds)) if kind == "any" or kinds[i] == kind]
        true = [sum(v < MINIMUM for v in truth[i]) / 4 for i in rows]
        by_threshold = [sum(v < MINIMUM for v in forecast[i]) / 4 for i in rows]
        by_risk = [sum(risk[i]) / 4 for i in rows]
        mae = record["calibration_mae"][kind]
        assert mae["forecast"] == pytest.approx(plain_mae(by_threshold, true))
        assert mae["risk"] == pytest.approx(plain_mae(by_risk, true))
    assert record["estimator"]["booster"] == "forecast"  # exact forecasts: MAE 0
    assert record["estimator"]["reservoir"] == "risk"
    assert record["calibration_mae"]["booster"]["forecast"] == 0.0


def test_each_row_is_served_by_its_kind_s_estimator_and_an_unseen_kind_by_any():
    chosen = {"estimator": {"any": "forecast", "booster": "forecast", "reservoir": "risk"}}
    forecast = np.array([[0.1, 0.5, 0.5, 0.5], [0.1, 0.1, 0.5, 0.5], [0.1, 0.5, 0.5, 0.5]])
    risk = np.array([[0.9, 0.2, 0.1, 0.0], [0.6, 0.6, 0.2, 0.2], [0.9, 0.2, 0.1, 0.0]])
    kinds = np.array(["booster", "reservoir", "tank"])
    share = compliance_share(chosen, forecast, risk, kinds, MINIMUM)
    assert share.tolist() == pytest.approx([0.25, 0.4, 0.25])
    everywhere = {"estimator": {"any": "risk"}}
    assert compliance_share(everywhere, forecast, risk, kinds, MINIMUM).tolist() == pytest.approx(
        [0.3, 0.4, 0.3]
    )
    # one kind for a whole scenario (a timeline), and no choice: the forecast's share
    assert compliance_share(chosen, forecast, risk, "reservoir", MINIMUM).tolist() == (
        pytest.approx([0.3, 0.4, 0.3])
    )
    assert compliance_share(None, forecast, None, kinds, MINIMUM).tolist() == [0.25, 0.5, 0.25]


def test_a_choice_of_the_risk_without_a_risk_is_refused():
    chosen = {"estimator": {"any": "risk"}}
    with pytest.raises(DataError, match="serves the compliance share from the risk"):
        compliance_share(chosen, np.zeros((2, 3)), None, "booster", MINIMUM)
    # a choice the rows never use needs no risk
    booster_only = {"estimator": {"any": "forecast", "reservoir": "risk"}}
    assert compliance_share(booster_only, np.zeros((2, 3)), None, "booster", MINIMUM).tolist() == [
        1.0,
        1.0,
    ]


@pytest.mark.parametrize(
    ("compliance", "message"),
    [
        ({"estimator": {"booster": "risk"}}, "'any' among them"),
        ({"estimator": {"any": "median"}}, "estimator of 'any' must be one of forecast, risk"),
        ("risk", "'any' among them"),
    ],
)
def test_a_card_with_a_damaged_choice_is_refused_in_one_line(tmp_path, compliance, message):
    from wdn_explain.model_folder import read_card

    card = json.loads((SHIPPED / "card.json").read_text())
    card["risk"]["compliance"] = compliance
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=message) as info:
        read_card(folder)
    assert "\n" not in str(info.value)
