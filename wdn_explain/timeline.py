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
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .design import card_envelope
from .errors import DataError
from .explain import Explanation, GraphSHAPIQ, complexity
from .explain.graphshapiq import ENGINE_VERSION
from .features import InputSpec
from .files import atomic_write, check_output
from .model_folder import model_hash
from .progress import ProgressArg, progress_callback
from .scenario import ScenarioConfig
from .simulation import SimulationResult, simulate
from .sizes import check_size, estimate_timeline
from .stepstore import StepStore

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .network import Network


logger = logging.getLogger(__name__)

FORMAT = "wdn-explain-timeline/2"  # 2: chlorine in mg/L, out_of_design in meta


@dataclass
class Timeline:
    """Explanations of one scenario's forecasts, step by step.

    Attributes:
        steps: Explained time steps (indices into the scenario's reports), shape (T,).
        times_s: Their simulation times in s, shape (T,).
        node_ids: Network node ids, shape (n,).
        chlorine: Node chlorine in mg/L at each explained step, shape (T, n).
        forecast: Model output at each step (fraction chlorinated at t + horizon), (T,).
        truth: Simulated fraction chlorinated at t + horizon, shape (T,).
        explanations: One :class:`~wdn_explain.explain.Explanation` per step.
        meta: scenario config, model hash, horizon, threshold, engine version, baseline, and
            ``out_of_design``: sentences naming what of the scenario lies outside the model's
            training design (empty: inside; ``None``: the card records no design).
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

    def first_informative_step(self, tol: float = 1e-3) -> int:
        """The first explained step whose forecast differs from the reference forecast (every
        node at the baseline) by more than ``tol``: before it every value is ~0 (the dummy
        axiom: no node differs from the baseline yet). 0 when none differs."""
        gaps = np.array([abs(e.prediction - e.empty_prediction) for e in self.explanations])
        moving = np.flatnonzero(gaps > tol)
        return int(moving[0]) if len(moving) else 0

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
                meta = _checked_meta(json.loads(str(data["meta"])), path)
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
                timeline = cls(
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
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            raise DataError(f"timeline file '{path}' is truncated or corrupt ({exc})") from None
        timeline._check_shapes(path)
        return timeline

    def _check_shapes(self, path: str | Path) -> None:
        """DataError naming the file when arrays disagree or node indices are out of range."""
        n_steps, n = len(self.steps), len(self.node_ids)
        expected = {
            "times_s": (n_steps,),
            "chlorine": (n_steps, n),
            "forecast": (n_steps,),
            "truth": (n_steps,),
        }
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise DataError(
                    f"timeline file '{path}' is corrupt: {name} has shape "
                    f"{getattr(self, name).shape}, expected {shape}"
                )
        for t, e in enumerate(self.explanations):
            members = [nodes for nodes, _ in e.blocks.groups.values() if nodes.size]
            if e.n_players != n or any(m.min() < 0 or m.max() >= n for m in members):
                raise DataError(
                    f"timeline file '{path}' is corrupt: step {t} refers to nodes outside "
                    f"0..{n - 1}"
                )


_META_KEYS = ("scenario", "model_hash", "engine_version", "horizon", "threshold")


def _checked_meta(meta: Any, path: str | Path) -> dict[str, Any]:
    """The timeline metadata, or DataError naming the file and the problem."""
    if not isinstance(meta, dict):
        raise DataError(
            f"timeline file '{path}' is corrupt: metadata is a {type(meta).__name__}, not a mapping"
        )
    if meta.get("format") != FORMAT:
        raise DataError(f"timeline file '{path}' has format {meta.get('format')!r}")
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise DataError(f"timeline file '{path}' is corrupt: metadata lacks {', '.join(missing)}")
    ScenarioConfig.model_validate(meta["scenario"])  # a ValueError names the bad key
    return meta


DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "models" / "default"
DEFAULT_SCENARIO = Path(__file__).resolve().parents[1] / "simulations" / "default_scenario.yaml"
DEFAULT_TIMELINE = DEFAULT_MODEL / "default_timeline.npz"


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The metadata entry of a timeline file (read alone), or None when it is unreadable."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return meta if isinstance(meta, dict) else None


def timeline_label(path: str | Path) -> str:
    """A plain name of a cached timeline's scenario (where, how strongly, how long, seed)."""
    meta = read_meta(path) or {}
    try:
        return ScenarioConfig.model_validate(meta["scenario"]).describe()
    except (KeyError, TypeError, ValueError):
        return f"unreadable timeline {Path(path).name}"


def timeline_is_current(path: str | Path, model_dir: str | Path) -> bool:
    """Whether a timeline file exists and was made by this model and engine version
    (reads only the file's metadata entry)."""
    meta = read_meta(path)
    return (
        meta is not None
        and meta.get("model_hash") == model_hash(model_dir)
        and meta.get("engine_version") == ENGINE_VERSION
    )


def _is_timeline_file(path: Path) -> bool:
    """An ``.npz`` that is a timeline or too damaged to tell (a cache to recompute), not
    another program's archive."""
    if path.suffix != ".npz":
        return False
    try:
        with np.load(path, allow_pickle=False) as data:
            return {"meta", "steps"} <= set(data.files)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return True


def check_timeline_output(
    out: str | Path, scenario: ScenarioConfig, *, overwrite: bool = False
) -> Path:
    """Refuse, before any work, an output that is not a timeline file (a directory, a text
    file, another archive), cannot be written, or holds another scenario's timeline (unless
    ``overwrite``). A corrupt or stale timeline of this scenario is a cache: recomputed."""
    out = check_output(out, what="timeline file", is_output=_is_timeline_file)
    meta = read_meta(out) if out.is_file() else None
    if meta is not None and meta.get("scenario_hash") != scenario.config_hash() and not overwrite:
        raise DataError(
            f"timeline file '{out}' holds another scenario (hash {meta.get('scenario_hash')}, "
            f"this one {scenario.config_hash()}); use --overwrite to replace it"
        )
    return out


