"""Model inputs and labels from simulated arrays: the one rule training, evaluation and
timelines share (so what a model is served is what it was trained on).

Node features (one column each, in the order of ``InputSpec.node_features``):

* ``chlorine_mg_l``: node chlorine in mg/L.
* ``source_mg_l``: the booster setpoint in mg/L at the injection node while it injects, 0
  elsewhere -- where chlorine enters and how strongly.
* ``chlorine_fraction``: node chlorine / the scenario's injection strength (the published WAQ
  model's only input; equal to mg/L for its 1 mg/L source).
* ``source_plan_mg_l``: the dosing plan, a known-future input: the setpoint the source's
  schedule holds at each of the next ``horizon`` reports (``horizon`` columns, mg/L at the
  injection node, 0 elsewhere). It is built from the scenario's schedule
  (:func:`source_plan`), never from what happened later, and must agree with the recorded
  source wherever both are known (:func:`check_plan`).
* ``chlorine_history_mg_l``: node chlorine (mg/L) at the ``horizon`` previous reports, t - 1
  first (``horizon`` columns; before the first report, the first report's value): when a
  front reached a node, so how far it has travelled into the pipes beyond
  (:func:`chlorine_history`).
* ``source_arrival_mg_l``: the source's setpoint that reaches each node now and ``horizon``
  reports ahead if it travelled by plug flow along the flows now (2 columns, mg/L): the
  setpoint at t - tau_i and at t + horizon - tau_i, tau_i the travel time from the source
  (:func:`travel_times_s`); 0 where nothing reaches the node or before the first report. The
  past setpoint is the recorded source, the future one the plan (:func:`source_arrival`): where
  the fronts stand between sensors, which 4 readings of 32 cannot tell a model whose
  messages travel a few hops. Dilution and decay are left to the model.

The risk model's own inputs (:mod:`.risk_model`), appended to its forecaster's node features:

* ``network_setpoint_mg_l``: the source's setpoint now and at each of the next ``horizon``
  reports, at every node (``1 + horizon`` columns, mg/L; :func:`network_setpoint`, from the
  forecaster's ``source_mg_l`` and ``source_plan_mg_l``). A node several hops from the source
  cannot see the source's switch in its own field, yet a reservoir's switch reaches it
  within the horizon; the tree baseline reads the setpoint now among its summaries.
* ``source_travel_horizons``: the plug-flow travel time from the dosing source to each node
  along the flows now (:func:`travel_times_s`), in horizons, capped at :data:`TRAVEL_CAP`
  (also where no flow leads, and at every node while nothing is dosed now or over the
  horizon: the source is then unknown); 1 column, :func:`source_travel`, from the
  forecaster's source, plan and ``flow`` edge feature. Whether a switch planned at the source
  reaches a node before the horizon is a matter of that time, which a node beyond the
  model's field cannot tell from its messages.
* ``horizon_arrival_mg_l``: the setpoint that reaches each node at the horizon by plug flow
  along the flows now (1 column, mg/L; :func:`horizon_arrival`): the setpoint at report
  t + horizon - ceil(tau_i / step) of the two columns above, the setpoint now where that report
  is now or earlier (the forecaster's inputs hold no past setpoint). Which side of a switch
  reaches a node by the horizon, as one number rather than a product for the model to learn.

Chlorine sensors (``InputSpec.quality_node_sensors``, EPyT-Flow's ``SensorConfig`` name for
chlorine analysers at nodes): ``None`` reads chlorine at every node. A tuple of node ids reads it
only there: the chlorine columns (``chlorine_mg_l``, ``chlorine_fraction``) are 0 at every other
node and one more column, ``measured`` (1 at a sensor, 0 elsewhere), comes last. The source and
the plan stay inputs at every node (the operator knows them).

Edge features (``InputSpec.edge_features``, one column each along each direction of every
link, shape (2 E, C), the first E rows from start to end node, the next E reversed, each
column negated there):

* ``flow``: signed flow (L/s) / ``flow_scale_lps``.
* ``pipe_flushes``: signed flow x report step / the link's volume (``link_volume_l``): how
  many times a report step flushes the pipe, so the inverse of its travel time in reports,
  capped at ``horizon`` (a pump or valve, volume 0, passes at once: the cap). The same flow
  means a short hop in a wide long pipe and many in a thin short one; ``flow`` alone does
  not tell a message which.

Label (``InputSpec.target``), ``horizon`` reports ahead:

* ``share`` (the default; cards older than ``target`` are share models): the fraction of nodes
  whose chlorine, in the unit of the first node feature (mg/L or fraction of the strength), is
  at least ``threshold``, shape (). A share lies in [0, 1].
* ``node_chlorine_mg_l``: chlorine in mg/L at every node, shape (n,), for a node-level model
  (a head on every node). The compliance share -- the fraction of nodes below the minimum
  residual ``min_residual_mg_l`` (default 0.2 mg/L, what regulators commonly ask for) -- is
  derived from it by :func:`share_below_residual`, for the forecast and the truth alike.

Forecasts beyond the label's range by more than :data:`RANGE_TOLERANCE` are flagged
(:meth:`InputSpec.range_warning`): a regression's error near a bound when rare and small
(:data:`RARE_OVERSHOOT`), else damaged weights or a scenario far outside the training.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from .errors import ConfigError, DataError
from .scenario import checked_sensors

if TYPE_CHECKING:
    from torch import Tensor

    from .scenario import ScenarioConfig

NODE_FEATURES = (
    "chlorine_mg_l",
    "source_mg_l",
    "chlorine_fraction",
    "source_plan_mg_l",
    "chlorine_history_mg_l",
    "source_arrival_mg_l",
)
HORIZON_WIDE_FEATURES = ("source_plan_mg_l", "chlorine_history_mg_l")
"""Node features that take ``horizon`` columns."""
ARRIVAL_COLUMNS = 2  # source_arrival_mg_l: now and ``horizon`` reports ahead
RISK_INPUTS = ("network_setpoint_mg_l", "source_travel_horizons", "horizon_arrival_mg_l")
"""The risk model's node features beyond its forecaster's (:mod:`.risk_net`), in order; a card
may record the first one or two (a risk model trained before the others)."""
TRAVEL_CAP = 2.0  # source_travel_horizons: horizons, beyond which a front is "far"
EDGE_FEATURES = ("flow", "pipe_flushes")
DEFAULT_EDGE_FEATURES = ("flow",)
"""The edge features of a spec that names none (every card before ``edge_features``)."""
DEFAULT_HORIZON = 4  # reported steps ahead (20 min at the 5-minute report step)
DEFAULT_THRESHOLD = 0.05  # chlorine counted as "chlorinated", in the first feature's unit
DEFAULT_NODE_FEATURES = ("chlorine_mg_l", "source_mg_l", "source_plan_mg_l")
WAQ_PAPER_NODE_FEATURES = ("chlorine_fraction",)
Target = Literal["share", "node_chlorine_mg_l"]
TARGETS: tuple[str, ...] = get_args(Target)
DEFAULT_MIN_RESIDUAL_MG_L = 0.2  # the minimum free-chlorine residual regulators commonly ask for
LABEL_RANGE = {"share": (0.0, 1.0), "node_chlorine_mg_l": (0.0, np.inf)}
"""The physical range of each target: a share of nodes; chlorine in mg/L."""


def within_range(target: Target, values: np.ndarray) -> np.ndarray:
    """``values`` of ``target`` moved onto the bound of :data:`LABEL_RANGE` they cross: what
    the app's charts and tables show of a forecast (-0.09 mg/L reads as 0 mg/L, as its
    interval does, which is clipped already). The model, its explanations and the range
    warning (:meth:`InputSpec.range_warning`) keep the raw output."""
    low, high = LABEL_RANGE[target]
    return np.clip(values, low, high)


def describe_sensors(sensors: Sequence[str] | None) -> str:
    """Where chlorine is read, in words: 'chlorine read at every node' (``None``) or
    'chlorine read at 4 sensors: nodes 20, 23, 9, 19 (every node forecast)'."""
    if sensors is None:
        return "chlorine read at every node"
    nodes = ", ".join(sensors)
    return f"chlorine read at {len(sensors)} sensors: nodes {nodes} (every node forecast)"


def scenario_range(target: str, strength_mg_l: float, initial_mg_l: np.ndarray) -> tuple:
    """The range a scenario's labels can take: :data:`LABEL_RANGE`, and for chlorine at a
    node at most the highest concentration anything puts in -- the source's setpoint or the
    initial quality of any node, reservoirs and tanks included (mixing and decay never
    exceed it). Known at forecast time; intervals are clipped to it."""
    low, high = LABEL_RANGE[target]
    if target == "node_chlorine_mg_l":
        high = max(float(strength_mg_l), float(np.max(initial_mg_l, initial=0.0)))
    return low, high


RANGE_TOLERANCE = 0.05
"""How far (in label units) a forecast may leave :data:`LABEL_RANGE` unflagged: a linear
head overshoots a little near the bounds; damaged weights forecast shares like 4.8."""
RARE_OVERSHOOT = 0.01
"""Up to this fraction of forecasts outside the range by at most 1 unit, without NaN, reads
as a regression's error near a bound (a node model's -0.18 mg/L), not as damaged weights."""


@dataclass(frozen=True)
class InputSpec:
    """How a model's inputs and label are built (stored in the model card as ``inputs``)."""

    node_features: tuple[str, ...] = DEFAULT_NODE_FEATURES
    flow_scale_lps: float = 1.0
    horizon: int = DEFAULT_HORIZON
    threshold: float = DEFAULT_THRESHOLD
    target: Target = "share"
    min_residual_mg_l: float = DEFAULT_MIN_RESIDUAL_MG_L
    quality_node_sensors: tuple[str, ...] | None = None
    edge_features: tuple[str, ...] = DEFAULT_EDGE_FEATURES
    link_volume_l: tuple[float, ...] | None = None
    """Each link's volume in litres (0 for a pump or valve), for ``pipe_flushes`` and
    ``source_arrival_mg_l``."""
    report_step_s: float | None = None
    """The report step in seconds, for ``pipe_flushes`` and ``source_arrival_mg_l``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_features", tuple(self.node_features))
        object.__setattr__(self, "edge_features", tuple(self.edge_features))
        if self.link_volume_l is not None:
            object.__setattr__(self, "link_volume_l", tuple(float(v) for v in self.link_volume_l))
        if self.quality_node_sensors is not None:
            object.__setattr__(
                self, "quality_node_sensors", checked_sensors(self.quality_node_sensors)
            )
        if self.target not in TARGETS:
            raise ConfigError(f"target must be one of {', '.join(TARGETS)} (got '{self.target}')")
        check_min_residual(self.min_residual_mg_l)
        unknown = [f for f in self.node_features if f not in NODE_FEATURES]
        twice = len(set(self.node_features)) != len(self.node_features)
        if unknown or twice or not self.node_features:
            raise ConfigError(
                f"node features must be a non-empty list of {', '.join(NODE_FEATURES)}, "
                f"each once (got {list(self.node_features)})"
            )
        if self.node_features[0] not in ("chlorine_mg_l", "chlorine_fraction"):
            raise ConfigError(
                "the first node feature must be chlorine (chlorine_mg_l or chlorine_fraction; "
                f"got '{self.node_features[0]}')"
            )
        self._check_edge_features()
        if not (np.isfinite(self.flow_scale_lps) and self.flow_scale_lps > 0):
            raise ConfigError(f"flow_scale_lps must be positive (got {self.flow_scale_lps})")
        if self.horizon < 1:
            raise ConfigError(f"horizon must be >= 1 (got {self.horizon})")
        if not (np.isfinite(self.threshold) and self.threshold > 0):
            raise ConfigError(f"threshold must be positive (got {self.threshold})")

    def _check_edge_features(self) -> None:
        unknown = [f for f in self.edge_features if f not in EDGE_FEATURES]
        twice = len(set(self.edge_features)) != len(self.edge_features)
        if unknown or twice or not self.edge_features:
            raise ConfigError(
                f"edge features must be a non-empty list of {', '.join(EDGE_FEATURES)}, each "
                f"once (got {list(self.edge_features)})"
            )
        volumes = self.link_volume_l
        if volumes is not None and not (np.isfinite(volumes).all() and min(volumes) >= 0):
            raise ConfigError(f"link volumes must be finite and >= 0 litres (got {volumes})")
        step = self.report_step_s
        if step is not None and not (np.isfinite(step) and step > 0):
            raise ConfigError(f"report_step_s must be positive (got {step})")

    @property
    def widths(self) -> tuple[int, ...]:
        """Input columns of each node feature, in order: the plan and the history take
        ``horizon`` each, the arrival :data:`ARRIVAL_COLUMNS`, the others one."""
        wide = {f: self.horizon for f in HORIZON_WIDE_FEATURES}
        wide["source_arrival_mg_l"] = ARRIVAL_COLUMNS
        return tuple(wide.get(f, 1) for f in self.node_features)

    @property
    def in_channels(self) -> int:
        """Input columns per node (:attr:`widths`; a sensor set adds the ``measured`` flag)."""
        return sum(self.widths) + (self.quality_node_sensors is not None)

    @property
    def edge_channels(self) -> int:
        """Input columns per directed edge."""
        return len(self.edge_features)

    @property
    def uses_plan(self) -> bool:
        """Whether the inputs need the dosing plan (the plan itself or the arrival)."""
        return bool({"source_plan_mg_l", "source_arrival_mg_l"} & set(self.node_features))

    @property
    def uses_travel_times(self) -> bool:
        """Whether the inputs need the links' volumes and the report step."""
        return "pipe_flushes" in self.edge_features or self.uses_flows

    @property
    def uses_flows(self) -> bool:
        """Whether the node features need the flows and the links (``source_arrival_mg_l``)."""
        return "source_arrival_mg_l" in self.node_features

    @property
    def node_level(self) -> bool:
        """Whether the model forecasts every node (one output row per node)."""
        return self.target == "node_chlorine_mg_l"

    @property
    def threshold_unit(self) -> str:
        return "mg/L" if self.node_features[0] == "chlorine_mg_l" else "x injection strength"

    def to_dict(self) -> dict[str, Any]:
        sensors = self.quality_node_sensors
        return {
            **asdict(self),
            "node_features": list(self.node_features),
            "quality_node_sensors": None if sensors is None else list(sensors),
        }

    def measured(self, node_ids: Sequence[str]) -> np.ndarray:
        """Where chlorine is read, shape (n,) bool over ``node_ids``: every node without a
        sensor set; ConfigError naming a sensor at a node the network lacks."""
        if self.quality_node_sensors is None:
            return np.ones(len(node_ids), dtype=bool)
        ids = [str(node) for node in node_ids]
        missing = [node for node in self.quality_node_sensors if node not in ids]
        if missing:
            raise ConfigError(
                f"chlorine sensor at node '{missing[0]}': the network has no such node "
                f"(nodes: {', '.join(ids[:3])}, ..., {ids[-1]})"
            )
        return np.isin(ids, self.quality_node_sensors)

    def chlorine_level(self, chlorine_mg_l: np.ndarray, strength_mg_l: np.ndarray) -> np.ndarray:
        """Chlorine in the label's unit; ``strength_mg_l`` broadcasts over the node axis."""
        if self.node_features[0] == "chlorine_mg_l":
            return chlorine_mg_l
        return chlorine_mg_l / np.asarray(strength_mg_l)[..., None]

    def node_inputs(
        self,
        chlorine_mg_l: np.ndarray,
        source_mg_l: np.ndarray,
        strength_mg_l: np.ndarray,
        plan_mg_l: np.ndarray | None = None,
        node_ids: Sequence[str] | None = None,
        flow_lps: np.ndarray | None = None,
        link_nodes: np.ndarray | None = None,
    ) -> np.ndarray:
        """Node features, shape (..., n, :attr:`in_channels`) float32 from (..., n) arrays,
        (...,) strengths and, for ``source_plan_mg_l``, the (..., n, horizon) plan
        (:func:`source_plan`); a sensor set needs the ``node_ids`` (:meth:`measured`),
        ``source_arrival_mg_l`` the (..., E) signed link flows (L/s) and the (E, 2) start and
        end node index of every link. For ``chlorine_history_mg_l`` and
        ``source_arrival_mg_l`` the arrays' axis -2 holds consecutive reports of one scenario
        (a (T, n) or (S, T, n) chlorine)."""
        if self.quality_node_sensors is not None and node_ids is None:
            raise ConfigError("quality_node_sensors need the node ids to place the sensors")
        measured = None if node_ids is None else self.measured(node_ids)
        if self.quality_node_sensors is not None:
            chlorine_mg_l = np.where(measured, chlorine_mg_l, 0.0)
        if self.uses_plan and (plan_mg_l is None or plan_mg_l.shape[-1] != self.horizon):
            got = None if plan_mg_l is None else plan_mg_l.shape[-1]
            raise ConfigError(
                f"source_plan_mg_l needs the plan over the horizon of {self.horizon} steps "
                f"(got {got})"
            )
        if self.uses_flows and (flow_lps is None or link_nodes is None):
            raise ConfigError("source_arrival_mg_l needs the link flows and the links' nodes")
        columns = {
            "chlorine_mg_l": lambda: chlorine_mg_l[..., None],
            "source_mg_l": lambda: source_mg_l[..., None],
            "chlorine_fraction": lambda: (chlorine_mg_l / np.asarray(strength_mg_l)[..., None])[
                ..., None
            ],
            "source_plan_mg_l": lambda: plan_mg_l,
            "chlorine_history_mg_l": lambda: chlorine_history(chlorine_mg_l, self.horizon),
            "source_arrival_mg_l": lambda: self.source_arrival(
                source_mg_l, plan_mg_l, flow_lps, link_nodes
            ),
        }
        parts = [np.asarray(columns[f](), dtype=np.float32) for f in self.node_features]
        if self.quality_node_sensors is not None:
            flag = np.broadcast_to(measured[:, None], (*chlorine_mg_l.shape, 1))
            parts.append(flag.astype(np.float32))
        return np.concatenate(parts, axis=-1)

    def columns(self, feature: str) -> slice:
        """The columns of ``feature`` in :meth:`node_inputs`; ConfigError for a feature this
        spec lacks."""
        if feature not in self.node_features:
            raise ConfigError(
                f"node feature '{feature}' is not among this model's inputs "
                f"({', '.join(self.node_features)})"
            )
        at = self.node_features.index(feature)
        start = sum(self.widths[:at])
        return slice(start, start + self.widths[at])

    def edge_inputs(self, flow_lps: np.ndarray) -> np.ndarray:
        """Edge features, shape (..., 2 E, :attr:`edge_channels`) float32 from (..., E)
        signed link flows (L/s)."""
        columns = {
            "flow": lambda: flow_lps / self.flow_scale_lps,
            "pipe_flushes": lambda: self.pipe_flushes(flow_lps),
        }
        per_link = np.stack([columns[f]() for f in self.edge_features], axis=-1)
        return np.concatenate([per_link, -per_link], axis=-2).astype(np.float32)

    def pipe_flushes(self, flow_lps: np.ndarray) -> np.ndarray:
        """Signed flushes of each link per report step, capped at ``horizon`` (see the
        module docstring), shape of ``flow_lps`` (..., E)."""
        if self.link_volume_l is None or self.report_step_s is None:
            raise ConfigError("pipe_flushes needs the links' volumes and the report step")
        flow = np.asarray(flow_lps, dtype=float)
        volume = np.asarray(self.link_volume_l, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            flushes = np.minimum(np.abs(flow) * self.report_step_s / volume, self.horizon)
        return np.sign(flow) * np.where(flow == 0, 0.0, flushes)

    def source_arrival(
        self,
        source_mg_l: np.ndarray,
        plan_mg_l: np.ndarray,
        flow_lps: np.ndarray,
        link_nodes: np.ndarray,
    ) -> np.ndarray:
        """The ``source_arrival_mg_l`` columns (see the module docstring), shape
        (..., T, n, 2) from the (..., T, n) recorded source, the (..., T, n, horizon) plan and
        the (..., T, E) flows of consecutive reports."""
        if self.link_volume_l is None or self.report_step_s is None:
            raise ConfigError("source_arrival_mg_l needs the links' volumes and the report step")
        source_mg_l = np.asarray(source_mg_l)
        n = source_mg_l.shape[-1]
        dosed = np.maximum(np.abs(source_mg_l).max(axis=-2), np.abs(plan_mg_l).max(axis=(-3, -1)))
        at = dosed.argmax(axis=-1)  # (...,): the injection node of each scenario
        tau = travel_times_s(flow_lps, link_nodes, self.link_volume_l, at[..., None], n)
        # the report whose setpoint is on its way: t - ceil(tau / step) reports back
        back = np.ceil(np.where(np.isfinite(tau), tau, 0) / self.report_step_s).astype(np.int64)
        setpoint = np.take_along_axis(source_mg_l, at[..., None, None], axis=-1)[..., 0]
        plan = np.take_along_axis(plan_mg_l, at[..., None, None, None], axis=-2)[..., 0, :]
        n_t = source_mg_l.shape[-2]
        now = np.arange(n_t)[:, None]
        columns = []
        for ahead in (0, self.horizon):
            step = now + ahead - back  # the report of the setpoint that arrives
            past = np.take_along_axis(setpoint[..., None], np.clip(step, 0, n_t - 1), -2)
            k = np.clip(step - now - 1, 0, self.horizon - 1)
            future = np.take_along_axis(plan, k, axis=-1)
            value = np.where(step > now, future, past)
            columns.append(np.where(np.isfinite(tau) & (step >= 0), value, 0.0))
        return np.stack(columns, axis=-1)

    def physical(self, forecast: np.ndarray, high: float | None = None) -> np.ndarray:
        """``forecast`` with the values that leave :data:`LABEL_RANGE` by at most
        :data:`RANGE_TOLERANCE` moved onto the bound they cross (a linear head's small
        overshoot: -8.7e-5 mg/L is 0 mg/L); farther ones are kept for
        :meth:`range_warning` to name. ``high``: the scenario's highest concentration, known
        at forecast time (:func:`scenario_range`: no mixing or decay exceeds it), above which a
        forecast is served at it, as its interval is (1.62 mg/L downstream of a 1.5 mg/L
        booster reads 1.5). The model and its explanations keep their raw output."""
        forecast = np.asarray(forecast)
        low, top = LABEL_RANGE[self.target]
        near_low = (forecast < low) & (forecast >= low - RANGE_TOLERANCE)
        near_top = (forecast > top) & (forecast <= top + RANGE_TOLERANCE)
        served = np.where(near_low, low, np.where(near_top, top, forecast))
        if high is not None:
            served = np.minimum(served, high)
        return served.astype(forecast.dtype)

    def range_warning(self, forecast: np.ndarray) -> str | None:
        """One sentence when forecasts leave the label's physical range :data:`LABEL_RANGE`
        by more than :data:`RANGE_TOLERANCE` (None when all lie inside)."""
        forecast = np.asarray(forecast, dtype=float)
        low, high = LABEL_RANGE[self.target]
        bad = ~((forecast >= low - RANGE_TOLERANCE) & (forecast <= high + RANGE_TOLERANCE))
        if not bad.any():
            return None
        what = "a share of nodes" if self.target == "share" else "chlorine"
        nan = np.isnan(forecast).any()
        overshoot = np.nanmax(np.maximum(low - forecast, forecast - high), initial=0.0)
        cause = (
            "a regression's error near the bound (charts and tables show them at the bound)"
            if not nan and bad.mean() <= RARE_OVERSHOOT and overshoot <= 1
            else "the model's weights may be damaged, or the input is far from its training data"
        )
        where = (  # chlorine has one bound: "below 0 mg/L", not "outside [0, inf]"
            f"below {low:g} mg/L{' or are NaN' if nan else ''}, where chlorine cannot be"
            if np.isinf(high)
            else f"outside [{low:g}, {high:g}], the range of {what}"
        )
        return (
            f"{int(bad.sum())} of {bad.size} forecasts lie {where} (all forecasts: "
            f"{np.nanmin(forecast):.3g} to "
            f"{np.nanmax(forecast):.3g}{', NaN among them' if nan else ''}): {cause}"
        )

    def labels(self, chlorine_mg_l: np.ndarray, strength_mg_l: np.ndarray) -> np.ndarray:
        """The label at each time of (..., n) arrays: the fraction of chlorinated nodes, shape
        (...,), or for the node target the chlorine itself in mg/L, shape (..., n)."""
        if self.node_level:
            return np.asarray(chlorine_mg_l, dtype=np.float32)
        level = self.chlorine_level(chlorine_mg_l, strength_mg_l)
        return chlorinated_fraction(level, self.threshold).astype(np.float32)

    def compliance(self, node_chlorine_mg_l: np.ndarray) -> np.ndarray:
        """The compliance share of node forecasts or truths (..., n): the fraction of nodes
        below this spec's ``min_residual_mg_l`` (:func:`share_below_residual`), shape (...,)."""
        return share_below_residual(node_chlorine_mg_l, self.min_residual_mg_l)


def dosing(x: Tensor, inputs: InputSpec, n_nodes: int) -> Tensor:
    """The setpoint now and planned over the horizon at each node of node inputs ``x`` built
    by ``inputs`` -- the (b n, F) rows of b graphs of ``n_nodes`` nodes each -- shape
    (b, n, 1 + horizon): ``source_mg_l`` and ``source_plan_mg_l`` (0 away from the source)."""
    import torch

    graphs = x.reshape(-1, n_nodes, x.shape[-1])
    now = graphs[..., inputs.columns("source_mg_l")]
    plan = graphs[..., inputs.columns("source_plan_mg_l")]
    return torch.cat([now, plan], dim=-1)


def network_setpoint(x: Tensor, inputs: InputSpec, n_nodes: int) -> Tensor:
    """``network_setpoint_mg_l`` (see the module docstring) of node inputs ``x`` (see
    :func:`dosing`), shape (b n, 1 + horizon): the largest setpoint now and at each report
    of the plan over each graph's nodes, at every node."""
    setpoint = dosing(x, inputs, n_nodes).amax(dim=1, keepdim=True)
    return setpoint.expand(-1, n_nodes, -1).reshape(x.shape[0], -1)


def source_travel(
    x: Tensor, edge_index: Tensor, edge_attr: Tensor, inputs: InputSpec, n_nodes: int
) -> Tensor:
    """``source_travel_horizons`` (see the module docstring) of b graphs in PyG's batched
    layout built by ``inputs`` -- node inputs ``x`` (b n, F), ``edge_index`` (2, b 2E) and
    ``edge_attr`` (b 2E, C), each graph's first E edges its links from start to end node --
    shape (b n, 1). The source is the node with the largest setpoint now or planned."""
    import torch

    setpoint = dosing(x, inputs, n_nodes).amax(dim=-1)  # (b, n)
    edges = edge_attr.reshape(setpoint.shape[0], -1, edge_attr.shape[-1])
    n_links = edges.shape[1] // 2
    flow = edges[:, :n_links, inputs.edge_features.index("flow")] * inputs.flow_scale_lps
    tau = travel_times_s(
        flow.detach().cpu().numpy(),
        edge_index[:, :n_links].T.cpu().numpy(),
        inputs.link_volume_l,
        setpoint.argmax(dim=1).cpu().numpy(),
        n_nodes,
    )
    horizons = np.minimum(tau / (inputs.report_step_s * inputs.horizon), TRAVEL_CAP)
    dosed = (setpoint.amax(dim=1) > 0).cpu().numpy()[:, None]
    travel = np.where(dosed, horizons, TRAVEL_CAP).reshape(-1, 1)
    return torch.as_tensor(travel, dtype=x.dtype, device=x.device)


def horizon_arrival(setpoint: Tensor, travel: Tensor, horizon: int) -> Tensor:
    """``horizon_arrival_mg_l`` (see the module docstring) from the ``network_setpoint_mg_l``
    (rows, 1 + horizon) and ``source_travel_horizons`` (rows, 1) columns, shape (rows, 1)."""
    import torch

    back = torch.ceil(travel * horizon - 1e-6).long()  # reports from the source, rounded up
    report = (horizon - back).clamp(min=0)  # of the setpoint arriving: 0 is now
    return torch.gather(setpoint, -1, report)


def chlorine_history(chlorine_mg_l: np.ndarray, steps: int) -> np.ndarray:
    """Chlorine at the ``steps`` previous reports of each report, t - 1 first, shape
    (..., T, n, steps) from (..., T, n); a report before the first takes the first's value
    (the state a scenario starts from, known at forecast time)."""
    n_t = chlorine_mg_l.shape[-2]
    before = np.clip(np.arange(n_t)[:, None] - np.arange(1, steps + 1)[None, :], 0, None)
    return np.moveaxis(np.asarray(chlorine_mg_l)[..., before, :], -2, -1)


def travel_times_s(
    flow_lps: np.ndarray,
    link_nodes: np.ndarray,
    link_volume_l: Sequence[float],
    source: np.ndarray,
    n_nodes: int,
) -> np.ndarray:
    """Plug-flow travel time (s) from ``source`` to every node along the flows of each
    report, shape (..., n_nodes) from (..., E) signed flows (L/s) and (...,) source node
    indices: the shortest path over links followed in their flow direction, each taking
    volume / |flow| (a pump or valve, volume 0, passes at once); inf where no flow leads.
    One scipy Dijkstra over all reports at once, each report its own block of the graph."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    flow = np.asarray(flow_lps, dtype=float)
    shape = flow.shape[:-1]
    flow = flow.reshape(-1, flow.shape[-1])
    volume = np.asarray(link_volume_l, dtype=float)
    links = np.asarray(link_nodes, dtype=np.int64)
    forward = flow >= 0
    offset = (np.arange(len(flow)) * n_nodes)[:, None]
    start = np.where(forward, links[:, 0], links[:, 1]) + offset
    end = np.where(forward, links[:, 1], links[:, 0]) + offset
    moving = flow != 0
    with np.errstate(divide="ignore", invalid="ignore"):  # no flow: left out below
        seconds = np.maximum(volume / np.abs(flow), 1e-6)  # 0 is no edge to scipy
    size = len(flow) * n_nodes
    graph = csr_matrix((seconds[moving], (start[moving], end[moving])), shape=(size, size))
    sources = np.broadcast_to(np.asarray(source), shape).reshape(-1) + offset[:, 0]
    tau = dijkstra(graph, indices=sources, min_only=True)  # each block reaches only itself
    return tau.reshape(*shape, n_nodes)


def check_min_residual(value: float) -> float:
    """``value`` when it is a finite, non-negative chlorine residual in mg/L; ConfigError in
    one line naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ConfigError(f"min_residual_mg_l must be a number in mg/L (got {value!r})")
    if not (np.isfinite(value) and value >= 0):
        raise ConfigError(
            f"min_residual_mg_l must be a finite chlorine residual >= 0 mg/L (got {value})"
        )
    return float(value)


def chlorinated_fraction(chlorine: np.ndarray, threshold: float) -> np.ndarray:
    """Fraction of nodes (last axis) whose chlorine is at least ``threshold``."""
    return (chlorine >= threshold).mean(axis=-1)


COMPLIANCE_ESTIMATORS = ("forecast", "risk")
"""How a node model may serve its compliance share (:mod:`~wdn_explain.compliance`): the
share of node forecasts below the minimum residual (:func:`share_below_residual`), or the
mean risk of non-compliance; the first preferred on a tie."""


def share_below_residual(node_chlorine_mg_l: np.ndarray, min_residual_mg_l: float) -> np.ndarray:
    """The compliance share: the fraction of nodes (last axis) whose chlorine (mg/L) lies
    below the minimum residual ``min_residual_mg_l``, shape (...,). The one rule evaluate,
    the CLI and the timeline derive it by, from node forecasts and truths alike."""
    return (np.asarray(node_chlorine_mg_l) < min_residual_mg_l).mean(axis=-1)


def source_plan(
    config: ScenarioConfig, times_s: np.ndarray, source_index: int, n_nodes: int, horizon: int
) -> np.ndarray:
    """The dosing plan at every report: the schedule's setpoint at ``t + k`` report steps,
    k = 1 .. ``horizon``, at node ``source_index`` (0 elsewhere), shape (T, n, horizon).

    Times past the scenario's end take the setpoint the schedule holds at its end.
    """
    times_s = np.asarray(times_s, dtype=np.int64)
    step = int(times_s[1] - times_s[0]) if len(times_s) > 1 else config.reporting_step_s
    ahead = times_s[:, None] + step * np.arange(1, horizon + 1)[None, :]
    plan = np.zeros((len(times_s), n_nodes, horizon), dtype=np.float32)
    plan[:, source_index] = config.injection_setpoint_mg_l(ahead)
    return plan


def check_plan(plan_mg_l: np.ndarray, source_mg_l: np.ndarray, node_ids: Sequence[str]) -> None:
    """Refuse a plan that contradicts the recorded source: the plan at t for k steps ahead
    must equal the source recorded at t + k wherever that report exists.

    Args:
        plan_mg_l: (T, n, horizon) plan of one scenario.
        source_mg_l: (T, n) recorded source (the simulation's ``node_source_mg_l``).
        node_ids: The node ids (to name the node).

    Raises:
        DataError: naming the node, the time step, the planned and the recorded value.
    """
    n_t, _, horizon = plan_mg_l.shape
    for k in range(1, min(horizon, n_t - 1) + 1):
        planned, recorded = plan_mg_l[: n_t - k, :, k - 1], source_mg_l[k:]
        bad = ~np.isclose(planned, recorded, rtol=1e-5, atol=1e-6)
        if bad.any():
            t, node = (int(i) for i in np.argwhere(bad)[0])
            raise DataError(
                f"the plan at step {t} for step {t + k}, node {node_ids[node]}: "
                f"{planned[t, node]:g} mg/L contradicts the schedule's recorded "
                f"{recorded[t, node]:g} mg/L"
            )
