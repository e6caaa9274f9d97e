"""Explain every time step of a scenario, and cache the result on disk.

A :class:`Timeline` holds, per explained step t, the exact Möbius interactions of the
forecast made at t (of the chlorinated fraction at t + horizon), with the simulated
states the app draws: normalised node chlorine, the forecast and the simulated truth.
One file per (scenario, model): a compressed, pickle-free ``.npz`` with MIs stored as float32 (the
model itself computes in float32), reused while scenario, model and engine match.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .design import card_envelope
from .errors import ConfigError, DataError, ExplainError
from .explain.explanation import ENGINE_VERSION, Explanation
from .features import InputSpec
from .files import atomic_write, check_output
from .model_folder import model_hash, read_card
from .progress import ProgressArg, progress_callback
from .scenario import DRAWN_RANGES, ScenarioConfig, load_config
from .simulation import SimulationResult, injection_node, simulate
from .sizes import check_size, estimate_timeline
from .stepstore import StepStore

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .explain import GraphSHAPIQ
    from .network import Network


logger = logging.getLogger(__name__)

FORMAT = "wdn-explain-timeline/2"  # 2: chlorine in mg/L, out_of_design in meta

# What a masked node is replaced by (the reference the values are relative to): the
# engine's baseline and the plain name the app and reports show. "none" zeroes every node
# feature: chlorine 0 mg/L and no source (the source feature is 0 wherever nothing enters).
REFERENCES: dict[str, tuple[str, str]] = {
    "mean": ("mean", "the network average (every node at the mean of the inputs, the paper's)"),
    "none": ("zeros", "no chlorine (every node without chlorine and without a source)"),
}

#: The reference shown unless one is asked for: "no chlorine", so that the values say which
#: chlorinated nodes make the forecast (relative to the network average, which is itself
#: chlorinated once chlorine has spread, every dry node gets a large negative value).
DEFAULT_REFERENCE = "none"


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
        meta: scenario config, model hash, horizon, threshold, engine version, baseline,
            ``references`` (the names in :data:`REFERENCES` explained), and
            ``out_of_design``: sentences naming what of the scenario lies outside the model's
            training design (empty: inside; ``None``: the card records no design).
        alternatives: Explanations of the same forecasts relative to other references, by
            name (``none``: no chlorine), one per step each.
    """

    steps: np.ndarray
    times_s: np.ndarray
    node_ids: np.ndarray
    chlorine: np.ndarray
    forecast: np.ndarray
    truth: np.ndarray
    explanations: list[Explanation]
    meta: dict[str, Any]
    alternatives: dict[str, list[Explanation]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def scenario(self) -> ScenarioConfig:
        return ScenarioConfig.model_validate(self.meta["scenario"])

    @property
    def reference(self) -> str:
        """The name (see :data:`REFERENCES`) of the reference ``explanations`` are relative to."""
        return self.meta.get("reference", "mean")

    @property
    def references(self) -> list[str]:
        """Every reference this timeline holds explanations for."""
        return [self.reference, *self.alternatives]

    @property
    def default_reference(self) -> str:
        """The reference shown unless one is asked for: :data:`DEFAULT_REFERENCE` when this
        timeline holds it, else its own."""
        return DEFAULT_REFERENCE if DEFAULT_REFERENCE in self.references else self.reference

    def relative_to(self, reference: str) -> Timeline:
        """The same timeline with ``explanations`` relative to ``reference`` (no copy of the
        values); DataError when the file holds no such explanations."""
        if reference == self.reference:
            return self
        if reference not in self.alternatives:
            raise DataError(
                f"timeline holds no explanations relative to '{reference}' "
                f"(it holds: {', '.join(self.references)})"
            )
        others = {self.reference: self.explanations} | self.alternatives
        explanations = others.pop(reference)
        return replace(
            self,
            explanations=explanations,
            alternatives=others,
            meta={**self.meta, "reference": reference},
        )

    @property
    def exact(self) -> bool:
        """Whether every explanation is exact (False: a lambda-approximation)."""
        return all(e.exact for e in self.explanations)

    @property
    def engine_label(self) -> str:
        """How the values were computed, as every view and file states it."""
        if self.exact:
            return "exact GraphSHAP-IQ"
        return f"GraphSHAP-IQ lambda-approximation (lambda = {self.meta.get('budget')}), not exact"

    @property
    def reference_forecast(self) -> np.ndarray:
        """The forecast with every node at the reference, per step, shape (T,)."""
        return np.array([e.empty_prediction for e in self.explanations])

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
                        "reference": self.reference,
                    }
                )
        return pd.DataFrame(rows)

    def write_json(
        self, folder: str | Path, index: str = "k-SII", order: int | None = None
    ) -> list[Path]:
        """One shapiq ``InteractionValues`` JSON file per step (``step_NNNN.json``, loadable
        with ``InteractionValues.from_json_file``) into ``folder``; shapiq's players are
        positions 0..n-1, so each file's ``parameters`` map them to node ids (``node_ids``)
        and name the reference, time, forecast and simulated truth."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for t in range(len(self)):
            path = folder / f"step_{int(self.steps[t]):04d}.json"
            self.interaction_values(t, index, order).to_json_file(
                path,
                desc=f"{index} at {int(self.times_s[t])} s of {self.scenario.describe()}",
                node_ids=[str(n) for n in self.node_ids],
                reference=self.reference,
                time_s=int(self.times_s[t]),
                forecast=float(self.forecast[t]),
                truth=float(self.truth[t]),
                method=self.engine_label,
            )
            paths.append(path)
        return paths

    def save(self, path: str | Path) -> Path:
        """Write atomically (temporary name, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, np.ndarray] = {
            "meta": np.array(
                json.dumps({**self.meta, "alternatives": list(self.alternatives), "format": FORMAT})
            ),
            "steps": self.steps,
            "times_s": self.times_s,
            "node_ids": self.node_ids,
            "chlorine": self.chlorine,
            "forecast": self.forecast,
            "truth": self.truth,
        }
        series = {"s": self.explanations} | {f"r_{k}_": v for k, v in self.alternatives.items()}
        for head, explanations in series.items():
            for t, e in enumerate(explanations):
                prefix = f"{head}{t}_"
                for key, value in e.to_arrays(prefix=prefix).items():
                    mi = key.startswith(f"{prefix}mi_")
                    arrays[key] = value.astype(np.float32) if mi else value
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
                explanations = _load_series(data, "s", len(steps))
                alternatives = {
                    k: _load_series(data, f"r_{k}_", len(steps))
                    for k in meta.get("alternatives", [])
                }
                timeline = cls(
                    steps=steps,
                    times_s=data["times_s"],
                    node_ids=data["node_ids"],
                    chlorine=data["chlorine"],
                    forecast=data["forecast"],
                    truth=data["truth"],
                    explanations=explanations,
                    meta=meta,
                    alternatives=alternatives,
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
        series = [self.explanations, *self.alternatives.values()]
        for t, e in ((t, e) for es in series for t, e in enumerate(es)):
            members = [nodes for nodes, _ in e.blocks.groups.values() if nodes.size]
            if e.n_players != n or any(m.min() < 0 or m.max() >= n for m in members):
                raise DataError(
                    f"timeline file '{path}' is corrupt: step {t} refers to nodes outside "
                    f"0..{n - 1}"
                )


def _load_series(data: Any, head: str, n_steps: int) -> list[Explanation]:
    """The explanations stored under ``{head}{t}_`` for t < n_steps (MIs back to float64)."""
    out = []
    for t in range(n_steps):
        prefix = f"{head}{t}_"
        part = {k: data[k] for k in data.files if k.startswith(prefix)}
        part = {
            k: v.astype(np.float64) if k.startswith(f"{prefix}mi_") else v for k, v in part.items()
        }
        out.append(Explanation.from_arrays(part, prefix))
    return out


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


SHIPPED_ROOT = Path(__file__).resolve().parents[1]  # holds models/ and simulations/
DEFAULT_MODEL = SHIPPED_ROOT / "models" / "default"
DEFAULT_SCENARIO = SHIPPED_ROOT / "simulations" / "default_scenario.yaml"
DEFAULT_TIMELINE = DEFAULT_MODEL / "default_timeline.npz"


def shipped(path: str | Path) -> Path:
    """``path`` itself when it exists (or is absolute), else the shipped file or folder of
    that relative name (``models/default``, ``simulations/waq.yaml``), so that the defaults
    work from any working directory."""
    path = Path(path)
    if path.exists() or path.is_absolute() or not (SHIPPED_ROOT / path).exists():
        return path
    return SHIPPED_ROOT / path


def default_model() -> Path:
    """The model the app and CLI use unless told otherwise: ``WDN_EXPLAIN_MODEL`` or the
    shipped default."""
    return shipped(os.environ.get("WDN_EXPLAIN_MODEL", DEFAULT_MODEL))


# What a water model folder may hold beside model.pt and card.json: the scenario the app and
# ``explain`` show first for it (scenario 0 of a simulation config) and that scenario's timeline.
MODEL_SCENARIO, MODEL_TIMELINE = "default_scenario.yaml", "default_timeline.npz"


def water_models() -> dict[str, Path]:
    """The models the app offers, by name: :func:`default_model` first (its folder name, or
    its path when it lies outside ``models/``), then every water model folder under the
    shipped ``models/`` (a card with ``data.network``; ``models/chem`` is skipped)."""
    root = SHIPPED_ROOT / "models"
    first = default_model()
    found = {first.name if first.resolve().parent == root else str(first): first}
    for card in sorted(root.glob("*/card.json")):
        if card.parent.name == "chem" or card.parent == first.resolve():
            continue
        try:
            network = json.loads(card.read_text())["data"]["network"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(network, dict):
            found[card.parent.name] = card.parent
    return found


def model_network(model_dir: str | Path) -> Network:
    """The network a model was trained on: the card's network by name (every network that
    ships inside ``epyt``), or ``<name>.inp`` in the model folder; its SHA-256 must match the
    card's. DataError naming the network and what to do otherwise."""
    from .network import builtin_networks, load_network

    info = read_card(model_dir)["data"]["network"]
    name = str(info.get("name", "?"))
    local = Path(model_dir, f"{name}.inp")
    if local.is_file():
        network = load_network(local)
    elif name.lower() in builtin_networks():
        network = load_network(name)
    else:
        raise DataError(
            f"model '{model_dir}' was trained on network '{name}', which does not ship with "
            f"epyt: copy that network's .inp file into the model folder as '{local}'"
        )
    if network.file_sha256 != info["sha256"]:
        raise DataError(
            f"model '{model_dir}' was trained on another version of network '{name}' (sha256 "
            f"{str(info['sha256'])[:12]}..., '{network.inp_path}' has "
            f"{network.file_sha256[:12]}...): copy the .inp it was trained on into the model "
            f"folder as '{local}'"
        )
    return network


def default_scenario(model_dir: str | Path, network: Network | None = None) -> ScenarioConfig:
    """The scenario the app and ``explain`` show first for a model: scenario 0 of the
    folder's ``default_scenario.yaml``; else, for a model of the default scenario's network
    (Hanoi), ``simulations/default_scenario.yaml``; else the middle of the model's training
    design (its first injection node and mode, each range's midpoint, the injection start
    and the bulk decay at their low ends, as the app's form starts), or the plain defaults
    at the first reservoir for a card without a design.

    Args:
        network: The model's network (:func:`model_network`), when already loaded.
    """
    own = Path(model_dir, MODEL_SCENARIO)
    if own.is_file():
        return load_config(own).scenario_config(0)
    card = read_card(model_dir)
    fallback = load_config(DEFAULT_SCENARIO)
    if card["data"]["network"].get("name") == fallback.scenario.network:
        return fallback.scenario_config(0)
    network = network or model_network(model_dir)
    local = network.inp_path.resolve().parent == Path(model_dir).resolve()
    name = network.inp_path.resolve() if local else network.name
    envelope = card_envelope(card)
    if envelope is None:
        return ScenarioConfig(network=str(name))
    step = envelope.reporting_step_s
    factors = {
        key: lo if key in ("injection_start_s", "bulk_decay_per_day") else (lo + hi) / 2
        for key, (lo, hi) in envelope.ranges.items()
    }
    node = envelope.injection_nodes[0] if envelope.injection_nodes else None
    return ScenarioConfig(
        network=str(name),
        reporting_step_s=step,
        hydraulic_step_s=step,
        pattern_step_s=step,
        quality_step_s=min(60, step),
        injection_node=None if node in network.reservoirs else node,
        injection_mode=envelope.injection_modes[0] if envelope.injection_modes else "constant",
        **{k: round(v) if DRAWN_RANGES[k] else v for k, v in factors.items()},
    )


def default_timeline(model_dir: str | Path) -> Path | None:
    """The folder's ``default_timeline.npz`` while it is current for the model
    (:func:`timeline_is_current`), else None (the caller computes it into its cache)."""
    path = Path(model_dir, MODEL_TIMELINE)
    return path if timeline_is_current(path, model_dir) else None


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
    """Whether a timeline file exists and was made by this model and engine version, with
    every reference (reads only the file's metadata entry)."""
    meta = read_meta(path)
    return (
        meta is not None
        and meta.get("model_hash") == model_hash(model_dir)
        and meta.get("engine_version") == ENGINE_VERSION
        and meta.get("references") == list(REFERENCES)
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


def cache_path(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    cache_dir: str | Path,
    *,
    budget: int | None = None,
) -> Path:
    """Where the timeline of ``scenario`` explained with ``model_dir`` is cached (with a
    lambda ``budget``: its own file, so an approximation never stands in for the exact one)."""
    name = f"timeline_{scenario.config_hash()}_{model_hash(model_dir)}"
    return Path(cache_dir) / (f"{name}_lambda{budget}.npz" if budget else f"{name}.npz")


def scenario_graphs(result: SimulationResult, network: Network, inputs: InputSpec) -> list[Data]:
    """Model inputs at every report of a simulated scenario, built as in training."""
    import torch
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
    return envelope.outside(scenario, injection_node(scenario, network))


def explain_scenario(
    scenario: ScenarioConfig,
    model_dir: str | Path,
    *,
    out: str | Path | None = None,
    progress: ProgressArg = False,
    explainer_options: dict[str, Any] | None = None,
    allow_large: bool = False,
    scheduler: str | None = None,
    gpu: bool = False,
    budget: int | None = None,
    memory_gb: float | None = None,
) -> tuple[Timeline, str]:
    """Simulate a scenario, forecast and explain every step exactly, relative to every
    reference in :data:`REFERENCES` (the network average and no chlorine); cache to ``out``.

    With ``budget`` (lambda) every step is explained by the lambda-approximation instead,
    recorded in ``meta["budget"]`` (a cached file is reused only for the same budget);
    ``memory_gb`` is the engine's memory budget (see ``GraphSHAPIQ(memory_budget_gb=...)``).

    Explained steps are streamed to a folder beside ``out`` (see :mod:`.stepstore`), so an
    interrupted run resumes; a scenario whose estimate exceeds :data:`~.sizes.LIMITS` is
    refused before any work unless ``allow_large``.

    Returns (timeline, status) where status is ``cached`` (a matching file was reused),
    ``computed``, or ``recomputed: <reason>`` (the file was corrupt or stale), followed by
    `` (resumed: k of n steps ...)`` when steps of an interrupted run were reused.

    With ``scheduler`` (a Dask scheduler address, needs ``out``), the steps are explained
    by :func:`_explain_task` tasks on that cluster (on workers with a ``GPU`` resource when
    ``gpu`` and one has it, running the model there on CUDA) into the step store, then
    assembled here: the file's bytes are those of a local run (on CPU workers; a GPU's
    values agree to about 1e-7).
    """
    from .explain import GraphSHAPIQ
    from .network import load_network
    from .training import load_model

    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ConfigError(f"budget (lambda) must be an integer >= 1 (got {budget!r})")
    if memory_gb is not None and not memory_gb > 0:
        raise ConfigError(f"memory budget must be over 0 GB (got {memory_gb!r})")
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
        "budget": budget,
        "references": list(REFERENCES),
        "out_of_design": out_of_design(scenario, card, network),
    }
    status = "computed"
    if out is not None and Path(out).exists():
        try:
            cached = Timeline.load(out)
            stale = [
                k
                for k in (
                    "scenario_hash",
                    "model_hash",
                    "engine_version",
                    "explainer",
                    "budget",
                    "references",
                )
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
    steps = np.arange(result.n_steps - horizon)
    labels = inputs.labels(
        result.node_chlorine_mg_l, np.full(result.n_steps, scenario.injection_strength_mg_l)
    )
    series: dict[str, list[Explanation]] = {}
    store = StepStore.beside(out, meta) if out is not None else None
    kept = 0
    if scheduler is not None:
        if store is None:
            raise ConfigError("explaining on a cluster needs an output file (out)")
        kept = _explain_on_cluster(
            scheduler, model_dir, options, meta, graphs, steps, store, gpu, progress
        )
    with progress_callback(progress, "explain timeline") as cb:
        for r, reference in enumerate(meta["references"]):
            explainer = GraphSHAPIQ(
                model,
                progress=False,
                memory_budget_gb=memory_gb,
                **(options | {"baseline": REFERENCES[reference][0]}),
            )
            series[reference] = []
            for i, t in enumerate(steps):
                key = r * len(steps) + i  # one store for every reference
                explanation = store.get(key) if store is not None else None
                kept += explanation is not None and scheduler is None
                if explanation is None:
                    explanation = explainer.explain(graphs[t], budget=budget)
                    if store is not None:
                        store.put(key, explanation)
                series[reference].append(explanation)
                if cb:
                    cb(key + 1, len(steps) * len(meta["references"]))
    explanations = series.pop("mean")
    if kept:
        total = len(steps) * len(meta["references"])
        status += f" (resumed: {kept} of {total} steps kept from an interrupted run)"
    timeline = Timeline(
        steps=steps,
        times_s=result.times_s[steps],
        node_ids=np.asarray(network.node_ids),
        chlorine=result.node_chlorine_mg_l[steps].astype(np.float32),
        forecast=np.array([e.prediction for e in explanations]),
        truth=labels[steps + horizon],
        explanations=explanations,
        meta={
            **meta,
            "baseline": "mean",
            "reference": "mean",
            "model_dir": str(model_dir),
            "exact": all(e.exact for series_ in (explanations, *series.values()) for e in series_),
        },
        alternatives=series,
    )
    if out is not None:
        timeline.save(out)
        store.remove()
    return timeline, status


_TASK_EXPLAINERS: dict[tuple, GraphSHAPIQ] = {}


def _explain_task(
    model: tuple[str, str, bool],
    options_json: str,
    reference: str,
    graph: Data,
    folder: str,
    key: int,
) -> int:
    """Explain one step relative to ``reference`` into the step store ``folder`` (a cluster
    task): skipped when the step is already stored, written atomically otherwise.
    ``model`` is the model folder, its hash (workers keep the model while it matches) and
    whether to run it on the worker's GPU when it has one."""
    import torch

    from .explain import GraphSHAPIQ
    from .training import load_model

    store = StepStore(Path(folder))
    if store.has(key):
        return key
    options = json.loads(options_json)
    budget = options.pop("budget", None)  # an explain() argument, not an explainer option
    cache_key = (model, options_json, reference)
    if cache_key not in _TASK_EXPLAINERS:  # workers keep the model across tasks
        options |= {"baseline": REFERENCES[reference][0]}
        device = "cuda" if model[2] and torch.cuda.is_available() else "cpu"
        _TASK_EXPLAINERS[cache_key] = GraphSHAPIQ(
            load_model(model[0])[0].to(device), progress=False, **options
        )
    store.save(key, _TASK_EXPLAINERS[cache_key].explain(graph, budget=budget))
    return key


def _explain_on_cluster(
    scheduler: str,
    model_dir: str | Path,
    options: dict[str, Any],
    meta: dict[str, Any],
    graphs: list[Data],
    steps: np.ndarray,
    store: StepStore,
    gpu: bool,
    progress: ProgressArg,
) -> int:
    """Explain the steps missing from ``store`` on the Dask cluster at ``scheduler``;
    return how many were already stored. ExplainError listing every failed step."""
    from .cluster import failure_report, run_tasks

    references = meta["references"]
    total = len(steps) * len(references)
    missing = [k for k in range(total) if not store.has(k)]
    folder = str(store.folder.absolute())
    model = (str(Path(model_dir).absolute()), meta["model_hash"], gpu)
    run = hashlib.sha256(json.dumps(meta, sort_keys=True).encode() + folder.encode())
    tasks = []
    for key in missing:
        reference, t = references[key // len(steps)], int(steps[key % len(steps)])
        task_options = options | {"budget": meta["budget"]}
        args = (model, json.dumps(task_options), reference, graphs[t], folder, key)
        tasks.append((f"explain-{run.hexdigest()[:12]}-{reference}-step-{t:06d}", args))
    with progress_callback(progress, "explain on cluster") as cb:
        failures = run_tasks(
            scheduler,
            _explain_task,
            tasks,
            progress=cb,
            done=total - len(missing),
            total=total,
            want_gpu=gpu,
        )
    if failures:
        raise ExplainError(failure_report(failures, "steps"))
    return total - len(missing)


def _check_size(
    scenario: ScenarioConfig,
    network: Network,
    n_layers: int,
    meta: dict[str, Any],
    out: str | Path | None,
    allow_large: bool,
) -> None:
    """Refuse a timeline whose estimate (time, disk, memory) exceeds the limits (sized by
    the lambda-approximation's model calls when ``meta["budget"]`` is set)."""
    from .explain import complexity
    from .explain.neighbourhoods import approximation_calls, maximal_fields, receptive_fields

    n_steps = max(0, scenario.n_reports - meta["horizon"])
    if meta["budget"]:
        fields = receptive_fields(network.edge_index, network.n_nodes, n_layers)[-1]
        size = approximation_calls(maximal_fields(fields), meta["budget"])
    else:
        size = complexity(network.edge_index, network.n_nodes, n_layers).n_interactions
    estimate = estimate_timeline(n_steps, size)
    check_size(estimate, Path(out or ".").absolute().parent, allow_large=allow_large)
