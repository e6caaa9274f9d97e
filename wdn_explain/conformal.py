"""Calibrated intervals on every forecast: split conformal regression, Mondrian-conditioned.

On a calibration split held out of training (:func:`~wdn_explain.dataset.split_scenarios`)
the absolute errors of the model are grouped by what makes a forecast hard -- where chlorine
enters (reservoir or booster), the schedule (constant, intermittent, failure, custom) and the
timing of the forecast against the plan (a switch within the horizon, a switch within the
last horizon, steady) and the forecast's own level (a share model's share, a node model's
node chlorine; :func:`forecast_groups` is the one home of both) -- and
``crepes``' Mondrian ``ConformalRegressor`` turns each group's errors into the half-width
that covers a new forecast of that group with probability at least ``confidence``
(finite-sample, assuming only exchangeable scenarios). Groups are paths (``a/b/c``): every
prefix is calibrated too, and a group the calibration never saw, or saw too rarely for the
level, takes its longest calibrated prefix's half-width. The error is taken from the
forecast clipped to the label's range, the centre of the interval served, so that the
calibrated coverage is the served one. The card stores the half-widths as plain numbers
(``conformal``); serving needs no fitted object.
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
TRACE_MG_L = 0.005
"""Where a dry node forecast's group changes (mg/L): a forecast of a trace (0.005-0.05) is the
model half-seeing a front arrive, one below it a node the model is sure stays dry. Among dry
forecasts the traces hold most of those where chlorine then arrives at 0.05-0.2 mg/L, so one
dry group would give them the sure ones' near-zero half-width."""
CHLORINATED_EDGES_MG_L = (0.2, 0.5)
"""Where a chlorinated node forecast's level group changes (mg/L): 0.2 is the common minimum
residual (the compliance line), 0.5 a well-dosed node. A forecast near the front (0.05-0.2)
errs as much as one at 1.5 mg/L, so one chlorinated group would under-cover it."""
RISK_BANDS = (0.1, 0.9)
"""Where a node model's risk of non-compliance (:mod:`.risk_model`) changes a forecast's
group: below the minimum unlikely, either side, likely. A forecast the risk model places near
the line errs unlike one of the same level it places far from it, so the risk splits the
level groups (Mondrian groups known at forecast time, like the level)."""
SHARE_EDGES = (0.01, 0.5)
"""Where a share forecast's level group changes: below 0.01 chlorine has not spread and the
forecast errs by almost nothing, from 0.5 the front is far out in the network and errs about
twice as much as one below (measured on the training split's errors). One group for all
levels gave a scenario whose share climbs high (a reservoir source) the half-width of the
many low ones."""
SHARE_GROUPS = (
    f"share forecast (< {SHARE_EDGES[0]:g}, {SHARE_EDGES[0]:g}-{SHARE_EDGES[1]:g}, "
    f">= {SHARE_EDGES[1]:g})/injection/pattern/timing"
)
"""The share's groups, the level first: it moves the error most (ten times from the lowest
band to the highest, against 1.6 times from boosters to reservoirs), so a (level, schedule)
the calibration never saw takes its level's half-width, not one of the schedule's mostly
lower shares."""
NODE_GROUPS = (
    "injection/pattern/timing/node forecast (dry/< 0.005, 0.005-0.05, "
    "chlorinated/0.05-0.2, 0.2-0.5, >= 0.5 mg/L)"
)
RISK_GROUPS = f"{NODE_GROUPS}/risk of non-compliance (< {RISK_BANDS[0]:g}, {RISK_BANDS[0]:g}-"
RISK_GROUPS += f"{RISK_BANDS[1]:g}, >= {RISK_BANDS[1]:g})"


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


def share_level(share_forecast: np.ndarray) -> np.ndarray:
    """The level group of each share forecast between :data:`SHARE_EDGES`: ``share < 0.01``,
    ``share 0.01-0.5`` or ``share >= 0.5``."""
    low, high = SHARE_EDGES
    names = np.array([f"share < {low:g}", f"share {low:g}-{high:g}", f"share >= {high:g}"])
    return names[np.digitize(np.asarray(share_forecast), SHARE_EDGES)]


