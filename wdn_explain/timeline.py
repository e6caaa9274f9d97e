"""A timeline: explanations of every forecast of one scenario, and its file.

A :class:`Timeline` holds, per explained step t, the exact Möbius interactions of the
forecast made at t (of the chlorinated fraction at t + horizon), with the simulated
states the app draws: normalised node chlorine, the forecast and the simulated truth.
A node-level model's timeline (:attr:`Timeline.node_level`) holds every node's forecast with
its interval, the compliance share derived from it, and the explanations of chosen target
nodes; its ``forecast``/``explanations`` are those of one target (:meth:`Timeline.for_node`).
One file per (scenario, model): a compressed, pickle-free ``.npz`` with MIs stored as float32
(the model itself computes in float32), reused while scenario, model and engine match
(:func:`timeline_is_current`). The run that makes one is :mod:`.pipeline`; the shipped
models and scenarios are found by :mod:`.shipped`; the views are :mod:`.plot`,
:mod:`.narrative` and :mod:`.report`.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError, DataError
from .explain.explanation import ENGINE_VERSION, Explanation
from .files import atomic_write, check_output, write_npz
from .lazy import moved_getattr
from .model_folder import model_hash
from .records import Record
from .scenario import ScenarioConfig
from .simulation import SIMULATION_VERSION

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


class ExplainSettings(BaseModel):
    """How a scenario's forecasts are explained: one frozen record that the CLI and the app
    build, that :func:`~wdn_explain.pipeline.explain_scenario` and its Dask workers use
    unchanged, and whose fields that change the values (:data:`CACHE_FIELDS`) are the
    timeline's cache key.

    Attributes:
        method: The engine method (``GraphSHAPIQ(method=...)``: auto, local, masked, ...).
        n_layers: Message-passing layers of the receptive fields (default: the model's).
        approximation_lambda: With a value, every step is explained by the
            lambda-approximation with this lambda (``GraphSHAPIQ.explain(budget=...)``)
            instead of exactly.
        memory_budget_gb: Host memory the engine may use (``GraphSHAPIQ(memory_budget_gb=...)``;
            default: half the available); changes the chunking, not the values.
        num_threads: torch intra-op threads of the engine (``GraphSHAPIQ(num_threads=...)``;
            default: the user's own setting, else one); changes the speed, not the values.
        references: The references (:data:`REFERENCES`) explained, each a series.
        target_nodes: For a node-level model, the ids of the nodes whose forecasts are
            explained (default: :func:`~wdn_explain.pipeline.default_target`); refused for a
            share model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    method: str = "auto"
    n_layers: int | None = Field(None, ge=1)
    approximation_lambda: int | None = Field(None, ge=1, le=64)  # above: a field beyond enumeration
    memory_budget_gb: float | None = Field(None, gt=0)
    num_threads: int | None = Field(None, ge=1)
    references: tuple[str, ...] = tuple(REFERENCES)
    target_nodes: tuple[str, ...] | None = None

    @field_validator("references")
    @classmethod
    def _known_references(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [r for r in value if r not in REFERENCES]
        if unknown or not value or "mean" not in value:
            raise ValueError(
                f"references must include 'mean' and be among {', '.join(REFERENCES)} "
                f"(got {', '.join(value) or 'none'})"
            )
        return value

    @field_validator("target_nodes")
    @classmethod
    def _distinct_targets(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and (not value or len(set(value)) != len(value)):
            raise ValueError(f"target nodes must be distinct node ids (got {list(value)})")
        return value

    @classmethod
    def of(cls, **fields: Any) -> ExplainSettings:
        """Settings from keyword fields; ConfigError naming the bad field and value."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "settings"
            raise ConfigError(
                f"explain setting {where}: {error['msg']} (got {error.get('input')!r})"
            ) from None

    def cache_key(self) -> dict[str, Any]:
        """The fields that change the stored values (not memory or threads: they change only
        chunking and speed); ``target_nodes`` only when set, so the keys of share timelines
        are those they had before target nodes existed."""
        key = self.model_dump(mode="json", include=set(CACHE_FIELDS))
        if key["target_nodes"] is None:
            del key["target_nodes"]
        return key

    def explainer_options(self, reference: str, side_by_side: int = 1) -> dict[str, Any]:
        """Keyword arguments of ``GraphSHAPIQ`` explaining relative to ``reference``, as one
        of ``side_by_side`` explainers running at once (each gets that share of the memory
        budget: it changes the chunking, not the values)."""
        memory = self.memory_budget_gb
        if side_by_side > 1:
            from .explain.memory import default_memory_budget_gb

            memory = (memory or default_memory_budget_gb()) / side_by_side
        options = {
            "method": self.method,
            "memory_budget_gb": memory,
            "num_threads": self.num_threads,
        }
        if self.n_layers is not None:
            options["n_layers"] = self.n_layers
        return options | {"baseline": REFERENCES[reference][0]}


CACHE_FIELDS = ("method", "n_layers", "approximation_lambda", "references", "target_nodes")


def cache_identity(
    scenario: ScenarioConfig, model_dir: str | Path, settings: ExplainSettings
) -> dict[str, Any]:
    """What a cached timeline (and an interrupted run's stored steps) must have been made
    with to be reused: scenario, model, engine and simulator versions and the settings'
    cache key."""
    return {
        "scenario_hash": scenario.config_hash(),
        "model_hash": model_hash(model_dir),
        "engine_version": ENGINE_VERSION,
        "simulation_version": SIMULATION_VERSION,
        "settings": settings.cache_key(),
    }


def cache_mismatch(meta: dict[str, Any] | None, identity: dict[str, Any]) -> list[str]:
    """THE cache rule: the parts of :func:`cache_identity` in which a timeline's metadata
    differs, settings by field name ([] when the file may be reused; ``["file"]`` when it
    has no readable metadata)."""
    if meta is None:
        return ["file"]
    try:
        made_with = settings_of(meta).cache_key()
    except (ValidationError, TypeError):
        made_with = None
    stale = [k for k, wanted in identity.items() if k != "settings" and meta.get(k) != wanted]
    wanted = identity["settings"]
    if made_with is None:
        return [*stale, "settings"]
    fields = [k for k in CACHE_FIELDS if k in wanted or k in made_with]
    return stale + [k for k in fields if made_with.get(k) != wanted.get(k)]


def settings_of(meta: dict[str, Any]) -> ExplainSettings:
    """The settings a timeline was made with (files written before settings were recorded
    hold the lambda as ``budget`` and the references beside)."""
    if "settings" in meta:
        return ExplainSettings.model_validate(meta["settings"])
    return ExplainSettings(
        approximation_lambda=meta.get("budget"),
        references=tuple(meta.get("references", ("mean",))),
    )


# The optional simulated hydraulics a timeline may hold (the maps' flows and hover), by name.
HYDRAULICS = ("link_flow_lps", "node_pressure_m")


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
            training design (empty: inside; ``None``: the card records no design);
            ``pressure_warning`` (negative pressures in the simulation, see
            :attr:`~.simulation.SimulationResult.pressure_warning`) and ``forecast_warning``
            (forecasts outside the share's range [0, 1]): a sentence, or None (absent in
            files written before them).
        alternatives: Explanations of the same forecasts relative to other references, by
            name (``none``: no chlorine), one per step each.
        lower, upper: The forecast's calibrated interval at each step, shape (T,) (None
            for a model without a ``conformal`` record); ``meta["interval"]`` names its
            nominal coverage and method, ``meta["uncertainty"]`` is a plain sentence when
            some interval is wide (even inside the design), else None.
        link_flow_lps: Simulated link flow in L/s at each step, signed (positive from a
            link's start node to its end node), shape (T, n_links); None in files written
            before flows were stored (see :func:`~wdn_explain.pipeline.with_hydraulics`).
        node_pressure_m: Simulated node pressure in m at each step, shape (T, n); None
            like ``link_flow_lps``.

    A node-level model's timeline also holds (None / empty for a share model):

    Attributes:
        node_forecast, node_truth: Chlorine (mg/L) forecast and simulated at every node
            at t + horizon, shape (T, n).
        node_lower, node_upper: Their calibrated intervals, shape (T, n) (or None).
        compliance_forecast, compliance_truth: The compliance share -- the fraction of
            nodes below ``meta["min_residual_mg_l"]`` -- derived from ``node_forecast`` and
            from the simulation (:func:`~wdn_explain.features.share_below_residual`), (T,).
        targets: The explanations of every target node: node id -> reference -> one per
            step (``meta["target_nodes"]`` in order). ``forecast``, ``truth``, ``lower``,
            ``upper``, ``explanations`` and ``alternatives`` are those of the target
            ``meta["node"]`` (chlorine in mg/L there); :meth:`for_node` switches target.
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
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    node_forecast: np.ndarray | None = None
    node_truth: np.ndarray | None = None
    node_lower: np.ndarray | None = None
    node_upper: np.ndarray | None = None
    compliance_forecast: np.ndarray | None = None
    compliance_truth: np.ndarray | None = None
    targets: dict[str, dict[str, list[Explanation]]] = field(default_factory=dict)
    link_flow_lps: np.ndarray | None = None
    node_pressure_m: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def node_level(self) -> bool:
        """Whether a node-level model made this timeline (chlorine at every node)."""
        return self.node_forecast is not None

    @property
    def node(self) -> str | None:
        """The id of the target node ``forecast`` and ``explanations`` are about (None for a
        share model)."""
        return self.meta.get("node")

    def for_node(self, node: str) -> Timeline:
        """The same timeline with ``forecast``, ``truth``, ``lower``, ``upper`` and the
        explanations of target node ``node`` (an id of ``meta["target_nodes"]``), relative to
        the same reference; DataError for a share timeline or a node not explained."""
        node = str(node)
        if node not in self.targets:
            held = ", ".join(self.targets) or "none: a share model's timeline"
            raise DataError(
                f"timeline holds no explanations of node '{node}' (target nodes: {held})"
            )
        i = [str(v) for v in self.node_ids].index(node)
        series = dict(self.targets[node])
        return replace(
            self,
            forecast=self.node_forecast[:, i],
            truth=self.node_truth[:, i],
            lower=None if self.node_lower is None else self.node_lower[:, i],
            upper=None if self.node_upper is None else self.node_upper[:, i],
            explanations=series.pop(self.reference),
            alternatives=series,
            meta={**self.meta, "node": node},
        )

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
        explanations = others.pop(reference)  # (targets keep every reference by name)
        return replace(
            self,
            explanations=explanations,
            alternatives=others,
            meta={**self.meta, "reference": reference},
        )

    @property
    def settings(self) -> ExplainSettings:
        """How the explanations were made (:class:`ExplainSettings`)."""
        return settings_of(self.meta)

    @property
    def exact(self) -> bool:
        """Whether every explanation is exact (False: a lambda-approximation)."""
        return all(e.exact for e in self.explanations)

    @property
    def engine_label(self) -> str:
        """How the values were computed, as every view and file states it."""
        if self.exact:
            return "exact GraphSHAP-IQ"
        lam = self.settings.approximation_lambda
        return f"GraphSHAP-IQ lambda-approximation (lambda = {lam}), not exact"

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
            with atomic_write(path, suffix=".json") as tmp:  # shapiq appends .json
                self.interaction_values(t, index, order).to_json_file(
                    tmp,
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

    def arrays(self) -> dict[str, np.ndarray]:
        """The named arrays of the timeline's file (pickle-free; MIs as float32, in which
        the model computes: nearby steps' MIs then compress ~3x)."""
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
        if self.lower is not None and self.upper is not None:
            arrays |= {"lower": self.lower, "upper": self.upper}
        arrays |= {
            name: getattr(self, name) for name in NODE_ARRAYS if getattr(self, name) is not None
        }
        for name in HYDRAULICS:
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        series = {"s": self.explanations} | {f"r_{k}_": v for k, v in self.alternatives.items()}
        for i, node in enumerate(self.meta.get("target_nodes") or []):
            if node != self.node:  # the shown target is stored as s / r_
                series |= {f"n{i}_{k}_": v for k, v in self.targets[node].items()}
        for head, explanations in series.items():
            for t, e in enumerate(explanations):
                prefix = f"{head}{t}_"
                for key, value in e.to_arrays(prefix=prefix).items():
                    mi = key.startswith(f"{prefix}mi_")
                    arrays[key] = value.astype(np.float32) if mi else value
        return arrays

    def as_saved(self) -> Timeline:
        """The timeline as its file holds it and :meth:`load` returns it (MIs rounded to
        float32, metadata through JSON), without writing or reading a file: what a viewer
        shows of a timeline just computed equals what it shows of it read back later."""
        return Timeline.from_arrays(self.arrays(), "<memory>")

    def save(self, path: str | Path) -> Path:
        """Write atomically (temporary name, then rename): :meth:`arrays` as a zipped
        ``.npz`` that ``np.load`` reads, compressed at zlib level 1 (a third of the time
        of ``np.savez_compressed``'s level 6 for files ~3 % larger)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as tmp, open(tmp, "wb") as handle:
            write_npz(handle, self.arrays(), compresslevel=1)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Timeline:
        """Read a timeline file; DataError names a missing, truncated or corrupt file."""
        try:
            with np.load(path, allow_pickle=False) as data:
                return cls.from_arrays(data, path)
        except FileNotFoundError:
            raise DataError(f"timeline file '{path}' does not exist") from None
        except DataError:  # from_arrays names the file and what is wrong
            raise
        except (
            OSError,
            ValueError,
            TypeError,
            EOFError,
            zipfile.BadZipFile,
            RecursionError,
        ) as exc:
            raise DataError(f"timeline file '{path}' is truncated or corrupt ({exc})") from None

    @classmethod
    def from_arrays(cls, data: Mapping[str, np.ndarray], path: str | Path) -> Timeline:
        """The timeline of the named arrays of its file (:meth:`arrays`; ``path`` names it
        in errors); DataError for missing, truncated or inconsistent arrays."""
        try:
            meta = _checked_meta(json.loads(str(data["meta"])), path)
            steps = data["steps"]
            explanations = _load_series(data, "s", len(steps))
            alternatives = {
                k: _load_series(data, f"r_{k}_", len(steps)) for k in meta.get("alternatives", [])
            }
            shown = {meta.get("reference", "mean"): explanations} | alternatives
            targets = {
                node: shown
                if node == meta.get("node")
                else {k: _load_series(data, f"n{i}_{k}_", len(steps)) for k in shown}
                for i, node in enumerate(meta.get("target_nodes") or [])
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
                lower=data["lower"] if "lower" in data else None,
                upper=data["upper"] if "upper" in data else None,
                targets=targets,
                **{name: data[name] for name in NODE_ARRAYS if name in data},
                **{k: data[k] for k in HYDRAULICS if k in data},
            )
        except DataError:  # _checked_meta names the file and what is wrong
            raise
        except (
            OSError,
            ValueError,
            KeyError,
            TypeError,
            EOFError,
            zipfile.BadZipFile,
            RecursionError,
        ) as exc:
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
        if self.lower is not None:
            expected |= {"lower": (n_steps,), "upper": (n_steps,)}
        if self.node_level:
            expected |= {
                name: (n_steps, n) if name.startswith("node_") else (n_steps,)
                for name in NODE_ARRAYS
                if name not in ("node_lower", "node_upper") or self.node_lower is not None
            }
        if self.node_pressure_m is not None:
            expected["node_pressure_m"] = (n_steps, n)
        if self.link_flow_lps is not None and (
            self.link_flow_lps.ndim != 2 or len(self.link_flow_lps) != n_steps
        ):
            raise DataError(
                f"timeline file '{path}' is corrupt: link_flow_lps has shape "
                f"{self.link_flow_lps.shape}, expected ({n_steps}, n_links)"
            )
        for name, shape in expected.items():
            if getattr(self, name) is None or getattr(self, name).shape != shape:
                got = getattr(getattr(self, name), "shape", None)
                raise DataError(
                    f"timeline file '{path}' is corrupt: {name} has shape {got}, expected {shape}"
                )
        series = [self.explanations, *self.alternatives.values()]
        series += [es for by_ref in self.targets.values() for es in by_ref.values()]
        for t, e in ((t, e) for es in series for t, e in enumerate(es)):
            members = [nodes for nodes, _ in e.blocks.groups.values() if nodes.size]
            if e.n_players != n or any(m.min() < 0 or m.max() >= n for m in members):
                raise DataError(
                    f"timeline file '{path}' is corrupt: step {t} refers to nodes outside "
                    f"0..{n - 1}"
                )


NODE_ARRAYS = (
    "node_forecast",
    "node_truth",
    "node_lower",
    "node_upper",
    "compliance_forecast",
    "compliance_truth",
)
"""The arrays only a node-level model's timeline holds (see :class:`Timeline`)."""


def _load_series(data: Mapping[str, np.ndarray], head: str, n_steps: int) -> list[Explanation]:
    """The explanations stored under ``{head}{t}_`` for t < n_steps (MIs back to float64)."""
    by_step: dict[str, dict[str, np.ndarray]] = {f"{head}{t}_": {} for t in range(n_steps)}
    for key in data:  # one pass over the names, not one per step
        prefix = f"{head}{key[len(head) :].split('_', 1)[0]}_"
        if key.startswith(head) and prefix in by_step:
            by_step[prefix][key] = data[key]
    out = []
    for prefix, part in by_step.items():
        part = {
            k: v.astype(np.float64) if k.startswith(f"{prefix}mi_") else v for k, v in part.items()
        }
        out.append(Explanation.from_arrays(part, prefix))
    return out


class TimelineMeta(Record):
    """A timeline file's metadata entry (see :class:`Timeline`); legacy keys of files written
    before settings were recorded (``explainer``, ``budget``, ``references``) are accepted."""

    KIND: ClassVar[str] = "timeline file"

    format: str
    scenario: ScenarioConfig
    scenario_hash: str
    model_hash: str
    engine_version: str
    simulation_version: str | None = None  # None: simulated before versions were recorded
    horizon: int = Field(ge=1)
    threshold: float
    threshold_unit: str = "mg/L"
    target: str = "share"
    target_nodes: list[str] | None = None  # node-level: the explained nodes, by id
    node: str | None = None  # node-level: the target shown as forecast / explanations
    min_residual_mg_l: float | None = None  # node-level: the compliance share's minimum
    settings: ExplainSettings | None = None
    out_of_design: list[str] | None = None
    pressure_warning: str | None = None
    forecast_warning: str | None = None
    interval: dict[str, Any] | None = None  # the forecast intervals' confidence, method, groups
    uncertainty: str | None = None  # the plain-language notice of wide intervals
    baseline: str = "mean"
    reference: str = "mean"
    model_dir: str | None = None
    exact: bool | None = None
    alternatives: list[str] = []
    explainer: dict[str, Any] | None = None
    budget: int | None = None
    references: list[str] | None = None


def _checked_meta(meta: Any, path: str | Path) -> dict[str, Any]:
    """The timeline metadata (checked against :class:`TimelineMeta`), or DataError naming
    the file and the problem."""
    if isinstance(meta, dict) and meta.get("format") != FORMAT:
        raise DataError(f"timeline file '{path}' has format {meta.get('format')!r}")
    TimelineMeta.parse(meta, path)
    return meta


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The metadata entry of a timeline file (read alone), or None when it is unreadable."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None


def timeline_is_current(
    path: str | Path,
    model_dir: str | Path,
    scenario: ScenarioConfig | None = None,
    settings: ExplainSettings | None = None,
) -> bool:
    """Whether a timeline file exists and may be reused (:func:`cache_mismatch`) for this
    model and ``settings`` (default settings when None), and for ``scenario`` (any scenario
    when None: the file's own). Reads only the file's metadata entry."""
    meta = read_meta(path)
    if meta is None:
        return False
    if scenario is None:
        scenario = ScenarioConfig.model_validate(meta.get("scenario", {}))
    identity = cache_identity(scenario, model_dir, settings or ExplainSettings())
    return not cache_mismatch(meta, identity)


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
    settings: ExplainSettings | None = None,
) -> Path:
    """Where the timeline of ``scenario`` explained with ``model_dir`` and ``settings`` is
    cached: one file per cache identity (:func:`cache_identity`), so an approximation never
    replaces the exact timeline. Nothing reads the name back: the file's metadata says what
    it holds."""
    identity = cache_identity(scenario, model_dir, settings or ExplainSettings())
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"timeline_{digest}.npz"


# Names that lived here before the pipeline and the discovery of shipped files moved out
# (deprecated: import them from their new home).
_MOVED = {
    "explain_scenario": "pipeline",
    "scenario_graphs": "pipeline",
    "out_of_design": "pipeline",
    "SHIPPED_ROOT": "shipped",
    "DEFAULT_MODEL": "shipped",
    "DEFAULT_SCENARIO": "shipped",
    "DEFAULT_TIMELINE": "shipped",
    "MODEL_SCENARIO": "shipped",
    "MODEL_TIMELINE": "shipped",
    "shipped": "shipped",
    "default_model": "shipped",
    "water_models": "shipped",
    "model_network": "shipped",
    "default_scenario": "shipped",
    "default_timeline": "shipped",
    "timeline_label": "narrative",
}


__getattr__ = moved_getattr(__name__, _MOVED)