def cache_path(scenario: ScenarioConfig, model_dir: str | Path, cache_dir: str | Path) -> Path:
    """Where the timeline of ``scenario`` explained with ``model_dir`` is cached."""
    return Path(cache_dir) / f"timeline_{scenario.config_hash()}_{model_hash(model_dir)}.npz"


def scenario_graphs(result: SimulationResult, network: Network, inputs: InputSpec) -> list[Data]:
    """Model inputs at every report of a simulated scenario, built as in training."""
    from torch_geometric.data import Data

    strength = np.full(result.n_steps, result.config.injection_strength_mg_l, dtype=np.float32)
    x = inputs.node_inputs(result.node_chlorine_mg_l, result.node_source_mg_l, strength)
    edge_attr = inputs.edge_inputs(result.link_flow_lps)
    return [
        Data(
            x=torch.from_numpy(x[t]),
            edge_index=network.edge_index,
            edge_attr=torch.from_numpy(edge_attr[t]),
        )
        for t in range(result.n_steps)
    ]


def out_of_design(
    scenario: ScenarioConfig, card: dict[str, Any], network: Network
) -> list[str] | None:
    """What of ``scenario`` lies outside the model's training design (see
    :mod:`wdn_explain.design`); None when the card records no design."""
    envelope = card_envelope(card)
    if envelope is None:
        return None
    return envelope.outside(scenario, scenario.injection_node or network.reservoirs[0])


def explain_scenario(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    *,
    out: str | Path | None = None,
    progress: ProgressArg = False,
    explainer_options: dict[str, Any] | None = None,
    allow_large: bool = False,
) -> tuple[Timeline, str]:
    """Simulate a scenario, forecast and explain every step exactly; cache to ``out``.

    Explained steps are streamed to a folder beside ``out`` (see :mod:`.stepstore`), so an
    interrupted run resumes; a scenario whose estimate exceeds :data:`~.sizes.LIMITS` is
    refused before any work unless ``allow_large``.

    Returns (timeline, status) where status is ``cached`` (a matching file was reused),
    ``computed``, or ``recomputed: <reason>`` (the file was corrupt or stale), followed by
    `` (resumed: k of n steps ...)`` when steps of an interrupted run were reused.
    """
    from .network import load_network
    from .training import load_model

    model, card = load_model(model_dir)
    network = load_network(scenario.network)
    if card["data"]["network"]["sha256"] != network.file_sha256:
        raise DataError(
            f"model '{model_dir}' was trained on network '{card['data']['network']['name']}', "
            f"the scenario runs on '{network.name}'"
        )
    inputs = InputSpec.from_card(card)
    options = dict(explainer_options or {})
    meta = {
        "scenario": scenario.model_dump(mode="json"),
        "scenario_hash": scenario.config_hash(),
        "model_hash": model_hash(model_dir),
        "engine_version": ENGINE_VERSION,
        "horizon": inputs.horizon,
        "threshold": inputs.threshold,
        "threshold_unit": inputs.threshold_unit,
        "explainer": options,
        "out_of_design": out_of_design(scenario, card, network),
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
    _check_size(
        scenario, network, options.get("n_layers", model.num_layers), meta, out, allow_large
    )
    result = simulate(scenario, network)
    horizon = meta["horizon"]
    if result.n_steps <= horizon:
        raise DataError(
            f"scenario has {result.n_steps} reported steps, not more than the horizon {horizon}"
        )
    graphs = scenario_graphs(result, network, inputs)
    explainer = GraphSHAPIQ(model, progress=False, **options)
    steps = np.arange(result.n_steps - horizon)
    labels = inputs.labels(
        result.node_chlorine_mg_l, np.full(result.n_steps, scenario.injection_strength_mg_l)
    )
    explanations = []
    store = StepStore.beside(out, meta) if out is not None else None
    kept = 0
    with progress_callback(progress, "explain timeline") as cb:
        for i, t in enumerate(steps):
            explanation = store.get(i) if store is not None else None
            kept += explanation is not None
            if explanation is None:
                explanation = explainer.explain(graphs[t])
                if store is not None:
                    store.put(i, explanation)
            explanations.append(explanation)
            if cb:
                cb(i + 1, len(steps))
    if kept:
        status += f" (resumed: {kept} of {len(steps)} steps kept from an interrupted run)"
    timeline = Timeline(
        steps=steps,
        times_s=result.times_s[steps],
        node_ids=np.asarray(network.node_ids),
        chlorine=result.node_chlorine_mg_l[steps].astype(np.float32),
        forecast=np.array([e.prediction for e in explanations]),
        truth=labels[steps + horizon],
        explanations=explanations,
        meta={**meta, "baseline": "mean", "model_dir": str(model_dir)},
    )
    if out is not None:
        timeline.save(out)
        store.remove()
    return timeline, status


def _check_size(
    scenario: ScenarioConfig,
    network: Network,
    n_layers: int,
    meta: dict[str, Any],
    out: str | Path | None,
    allow_large: bool,
) -> None:
    """Refuse a timeline whose estimate (time, disk, memory) exceeds the limits."""
    n_steps = max(0, scenario.n_reports - meta["horizon"])
    fields = complexity(network.edge_index, network.n_nodes, n_layers)
    estimate = estimate_timeline(n_steps, fields.n_interactions)
    check_size(estimate, Path(out or ".").absolute().parent, allow_large=allow_large)
