"""Calibrated intervals on every forecast: split conformal regression, Mondrian-conditioned.

On a calibration split held out of training (:func:`~wdn_explain.dataset.split_scenarios`)
the absolute errors of the model are grouped by what makes a forecast hard -- where chlorine
enters (reservoir or booster), the schedule (constant, intermittent, failure, custom) and the
timing of the forecast against the plan (a switch within the horizon, a switch within the
last horizon, steady) -- and ``crepes``' Mondrian ``ConformalRegressor`` turns each group's
errors into the half-width that covers a new forecast of that group with probability at
least ``confidence`` (finite-sample, assuming only exchangeable scenarios). The card stores
the half-widths as plain numbers (``conformal``); serving needs no fitted object.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .design import factor_levels
from .errors import DataError
from .scenario import ScenarioConfig

CONFIDENCE = 0.9
"""Nominal coverage of the intervals."""
WIDE_INTERVAL = 0.1
"""Half-width (share of nodes) above which a forecast is called uncertain in plain words."""
DRY_MG_L = 0.05
"""A node forecast below this (mg/L) is in the ``dry`` group of a node model's intervals:
a node chlorine has not reached errs far less than one at the front."""
SHARE_GROUPS, NODE_GROUPS = "injection/pattern/timing", "injection/pattern/timing/node forecast"


def timing(config: ScenarioConfig, times_s: np.ndarray, horizon: int) -> np.ndarray:
    """Per report, the forecast's timing against the schedule: ``switch ahead`` (the
    setpoint changes within the next ``horizon`` reports), ``just switched`` (it changed
    within the last ``horizon``), else ``steady``. Known at forecast time (the plan)."""
    times_s = np.asarray(times_s, dtype=np.int64)
    step = int(times_s[1] - times_s[0]) if len(times_s) > 1 else config.reporting_step_s
    offsets = step * np.arange(-horizon, horizon + 1)
    setpoint = config.injection_setpoint_mg_l(np.maximum(times_s[:, None] + offsets, 0))
    now = setpoint[:, horizon : horizon + 1]
    ahead = (setpoint[:, horizon + 1 :] != now).any(axis=1)
    before = (setpoint[:, :horizon] != now).any(axis=1) & (times_s >= step * horizon)
    return np.where(ahead, "switch ahead", np.where(before, "just switched", "steady"))


def mondrian_bins(
    config: ScenarioConfig, times_s: np.ndarray, horizon: int, reservoirs: tuple[str, ...]
) -> np.ndarray:
    """The calibration group of every report of a scenario, e.g.
    ``reservoir/intermittent/switch ahead``."""
    levels = factor_levels(config, reservoirs)
    kind = f"{levels['injection']}/{levels['pattern']}/"
    return np.char.add(kind, timing(config, times_s, horizon).astype(str))


def node_bins(sample_bins: np.ndarray, node_forecast: np.ndarray) -> np.ndarray:
    """The calibration group of each of a node model's forecasts (N, n): its sample's group
    (:func:`mondrian_bins`, (N,)) and whether it forecasts the node ``dry`` (below
    :data:`DRY_MG_L`) or ``chlorinated`` -- known at forecast time, like the plan."""
    level = np.where(np.asarray(node_forecast) < DRY_MG_L, "/dry", "/chlorinated")
    return np.char.add(np.asarray(sample_bins).astype(str)[:, None], level)


def calibrate(
    residuals: np.ndarray,
    bins: np.ndarray,
    confidence: float = CONFIDENCE,
    where: str = "",
    groups: str = SHARE_GROUPS,
) -> dict[str, Any]:
    """The card's ``conformal`` record from calibration errors: the half-width of each
    group's interval and of all errors pooled (used for a group the calibration never saw).
    A group with too few errors for the level (fewer than c / (1 - c)) gets half-width 1:
    the whole range of the share.

    Args:
        residuals: |truth - forecast| of every calibration forecast.
        bins: Each forecast's group (:func:`mondrian_bins`; :func:`node_bins` per node).
        where: The data the residuals come from (named in errors).
        groups: What the groups are (recorded in the card).

    Raises:
        DataError: no calibration forecasts, or a confidence outside (0, 1).
    """
    from crepes import ConformalRegressor

    residuals = np.abs(np.asarray(residuals, dtype=float)).reshape(-1)
    bins = np.asarray(bins).reshape(-1)
    if not len(residuals):
        raise DataError(f"calibration split{' of ' + where if where else ''} is empty")
    if not 0 < confidence < 1:
        raise DataError(f"confidence must be between 0 and 1 (got {confidence})")
    found = np.unique(bins)
    mondrian = ConformalRegressor().fit(residuals, bins=np.asarray(bins))
    pooled = ConformalRegressor().fit(residuals)
    with warnings.catch_warnings():  # a group too small for the level: the whole range [0, 1]
        warnings.simplefilter("ignore", UserWarning)
        half = mondrian.predict_int(np.zeros(len(found)), bins=found, confidence=confidence)
        overall = float(pooled.predict_int(np.zeros(1), confidence=confidence)[0, 1])
    half = half[:, 1]
    return {
        "method": "split conformal, Mondrian (crepes ConformalRegressor)",
        "confidence": confidence,
        "groups": groups,
        "half_width": {str(g): (float(h) if np.isfinite(h) else 1.0) for g, h in zip(found, half)},
        "pooled_half_width": overall if np.isfinite(overall) else 1.0,
        "n_calibration": int(len(residuals)),
        "n_per_group": {str(g): int((bins == g).sum()) for g in found},
    }


def half_widths(record: dict[str, Any], bins: np.ndarray) -> np.ndarray:
    """Each forecast's interval half-width from a card's ``conformal`` record (``bins`` of
    any shape; the result has it)."""
    table, pooled = record["half_width"], record["pooled_half_width"]
    flat = [table.get(str(b), pooled) for b in np.ravel(bins)]
    return np.array(flat, dtype=float).reshape(np.shape(bins))


def intervals(
    record: dict[str, Any],
    forecast: np.ndarray,
    bins: np.ndarray,
    limits: tuple[float, float] = (0.0, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of every forecast, clipped to the label's range ``limits`` (a share:
    [0, 1]; chlorine at a node: [0, inf) mg/L); ``bins`` has the forecasts' shape."""
    half = half_widths(record, bins)
    return np.clip(forecast - half, *limits), np.clip(forecast + half, *limits)


def uncertainty_notice(
    record: dict[str, Any],
    lower: np.ndarray,
    upper: np.ndarray,
    times_s: np.ndarray,
    unit: str = "of the nodes",
) -> str | None:
    """One plain sentence when some forecast's interval is wide (half-width above
    :data:`WIDE_INTERVAL`, in the forecast's ``unit``: a share of the nodes, or mg/L at a
    node), even for a scenario inside the design; None otherwise."""
    half = (np.asarray(upper) - np.asarray(lower)) / 2
    wide = np.flatnonzero(half > WIDE_INTERVAL)
    if not len(wide):
        return None
    worst = int(wide[np.argmax(half[wide])])
    return (
        f"uncertain forecast at {len(wide)} of {len(half)} steps: the model's "
        f"{record['confidence']:.0%} interval is wider than ±{WIDE_INTERVAL:g} {unit} "
        f"(widest at {times_s[worst] / 60:g} min: {lower[worst]:.2f}-{upper[worst]:.2f}); "
        "read these forecasts as a range, not a number"
    )
