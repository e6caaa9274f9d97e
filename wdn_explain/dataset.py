"""The WAQ dataset as a PyTorch Geometric ``Dataset`` of (scenario, time step) samples.

A sample for scenario s and reported step t (all tensors float32):

* ``x`` (n_nodes, 1): node chlorine at t divided by the injection strength (dimensionless,
  0 = no chlorine, 1 = source concentration).
* ``edge_index`` (2, 2 * n_links): both directions of every link (see :mod:`.network`).
* ``edge_attr`` (2 * n_links, 1): signed flow along each direction at t (L/s), divided by
  the standard deviation of link flows over the training split (``stats["flow_scale_lps"]``).
* ``y`` (1,): the fraction of chlorinated nodes at t + horizon, where a node is
  *chlorinated* when its chlorine is at least ``threshold`` times the injection strength.

Splits are by scenario (no scenario in two splits), drawn with ``split_seed``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch_geometric.data import Data, Dataset

from .errors import ConfigError, DataError
from .simulation import SimulationResult
from .waq import read_manifest, scenario_path

Split = Literal["train", "val", "test", "all"]
SPLITS = ("train", "val", "test", "all")
DEFAULT_HORIZON = 4
DEFAULT_THRESHOLD = 0.05


@dataclass(frozen=True)
class WaqArrays:
    """Every scenario of a WAQ folder stacked: (S, T, n) node and (S, T, E) link arrays."""

    chlorine: np.ndarray  # node chlorine / injection strength
    flow_lps: np.ndarray
    times_s: np.ndarray
    edge_index: np.ndarray  # (2, 2E)
    manifest: dict


def load_waq_arrays(folder: str | Path) -> WaqArrays:
    """Read and stack a complete WAQ folder; DataError names a missing or bad file."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    n = manifest["n_scenarios"]
    results = []
    for i in range(n):
        path = scenario_path(folder, i)
        if not path.exists():
            raise DataError(
                f"WAQ folder '{folder}' is incomplete: '{path.name}' is missing "
                "(run `wdn-explain simulate` again to resume)"
            )
        results.append(SimulationResult.load(path))
    strength = np.array([r.config.injection_strength_mg_l for r in results], dtype=np.float32)
    try:
        chlorine = np.stack([r.node_chlorine_mg_l for r in results]) / strength[:, None, None]
        flow = np.stack([r.link_flow_lps for r in results])
    except ValueError as exc:
        raise DataError(f"WAQ folder '{folder}' mixes scenarios of different shapes") from exc
    for name, arr in (("chlorine", chlorine), ("flow", flow)):
        bad = ~np.isfinite(arr).reshape(len(results), -1).all(axis=1)
        if bad.any():
            first = scenario_path(folder, int(np.flatnonzero(bad)[0])).name
            raise DataError(f"{name} in '{folder}/{first}' holds NaN or inf values")
    net = manifest["network"]
    if list(results[0].node_ids) != net["node_ids"] or len(results[0].link_ids) != net["n_links"]:
        raise DataError(f"scenario files in '{folder}' do not match network '{net['name']}'")
    links = np.asarray(net["link_nodes"], dtype=np.int64).T
    return WaqArrays(
        chlorine=chlorine.astype(np.float32),
        flow_lps=flow.astype(np.float32),
        times_s=results[0].times_s,
        edge_index=np.concatenate([links, links[::-1]], axis=1),
        manifest=manifest,
    )