def node_level(node_forecast: np.ndarray) -> np.ndarray:
    """The level group of each node forecast (mg/L): below :data:`DRY_MG_L` ``dry/`` and
    whether it reaches :data:`TRACE_MG_L` (``< 0.005``, ``0.005-0.05``), else
    ``chlorinated/`` and its band between :data:`CHLORINATED_EDGES_MG_L` (``0.05-0.2``,
    ``0.2-0.5``, ``>= 0.5``); paths, so ``dry`` and ``chlorinated`` are the coarser groups."""
    low, high = CHLORINATED_EDGES_MG_L
    edges = (TRACE_MG_L, DRY_MG_L, *CHLORINATED_EDGES_MG_L)
    names = [f"dry/< {TRACE_MG_L:g}", f"dry/{TRACE_MG_L:g}-{DRY_MG_L:g}"]
    names += [f"chlorinated/{DRY_MG_L:g}-{low:g}", f"chlorinated/{low:g}-{high:g}"]
    return np.array(names + [f"chlorinated/>= {high:g}"])[np.digitize(node_forecast, edges)]


def risk_band(node_risk: np.ndarray) -> np.ndarray:
    """The band of each risk of non-compliance between :data:`RISK_BANDS`: ``risk < 0.1``,
    ``risk 0.1-0.9`` or ``risk >= 0.9``."""
    low, high = RISK_BANDS
    names = np.array([f"risk < {low:g}", f"risk {low:g}-{high:g}", f"risk >= {high:g}"])
    return names[np.digitize(np.asarray(node_risk), RISK_BANDS)]


def node_bins(
    sample_bins: np.ndarray, node_forecast: np.ndarray, node_risk: np.ndarray | None = None
) -> np.ndarray:
    """The calibration group of each of a node model's forecasts (N, n): its sample's group
    (:func:`mondrian_bins`, (N,)), the node forecast's level (:func:`node_level`) and, given
    the risk of non-compliance of each forecast (a risk model's), its band
    (:func:`risk_band`), e.g. ``booster/constant/steady/chlorinated/0.2-0.5/risk < 0.1`` --
    known at forecast time, like the plan."""
    sample = np.char.add(np.asarray(sample_bins).astype(str)[:, None], "/")
    bins = np.char.add(sample, node_level(node_forecast))
    if node_risk is None:
        return bins
    return np.char.add(np.char.add(bins, "/"), risk_band(node_risk))


def forecast_groups(
    sample_bins: np.ndarray,
    forecast: np.ndarray,
    node_level: bool,
    node_risk: np.ndarray | None = None,
    *,
    groups: str = SHARE_GROUPS,
) -> np.ndarray:
    """The calibration group of every forecast (``forecast``'s shape), the one rule that
    calibration and serving share: its sample's group (:func:`mondrian_bins`, (N,)) and the
    forecast's level, for a share forecast (N,) its :func:`share_level` first
    (:data:`SHARE_GROUPS`), e.g. ``share >= 0.5/reservoir/intermittent/switch ahead``, for a
    node model's forecasts (N, n) :func:`node_bins` (with the risk band given ``node_risk``).
    ``groups``: the ``groups`` of the card's record when serving it; a share card calibrated
    before the share's level (``injection/pattern/timing``) gets its sample groups alone."""
    if node_level:
        return node_bins(sample_bins, forecast, node_risk)
    sample_bins = np.asarray(sample_bins).astype(str)
    if groups != SHARE_GROUPS:
        return sample_bins
    return np.char.add(np.char.add(share_level(forecast), "/"), sample_bins)


def absolute_errors(
    truth: np.ndarray, forecast: np.ndarray, limits: tuple[float, float] = (0.0, 1.0)
) -> np.ndarray:
    """|truth - forecast| with the forecast clipped to the label's range ``limits``: the
    centre of the interval served (:func:`intervals`). Unclipped, a negative node forecast
    of a dry node would count as an error while its served interval [0, 0] covers it."""
    return np.abs(np.asarray(truth, dtype=float) - np.clip(forecast, *limits))


def prefixes(group: str) -> list[str]:
    """A group path and its coarser groups, longest first: ``a/b/c``, ``a/b``, ``a``."""
    parts = group.split("/")
    return ["/".join(parts[:k]) for k in range(len(parts), 0, -1)]


