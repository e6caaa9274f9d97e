"""Explain every time step of a scenario, and cache the result on disk.

A :class:`Timeline` holds, per explained step t, the exact Möbius interactions of the
forecast made at t (of the chlorinated fraction at t + horizon), with the simulated
states the app draws: normalised node chlorine, the forecast and the simulated truth.
One file per (scenario, model): a compressed, pickle-free ``.npz`` with MIs stored as float32 (the
model itself computes in float32), reused while scenario, model and engine match.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .errors import DataError
from .explain import Explanation, GraphSHAPIQ
from .explain.graphshapiq import ENGINE_VERSION
from .files import atomic_write
from .model_folder import model_hash
from .progress import ProgressArg, progress_callback
from .scenario import ScenarioConfig
from .simulation import SimulationResult, simulate

if TYPE_CHECKING:
    from torch_geometric.data import Data


logger = logging.getLogger(__name__)

FORMAT = "wdn-explain-timeline/1"


@dataclass
class Timeline:
    """Explanations of one scenario's forecasts, step by step.

    Attributes:
        steps: Explained time steps (indices into the scenario's reports), shape (T,).
        times_s: Their simulation times in s, shape (T,).
        node_ids: Network node ids, shape (n,).
        chlorine: Node chlorine / injection strength at each explained step, shape (T, n).
        forecast: Model output at each step (fraction chlorinated at t + horizon), (T,).
        truth: Simulated fraction chlorinated at t + horizon, shape (T,).
        explanations: One :class:`~wdn_explain.explain.Explanation` per step.
        meta: scenario config, model hash, horizon, threshold, engine version, baseline.
    """

    steps: np.ndarray
    times_s: np.ndarray
    node_ids: np.ndarray
    chlorine: np.ndarray
    forecast: np.ndarray
    truth: np.ndarray
    explanations: list[Explanation]
    meta: dict[str, Any]

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def scenario(self) -> ScenarioConfig:
        return ScenarioConfig.model_validate(self.meta["scenario"])

    def interaction_values(self, step: int, index: str = "k-SII", order: int | None = None):
        """shapiq ``InteractionValues`` of explained step number ``step`` (0-based); SV and
        BV need no order, the others default to order 2."""
        return self.explanations[step].interaction_values(index, order)

    def node_values(self, index: str = "SV", order: int | None = None) -> np.ndarray:
        """First-order values of ``index`` for every step and node, shape (T, n)."""
        return np.stack([e.node_values(index, order) for e in self.explanations])

    def to_frame(self, index: str = "k-SII", order: int | None = None):
        """All values of ``index`` at every step as a long table (pandas DataFrame): one row
        per (step, interaction) with time_s, the node ids, size, value, forecast, truth and
        whether the value is estimated (a budget-limited approximation) rather than exact."""
        import pandas as pd

        rows = []
        for t, e in enumerate(self.explanations):
            for key, value in e.interaction_values(index, order).dict_values.items():
                rows.append(
                    {
                        "step": int(self.steps[t]),
                        "time_s": int(self.times_s[t]),
                        "nodes": " ".join(str(self.node_ids[k]) for k in key),
                        "size": len(key),
                        "value": value,
                        "forecast": float(self.forecast[t]),
                        "truth": float(self.truth[t]),
                        "estimated": not e.exact,
                    }
                )
        return pd.DataFrame(rows)

    def save(self, path: str | Path) -> Path:
        """Write atomically (temporary name, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {
            "meta": np.array(json.dumps({**self.meta, "format": FORMAT})),
            "steps": self.steps,
            "times_s": self.times_s,
            "node_ids": self.node_ids,
            "chlorine": self.chlorine,
            "forecast": self.forecast,
            "truth": self.truth,
        }
        for t, e in enumerate(self.explanations):
            for key, value in e.to_arrays(prefix=f"s{t}_").items():
                arrays[key] = value.astype(np.float32) if key.startswith(f"s{t}_mi_") else value
        with atomic_write(path) as tmp, open(tmp, "wb") as handle:
            np.savez_compressed(handle, **arrays)  # MIs of nearby steps compress ~5x
        return path

    @classmethod
    def load(cls, path: str | Path) -> Timeline:
        """Read a timeline file; DataError names a missing, truncated or corrupt file."""
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") != FORMAT:
                    raise DataError(f"timeline file '{path}' has format {meta.get('format')!r}")
                steps = data["steps"]
                explanations = []
                for t in range(len(steps)):
                    prefix = f"s{t}_"
                    part = {k: data[k] for k in data.files if k.startswith(prefix)}
                    part = {
                        k: v.astype(np.float64) if k.startswith(f"{prefix}mi_") else v
                        for k, v in part.items()
                    }
                    explanations.append(Explanation.from_arrays(part, prefix))
                return cls(
                    steps=steps,
                    times_s=data["times_s"],
                    node_ids=data["node_ids"],
                    chlorine=data["chlorine"],
                    forecast=data["forecast"],
                    truth=data["truth"],
                    explanations=explanations,
                    meta=meta,
                )
        except FileNotFoundError:
            raise DataError(f"timeline file '{path}' does not exist") from None
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
            raise DataError(f"timeline file '{path}' is truncated or corrupt ({exc})") from None


DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "models" / "default"
DEFAULT_SCENARIO = Path(__file__).resolve().parents[1] / "simulations" / "default_scenario.yaml"
DEFAULT_TIMELINE = DEFAULT_MODEL / "default_timeline.npz"


def timeline_is_current(path: str | Path, model_dir: str | Path) -> bool:
    """Whether a timeline file exists and was made by this model and engine version
    (reads only the file's metadata entry)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return False
    return (
        meta.get("model_hash") == model_hash(model_dir)
        and meta.get("engine_version") == ENGINE_VERSION
    )


def cache_path(scenario: ScenarioConfig, model_dir: str | Path, cache_dir: str | Path) -> Path:
    """Where the timeline of ``scenario`` explained with ``model_dir`` is cached."""
    return Path(cache_dir) / f"timeline_{scenario.config_hash()}_{model_hash(model_dir)}.npz"


def scenario_graphs(result: SimulationResult, card: dict[str, Any]) -> list[Data]:
    """Model inputs (x, edge_attr) at every report, normalised as in training; the caller
    adds the network's ``edge_index``."""
    from torch_geometric.data import Data

    strength = result.config.injection_strength_mg_l
    scale = card["data"]["flow_scale_lps"]
    graphs = []
    for t in range(result.n_steps):
        flow = torch.from_numpy(result.link_flow_lps[t]) / scale
        graphs.append(
            Data(
                x=torch.from_numpy(result.node_chlorine_mg_l[t] / strength).unsqueeze(-1),
                edge_attr=torch.cat([flow, -flow]).unsqueeze(-1),
            )
        )
    return graphs


def explain_scenario(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    *,
    out: str | Path | None = None,
    progress: ProgressArg = False,
    explainer_options: dict[str, Any] | None = None,
) -> tuple[Timeline, str]:
    """Simulate a scenario, forecast and explain every step exactly; cache to ``out``.

    Returns (timeline, status) where status is ``cached`` (a matching file was reused),
    ``computed``, or ``recomputed: <reason>`` (the file was corrupt or stale).
    """
    from .dataset import chlorinated_fraction
    from .network import load_network
    from .training import load_model

    model, card = load_model(model_dir)
    network = load_network(scenario.network)
    if card["data"]["network"]["sha256"] != network.file_sha256:
        raise DataError(
            f"model '{model_dir}' was trained on network '{card['data']['network']['name']}', "
            f"the scenario runs on '{network.name}'"
        )
    options = dict(explainer_options or {})
    meta = {
        "scenario": scenario.model_dump(mode="json"),
        "scenario_hash": scenario.config_hash(),
        "model_hash": model_hash(model_dir),
        "engine_version": ENGINE_VERSION,
        "horizon": card["train"]["horizon"],
        "threshold": card["train"]["threshold"],
        "explainer": options,
    }
    status = "computed"
    if out is not None and Path(out).exists():
        try:
            cached = Timeline.load(out)
            stale = [
                k
                for k in ("scenario_hash", "model_hash", "engine_version", "explainer")
                if cached.meta.get(k) != meta[k]
            ]
            if not stale:
                return cached, "cached"
            status = f"recomputed: cache made with another {', '.join(stale)}"
        except DataError as exc:
            status = f"recomputed: {exc}"
        logger.warning("timeline cache %s %s", out, status)
    result = simulate(scenario, network)
    horizon, threshold = meta["horizon"], meta["threshold"]
    if result.n_steps <= horizon:
        raise DataError(
            f"scenario has {result.n_steps} reported steps, not more than the horizon {horizon}"
        )
    graphs = scenario_graphs(result, card)
    explainer = GraphSHAPIQ(model, progress=False, **options)
    steps = np.arange(result.n_steps - horizon)
    chlorine = result.node_chlorine_mg_l / scenario.injection_strength_mg_l
    explanations = []
    with progress_callback(progress, "explain timeline") as cb:
        for i, t in enumerate(steps):
            data = graphs[t]
            data.edge_index = network.edge_index
            explanations.append(explainer.explain(data))
            if cb:
                cb(i + 1, len(steps))
    timeline = Timeline(
        steps=steps,
        times_s=result.times_s[steps],
        node_ids=np.asarray(network.node_ids),
        chlorine=chlorine[steps].astype(np.float32),
        forecast=np.array([e.prediction for e in explanations]),
        truth=chlorinated_fraction(chlorine[steps + horizon], threshold),
        explanations=explanations,
        meta={**meta, "baseline": "mean", "model_dir": str(model_dir)},
    )
    if out is not None:
        timeline.save(out)
    return timeline, status
