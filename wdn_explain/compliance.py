"""The compliance share a node model serves: the fraction of nodes whose chlorine at the
horizon lies below the minimum residual, estimated per kind of injection the way that
scored best on the calibration split (issue 31).

Two estimators of the same share (:data:`~.features.COMPLIANCE_ESTIMATORS`): ``forecast``,
the fraction of node forecasts below the minimum (:func:`~.features.share_below_residual`,
the truth's own rule applied to the forecast), and ``risk``, the mean over the nodes of the calibrated risk of
non-compliance (:mod:`.risk`), the expected fraction below. Thresholding is sharp where the
forecast is good (boosters, steady states); where a reservoir's switch is on its way, a
node's forecast sits near the line for a step or two and the threshold flips it all or
nothing, while the mean risk counts it in part. :func:`fit_compliance` picks, per kind of
injection, the estimator with the lower MAE on the calibration split (the risk heads' own
split) and the card's ``risk`` record keeps the choice (``compliance``);
:func:`compliance_share` serves it everywhere the share is shown: ``evaluate``, the
timeline and ``replay``. A card without the choice (no risk model, or calibrated before it)
serves the forecast's share, as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import DataError
from .features import COMPLIANCE_ESTIMATORS, share_below_residual
from .risk import ANY_KIND

SERVED_FROM = {
    "forecast": "from the node forecasts",
    "risk": "the mean risk of non-compliance over the nodes",
}
"""What each estimator serves the compliance share from, in words (CLI and reports)."""


def compliance_estimates(
    forecast_mg_l: np.ndarray, node_risk: np.ndarray, min_residual_mg_l: float
) -> dict[str, np.ndarray]:
    """The compliance share of every sample both ways (:data:`~.features.COMPLIANCE_ESTIMATORS`)
    from its node forecasts (mg/L) and their risks of non-compliance, both shape (..., n);
    each (...,)."""
    return {
        "forecast": share_below_residual(forecast_mg_l, min_residual_mg_l),
        "risk": np.asarray(node_risk, dtype=float).mean(axis=-1),
    }


def fit_compliance(
    forecast_mg_l: np.ndarray,
    node_risk: np.ndarray,
    truth_mg_l: np.ndarray,
    kinds: np.ndarray,
    min_residual_mg_l: float,
) -> dict[str, Any]:
    """The ``compliance`` entry of a card's ``risk`` record: per kind of injection (and
    ``any``, over every calibration sample, for a kind it never saw) the estimator whose
    share has the lower MAE against the truth's, with those MAEs.

    Args:
        forecast_mg_l: The calibration split's node forecasts (mg/L), shape (N, n).
        node_risk: Their risks of non-compliance, shape (N, n).
        truth_mg_l: The simulated chlorine at the horizon (mg/L), shape (N, n).
        kinds: Each sample's kind of injection (``reservoir`` or ``booster``), shape (N,).
        min_residual_mg_l: The minimum residual (mg/L).
    """
    truth = share_below_residual(truth_mg_l, min_residual_mg_l)
    estimates = compliance_estimates(forecast_mg_l, node_risk, min_residual_mg_l)
    kinds = np.asarray(kinds).astype(str)
    rows = {ANY_KIND: np.ones(len(kinds), dtype=bool)}
    rows |= {str(k): kinds == k for k in np.unique(kinds)}
    mae = {
        kind: {name: float(np.abs(e[m] - truth[m]).mean()) for name, e in estimates.items()}
        for kind, m in rows.items()
    }
    return {
        "method": "per kind of injection, the estimator with the lower MAE on the calibration "
        "split: the share of node forecasts below the minimum (forecast) or the mean risk of "
        "non-compliance (risk)",
        "estimator": {
            kind: min(COMPLIANCE_ESTIMATORS, key=scores.get) for kind, scores in mae.items()
        },
        "calibration_mae": mae,
    }


def served_estimator(chosen: dict[str, Any] | None, kind: str) -> str:
    """The estimator ``chosen`` (a card's choice, or None) names for injection ``kind``: its
    kind's, else the one over every kind, ``forecast`` without a choice."""
    if chosen is None:
        return COMPLIANCE_ESTIMATORS[0]
    estimator = chosen["estimator"]
    return estimator.get(str(kind), estimator[ANY_KIND])


def served_text(chosen: dict[str, Any] | None) -> str:
    """How a card serves its compliance share, in words: one estimator for every kind, or
    each kind's (``booster: from the node forecasts; reservoir: the mean risk ...``)."""
    if chosen is None or len(set(chosen["estimator"].values())) == 1:
        return SERVED_FROM[served_estimator(chosen, ANY_KIND)]
    kinds = sorted(k for k in chosen["estimator"] if k != ANY_KIND)
    return "; ".join(f"{k}: {SERVED_FROM[served_estimator(chosen, k)]}" for k in kinds)


def compliance_share(
    chosen: dict[str, Any] | None,
    forecast_mg_l: np.ndarray,
    node_risk: np.ndarray | None,
    kinds: np.ndarray | str,
    min_residual_mg_l: float,
) -> np.ndarray:
    """The compliance share served for node forecasts (mg/L, shape (N, n)) of injection kind
    ``kinds`` ((N,) or one for all), shape (N,): each sample's estimator as ``chosen`` (a
    card's choice, :attr:`~.records.ModelCard.compliance`, :func:`fit_compliance`) names it
    for its kind, the forecast's share without a choice.

    Raises:
        DataError: the choice is the risk for a sample whose risk is not given.
    """
    share = share_below_residual(forecast_mg_l, min_residual_mg_l)
    kinds = np.broadcast_to(np.asarray(kinds).astype(str), share.shape)
    use_risk = np.vectorize(lambda k: served_estimator(chosen, k) == "risk", otypes=[bool])(kinds)
    if not use_risk.any():
        return share
    if node_risk is None:
        raise DataError(
            "the card serves the compliance share from the risk of non-compliance, and no "
            "risk was computed for these forecasts"
        )
    risk = compliance_estimates(forecast_mg_l, node_risk, min_residual_mg_l)["risk"]
    return np.where(use_risk, risk, share)