def calibrate(
    residuals: np.ndarray,
    bins: np.ndarray,
    confidence: float = CONFIDENCE,
    where: str = "",
    groups: str = SHARE_GROUPS,
) -> dict[str, Any]:
    """The card's ``conformal`` record from calibration errors: the half-width of each group
    and of each of its coarser groups (:func:`prefixes`) with enough errors for the level (at
    least c / (1 - c): 9 at 90 %), and of all errors pooled (:func:`half_widths` takes a
    group's longest calibrated prefix, else the pooled one; the pooled one is 1, the whole
    range of the share, if even it has too few errors).

    Args:
        residuals: |truth - forecast| of every calibration forecast (:func:`absolute_errors`).
        bins: Each forecast's group (:func:`forecast_groups`).
        where: The data the residuals come from (named in errors).
        groups: What the groups are (recorded in the card).

    Raises:
        DataError: no calibration forecasts, or a confidence outside (0, 1).
    """
    from crepes import ConformalRegressor

    residuals = np.abs(np.asarray(residuals, dtype=float)).reshape(-1)
    bins = np.asarray(bins).astype(str).reshape(-1)
    if not len(residuals):
        raise DataError(f"calibration split{' of ' + where if where else ''} is empty")
    if not 0 < confidence < 1:
        raise DataError(f"confidence must be between 0 and 1 (got {confidence})")
    found, inverse = np.unique(bins, return_inverse=True)
    depth = max(len(g.split("/")) for g in found)
    half_width, counts = {}, {}
    with warnings.catch_warnings():  # a group too small for the level: left to its prefix
        warnings.simplefilter("ignore", UserWarning)
        for k in range(depth, 0, -1):
            coarse = np.array(["/".join(g.split("/")[:k]) for g in found])[inverse]
            names, sizes = np.unique(coarse, return_counts=True)
            mondrian = ConformalRegressor().fit(residuals, bins=coarse)
            half = mondrian.predict_int(np.zeros(len(names)), bins=names, confidence=confidence)
            for name, h, size in zip(names, half[:, 1], sizes):
                if np.isfinite(h) and name not in half_width:
                    half_width[str(name)], counts[str(name)] = float(h), int(size)
        pooled = ConformalRegressor().fit(residuals)
        overall = float(pooled.predict_int(np.zeros(1), confidence=confidence)[0, 1])
    return {
        "method": "split conformal, Mondrian (crepes ConformalRegressor)",
        "confidence": confidence,
        "groups": groups,
        "half_width": dict(sorted(half_width.items())),
        "pooled_half_width": overall if np.isfinite(overall) else 1.0,
        "n_calibration": int(len(residuals)),
        "n_per_group": dict(sorted(counts.items())),
    }


def interval_risk(record: dict[str, Any], node_risk: np.ndarray | None) -> np.ndarray | None:
    """The risk of non-compliance the intervals of a ``conformal`` record use: ``node_risk``
    where the record was calibrated with risk bands (``risk_bands``), else None."""
    return node_risk if "risk_bands" in record else None


def half_widths(record: dict[str, Any], bins: np.ndarray) -> np.ndarray:
    """Each forecast's interval half-width from a card's ``conformal`` record (``bins`` of
    any shape; the result has it): its group's, else its longest calibrated prefix's
    (:func:`prefixes`), else the pooled one."""
    table, pooled = record["half_width"], record["pooled_half_width"]
    names, inverse = np.unique(np.asarray(bins).astype(str), return_inverse=True)
    known = [next((table[p] for p in prefixes(n) if p in table), pooled) for n in names]
    return np.asarray(known, dtype=float)[inverse].reshape(np.shape(bins))


def intervals(
    record: dict[str, Any],
    forecast: np.ndarray,
    bins: np.ndarray,
    limits: tuple[float, float] = (0.0, 1.0),
    node_risk: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of every forecast: the forecast clipped to the label's range ``limits``
    (a share: [0, 1]; chlorine at a node: [0, inf) mg/L) plus and minus its half-width,
    clipped again; ``bins`` has the forecasts' shape.

    Given the risk of non-compliance of each forecast (a node model's whose record has
    ``risk_bands``), a chlorinated forecast whose risk is at least (1 - confidence) / 2 gets
    the range's bottom as its lower bound: the truth lies below the minimum with at least
    the interval's lower tail probability, so the interval's lower quantile does too, and the
    risk says no more of how far (the lower bound reaches below the line when the risk says
    so)."""
    half = half_widths(record, bins)
    centre = np.clip(forecast, *limits)
    lower, upper = np.clip(centre - half, *limits), np.clip(centre + half, *limits)
    if node_risk is not None:
        tail = (1 - record["confidence"]) / 2
        lower = np.where((centre >= DRY_MG_L) & (np.asarray(node_risk) >= tail), limits[0], lower)
    return lower, upper


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
