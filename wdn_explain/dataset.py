"""The WAQ dataset as a PyTorch Geometric ``Dataset`` of (scenario, time step) samples.

A sample for scenario s and reported step t (all tensors float32; inputs and label are built
by :class:`~wdn_explain.features.InputSpec`, the rule the timelines use too):

* ``x`` (n_nodes, F): the node features, by default chlorine (mg/L) and the booster setpoint
  (mg/L at the injection node while it injects, 0 elsewhere).
* ``edge_index`` (2, 2 * n_links): both directions of every link (see :mod:`.network`).
* ``edge_attr`` (2 * n_links, C): signed flow along each direction at t (L/s), divided by
  the standard deviation of link flows over the training split (``inputs.flow_scale_lps``),
  and the edge features named besides (:mod:`.features`).
* ``y`` (1,): the fraction of chlorinated nodes at t + horizon (chlorine >= ``threshold``);
  for the node target (``target="node_chlorine_mg_l"``) ``y`` (n_nodes,): chlorine in mg/L at
  every node at t + horizon.

Splits are by scenario (no scenario in two splits), drawn with ``split_seed``: train, calib
(held out for the conformal intervals), val and test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, NamedTuple, get_args

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, Dataset

from .conformal import mondrian_bins
from .design import factor_levels
from .errors import ConfigError, DataError
from .features import (
    DEFAULT_EDGE_FEATURES,
    DEFAULT_HORIZON,
    DEFAULT_MIN_RESIDUAL_MG_L,
    DEFAULT_NODE_FEATURES,
    DEFAULT_THRESHOLD,
    InputSpec,
    Target,
    check_plan,
    source_plan,
)
from .records import ModelCard, WaqManifest
from .scenario import ScenarioConfig
from .simulation import SimulationResult
from .waq import HydraulicsSummary, hydraulics_summary, read_manifest, scenario_path

Split = Literal["train", "calib", "val", "test", "all"]
SPLITS: tuple[str, ...] = get_args(Split)


@dataclass(frozen=True)
class WaqArrays:
    """Every scenario of a WAQ folder stacked: (S, T, n) node and (S, T, E) link arrays."""

    chlorine_mg_l: np.ndarray
    source_mg_l: np.ndarray
    strength_mg_l: np.ndarray  # (S,)
    flow_lps: np.ndarray
    times_s: np.ndarray
    edge_index: np.ndarray  # (2, 2E)
    configs: tuple[ScenarioConfig, ...]
    manifest: WaqManifest
    hydraulics: HydraulicsSummary = HydraulicsSummary(
        None, None
    )  # :func:`~.waq.hydraulics_summary`

    @property
    def n_scenarios(self) -> int:
        return len(self.configs)

    @property
    def pressure_warning(self) -> str | None:
        """One sentence when some scenarios' pressures go negative, else None."""
        return self.hydraulics.negative


