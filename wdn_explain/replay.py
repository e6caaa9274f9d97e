"""Replay: a sensor model's forecasts, intervals, risks and exact explanations over its
sensors, step by step as readings arrive (``wdn-explain replay``; the app's Replay page).

What the operator knows comes from the scenario (:class:`~wdn_explain.scenario.ScenarioConfig`):
the dosing plan and the hydraulics (flows from its simulation, the utility's hydraulic model);
chlorine comes only from the readings (:mod:`.readings`). At each report with a row of
readings the model's inputs are built as in training (:func:`~.pipeline.scenario_node_inputs`
with the readings in place of simulated chlorine), a sensor whose reading is bad
(:func:`~.readings.reading_flags`; for a model reading the chlorine history, also at any of
the ``horizon`` reports before) is masked as unmeasured (the ``measured`` flag 0, its chlorine
0, exactly as the model's spec masks a node without a sensor), and the step holds:

* the forecast at every node (mg/L at t + horizon), its conformal interval and the risk of
  non-compliance (from the model card, as a timeline's);
* for every node, the exact explanation of its forecast over the sensors used (the players;
  every other node held at its observed inputs, a masked sensor at the ``none`` reference:
  unmeasured), by :meth:`~wdn_explain.explain.GraphSHAPIQ.explain_nodes`;
* the readings, each one's flag and which were used.

The output is a folder: ``replay.json`` (what was replayed: model, scenario, sensors) and one
``step_NNNNNN.npz`` per replayed report (NNNNNN: the report's index), each written atomically,
so an interrupt keeps every finished step and a rerun resumes after the last stored step whose
readings the file still holds unchanged.
"""

from __future__ import annotations

import json
import logging
import math
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .compliance import compliance_share, served_estimator
from .errors import ConfigError, DataError
from .explain.explanation import ENGINE_VERSION, Explanation
from .explain_settings import DEFAULT_REFERENCE, ExplainSettings
from .features import scenario_range
from .files import atomic_write, load_npz, read_json
from .readings import (
    DRIFT_REPORTS,
    FLAGS,
    OK,
    STUCK_REPORTS,
    Readings,
    left_out,
    load_readings,
    reading_flags,
)
from .risk import ANY_KIND

if TYPE_CHECKING:
    from .network import Network
    from .records import ModelCard
    from .scenario import ScenarioConfig
    from .simulation import SimulationResult
    from .timeline import Timeline

logger = logging.getLogger(__name__)

FORMAT = 1
META = "replay.json"
HISTORY = "chlorine_history_mg_l"
RECENT = max(STUCK_REPORTS, DRIFT_REPORTS) - 1
"""Reports before the present the bad-reading rules look at."""