def split_scenarios(
    n_scenarios: int, seed: int = 0, fractions: tuple[float, float, float] = (0.8, 0.1, 0.1)
) -> dict[str, np.ndarray]:
    """Seeded scenario-level split; every scenario lands in exactly one of train/val/test."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1):
        raise ConfigError(
            f"split fractions must be three non-negative numbers summing to 1 (got {fractions})"
        )
    order = np.random.default_rng(seed).permutation(n_scenarios)
    n_train = int(round(fractions[0] * n_scenarios))
    n_val = int(round(fractions[1] * n_scenarios))
    return {
        "train": np.sort(order[:n_train]),
        "val": np.sort(order[n_train : n_train + n_val]),
        "test": np.sort(order[n_train + n_val :]),
        "all": np.arange(n_scenarios),
    }


def chlorinated_fraction(chlorine: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """Fraction of nodes whose normalised chlorine is at least ``threshold`` (last axis)."""
    return (chlorine >= threshold).mean(axis=-1)


class WaqDataset(Dataset):
    """PyG dataset over one split of a WAQ folder (see the module docstring).

    Args:
        folder: A folder written by :func:`wdn_explain.waq.generate_waq`.
        split: ``train``, ``val``, ``test`` or ``all``.
        horizon: Forecast lead in reported steps (default 4).
        threshold: Normalised chlorine at which a node counts as chlorinated.
        split_seed: Seed of the scenario-level split.
        arrays: Already loaded arrays of the same folder (to build several splits at once).
        flow_scale_lps: Flow normalisation to use instead of this folder's training-split
            statistic (a trained model's own, from its card, when evaluating other data).
    """

    def __init__(
        self,
        folder: str | Path,
        split: Split = "train",
        *,
        horizon: int = DEFAULT_HORIZON,
        threshold: float = DEFAULT_THRESHOLD,
        split_seed: int = 0,
        arrays: WaqArrays | None = None,
        flow_scale_lps: float | None = None,
    ) -> None:
        if split not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)} (got '{split}')")
        if threshold <= 0:
            raise ConfigError(f"threshold must be positive (got {threshold})")
        self.arrays = arrays or load_waq_arrays(folder)
        n_s, n_t, _ = self.arrays.chlorine.shape
        if not 1 <= horizon < n_t:
            raise ConfigError(f"horizon must be between 1 and {n_t - 1} steps (got {horizon})")
        super().__init__(root=None)
        self.folder, self.split, self.horizon, self.threshold = (
            Path(folder),
            split,
            horizon,
            threshold,
        )
        self.split_seed = split_seed
        self.scenarios = split_scenarios(n_s, split_seed)[split]
        train = split_scenarios(n_s, split_seed)["train"]
        if flow_scale_lps is None:
            flow_scale_lps = float(self.arrays.flow_lps[train].std()) if len(train) else 1.0
        self.stats = {"flow_scale_lps": flow_scale_lps or 1.0}
        self.n_times = n_t - horizon
        self._edge_index = torch.as_tensor(self.arrays.edge_index, dtype=torch.long)
        self._y = chlorinated_fraction(self.arrays.chlorine, threshold).astype(np.float32)

    @property
    def manifest(self) -> dict:
        return self.arrays.manifest

    def len(self) -> int:
        return len(self.scenarios) * self.n_times

    def sample_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(scenario, time step) of every sample, in sample order, each shape (len(self),)."""
        return np.repeat(self.scenarios, self.n_times), np.tile(
            np.arange(self.n_times), len(self.scenarios)
        )

    def targets(self) -> np.ndarray:
        """``y`` of every sample in order: the chlorinated fraction at t + horizon."""
        s, t = self.sample_index()
        return self._y[s, t + self.horizon]

    def persistence(self) -> np.ndarray:
        """The persistence forecast of every sample: the chlorinated fraction at t itself."""
        s, t = self.sample_index()
        return self._y[s, t]

    def locate(self, idx: int) -> tuple[int, int]:
        """(scenario index, time step) of sample ``idx``."""
        return int(self.scenarios[idx // self.n_times]), idx % self.n_times

    def graph(self, scenario: int, t: int) -> Data:
        """The sample of a given scenario and time step (any split)."""
        flow = torch.from_numpy(self.arrays.flow_lps[scenario, t]) / self.stats["flow_scale_lps"]
        return Data(
            x=torch.from_numpy(self.arrays.chlorine[scenario, t]).unsqueeze(-1),
            edge_index=self._edge_index,
            edge_attr=torch.cat([flow, -flow]).unsqueeze(-1),
            y=torch.tensor([self._y[scenario, t + self.horizon]]),
            scenario=scenario,
            t=t,
        )

    def get(self, idx: int) -> Data:
        return self.graph(*self.locate(idx))

    def batches(
        self, batch_size: int, *, shuffle: bool = False, generator: torch.Generator | None = None
    ) -> Iterator[Data]:
        """Mini-batches in PyG's batched layout (``x``, ``edge_index``, ``edge_attr``, ``y``,
        ``batch``), built by stacking arrays: every sample shares one graph structure, so
        this skips collating ``Data`` objects one by one. The tensors equal what
        ``torch_geometric.loader.DataLoader`` makes of this dataset (tested)."""
        n_nodes = self.arrays.chlorine.shape[2]
        order = (
            torch.randperm(len(self), generator=generator) if shuffle else torch.arange(len(self))
        )
        scale = self.stats["flow_scale_lps"]
        for start in range(0, len(self), batch_size):
            idx = order[start : start + batch_size].numpy()
            s, t = self.scenarios[idx // self.n_times], idx % self.n_times
            b = len(idx)
            flow = torch.from_numpy(self.arrays.flow_lps[s, t]) / scale  # (b, n_links)
            offsets = torch.arange(b).repeat_interleave(self._edge_index.shape[1]) * n_nodes
            yield Data(
                x=torch.from_numpy(self.arrays.chlorine[s, t]).reshape(-1, 1),
                edge_index=self._edge_index.repeat(1, b) + offsets,
                edge_attr=torch.cat([flow, -flow], dim=1).reshape(-1, 1),
                y=torch.from_numpy(self._y[s, t + self.horizon]),
                batch=torch.arange(b).repeat_interleave(n_nodes),
            )


def arrival_steps(chlorine: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """First reported step each node is chlorinated, per scenario, shape (S, n); -1 if never."""
    reached = chlorine >= threshold
    first = reached.argmax(axis=1)
    return np.where(reached.any(axis=1), first, -1)
