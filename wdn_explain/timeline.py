"""A timeline: explanations of every forecast of one scenario, and its file.

A :class:`Timeline` holds, per explained step t, the exact Möbius interactions of the
forecast made at t, with the simulated states the app draws (chlorine, forecast, truth).
A node-level model's timeline holds every node's forecast, its interval, the compliance share
and chosen target nodes' explanations (one of them shown: :meth:`Timeline.for_node`).
One file per (scenario, model): a compressed, pickle-free ``.npz`` with MIs stored as float32
(the model itself computes in float32), reused while scenario, model and engine match
(:func:`timeline_is_current`, :mod:`.timeline_file`; settings and cache rule:
:mod:`.explain_settings`; node-level series: :mod:`.node_series`). Made by :mod:`.pipeline`,
found by :mod:`.shipped`, shown by :mod:`.plot`, :mod:`.narrative` and :mod:`.report`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DataError
from .explain.explanation import Explanation
from .explain_settings import (
    CACHE_FIELDS,
    DEFAULT_REFERENCE,
    REFERENCES,
    ExplainSettings,
    cache_identity,
    cache_mismatch,
    cache_path,
    settings_of,
)
from .files import atomic_write, load_npz, write_npz
from .lazy import moved_getattr
from .node_series import NODE_ARRAYS, load_targets, node_arrays, node_shapes, target_fields
from .scenario import ScenarioConfig
from .timeline_file import (
    FORMAT,
    UNREADABLE,
    TimelineMeta,
    check_timeline_output,
    checked_meta,
    load_series,
    read_meta,
    timeline_is_current,
)

HYDRAULICS = ("link_flow_lps", "node_pressure_m", "node_delivered_fraction")


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
            ``pressure_warning``/``delivery_warning`` (negative pressures, unmet demand in the
            simulation: :class:`~.simulation.SimulationResult`) and ``forecast_warning``
            (forecasts outside their range): a sentence, or None (absent in older files).
        alternatives: Explanations of the same forecasts relative to other references, by
            name (``none``: no chlorine), one per step each.
        lower, upper: The forecast's calibrated interval at each step, shape (T,) (None
            for a model without a ``conformal`` record); ``meta["interval"]`` names its
            coverage and method, ``meta["uncertainty"]`` a sentence when the model is expected
            to forecast the scenario badly (:mod:`.notice`; else: wide intervals) or None.
        link_flow_lps, node_pressure_m, node_delivered_fraction: The simulated hydraulics
            at each step (:data:`HYDRAULICS`): signed link flow in L/s (positive from a
            link's start node to its end node), shape (T, n_links); node pressure in m and
            the share of its demand a node got (below 1 where pressure-driven hydraulics
            deliver less), shape (T, n); None in files written before they were stored
            (see :func:`~wdn_explain.hydraulics.with_hydraulics`).

    A node-level model's timeline also holds (None / empty for a share model):

    Attributes:
        node_forecast, node_truth: Chlorine (mg/L) forecast and simulated at every node
            at t + horizon, shape (T, n).
        node_lower, node_upper: Their calibrated intervals, shape (T, n) (or None).
        node_risk: The risk of non-compliance at every node: the calibrated probability
            that its chlorine at t + horizon lies below ``meta["risk"]["min_residual_mg_l"]``
            (:mod:`.risk`), shape (T, n) (None for a model without a ``risk`` record).
        compliance_forecast, compliance_truth: The compliance share -- the fraction of
            nodes below ``meta["min_residual_mg_l"]`` -- as the model serves it (from
            ``node_forecast``, or the mean ``node_risk`` where the card chose it for the
            scenario's kind of injection, :mod:`~wdn_explain.compliance`) and from the
            simulation (:func:`~wdn_explain.features.share_below_residual`), (T,).
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
    node_risk: np.ndarray | None = None
    compliance_forecast: np.ndarray | None = None
    compliance_truth: np.ndarray | None = None
    targets: dict[str, dict[str, list[Explanation]]] = field(default_factory=dict)
    link_flow_lps: np.ndarray | None = None
    node_pressure_m: np.ndarray | None = None
    node_delivered_fraction: np.ndarray | None = None

    def __post_init__(self) -> None:
        """A node-level timeline serves no forecast above its scenario's highest
        concentration (:meth:`~wdn_explain.features.InputSpec.physical`), the bound its
        intervals keep to: a timeline made before this rule reads the same once loaded."""
        if self.node_forecast is None:
            return
        from .features import InputSpec, scenario_range

        scenario = self.scenario
        highest = self.chlorine.max(axis=0)  # the first step's (the initial quality) and on
        high = scenario_range("node_chlorine_mg_l", scenario.injection_strength_mg_l, highest)[1]
        spec = InputSpec(target="node_chlorine_mg_l")
        self.node_forecast = spec.physical(self.node_forecast, high)
        self.forecast = spec.physical(self.forecast, high)

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
        the same reference; DataError for a share timeline or a node not explained
        (:func:`~.node_series.target_fields`)."""
        return replace(self, **target_fields(self, node))

    @property
    def scenario(self) -> ScenarioConfig:
        return ScenarioConfig.from_record(self.meta["scenario"])

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

    def informative_steps(self, tol: float = 1e-3) -> np.ndarray:
        """The explained steps whose forecast differs from the reference forecast (every node
        at the baseline) by more than ``tol``; at the others every value is ~0 (the dummy
        axiom: no node differs from the baseline)."""
        gaps = np.array([abs(e.prediction - e.empty_prediction) for e in self.explanations])
        return np.flatnonzero(gaps > tol)

    def first_informative_step(self, tol: float = 1e-3) -> int:
        """The first of :meth:`informative_steps` (0 when none differs)."""
        moving = self.informative_steps(tol)
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
        nodes, targets = node_arrays(self)
        arrays |= nodes
        for name in HYDRAULICS:
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        series = {"s": self.explanations} | {f"r_{k}_": v for k, v in self.alternatives.items()}
        series |= targets  # the shown target is stored as s / r_
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
            with load_npz(path) as data:
                return cls.from_arrays(data, path)
        except FileNotFoundError:
            raise DataError(f"timeline file '{path}' does not exist") from None
        except DataError:  # from_arrays names the file and what is wrong
            raise
        except (*UNREADABLE, TypeError) as exc:
            raise DataError(f"timeline file '{path}' is truncated or corrupt ({exc})") from None

    @classmethod
    def from_arrays(cls, data: Mapping[str, np.ndarray], path: str | Path) -> Timeline:
        """The timeline of the named arrays of its file (:meth:`arrays`; ``path`` names it
        in errors); DataError for missing, truncated or inconsistent arrays."""
        try:
            meta = checked_meta(json.loads(str(data["meta"])), path)
            steps = data["steps"]
            explanations = load_series(data, "s", len(steps))
            alternatives = {
                k: load_series(data, f"r_{k}_", len(steps)) for k in meta.get("alternatives", [])
            }
            shown = {meta.get("reference", "mean"): explanations} | alternatives
            targets = load_targets(data, meta, shown, len(steps))
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
        except DataError:  # checked_meta names the file and what is wrong
            raise
        except (*UNREADABLE, TypeError) as exc:
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
            expected |= node_shapes(self, n_steps, n)
        for name in ("node_pressure_m", "node_delivered_fraction"):
            if getattr(self, name) is not None:
                expected[name] = (n_steps, n)
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
        if self.node_risk is not None and not ((self.node_risk >= 0) & (self.node_risk <= 1)).all():
            raise DataError(
                f"timeline file '{path}' is corrupt: node_risk holds values that are not "
                "probabilities (each must lie in 0..1)"
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

__all__ = [
    "CACHE_FIELDS",
    "DEFAULT_REFERENCE",
    "FORMAT",
    "HYDRAULICS",
    "NODE_ARRAYS",
    "REFERENCES",
    "ExplainSettings",
    "Timeline",
    "TimelineMeta",
    "cache_identity",
    "cache_mismatch",
    "cache_path",
    "check_timeline_output",
    "read_meta",
    "settings_of",
    "timeline_is_current",
]