def load_waq_arrays(folder: str | Path, scenarios: Sequence[int] | None = None) -> WaqArrays:
    """Read and stack a complete WAQ folder, or only ``scenarios`` of it (in that order: work
    on part of a design reads only its part); DataError names a missing or bad file."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    results = []
    for i in range(manifest.n_scenarios) if scenarios is None else scenarios:
        path = scenario_path(folder, i)
        if not path.exists():
            raise DataError(
                f"WAQ folder '{folder}' is incomplete: '{path.name}' is missing "
                "(run `wdn-explain simulate` again to resume)"
            )
        results.append(SimulationResult.load(path))
    try:
        chlorine = np.stack([r.node_chlorine_mg_l for r in results])
        source = np.stack([r.node_source_mg_l for r in results])
        flow = np.stack([r.link_flow_lps for r in results])
    except ValueError as exc:
        raise DataError(f"WAQ folder '{folder}' mixes scenarios of different shapes") from exc
    for name, arr in (("chlorine", chlorine), ("flow", flow)):
        bad = ~np.isfinite(arr).reshape(len(results), -1).all(axis=1)
        if bad.any():
            first = scenario_path(folder, int(np.flatnonzero(bad)[0])).name
            raise DataError(f"{name} in '{folder}/{first}' holds NaN or inf values")
    net = manifest.network
    if list(results[0].node_ids) != net.node_ids or len(results[0].link_ids) != net.n_links:
        raise DataError(f"scenario files in '{folder}' do not match network '{net.name}'")
    links = np.asarray(net.link_nodes, dtype=np.int64).T
    return WaqArrays(
        chlorine_mg_l=chlorine,
        source_mg_l=source,
        strength_mg_l=np.array(
            [r.config.injection_strength_mg_l for r in results], dtype=np.float32
        ),
        flow_lps=flow,
        times_s=results[0].times_s,
        edge_index=np.concatenate([links, links[::-1]], axis=1),
        configs=tuple(r.config for r in results),
        manifest=manifest,
        hydraulics=hydraulics_summary(results),
    )


def injection_indices(arrays: WaqArrays) -> np.ndarray:
    """The index of every scenario's injection node (its booster, else the network's first
    reservoir), shape (S,); DataError naming a node the network lacks."""
    net = arrays.manifest.network
    node_ids, reservoirs = net.node_ids, net.reservoirs
    found = []
    for config in arrays.configs:
        node = config.injection_node or (reservoirs[0] if reservoirs else None)
        if node not in node_ids:
            raise DataError(f"scenario injection node {node!r} is not in network {net.name}")
        found.append(node_ids.index(node))
    return np.array(found, dtype=np.int64)


def scenario_plans(arrays: WaqArrays, horizon: int) -> np.ndarray:
    """The dosing plan of every scenario built from its schedule (:func:`source_plan`),
    shape (S, T, n, horizon); DataError when a plan contradicts a recorded source."""
    node_ids = arrays.manifest.network.node_ids
    plans = []
    for config, source, node in zip(arrays.configs, arrays.source_mg_l, injection_indices(arrays)):
        plan = source_plan(config, arrays.times_s, int(node), len(node_ids), horizon)
        check_plan(plan, source, node_ids)
        plans.append(plan)
    return np.stack(plans)


def switch_ahead(source_mg_l: np.ndarray, horizon: int) -> np.ndarray:
    """Whether any source switches between t and t + horizon, shape (S, T - horizon) from
    the (S, T, n) recorded source."""
    n_t = source_mg_l.shape[1]
    now = source_mg_l[:, : n_t - horizon]
    changed = [source_mg_l[:, k : n_t - horizon + k] != now for k in range(1, horizon + 1)]
    return np.any(changed, axis=(0, 3))


def split_scenarios(
    n_scenarios: int,
    seed: int = 0,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    calibration: float = 0.1,
) -> dict[str, np.ndarray]:
    """Seeded scenario-level split; every scenario lands in exactly one of train, calib, val
    and test.

    ``fractions`` are the train/val/test shares; ``calibration`` (a share of all scenarios)
    is taken from the training share and held out for the conformal intervals (so val and
    test are the same as without it).
    """
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1):
        raise ConfigError(
            f"split fractions must be three non-negative numbers summing to 1 (got {fractions})"
        )
    if not 0 <= calibration <= fractions[0]:
        raise ConfigError(
            f"calibration share must be between 0 and the training share {fractions[0]} "
            f"(got {calibration})"
        )
    order = np.random.default_rng(seed).permutation(n_scenarios)
    n_train = int(round(fractions[0] * n_scenarios))
    n_val = int(round(fractions[1] * n_scenarios))
    n_calib = int(round(calibration * n_scenarios))
    return {
        "train": np.sort(order[: n_train - n_calib]),
        "calib": np.sort(order[n_train - n_calib : n_train]),
        "val": np.sort(order[n_train : n_train + n_val]),
        "test": np.sort(order[n_train + n_val :]),
        "all": np.arange(n_scenarios),
    }


class WaqDataset(Dataset):
    """PyG dataset over one split of a WAQ folder (see the module docstring).

    Args:
        folder: A folder written by :func:`wdn_explain.waq.generate_waq`.
        split: ``train``, ``calib``, ``val``, ``test`` or ``all``.
        horizon: Forecast lead in reported steps (default 4).
        threshold: Chlorine at which a node counts as chlorinated, in the unit of the first
            node feature (mg/L by default).
        node_features: The node features (see :mod:`wdn_explain.features`).
        flow_scale_lps: Flow normalisation to use instead of this folder's training-split
            statistic (a trained model's own, from its card, when evaluating other data).
        split_seed: Seed of the scenario-level split.
        arrays: Already loaded arrays of the same folder (to build several splits at once).
        target: ``share`` or ``node_chlorine_mg_l`` (see :mod:`wdn_explain.features`).
        min_residual_mg_l: The minimum residual of the node target's compliance share.
        quality_node_sensors: The nodes whose chlorine the model reads (None: every node; see
            :mod:`wdn_explain.features`).
        edge_features: The edge features (see :mod:`wdn_explain.features`).
        link_volume_l: Link volumes to use for ``pipe_flushes`` instead of the data's
            network's (a trained model's own, from its card).
        report_step_s: The report step for ``pipe_flushes`` instead of the data's.
    """

    def __init__(
        self,
        folder: str | Path,
        split: Split = "train",
        *,
        horizon: int = DEFAULT_HORIZON,
        threshold: float = DEFAULT_THRESHOLD,
        node_features: tuple[str, ...] = DEFAULT_NODE_FEATURES,
        flow_scale_lps: float | None = None,
        split_seed: int = 0,
        arrays: WaqArrays | None = None,
        target: Target = "share",
        min_residual_mg_l: float = DEFAULT_MIN_RESIDUAL_MG_L,
        quality_node_sensors: tuple[str, ...] | None = None,
        edge_features: tuple[str, ...] = DEFAULT_EDGE_FEATURES,
        link_volume_l: tuple[float, ...] | None = None,
        report_step_s: float | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)} (got '{split}')")
        self.arrays = arrays or load_waq_arrays(folder)
        a = self.arrays
        n_s, n_t, _ = a.chlorine_mg_l.shape
        if n_s != a.manifest.n_scenarios and (split != "all" or flow_scale_lps is None):
            raise ConfigError(
                f"arrays of {n_s} of the folder's {a.manifest.n_scenarios} scenarios make only "
                f"split 'all' with a given flow scale, as a model's inputs say (got '{split}')"
            )
        if not 1 <= horizon < n_t:
            raise ConfigError(f"horizon must be between 1 and {n_t - 1} steps (got {horizon})")
        splits = split_scenarios(n_s, split_seed)
        self.train_scenarios = splits["train"]
        if flow_scale_lps is None:
            train_flow = a.flow_lps[self.train_scenarios]
            flow_scale_lps = float(train_flow.std()) if len(self.train_scenarios) else 1.0
        inputs = InputSpec(
            node_features=node_features,
            flow_scale_lps=flow_scale_lps or 1.0,
            horizon=horizon,
            threshold=threshold,
            target=target,
            min_residual_mg_l=min_residual_mg_l,
            quality_node_sensors=quality_node_sensors,
            edge_features=edge_features,
        )
        if inputs.uses_travel_times:
            from .network import load_network

            if link_volume_l is None:
                link_volume_l = tuple(load_network(a.configs[0].network).link_volume_l)
            report_step_s = report_step_s or float(a.configs[0].reporting_step_s)
            inputs = replace(inputs, link_volume_l=link_volume_l, report_step_s=report_step_s)
        self.inputs = inputs
        self.measured = self.inputs.measured(a.manifest.network.node_ids)
        super().__init__(root=None)
        self.folder, self.split, self.split_seed = Path(folder), split, split_seed
        self.horizon = horizon
        self.scenarios = splits[split]
        self.n_times = n_t - horizon
        self._edge_index = torch.as_tensor(a.edge_index, dtype=torch.long)
        plan = scenario_plans(a, horizon) if self.inputs.uses_plan else None
        self._x = torch.from_numpy(
            self.inputs.node_inputs(
                a.chlorine_mg_l,
                a.source_mg_l,
                a.strength_mg_l[:, None],
                plan,
                node_ids=a.manifest.network.node_ids,
                flow_lps=a.flow_lps,
                link_nodes=np.asarray(a.manifest.network.link_nodes),
            )
        )
        self._switch_ahead = switch_ahead(a.source_mg_l, horizon)
        self._edge_attr = torch.from_numpy(self.inputs.edge_inputs(a.flow_lps))
        self._y = self.inputs.labels(a.chlorine_mg_l, a.strength_mg_l[:, None])

    @classmethod
    def for_inputs(
        cls,
        folder: str | Path,
        split: Split,
        inputs: InputSpec,
        *,
        split_seed: int = 0,
        arrays: WaqArrays | None = None,
    ) -> WaqDataset:
        """The split built exactly as a trained model's inputs say (from its card)."""
        return cls(
            folder,
            split,
            horizon=inputs.horizon,
            threshold=inputs.threshold,
            node_features=inputs.node_features,
            flow_scale_lps=inputs.flow_scale_lps,
            split_seed=split_seed,
            arrays=arrays,
            target=inputs.target,
            min_residual_mg_l=inputs.min_residual_mg_l,
            quality_node_sensors=inputs.quality_node_sensors,
            edge_features=inputs.edge_features,
            link_volume_l=inputs.link_volume_l,
            report_step_s=inputs.report_step_s,
        )

    @classmethod
    def for_card(
        cls, card: ModelCard, folder: str | Path, split: Split, arrays: WaqArrays | None = None
    ) -> WaqDataset:
        """A split of a WAQ folder built as a trained model's card says: its inputs and its
        split seed (:meth:`for_inputs`)."""
        return cls.for_inputs(
            folder, split, card.input_spec, split_seed=card.train["split_seed"], arrays=arrays
        )

    @property
    def manifest(self) -> WaqManifest:
        return self.arrays.manifest

    def len(self) -> int:
        return len(self.scenarios) * self.n_times

    def sample_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(scenario, time step) of every sample, in sample order, each shape (len(self),)."""
        return np.repeat(self.scenarios, self.n_times), np.tile(
            np.arange(self.n_times), len(self.scenarios)
        )

    def targets(self, scenarios: np.ndarray | None = None) -> np.ndarray:
        """``y`` of every sample in order: the chlorinated fraction at t + horizon, shape
        (N,); for the node target chlorine (mg/L) at every node, shape (N, n). Default: this
        split's samples, else every step of ``scenarios`` (for fitted baselines)."""
        s, t = self.steps(scenarios)
        return self._y[s, t + self.horizon]

    def steps(self, scenarios: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scenario, time step) of every forecast of ``scenarios`` (default: this split's
        samples, :meth:`sample_index`), scenario-major."""
        if scenarios is None:
            return self.sample_index()
        return np.repeat(scenarios, self.n_times), np.tile(np.arange(self.n_times), len(scenarios))

    def persistence(self) -> np.ndarray:
        """The persistence forecast of every sample: the label at t itself."""
        s, t = self.sample_index()
        return self._y[s, t]

    def climatology(self) -> np.ndarray:
        """The time-step climatology forecast of every sample: the mean training-split label
        at the same time step (per node for the node target; no model, no state: what
        "usually" happens by then)."""
        return self._climatology(self._y)

    def compliance_forecasts(self) -> dict[str, np.ndarray]:
        """For the node target, the compliance share (:meth:`InputSpec.compliance`) of every
        sample: the ``truth`` at t + horizon, ``persistence`` (the share at t) and the
        time-step ``climatology`` of the share itself, each shape (N,)."""
        share = self.inputs.compliance(self.arrays.chlorine_mg_l)
        s, t = self.sample_index()
        return {
            "truth": share[s, t + self.horizon],
            "persistence": share[s, t],
            "climatology": self._climatology(share),
        }

    def _climatology(self, values: np.ndarray) -> np.ndarray:
        """The mean of (S, T, ...) ``values`` over the training scenarios at each forecast
        time's target step, for every sample."""
        if not len(self.train_scenarios):
            raise DataError(f"'{self.folder}' has no training scenarios to fit a climatology")
        per_step = values[self.train_scenarios, self.horizon :].mean(axis=0)
        return per_step[self.sample_index()[1]]

    def factor_levels(self) -> dict[str, np.ndarray]:
        """Per scenario factor (injection site, pattern, strength, ...), the level of every
        sample, each shape (len(self),) of strings (see :func:`wdn_explain.design.factor_levels`),
        then ``switch``: whether a source switches within the horizon (:meth:`switches_ahead`;
        ``within horizon`` or ``none ahead``) -- the factors ``evaluate`` reports."""
        reservoirs = self._reservoirs()
        levels = [factor_levels(self.arrays.configs[s], reservoirs) for s in self.scenarios]
        by_factor = {
            name: np.repeat(np.array([lv[name] for lv in levels]), self.n_times)
            for name in (levels[0] if levels else {})
        }
        by_factor["switch"] = np.where(self.switches_ahead(), "within horizon", "none ahead")
        return by_factor

    def switches_ahead(self) -> np.ndarray:
        """Per sample, whether a source switches on or off within the forecast horizon."""
        s, t = self.sample_index()
        return self._switch_ahead[s, t]

    def mondrian_bins(self) -> np.ndarray:
        """Per sample, its conformal calibration group (:func:`.conformal.mondrian_bins`)."""
        times, reservoirs = self.arrays.times_s, self._reservoirs()
        per_scenario = [
            mondrian_bins(self.arrays.configs[s], times, self.horizon, reservoirs)[: self.n_times]
            for s in self.scenarios
        ]
        return np.concatenate(per_scenario) if per_scenario else np.array([], dtype=str)

    def split_of(self, split: Split) -> np.ndarray:
        """The scenarios of another split of this folder (same split seed)."""
        return split_scenarios(self.arrays.n_scenarios, self.split_seed)[split]

    def flat_inputs(self, scenarios: np.ndarray | None = None) -> np.ndarray:
        """The model's inputs of every sample flattened to one row (node features, then edge
        features), shape (N, n F + E C), for non-graph baselines; default: this split's
        samples, else every step of ``scenarios``."""
        s, t = self.steps(scenarios)
        x, e = self._x[s, t], self._edge_attr[s, t]
        return torch.cat([x.reshape(len(s), -1), e.reshape(len(s), -1)], dim=1).numpy()

    def _reservoirs(self) -> tuple[str, ...]:
        return tuple(self.manifest.network.reservoirs)

    def locate(self, idx: int) -> tuple[int, int]:
        """(scenario index, time step) of sample ``idx``."""
        return int(self.scenarios[idx // self.n_times]), idx % self.n_times

    def graph(self, scenario: int, t: int) -> Data:
        """The sample of a given scenario and time step (any split)."""
        return Data(
            x=self._x[scenario, t],
            edge_index=self._edge_index,
            edge_attr=self._edge_attr[scenario, t],
            y=torch.as_tensor(self._y[scenario, t + self.horizon]).reshape(-1),
            scenario=scenario,
            t=t,
        )

    def get(self, idx: int) -> Data:
        return self.graph(*self.locate(idx))

    def stacked(self) -> StackedSamples:
        """Every sample of the split as stacked host tensors, in sample order."""
        s, t = self.sample_index()
        return StackedSamples(
            x=self._x[s, t],
            edge_attr=self._edge_attr[s, t],
            y=torch.from_numpy(self._y[s, t + self.horizon]),
            edge_index=self._edge_index,
        )

    def batches(
        self, batch_size: int, *, shuffle: bool = False, generator: torch.Generator | None = None
    ) -> Iterator[Data]:
        """Mini-batches as PyG ``Data`` in the batched layout (see :meth:`StackedSamples.batches`).
        The tensors equal what ``torch_geometric.loader.DataLoader`` makes of this dataset
        (tested)."""
        order = torch.randperm(len(self), generator=generator) if shuffle else None
        for batch in self.stacked().batches(batch_size, order):
            yield Data(**batch._asdict())


class Batch(NamedTuple):
    """One mini-batch in PyG's batched layout: ``x`` (b n, F), ``edge_index`` (2, b E),
    ``edge_attr`` (b E, C), ``y`` (b,) -- (b n,) for the node target -- ``batch`` (b n,)."""

    x: Tensor
    edge_index: Tensor
    edge_attr: Tensor
    y: Tensor
    batch: Tensor


@dataclass(frozen=True)
class StackedSamples:
    """Samples that share one graph, stacked: ``x`` (N, n, F), ``edge_attr`` (N, E, C),
    ``y`` (N,) -- (N, n) for the node target -- and the shared ``edge_index`` (2, E).

    Batches are cut by indexing these tensors where they are stored, so with the samples
    on the GPU (:meth:`to`) a training epoch builds no Python objects per sample and copies
    nothing between host and device but the epoch's permutation.
    """

    x: Tensor
    edge_attr: Tensor
    y: Tensor
    edge_index: Tensor

    def __len__(self) -> int:
        return self.y.shape[0]

    @property
    def device(self) -> torch.device:
        return self.x.device

    @property
    def nbytes(self) -> int:
        """Bytes held by the stacked tensors."""
        return sum(t.numel() * t.element_size() for t in self)

    def __iter__(self) -> Iterator[Tensor]:
        return iter((self.x, self.edge_attr, self.y, self.edge_index))

    def to(self, device: torch.device | str) -> StackedSamples:
        """The same samples on ``device`` (one copy per tensor)."""
        return StackedSamples(*(t.to(device) for t in self))

    def batches(
        self,
        batch_size: int,
        order: Tensor | None = None,
        *,
        device: torch.device | str | None = None,
    ) -> Iterator[Batch]:
        """Mini-batches of ``batch_size`` samples taken in ``order`` (default: sample order).

        Args:
            order: A permutation of the sample indices (moved once to where the samples are).
            device: Where the batches are used (default: where the samples are). When it
                differs, each batch is gathered where the samples are and copied over
                (streaming from the host for a split too large for the device).

        The batched ``edge_index`` and ``batch`` vector are built once for a full batch and
        sliced for the last, partial one (graph-major layout, as PyG collates).
        """
        dev = self.device if device is None else torch.device(device)
        n_nodes, n_edges = self.x.shape[1], self.edge_index.shape[1]
        full = min(batch_size, len(self))
        graph = torch.arange(full, device=dev)
        edge_index = self.edge_index.to(dev).repeat(1, full) + (
            graph.repeat_interleave(n_edges) * n_nodes
        )
        batch_vec = graph.repeat_interleave(n_nodes)
        if order is not None:
            order = order.to(self.device)
        for start in range(0, len(self), batch_size):
            rows = (
                slice(start, start + batch_size)
                if order is None
                else order[start : start + batch_size]
            )
            x, edge_attr, y = (
                t[rows].to(dev, non_blocking=True) for t in (self.x, self.edge_attr, self.y)
            )
            b = y.shape[0]
            yield Batch(
                x=x.reshape(b * n_nodes, -1),
                edge_index=edge_index[:, : b * n_edges],
                edge_attr=edge_attr.reshape(b * n_edges, -1),
                y=y.reshape(-1),
                batch=batch_vec[: b * n_nodes],
            )


def arrival_steps(chlorine: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """First reported step each node is chlorinated, per scenario, shape (S, n); -1 if never."""
    reached = chlorine >= threshold
    first = reached.argmax(axis=1)
    return np.where(reached.any(axis=1), first, -1)
