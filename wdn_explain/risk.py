"""The risk of non-compliance: for a node model, a calibrated probability that a node's
chlorine at the horizon falls below the minimum residual (issue 31).

A calibrated head on the model's own forecast, one per node and kind of injection (``reservoir``
or ``booster``: a scenario's, known before it runs, :func:`.design.factor_levels`): on the
calibration split held out of training (the intervals' own, :mod:`.conformal`) a logistic
regression (scikit-learn ``LogisticRegression``) of "truth below the minimum" on the node's
raw forecast f_i gives

    P(chlorine_i(t + h) < minimum) = sigmoid(a_ik + b_ik f_i),

with a_ik, b_ik fixed per node i and injection kind k (a node that never or always complied
in a kind's calibration takes its coefficients over both kinds, then those pooled over every
node; a kind the calibration never saw takes the node's over both kinds). Within a scenario
the logit is affine in the forecast, so every exact interaction index the engine computes for
the forecast of node i (Shapley values, k-SII, STII, FSII, Möbius) is, times b_ik, the same
index of the risk's logit: the risk is explained exactly by the same explanation, read on
another scale. Measured on fresh scenarios by ``benchmarks/quality/risk_goals.py`` beside a
tree classifier and a conformal predictive system. The card stores the coefficients as plain
numbers (``risk``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DataError
from .features import check_min_residual

CALIBRATION_BINS = 10
"""Equal-width probability bins of :func:`calibration_error`."""
PRECISION = 1e4
"""Inverse regularisation strength ``C`` of the logistic regressions: nearly unregularised,
finite when a node's calibration separates perfectly."""
ANY_KIND = "any"
"""The heads over every kind of injection (a kind the calibration never saw takes them)."""


def fit_risk(
    forecast: np.ndarray,
    truth: np.ndarray,
    kinds: np.ndarray,
    min_residual_mg_l: float,
    where: str = "",
    score: str = "the node forecast",
) -> dict[str, Any]:
    """The card's ``risk`` record from calibration scores -- the raw node forecasts (mg/L),
    or any node score the risk is monotone in (the risk model's logit, :mod:`.risk_model`),
    named ``score`` in the record's method -- and their simulated truth, both shape (N, n),
    and each forecast's kind of injection (``reservoir`` or ``booster``, shape (N,)).

    Raises:
        ConfigError: a minimum residual that is negative or not finite.
        DataError: no calibration forecasts, or none below (or none at or above) the minimum.
    """
    from sklearn.linear_model import LogisticRegression

    minimum = check_min_residual(min_residual_mg_l)
    forecast, below = np.asarray(forecast, dtype=float), outcomes(truth, minimum, where)
    kinds = np.asarray(kinds).astype(str)

    def fitted(f: np.ndarray, y: np.ndarray) -> list[float]:
        head = LogisticRegression(C=PRECISION, max_iter=1000).fit(f.reshape(-1, 1), y.reshape(-1))
        return [float(head.intercept_[0]), float(head.coef_[0, 0])]

    def per_node(rows: np.ndarray, fallback: list[list[float]]) -> dict[str, list[float]]:
        heads = [
            fitted(forecast[rows, i], below[rows, i]) if 0 < below[rows, i].mean() < 1 else back
            for i, back in enumerate(fallback)
        ]
        return {"intercept": [a for a, _ in heads], "slope": [b for _, b in heads]}

    pooled = fitted(forecast, below)
    every = per_node(np.ones(len(below), dtype=bool), [pooled] * forecast.shape[1])
    fallback = [list(h) for h in zip(every["intercept"], every["slope"])]
    heads = {ANY_KIND: every} | {str(k): per_node(kinds == k, fallback) for k in np.unique(kinds)}
    record = {
        "method": f"logistic regression on {score}, per node and kind of injection "
        "(scikit-learn LogisticRegression)",
        "min_residual_mg_l": minimum,
        "heads": heads,
        "pooled": pooled,
        "n_calibration": int(below.size),
        "non_compliant_share": float(below.mean()),
    }
    risk = node_risk(record, forecast, kinds)
    return record | {
        "calibration_error": calibration_error(risk, below),
        "brier": brier_score(risk, below),
    }


def outcomes(truth: np.ndarray, min_residual_mg_l: float, where: str = "") -> np.ndarray:
    """Whether each calibration truth (mg/L) lies below the minimum residual; DataError when
    there is none, or none of either kind (nothing to calibrate a probability on)."""
    below = np.asarray(truth) < check_min_residual(min_residual_mg_l)
    source = f"calibration split{' of ' + where if where else ''}"
    if not below.size:
        raise DataError(f"{source} is empty: the risk of non-compliance needs forecasts")
    if below.all() or not below.any():
        which, side = ("compliant", "at or above") if below.all() else ("non-compliant", "below")
        raise DataError(
            f"{source} holds no {which} node forecasts (chlorine {side} "
            f"{min_residual_mg_l:g} mg/L): the risk of non-compliance cannot be calibrated on it"
        )
    return below


def risk_head(record: dict[str, Any], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The (intercept, slope) per node of a scenario with injection ``kind``: its kind's
    heads, or those over every kind for a kind the calibration never saw."""
    head = record["heads"].get(kind, record["heads"][ANY_KIND])
    return np.asarray(head["intercept"]), np.asarray(head["slope"])


def node_logits(record: dict[str, Any], forecast: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """The risk's logit a_ik + b_ik f_i of every node forecast (raw model output, mg/L, shape
    (N, n)) of injection kind ``kinds`` (N,): affine in the forecast within a scenario, so
    its exact explanation is b_ik times the forecast's."""
    forecast = np.asarray(forecast, dtype=float)
    kinds = np.broadcast_to(np.asarray(kinds).astype(str), forecast.shape[:1])
    n = len(record["heads"][ANY_KIND]["slope"])
    if forecast.shape[-1] != n:
        raise DataError(
            f"the risk record calibrates {n} nodes; the forecast has {forecast.shape[-1]}"
        )
    logits = np.empty_like(forecast)
    for kind in np.unique(kinds):
        intercept, slope = risk_head(record, kind)
        logits[kinds == kind] = intercept + slope * forecast[kinds == kind]
    return logits


def node_risk(record: dict[str, Any] | None, forecast: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """P(chlorine < the record's minimum residual) at the horizon for every node forecast
    (shape (N, n)) of injection kind ``kinds`` ((N,) or one for all); DataError without a
    record (a share model, or a card calibrated before the risk)."""
    from scipy.special import expit

    if record is None:
        raise DataError(
            "the model has no risk of non-compliance: a share model has none, a node model "
            "gets one from `wdn-explain calibrate`"
        )
    return expit(node_logits(record, forecast, kinds))


def brier_score(risk: np.ndarray, below: np.ndarray) -> float:
    """Mean squared difference between the risk and the outcome (1: below the minimum)."""
    return float(np.mean((np.asarray(risk, dtype=float) - np.asarray(below, dtype=float)) ** 2))


def calibration_error(risk: np.ndarray, below: np.ndarray, bins: int = CALIBRATION_BINS) -> float:
    """Expected calibration error: over ``bins`` equal-width bins of the risk, the
    count-weighted mean of |mean risk - share below the minimum|."""
    risk = np.asarray(risk, dtype=float).ravel()
    below = np.asarray(below, dtype=float).ravel()
    which = np.clip((risk * bins).astype(int), 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    gap = np.bincount(which, risk - below, minlength=bins)
    return float(np.abs(gap).sum() / max(counts.sum(), 1))
