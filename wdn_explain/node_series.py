"""A node-level model's series in a timeline: chlorine forecast and simulated at every node
with its interval and risk of non-compliance, the compliance share derived from them, and the explanations of several
target nodes, one of which a :class:`~.timeline.Timeline` shows as its ``forecast`` and
``explanations``. A share model's timeline holds none of them.

The fields live on the timeline; this module holds what follows from them: the timeline of
another target (:func:`target_fields`), their arrays in the timeline's file
(:func:`node_arrays`, :func:`load_targets`) and the shapes that file must have
(:func:`node_shapes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from .errors import DataError
from .explain.explanation import Explanation
from .timeline_file import load_series

NODE_ARRAYS = (
    "node_forecast",
    "node_truth",
    "node_lower",
    "node_upper",
    "compliance_forecast",
    "compliance_truth",
    "node_risk",
)
"""The arrays only a node-level model's timeline holds (see :class:`~.timeline.Timeline`)."""


class NodeLevelTimeline(Protocol):
    """What these functions read of a timeline (:class:`~.timeline.Timeline`)."""

    steps: np.ndarray
    times_s: np.ndarray
    node_ids: np.ndarray
    meta: dict[str, Any]
    node_forecast: np.ndarray | None
    node_truth: np.ndarray | None
    node_lower: np.ndarray | None
    node_upper: np.ndarray | None
    node_risk: np.ndarray | None
    targets: dict[str, dict[str, list[Explanation]]]

    @property
    def reference(self) -> str: ...

    @property
    def node(self) -> str | None: ...


def target_fields(timeline: NodeLevelTimeline, node: str) -> dict[str, Any]:
    """The fields that make ``timeline`` one of target node ``node`` (an id of
    ``meta["target_nodes"]``): its ``forecast``, ``truth``, ``lower``, ``upper`` and
    explanations, relative to the same reference; DataError for a share timeline or a node
    not explained."""
    node = str(node)
    if node not in timeline.targets:
        held = ", ".join(timeline.targets) or "none: a share model's timeline"
        raise DataError(f"timeline holds no explanations of node '{node}' (target nodes: {held})")
    i = [str(v) for v in timeline.node_ids].index(node)
    series = dict(timeline.targets[node])
    return dict(
        forecast=timeline.node_forecast[:, i],
        truth=timeline.node_truth[:, i],
        lower=None if timeline.node_lower is None else timeline.node_lower[:, i],
        upper=None if timeline.node_upper is None else timeline.node_upper[:, i],
        explanations=series.pop(timeline.reference),
        alternatives=series,
        meta={**timeline.meta, "node": node},
    )


def node_arrays(
    timeline: NodeLevelTimeline,
) -> tuple[dict[str, np.ndarray], dict[str, list[Explanation]]]:
    """The node-level arrays a timeline's file holds (:data:`NODE_ARRAYS` present) and the
    explanations of every target but the shown one, by name prefix (``n{i}_{reference}_``;
    the shown target is stored as the timeline's own series)."""
    arrays = {
        name: getattr(timeline, name) for name in NODE_ARRAYS if getattr(timeline, name) is not None
    }
    series = {}
    for i, node in enumerate(timeline.meta.get("target_nodes") or []):
        if node != timeline.node:
            series |= {f"n{i}_{k}_": v for k, v in timeline.targets[node].items()}
    return arrays, series


def load_targets(
    data: Mapping[str, np.ndarray],
    meta: dict[str, Any],
    shown: dict[str, list[Explanation]],
    n_steps: int,
) -> dict[str, dict[str, list[Explanation]]]:
    """The explanations of every target node of a timeline file (``shown``: the series of
    the target ``meta["node"]``, stored as the timeline's own), by node id and reference."""
    return {
        node: shown
        if node == meta.get("node")
        else {k: load_series(data, f"n{i}_{k}_", n_steps) for k in shown}
        for i, node in enumerate(meta.get("target_nodes") or [])
    }


def node_shapes(timeline: NodeLevelTimeline, n_steps: int, n: int) -> dict[str, tuple[int, ...]]:
    """The shapes a node-level timeline's arrays must have (per node: (T, n); shares: (T,));
    the intervals and the risk only when it has them."""
    held = {"node_lower": timeline.node_lower, "node_upper": timeline.node_lower}
    held["node_risk"] = timeline.node_risk
    return {
        name: (n_steps, n) if name.startswith("node_") else (n_steps,)
        for name in NODE_ARRAYS
        if held.get(name, True) is not None
    }


def risk_frame(timeline: NodeLevelTimeline):
    """The risk of non-compliance at every node and step as a long table (pandas
    DataFrame): step, time_s, node id, forecast and simulated chlorine (mg/L) at the horizon,
    the risk and the minimum residual it is about; DataError for a timeline without one (a
    share model's, or a node model's calibrated before the risk)."""
    import pandas as pd

    if timeline.node_risk is None:
        raise DataError(
            f"timeline of model '{timeline.meta.get('model_dir')}' holds no risk of "
            "non-compliance: a share model has none; a node model gets one from `wdn-explain "
            "calibrate`, then `wdn-explain explain --overwrite`"
        )
    n_steps, n = timeline.node_risk.shape
    return pd.DataFrame(
        {
            "step": np.repeat(timeline.steps, n),
            "time_s": np.repeat(timeline.times_s, n),
            "node": np.tile([str(v) for v in timeline.node_ids], n_steps),
            "forecast_mg_l": timeline.node_forecast.ravel(),
            "truth_mg_l": timeline.node_truth.ravel(),
            "risk": timeline.node_risk.ravel(),
            "min_residual_mg_l": timeline.meta["risk"]["min_residual_mg_l"],
        }
    )