@dataclass
class ReplayStep:
    """One replayed report.

    Attributes:
        step: The report's index in the scenario; ``time_s`` its time in s.
        readings: Each sensor's chlorine reading in mg/L (NaN: missing), shape (S,).
        flags: Each reading's :data:`~.readings.FLAGS` code, shape (S,).
        used: Whether each sensor's reading went into the forecast, shape (S,).
        forecast: Chlorine (mg/L) forecast at every node for t + horizon, shape (n,);
            ``raw_forecast`` the model's output before :meth:`~.features.InputSpec.physical`.
        lower, upper: The forecast's calibrated interval, shape (n,) (None: no ``conformal``
            record on the card).
        risk: The risk of non-compliance at every node, shape (n,) (None: no ``risk`` record).
        explanations: Every node's exact explanation over the used sensors (empty when none
            was used).
    """

    step: int
    time_s: int
    readings: np.ndarray
    flags: np.ndarray
    used: np.ndarray
    forecast: np.ndarray
    raw_forecast: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    risk: np.ndarray | None
    explanations: list[Explanation]

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {
            "step": np.array(self.step),
            "time_s": np.array(self.time_s),
            "readings": self.readings,
            "flags": self.flags,
            "used": self.used,
            "forecast": self.forecast,
            "raw_forecast": self.raw_forecast,
            "n_explained": np.array(len(self.explanations)),
        }
        for name in ("lower", "upper", "risk"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        return arrays | _packed(self.explanations)

    @classmethod
    def from_arrays(cls, data: Any, n_sensors: int, n_nodes: int) -> ReplayStep:
        """The step in ``data`` (:meth:`to_arrays`) of a replay of ``n_sensors`` sensors on
        ``n_nodes`` nodes; ValueError naming an array of another shape or a flag code
        :data:`~.readings.FLAGS` lacks."""
        optional = {k: data[k] if k in data else None for k in ("lower", "upper", "risk")}
        arrays = {k: data[k] for k in ("readings", "flags", "used", "forecast", "raw_forecast")}
        for name, array in (arrays | optional).items():
            want = n_sensors if name in ("readings", "flags", "used") else n_nodes
            if array is not None and np.shape(array) != (want,):
                raise ValueError(f"{name} has shape {np.shape(array)}, expected ({want},)")
        if not np.isin(arrays["flags"], range(len(FLAGS))).all():
            raise ValueError(
                f"flags {arrays['flags'].tolist()} are not all codes 0..{len(FLAGS) - 1}"
            )
        return cls(
            step=int(data["step"]),
            time_s=int(data["time_s"]),
            explanations=_unpacked(data, int(data["n_explained"])),
            **arrays,
            **optional,
        )

    def summary(self, sensors: tuple[str, ...], min_residual_mg_l: float) -> str:
        """One line: time, readings used, the ones left out named with the reason, nodes
        forecast below the minimum residual."""
        bad = left_out(sensors, self.flags, self.used)
        below = int((self.forecast < min_residual_mg_l).sum())
        return (
            f"{self.time_s / 60:>6g} min  used {int(self.used.sum())} of {len(sensors)} readings"
            + (f" ({', '.join(bad)})" if bad else "")
            + f"; {below} of {len(self.forecast)} nodes forecast below {min_residual_mg_l:g} mg/L"
        )


_SCALAR, _ABSENT = -1, -2  # lengths of a 0-d array (a header) and of an array one lacks


def _packed(explanations: list[Explanation]) -> dict[str, np.ndarray]:
    """Every explanation's arrays (:meth:`Explanation.to_arrays`) joined by name: each name's
    arrays concatenated (``x_<name>``) with each explanation's length (``n_<name>``), so a
    step file holds a few arrays, not a few per node (a step of 32 nodes reads ~10x faster)."""
    parts = [e.to_arrays() for e in explanations]
    out = {}
    for name in sorted({name for arrays in parts for name in arrays}):
        found = [arrays.get(name) for arrays in parts]
        out[f"x_{name}"] = np.concatenate([np.atleast_1d(a) for a in found if a is not None])
        out[f"n_{name}"] = np.array(
            [_ABSENT if a is None else len(a) if a.ndim else _SCALAR for a in found]
        )
    return out


def _unpacked(data: Any, count: int) -> list[Explanation]:
    """The explanations :func:`_packed` joined."""
    arrays: list[dict[str, np.ndarray]] = [{} for _ in range(count)]
    for key in data:
        if not key.startswith("x_"):
            continue
        name, lengths = key[2:], data[f"n_{key[2:]}"]
        sizes = np.select([lengths == _SCALAR, lengths == _ABSENT], [1, 0], lengths)
        pieces = np.split(data[key], np.cumsum(sizes)[:-1])
        for i, (piece, length) in enumerate(zip(pieces, lengths)):
            if length != _ABSENT:
                arrays[i][name] = piece[0] if length == _SCALAR else piece
    return [Explanation.from_arrays(a) for a in arrays]


@dataclass
class Replay:
    """A replay folder's record and its stored steps, in report order."""

    meta: dict[str, Any]
    steps: list[ReplayStep]

    @property
    def sensors(self) -> tuple[str, ...]:
        return tuple(self.meta["sensors"])

    @property
    def node_ids(self) -> list[str]:
        return list(self.meta["node_ids"])


def step_path(folder: Path, step: int) -> Path:
    return folder / f"step_{step:06d}.npz"


def load_replay(folder: str | Path) -> Replay:
    """The replay in ``folder`` (steps written so far; a folder still being written is read
    as it stands). DataError when it holds no replay, a damaged record or a corrupt step."""
    folder = Path(folder)
    try:
        meta = read_json(folder / META, "replay record")
    except (OSError, ValueError):
        raise DataError(f"'{folder}' holds no replay (no readable {META})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise DataError(f"replay '{folder}' has format {found}, expected {FORMAT}")
    _check_meta(folder, meta)
    n_sensors, n_nodes = len(meta["sensors"]), len(meta["node_ids"])
    steps = []
    for path in sorted(folder.glob("step_*.npz")):
        try:
            with load_npz(path) as data:
                steps.append(ReplayStep.from_arrays(data, n_sensors, n_nodes))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise DataError(f"replay step '{path}' is truncated or corrupt ({exc})") from None
    return Replay(meta, steps)


def _check_meta(folder: Path, meta: dict[str, Any]) -> None:
    """DataError unless the replay record holds what :func:`replay` writes: node ids and
    sensors among them as lists of strings, the scenario's network, a horizon and a minimum
    residual."""

    def ids(key: str) -> list:
        value = meta.get(key)
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else []

    node_ids, sensors = ids("node_ids"), ids("sensors")
    unknown = [s for s in sensors if s not in node_ids]
    scenario = meta.get("scenario")
    network = scenario.get("network") if isinstance(scenario, dict) else None
    minimum, horizon = meta.get("min_residual_mg_l"), meta.get("horizon")
    checks = [
        (bool(node_ids), "no node ids"),
        (bool(sensors), "no sensors"),
        (not unknown, f"sensor '{unknown[0] if unknown else ''}' is not a node"),
        (isinstance(network, str), "no scenario network"),
        (type(horizon) is int and horizon >= 1, "no horizon"),
        (type(minimum) in (int, float) and math.isfinite(minimum), "no minimum residual"),
    ]
    problem = next((problem for ok, problem in checks if not ok), None)
    if problem:
        raise DataError(f"replay record '{folder / META}' is damaged: {problem}")


def replay_network(replay: Replay) -> Network:
    """The network the replay ran on (its scenario's); DataError when that network's nodes are
    not the replay's (a record of another network, or the network file changed since)."""
    from .network import load_network

    network = load_network(replay.meta["scenario"]["network"])
    if list(network.node_ids) != replay.node_ids:
        raise DataError(
            f"the replay's nodes are not those of its network '{network.name}' "
            f"({len(replay.node_ids)} nodes recorded, {network.n_nodes} in the network)"
        )
    return network


def replay(
    readings_path: str | Path,
    scenario: ScenarioConfig,
    model_dir: str | Path,
    out: str | Path,
    *,
    follow: bool = False,
    poll_s: float = 1.0,
    overwrite: bool = False,
    on_step: Callable[[ReplayStep], None] | None = None,
) -> tuple[Replay, int]:
    """Replay the readings in ``readings_path`` (see :mod:`.readings`) of ``scenario``
    through the sensor model in ``model_dir`` into the folder ``out`` (see the module
    docstring), calling ``on_step`` with every step computed. With ``follow`` the file is
    read again every ``poll_s`` seconds for new rows until the scenario's last report is
    replayed (or an interrupt).

    Returns:
        (the replay, how many of its steps were kept from an earlier run).

    Raises:
        ConfigError: a model without chlorine sensors or not forecasting every node; a
            ``poll_s`` that is not a positive number.
        DataError: a bad readings file (one line, see :mod:`.readings`), readings off the
            scenario's report grid, a model of another network, or ``out`` holding another
            replay (without ``overwrite``). Nothing is written then. Also, while replaying,
            a file that no longer holds a reading it gave (cut short or rewritten under
            ``follow``): the steps written are kept.
    """
    from .model_folder import load_model, model_hash
    from .network import load_network
    from .pipeline import injection_kind
    from .risk_model import risk_scorer
    from .simulation import simulate

    if not (math.isfinite(poll_s) and poll_s > 0):
        raise ConfigError(f"poll must be a positive number of seconds (got {poll_s})")
    model, card = load_model(model_dir)
    inputs = card.input_spec
    if inputs.quality_node_sensors is None or not inputs.node_level:
        raise ConfigError(
            f"model '{model_dir}' is not a sensor model: replay needs a node-level model "
            "that reads chlorine at a set of sensors (train --sensors)"
        )
    network = load_network(scenario.network)
    if card.data.network.sha256 != network.file_sha256:
        raise DataError(
            f"model '{model_dir}' was trained on network '{card.data.network.name}', "
            f"the scenario runs on '{network.name}'"
        )
    sensors = inputs.quality_node_sensors
    readings = on_grid(load_readings(readings_path, sensors), scenario)
    meta = {
        "format": FORMAT,
        "model_hash": model_hash(model_dir),
        "model_dir": str(model_dir),
        "scenario": scenario.model_dump(mode="json"),
        "sensors": list(sensors),
        "node_ids": [str(v) for v in network.node_ids],
        "horizon": inputs.horizon,
        "min_residual_mg_l": inputs.min_residual_mg_l,
        "injection": injection_kind(scenario, network),
        "compliance": card.compliance,
        "reference": DEFAULT_REFERENCE,
        "engine_version": ENGINE_VERSION,
        "interval": None
        if card.conformal is None
        else {k: card.conformal[k] for k in ("confidence", "method")},
    }
    folder = Path(out)
    kept = _stored_steps(folder, meta, overwrite)
    scorer = risk_scorer(model_dir, card, model)
    runner = _Runner(model, card, scenario, network, simulate(scenario, network), scorer)
    done: list[ReplayStep] = []
    for stored in kept:  # the state the bad-reading rules read
        if _same_readings(stored, readings):
            runner.advance(stored)
            done.append(stored)
        else:
            break
    n_kept = len(done)
    for stale in kept[n_kept:]:
        step_path(folder, stale.step).unlink(missing_ok=True)
    with atomic_write(folder / META) as tmp:
        tmp.write_text(json.dumps(meta, indent=1))
    last = done[-1].step if done else -1
    for readings in _arriving(readings_path, sensors, scenario, follow, poll_s):
        if done and not _same_readings(done[-1], readings):
            raise DataError(
                f"readings file '{readings_path}' no longer holds the reading at "
                f"{done[-1].time_s} s it gave before (cut short or rewritten); the "
                f"{len(done)} steps replayed are kept in '{folder}'"
            )
        for time_s, row in zip(readings.times_s, readings.chlorine_mg_l):
            step, time_s = int(time_s) // scenario.reporting_step_s, int(time_s)
            if step <= last:
                continue
            result = runner.step(step, time_s, row)
            with atomic_write(step_path(folder, step)) as tmp, open(tmp, "wb") as handle:
                np.savez(handle, **result.to_arrays())
            done.append(result)
            last = step
            if on_step is not None:
                on_step(result)
        if last >= scenario.n_reports - 1:
            break
    return Replay(meta, done), n_kept


def on_grid(readings: Readings, scenario: ScenarioConfig) -> Readings:
    """``readings`` when every time is a report of ``scenario``; DataError naming the first
    that is not."""
    step, end = scenario.reporting_step_s, scenario.duration_s
    off = (readings.times_s % step != 0) | (readings.times_s < 0) | (readings.times_s > end)
    if off.any():
        raise DataError(
            f"readings file '{readings.source}': time {readings.times_s[off][0]:g} s is not a "
            f"report of the scenario (every {step} s from 0 to {end} s)"
        )
    return readings


def _arriving(
    path: str | Path,
    sensors: tuple[str, ...],
    scenario: ScenarioConfig,
    follow: bool,
    poll_s: float,
) -> Iterator[Readings]:
    """The readings of the file; with ``follow``, read again every ``poll_s`` seconds as the
    file grows."""
    while True:
        yield on_grid(load_readings(path, sensors), scenario)
        if not follow:
            return
        time.sleep(poll_s)


def _same_readings(step: ReplayStep, readings: Readings) -> bool:
    """Whether the file still holds the readings a stored step replayed."""
    at = np.flatnonzero(readings.times_s == step.time_s)
    return bool(len(at)) and np.array_equal(
        readings.chlorine_mg_l[at[0]], step.readings, equal_nan=True
    )


def _stored_steps(folder: Path, meta: dict[str, Any], overwrite: bool) -> list[ReplayStep]:
    """The steps a replay of the same model, scenario and sensors left in ``folder``
    (none: a new folder); DataError for a folder of another replay unless ``overwrite``
    (its steps are then removed), or for any other non-empty folder."""
    if folder.exists() and not folder.is_dir():
        raise DataError(f"replay output '{folder}' is a file; give a folder")
    if not folder.is_dir() or not any(folder.iterdir()):
        return []
    try:
        previous = load_replay(folder)
    except DataError:
        if (folder / META).exists() and overwrite:
            previous = Replay({}, [])
        else:
            raise DataError(
                f"replay output '{folder}' is a folder that holds no readable replay; "
                "give an empty or new folder"
            ) from None
    same = all(previous.meta.get(k) == v for k, v in meta.items())
    if same:
        return previous.steps
    if not overwrite:
        other = [k for k, v in meta.items() if previous.meta.get(k) != v]
        raise DataError(
            f"replay output '{folder}' holds a replay with another {', '.join(other)}; "
            "give another folder or --overwrite"
        )
    for path in folder.glob("step_*.npz"):
        path.unlink()
    return []


class _Runner:
    """The state of one replay: readings so far, which were good, forecasts made for each
    report (the bad-reading rules compare readings with them)."""

    def __init__(
        self,
        model: Any,
        card: ModelCard,
        scenario: ScenarioConfig,
        network: Network,
        result: SimulationResult,
        scorer: Any,
    ) -> None:
        from .explain import GraphSHAPIQ

        self.model, self.card, self.scenario, self.network = model, card, scenario, network
        self.scorer = scorer  # what the risk heads read: the risk model, else the forecaster
        self.inputs = card.input_spec
        self.result = result
        n_t, n = result.node_chlorine_mg_l.shape
        horizon = self.inputs.horizon
        self.sensor_index = np.array(
            [network.node_index(s) for s in self.inputs.quality_node_sensors]
        )
        n_s = len(self.sensor_index)
        self.high = scenario_range(
            "node_chlorine_mg_l", scenario.injection_strength_mg_l, result.node_chlorine_mg_l[0]
        )[1]
        times = np.arange(0, scenario.duration_s + 1, scenario.pattern_step_s)
        self.rest = np.unique(
            np.concatenate(
                [[0.0], scenario.injection_setpoint_mg_l(times), result.node_chlorine_mg_l[0]]
            )
        )
        pad = RECENT  # rows before report 0, never read
        self.readings = np.full((pad + n_t, n_s), np.nan)
        self.good = np.zeros((n_t, n_s), dtype=bool)
        self.expected = np.full((pad + n_t + horizon, 3, n_s), np.nan)  # forecast, lower, upper
        self.edge_attr = self.inputs.edge_inputs(result.link_flow_lps)
        self.explainer = GraphSHAPIQ(
            model, progress=False, **ExplainSettings().explainer_options(DEFAULT_REFERENCE)
        )

    def advance(self, step: ReplayStep) -> None:
        """Record a step's readings, their flags and its forecast in the state."""
        pad, horizon, t = RECENT, self.inputs.horizon, step.step
        self.readings[pad + t] = step.readings
        self.good[t] = step.flags == OK
        lower = step.forecast if step.lower is None else step.lower
        upper = step.forecast if step.upper is None else step.upper
        columns = [step.forecast, lower, upper]
        self.expected[pad + t + horizon] = np.stack([c[self.sensor_index] for c in columns])

    def step(self, t: int, time_s: int, reading: np.ndarray) -> ReplayStep:
        """Flag the readings of report ``t``, forecast, bound, risk and explain it."""
        from .node_targets import node_forecasts
        from .pipeline import forecast_intervals, risk_scores, scenario_risk, step_graph

        pad, card, inputs = RECENT, self.card, self.inputs
        expected = self.expected[t : pad + t + 1]
        flags = reading_flags(
            reading, self.high, self.rest, self.readings[t : pad + t], *np.moveaxis(expected, 1, 0)
        )
        self.readings[pad + t] = reading
        self.good[t] = flags == OK
        used = self.good[t].copy()
        if HISTORY in inputs.node_features:  # the history reads the reports before, too
            before = np.clip(t - np.arange(1, inputs.horizon + 1), 0, None)
            used &= self.good[before].all(axis=0)
        graph = step_graph(self.network, self._node_inputs(t, used), self.edge_attr[t])
        raw = node_forecasts(self.model, [graph])[0]
        forecast = inputs.physical(raw, self.high)
        lower = upper = risk = None
        if card.risk is not None:
            scores = risk_scores(self.scorer, self.model, [graph], raw[None])
            risk = scenario_risk(card, self.scenario, self.network, scores)[0]
        if card.conformal is not None:
            bounds = forecast_intervals(
                card,
                self.scenario,
                self.network,
                self.result.times_s[t : t + 1],
                forecast[None],
                self.result.node_chlorine_mg_l[0],
                None if risk is None else risk[None],
            )
            lower, upper = (b[0] for b in bounds)
        players = self.sensor_index[used]
        explanations = (
            self.explainer.explain_nodes(graph, list(range(len(forecast))), players=players)
            if len(players)
            else []
        )
        result = ReplayStep(
            t, time_s, reading, flags, used, forecast, raw, lower, upper, risk, explanations
        )
        self.advance(result)
        return result

    def _node_inputs(self, t: int, used: np.ndarray) -> np.ndarray:
        """The model's node features at report ``t`` from the good readings so far; the
        sensors not ``used`` take the features of a node without a sensor (the spec's own
        masking, by a spec that measures every node but them)."""
        from .pipeline import scenario_node_inputs

        n_t, n = self.result.node_chlorine_mg_l.shape
        chlorine = np.zeros((n_t, n))
        measured = np.where(self.good, self.readings[RECENT:], 0.0)
        chlorine[:, self.sensor_index] = measured
        known = replace(self.result, node_chlorine_mg_l=chlorine)
        x = scenario_node_inputs(known, self.network, self.inputs)[t]
        if not used.all():
            dropped = self.sensor_index[~used]
            others = [v for i, v in enumerate(self.network.node_ids) if i not in set(dropped)]
            unmeasured = replace(self.inputs, quality_node_sensors=tuple(others))
            x[dropped] = scenario_node_inputs(known, self.network, unmeasured)[t][dropped]
        return x


def replay_timeline(replay: Replay, node: str) -> Timeline:
    """The replay as a node-level :class:`~wdn_explain.timeline.Timeline` the app's charts
    draw (:mod:`wdn_explain.plot`), following node ``node``: ``chlorine`` holds the readings
    at the sensors (NaN at every other node and where missing), the forecasts, intervals and
    risks are the replay's, the truth is unknown (NaN). Its ``explanations`` stay in the
    replay (over the sensors, not every node)."""
    from .timeline import Timeline

    ids, steps = replay.node_ids, replay.steps
    if node not in ids:
        raise DataError(f"node '{node}' is not in the replay's network (nodes: {', '.join(ids)})")
    at = ids.index(node)
    n_t, n = len(steps), len(ids)
    chlorine = np.full((n_t, n), np.nan)
    chlorine[:, [ids.index(s) for s in replay.sensors]] = [s.readings for s in steps]
    forecast = np.array([s.forecast for s in steps]).reshape(n_t, n)
    unknown = np.full((n_t, n), np.nan)

    def stacked(name: str) -> np.ndarray | None:
        values = [getattr(s, name) for s in steps]
        return None if not steps or values[0] is None else np.stack(values)

    lower, upper, risk = stacked("lower"), stacked("upper"), stacked("risk")
    meta = replay.meta
    minimum = meta["min_residual_mg_l"]
    kind = meta.get("injection", ANY_KIND)  # a replay made before kinds were recorded: any
    return Timeline(
        steps=np.array([s.step for s in steps], dtype=int),
        times_s=np.array([s.time_s for s in steps], dtype=int),
        node_ids=np.asarray(ids),
        chlorine=chlorine,
        forecast=forecast[:, at],
        truth=unknown[:, at],
        explanations=[],
        meta={
            "scenario": meta["scenario"],
            "horizon": meta["horizon"],
            "target": "node_chlorine_mg_l",
            "node": node,
            "target_nodes": [node],
            "min_residual_mg_l": minimum,
            "reference": meta["reference"],
            "interval": meta["interval"],
            "risk": {"min_residual_mg_l": minimum, "method": "card"},
            "compliance_estimator": served_estimator(meta.get("compliance"), kind),
        },
        lower=None if lower is None else lower[:, at],
        upper=None if upper is None else upper[:, at],
        node_forecast=forecast,
        node_truth=unknown,
        node_lower=lower,
        node_upper=upper,
        node_risk=risk,
        compliance_forecast=compliance_share(meta.get("compliance"), forecast, risk, kind, minimum),
        compliance_truth=unknown[:, 0],
    )
