"""Model inputs and labels from simulated arrays: the one rule training, evaluation and
timelines share (so what a model is served is what it was trained on).

Node features (one column each, in the order of ``InputSpec.node_features``):

* ``chlorine_mg_l``: node chlorine in mg/L.
* ``source_mg_l``: the booster setpoint in mg/L at the injection node while it injects, 0
  elsewhere -- where chlorine enters and how strongly.
* ``chlorine_fraction``: node chlorine / the scenario's injection strength (the published WAQ
  model's only input; equal to mg/L for its 1 mg/L source).

Edge features: signed flow along each direction of every link (L/s) / ``flow_scale_lps``,
shape (2 E, 1), the first E rows from start to end node, the next E reversed.

Label: the fraction of nodes whose chlorine, in the unit of the first node feature (mg/L or
fraction of the strength), is at least ``threshold``, ``horizon`` reports ahead. A share lies
in [0, 1]; forecasts beyond it by more than :data:`RANGE_TOLERANCE` are flagged
(:meth:`InputSpec.range_warning`): damaged weights or a scenario far outside the training.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .errors import ConfigError

NODE_FEATURES = ("chlorine_mg_l", "source_mg_l", "chlorine_fraction")
DEFAULT_HORIZON = 4  # reported steps ahead (20 min at the 5-minute report step)
DEFAULT_THRESHOLD = 0.05  # chlorine counted as "chlorinated", in the first feature's unit
DEFAULT_NODE_FEATURES = ("chlorine_mg_l", "source_mg_l")
WAQ_PAPER_NODE_FEATURES = ("chlorine_fraction",)
LABEL_RANGE = (0.0, 1.0)  # the label is a share of nodes
RANGE_TOLERANCE = 0.05
"""How far (in label units) a forecast may leave :data:`LABEL_RANGE` unflagged: a linear
head overshoots a little near the bounds; damaged weights forecast shares like 4.8."""


@dataclass(frozen=True)
class InputSpec:
    """How a model's inputs and label are built (stored in the model card as ``inputs``)."""

    node_features: tuple[str, ...] = DEFAULT_NODE_FEATURES
    flow_scale_lps: float = 1.0
    horizon: int = DEFAULT_HORIZON
    threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_features", tuple(self.node_features))
        unknown = [f for f in self.node_features if f not in NODE_FEATURES]
        if unknown or not self.node_features:
            raise ConfigError(
                f"node features must be a non-empty list of {', '.join(NODE_FEATURES)} "
                f"(got {list(self.node_features)})"
            )
        if self.node_features[0] not in ("chlorine_mg_l", "chlorine_fraction"):
            raise ConfigError(
                "the first node feature must be chlorine (chlorine_mg_l or chlorine_fraction; "
                f"got '{self.node_features[0]}')"
            )
        if not (np.isfinite(self.flow_scale_lps) and self.flow_scale_lps > 0):
            raise ConfigError(f"flow_scale_lps must be positive (got {self.flow_scale_lps})")
        if self.horizon < 1:
            raise ConfigError(f"horizon must be >= 1 (got {self.horizon})")
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ConfigError(f"threshold must be positive (got {self.threshold})")

    @property
    def in_channels(self) -> int:
        return len(self.node_features)

    @property
    def threshold_unit(self) -> str:
        return "mg/L" if self.node_features[0] == "chlorine_mg_l" else "x injection strength"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "node_features": list(self.node_features)}

    def chlorine_level(self, chlorine_mg_l: np.ndarray, strength_mg_l: np.ndarray) -> np.ndarray:
        """Chlorine in the label's unit; ``strength_mg_l`` broadcasts over the node axis."""
        if self.node_features[0] == "chlorine_mg_l":
            return chlorine_mg_l
        return chlorine_mg_l / np.asarray(strength_mg_l)[..., None]

    def node_inputs(
        self, chlorine_mg_l: np.ndarray, source_mg_l: np.ndarray, strength_mg_l: np.ndarray
    ) -> np.ndarray:
        """Node features, shape (..., n, F) float32 from (..., n) arrays and (...,) strengths."""
        columns = {
            "chlorine_mg_l": lambda: chlorine_mg_l,
            "source_mg_l": lambda: source_mg_l,
            "chlorine_fraction": lambda: chlorine_mg_l / np.asarray(strength_mg_l)[..., None],
        }
        return np.stack([columns[f]() for f in self.node_features], axis=-1).astype(np.float32)

    def edge_inputs(self, flow_lps: np.ndarray) -> np.ndarray:
        """Edge features, shape (..., 2 E, 1) float32 from (..., E) signed link flows."""
        flow = flow_lps / self.flow_scale_lps
        return np.concatenate([flow, -flow], axis=-1)[..., None].astype(np.float32)

    def range_warning(self, forecast: np.ndarray) -> str | None:
        """One sentence when forecasts leave the label's physical range :data:`LABEL_RANGE`
        by more than :data:`RANGE_TOLERANCE` (None when all lie inside)."""
        forecast = np.asarray(forecast, dtype=float)
        low, high = LABEL_RANGE
        bad = ~((forecast >= low - RANGE_TOLERANCE) & (forecast <= high + RANGE_TOLERANCE))
        if not bad.any():
            return None
        return (
            f"{int(bad.sum())} of {bad.size} forecasts lie outside [{low:g}, {high:g}], the "
            f"range of a share of nodes (from {np.nanmin(forecast):.3g} to "
            f"{np.nanmax(forecast):.3g}{', NaN among them' if np.isnan(forecast).any() else ''}): "
            "the model's weights may be damaged, or the input is far from its training data"
        )

    def labels(self, chlorine_mg_l: np.ndarray, strength_mg_l: np.ndarray) -> np.ndarray:
        """Fraction of chlorinated nodes at each time of (..., n) arrays, shape (...,)."""
        level = self.chlorine_level(chlorine_mg_l, strength_mg_l)
        return chlorinated_fraction(level, self.threshold).astype(np.float32)


def chlorinated_fraction(chlorine: np.ndarray, threshold: float) -> np.ndarray:
    """Fraction of nodes (last axis) whose chlorine is at least ``threshold``."""
    return (chlorine >= threshold).mean(axis=-1)
