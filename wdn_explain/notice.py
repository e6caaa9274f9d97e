"""The uncertainty notice: a scenario the model is expected to forecast badly, said before it
runs (issue 31).

A notice keyed to wide intervals fired on nearly every scenario of a node model and never on
the share model's worst ones. This one is an error model: a ridge regression (scikit-learn
``RidgeCV``) of the log of the model's mean absolute error per scenario on what is known
before the scenario runs (:func:`scenario_features`: where chlorine enters, the schedule, the
strength, demand level, decay, start and how often the source switches within the horizon),
fitted on held-out scenarios of the training design (the validation and calibration splits).
Its threshold is set on the same scenarios between the scores of the best half (the notice
fires on at most :data:`BEST_FIRE` of them) and those of the worst :data:`WORST_SHARE` (it
fires on at least :data:`WORST_FIRE`), and measured on fresh scenarios by
``benchmarks/quality/notice_goals.py``. The card stores the coefficients as plain numbers
(``notice``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .conformal import timing
from .design import factor_levels
from .errors import DataError
from .features import LABEL_RANGE
from .scenario import ScenarioConfig

if TYPE_CHECKING:
    from .dataset import WaqDataset

WORST_SHARE = 0.05
"""The worst scenarios (by the model's MAE) the notice is designed to fire on."""
WORST_FIRE = 0.7
BEST_FIRE = 0.1
"""The notice fires on at least WORST_FIRE of the worst scenarios and at most BEST_FIRE of
the best half, on the held-out scenarios it is designed on (where both can hold)."""
MIN_SCENARIOS = 20
"""Held-out scenarios needed to design the notice (fewer: no notice)."""
MAE_FLOOR = 1e-6
"""A scenario forecast without error (nothing happens in it) counts as this MAE (log)."""


def scenario_features(
    config: ScenarioConfig, times_s: np.ndarray, horizon: int, reservoirs: tuple[str, ...]
) -> dict[str, float]:
    """What is known of a scenario before it runs, as named numbers: one-hot injection node
    (``node=<id>``, ``node=reservoir``) and schedule (``pattern=<mode>``), the strength
    (mg/L), demand scale, bulk decay (1/day), start (h) and the share of forecasts with a
    switch of the source within the horizon (from the schedule, :func:`.conformal.timing`,
    over the forecast times: all reports but the last ``horizon``)."""
    at_reservoir = config.injection_node is None or config.injection_node in reservoirs
    switch = timing(config, times_s, horizon)[: max(len(times_s) - horizon, 1)]
    return {
        f"node={'reservoir' if at_reservoir else config.injection_node}": 1.0,
        f"pattern={factor_levels(config, reservoirs)['pattern']}": 1.0,
        "strength_mg_l": float(config.injection_strength_mg_l),
        "demand_scale": float(config.demand_scale),
        "decay_per_day": float(config.bulk_decay_per_day),
        "start_h": config.injection_start_s / 3600,
        "switch_share": float((switch == "switch ahead").mean()),
    }


def _matrix(features: list[dict[str, float]], names: list[str]) -> np.ndarray:
    return np.array([[f.get(n, 0.0) for n in names] for f in features], dtype=float)


def design_notice(features: list[dict[str, float]], scenario_mae: np.ndarray) -> dict[str, Any]:
    """The card's ``notice`` record from held-out scenarios: their :func:`scenario_features`
    and the model's MAE on each (see the module docstring).

    Raises:
        DataError: fewer than :data:`MIN_SCENARIOS` scenarios, or an MAE not finite.
    """
    from sklearn.linear_model import RidgeCV

    mae = np.asarray(scenario_mae, dtype=float)
    if len(mae) < MIN_SCENARIOS or len(features) != len(mae):
        raise DataError(
            f"the uncertainty notice needs at least {MIN_SCENARIOS} held-out scenarios "
            f"(got {len(mae)})"
        )
    if not np.isfinite(mae).all():
        raise DataError("the uncertainty notice needs a finite MAE on every scenario")
    names = sorted({n for f in features for n in f})
    log_mae = np.log(np.maximum(mae, MAE_FLOOR))
    ridge = RidgeCV(alphas=np.logspace(-3, 2, 11)).fit(_matrix(features, names), log_mae)
    record = {
        "method": "ridge regression of log scenario MAE (scikit-learn RidgeCV)",
        "intercept": float(ridge.intercept_),
        "coefficients": dict(zip(names, map(float, ridge.coef_))),
        "typical_mae": float(np.median(mae)),
        "n_scenarios": len(mae),
    }
    score = np.log(expected_maes(record, features))
    worst, best = mae >= np.quantile(mae, 1 - WORST_SHARE), mae <= np.median(mae)
    best_edge = float(np.quantile(score[best], 1 - BEST_FIRE))
    worst_edge = float(np.quantile(score[worst], 1 - WORST_FIRE))
    # between both edges when they allow it, else the best half's edge: a notice that fires
    # on good scenarios tells nothing
    threshold = (best_edge + worst_edge) / 2 if worst_edge >= best_edge else best_edge
    fires = score >= threshold
    return record | {
        "threshold_mae": float(np.exp(threshold)),
        "fires_on_worst": float(fires[worst].mean()),
        "fires_on_best_half": float(fires[best].mean()),
    }


def held_out_errors(
    dataset: WaqDataset, forecast: np.ndarray
) -> tuple[list[dict[str, float]], np.ndarray]:
    """The :func:`scenario_features` of every scenario of ``dataset``'s split and the MAE of
    ``forecast`` (one per sample, in sample order; per node for a node model), clipped to
    the label's range, on each."""
    low, high = LABEL_RANGE[dataset.inputs.target]
    err = np.abs(np.clip(forecast, low, high) - dataset.targets())
    mae = err.reshape(len(dataset.scenarios), dataset.n_times, -1).mean(axis=(1, 2))
    a, reservoirs = dataset.arrays, tuple(dataset.manifest.network.reservoirs)
    features = [
        scenario_features(a.configs[s], a.times_s, dataset.horizon, reservoirs)
        for s in dataset.scenarios
    ]
    return features, mae


def expected_maes(record: dict[str, Any], features: list[dict[str, float]]) -> np.ndarray:
    """The model's expected MAE on each scenario from its :func:`scenario_features`; a
    feature the record does not know (a node it never saw) counts 0."""
    names = list(record["coefficients"])
    coef = np.array([record["coefficients"][n] for n in names])
    return np.exp(record["intercept"] + _matrix(features, names) @ coef)


def hard_scenario_notice(
    record: dict[str, Any], features: dict[str, float], node_level: bool = False
) -> str | None:
    """One plain sentence when the scenario is one the model is expected to forecast badly
    (expected MAE at or above the record's threshold): how far off its forecasts are
    expected to be, in mg/L per node for a ``node_level`` model, else in % of the nodes (the
    share's error), against its error on the median held-out scenario (the record's
    ``typical_mae``, said to be a median: the sidebar's test MAE is a mean); None otherwise."""
    expected = float(expected_maes(record, [features])[0])
    if expected < record["threshold_mae"]:
        return None
    typical = record["typical_mae"]
    said = (
        (lambda e: f"{e:.2g} mg/L per node")
        if node_level
        else (lambda e: f"{100 * e:.2g}% of the nodes")
    )
    return (
        f"uncertain forecast: on scenarios like this one the model is usually off by about "
        f"{said(expected)}, {expected / typical:.1f} times its error on the median scenario it "
        f"was not trained on ({said(typical)}; the test MAE under the model's name is the "
        "mean over every test forecast); read each forecast as the shaded range around it, "
        "not as an exact number"
    )
