"""Scenario configuration: what one chlorine simulation does, and how a WAQ set varies it.

Configs are frozen pydantic models that reject unknown keys by name, round-trip to YAML and
are hashed into every manifest and result. Times are in seconds, concentrations in mg/L.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from typing_extensions import Self

from .errors import ConfigError
from .files import atomic_write


class _Config(BaseModel):
    # numbers where a string is expected become strings: `injection_node: 12` is node "12"
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True
    )

    def config_hash(self) -> str:
        """Short SHA-256 of the canonical JSON form; equal configs hash equally (a
        demand-driven scenario hashes without its unused pressure settings, as it did before
        they existed, see :meth:`ScenarioConfig._hashed_form`)."""
        dumped = self.model_dump(mode="json", context={HASH_FORM: True})
        return hashlib.sha256(json.dumps(dumped, sort_keys=True).encode()).hexdigest()[:16]

    @classmethod
    def from_record(cls, data: dict[str, Any] | str) -> Self:
        """The config stored in a file this package wrote (a mapping or its JSON text),
        any version: see :func:`_legacy_defaults`."""
        if isinstance(data, str):
            data = json.loads(data)
        return cls.model_validate(_legacy_defaults(cls, data))

    def to_yaml(self, path: str | Path) -> None:
        """Write the config as YAML, atomically."""
        with atomic_write(Path(path)) as tmp:
            tmp.write_text(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))


HASH_FORM = "hash_form"
"""Serialisation context key: dump the form that :meth:`_Config.config_hash` hashes."""

InjectionMode = Literal["constant", "intermittent", "failure"]
INJECTION_MODES: tuple[str, ...] = get_args(InjectionMode)
DemandModel = Literal["PDA", "DDA"]
"""EPANET 2.2's demand models: pressure-driven (a node gets its demand in full at or above
the required pressure, none at or below the minimum, ``((p - p_min) / (p_req - p_min)) **
exponent`` of it between) or demand-driven (every demand delivered whatever the pressure,
which goes negative where the network cannot deliver it: not physical)."""
HYDRAULICS_FIELDS = ("demand_model", "pressure_min_m", "pressure_required_m", "pressure_exponent")
"""The scenario fields that choose EPANET's demand model (recorded in cards and timelines)."""


class ScenarioConfig(_Config):
    """One chlorine-spread simulation.

    Demand: every junction with a base demand gets its own demand pattern, with multipliers
    ``demand_scale * diurnal(t) * u`` per pattern step, ``u`` drawn uniformly from
    ``[1 - v, 1 + v]`` (``v = demand_variation``) by a generator seeded with ``seed``, and
    ``diurnal(t) = 1 + a * sin(2 pi (h(t) - 6) / 24)`` (``a = diurnal_amplitude``, ``h(t)`` the
    hour of day, ``start_hour`` at t = 0: lowest at midnight, highest at noon). This really
    changes the flows (EPyT-Flow's ``randomize_demands`` does not on Hanoi, which has no
    patterns to shuffle).

    Injection: a source at ``injection_node`` (default: the first reservoir; a setpoint
    booster at a junction or tank, the outflow concentration at a reservoir) holding
    ``injection_strength_mg_l`` from ``injection_start_s`` on, always (``constant``), in cycles
    of ``intermittent_on_s`` on and ``intermittent_off_s`` off (``intermittent``), or with one
    outage of ``outage_duration_s`` from ``outage_start_s`` (``failure``). Times are rounded
    down to the pattern step; :meth:`injection_multipliers` gives the schedule.
    """

    network: str = Field("hanoi", description="built-in network name or path to an .inp file")
    duration_s: int = Field(3 * 3600, gt=0, description="simulated time")
    reporting_step_s: int = Field(300, gt=0, description="time between reported states")
    hydraulic_step_s: int = Field(300, gt=0)
    quality_step_s: int = Field(60, gt=0)
    pattern_step_s: int = Field(
        300, gt=0, description="time between demand multipliers (the shipped models' step)"
    )
    injection_node: str | None = Field(None, description="node id; default: the first reservoir")
    injection_strength_mg_l: float = Field(
        1.0,
        gt=0,
        le=1000,
        description="source concentration (at most 1000 mg/L)",
    )
    injection_pattern: tuple[float, ...] | None = Field(
        None, description="explicit source multipliers per pattern step (replaces the mode)"
    )
    injection_mode: InjectionMode = Field("constant", description="booster schedule")
    injection_start_s: int = Field(0, ge=0, description="booster switched on at this time")
    intermittent_on_s: int = Field(3600, gt=0, description="on-time of an intermittent cycle")
    intermittent_off_s: int = Field(1800, gt=0, description="off-time of an intermittent cycle")
    outage_start_s: int = Field(3600, ge=0, description="start of a failing booster's outage")
    outage_duration_s: int = Field(1800, gt=0, description="length of the outage")
    demand_variation: float = Field(0.2, ge=0, lt=1)
    demand_scale: float = Field(1.0, gt=0, description="multiplies every base demand (surges)")
    diurnal_amplitude: float = Field(0.0, ge=0, lt=1, description="relative diurnal swing")
    start_hour: float = Field(0.0, ge=0, lt=24, description="hour of day at t = 0")
    bulk_decay_per_day: float = Field(0.0, ge=0, description="first-order bulk decay rate")
    demand_model: DemandModel = Field(
        "PDA", description="EPANET's demand model: pressure-driven (PDA) or demand-driven (DDA)"
    )
    pressure_min_m: float = Field(
        0.0, ge=0, description="PDA: pressure (m) at or below which a node gets no demand"
    )
    pressure_required_m: float = Field(
        20.0, gt=0, description="PDA: pressure (m) at or above which a node gets its demand"
    )
    pressure_exponent: float = Field(
        0.5, gt=0, description="PDA: exponent of the pressure-demand relation"
    )
    seed: int = Field(0, ge=0)

    @model_serializer(mode="wrap")
    def _hashed_form(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        """For :meth:`config_hash`, a demand-driven scenario drops the demand-model fields:
        its pressures are unused, and its hash stays the one it had before PDA existed (so
        the published WAQ design's data, cards and timelines stay current)."""
        data = handler(self)
        if info.context and info.context.get(HASH_FORM) and self.demand_model == "DDA":
            for name in HYDRAULICS_FIELDS:
                data.pop(name, None)
        return data

    @property
    def hydraulics(self) -> dict[str, Any]:
        """The demand model and, for PDA, its pressures (what cards and timelines record)."""
        if self.demand_model == "DDA":
            return {"demand_model": "DDA"}
        return {name: getattr(self, name) for name in HYDRAULICS_FIELDS}

    def describe_hydraulics(self) -> str:
        """The demand model in words, e.g. 'pressure-driven (full demand at 20 m, none at
        0 m)'."""
        if self.demand_model == "DDA":
            return "demand-driven (every demand delivered, whatever the pressure)"
        return (
            f"pressure-driven (full demand at {self.pressure_required_m:g} m, none at "
            f"{self.pressure_min_m:g} m, exponent {self.pressure_exponent:g})"
        )

    @model_validator(mode="after")
    def _check_steps(self) -> ScenarioConfig:
        if self.pressure_required_m <= self.pressure_min_m:
            raise ValueError(
                "pressure_required_m must be above pressure_min_m (got "
                f"{self.pressure_required_m:g} <= {self.pressure_min_m:g})"
            )
        if self.reporting_step_s > self.duration_s:
            raise ValueError(
                f"reporting_step_s must not exceed duration_s (got {self.reporting_step_s} > "
                f"{self.duration_s})"
            )
        if self.quality_step_s > self.hydraulic_step_s:
            raise ValueError(
                f"quality_step_s must not exceed hydraulic_step_s (got {self.quality_step_s} > "
                f"{self.hydraulic_step_s})"
            )
        for name in ("reporting_step_s", "pattern_step_s"):
            if getattr(self, name) % self.hydraulic_step_s:
                raise ValueError(
                    f"{name} must be a multiple of hydraulic_step_s (got {getattr(self, name)} "
                    f"and {self.hydraulic_step_s})"
                )
        if self.injection_pattern is not None and any(v < 0 for v in self.injection_pattern):
            raise ValueError(
                f"injection_pattern must be non-negative (got {self.injection_pattern})"
            )
        if self.injection_pattern is not None and self.injection_mode != "constant":
            raise ValueError(
                "injection_pattern replaces the schedule: leave injection_mode 'constant' "
                f"(got '{self.injection_mode}')"
            )
        return self

    @property
    def n_pattern_steps(self) -> int:
        """Number of pattern steps covering the simulation, the final time included."""
        return self.duration_s // self.pattern_step_s + 1

    def injection_multipliers(self) -> np.ndarray:
        """Booster multiplier (0 = off, 1 = on) per pattern step, shape (n_pattern_steps,)."""
        step = self.pattern_step_s
        t = np.arange(self.n_pattern_steps) * step
        start = self.injection_start_s // step * step
        if self.injection_pattern is not None:
            pattern = np.asarray(self.injection_pattern, dtype=float)
            on = pattern[np.arange(len(t)) % len(pattern)]  # EPANET repeats patterns
        elif self.injection_mode == "intermittent":
            cycle = self.intermittent_on_s + self.intermittent_off_s
            on = ((t - start) % cycle < self.intermittent_on_s).astype(float)
        elif self.injection_mode == "failure":
            out = self.outage_start_s // step * step
            on = (~((t >= out) & (t < out + self.outage_duration_s))).astype(float)
        else:
            on = np.ones(len(t))
        return np.where(t >= start, on, 0.0)

    def injection_setpoint_mg_l(self, times_s: np.ndarray) -> np.ndarray:
        """Booster setpoint in mg/L at the given times (s), following the pattern steps."""
        idx = np.minimum(np.asarray(times_s) // self.pattern_step_s, self.n_pattern_steps - 1)
        return self.injection_strength_mg_l * self.injection_multipliers()[idx]

    def describe(self) -> str:
        """A short human-readable name: where, how strongly, how long, which seed."""
        where = f"booster at {self.injection_node}" if self.injection_node else "reservoir"
        mode = "" if self.injection_mode == "constant" else f", {self.injection_mode}"
        return (
            f"{where}, {self.injection_strength_mg_l:g} mg/L{mode}, "
            f"{self.duration_s / 3600:g} h, seed {self.seed}"
        )

    @property
    def n_reports(self) -> int:
        """Number of reported time steps, the initial state included."""
        return self.duration_s // self.reporting_step_s + 1


Range = tuple[float, float]

# Scenario fields a design may draw from a range, and whether their draws are whole seconds.
DRAWN_RANGES: dict[str, bool] = {
    "injection_strength_mg_l": False,
    "injection_start_s": True,
    "intermittent_on_s": True,
    "intermittent_off_s": True,
    "outage_start_s": True,
    "outage_duration_s": True,
    "demand_scale": False,
    "demand_variation": False,
    "diurnal_amplitude": False,
    "start_hour": False,
    "bulk_decay_per_day": False,
}


class ScenarioDesign(_Config):
    """Seeded per-scenario draws on top of the template scenario (the monitoring design).

    Each range ``[low, high]`` is drawn uniformly per scenario (times on the pattern-step
    grid); a factor left out keeps the template's value. Chlorine enters at the reservoir with
    probability ``reservoir_share``, otherwise at a booster drawn from ``injection_nodes``
    (node ids, or ``all`` junctions). Bulk decay is switched on with probability
    ``bulk_decay_share`` and then drawn from ``bulk_decay_per_day``.
    """

    injection_nodes: Literal["all"] | tuple[str, ...] = ()
    reservoir_share: float = Field(1.0, ge=0, le=1)
    injection_modes: tuple[InjectionMode, ...] | None = None
    bulk_decay_share: float = Field(1.0, ge=0, le=1)
    injection_strength_mg_l: Range | None = None
    injection_start_s: Range | None = None
    intermittent_on_s: Range | None = None
    intermittent_off_s: Range | None = None
    outage_start_s: Range | None = None
    outage_duration_s: Range | None = None
    demand_scale: Range | None = None
    demand_variation: Range | None = None
    diurnal_amplitude: Range | None = None
    start_hour: Range | None = None
    bulk_decay_per_day: Range | None = None

    @model_validator(mode="after")
    def _check_ranges(self) -> ScenarioDesign:
        for name in DRAWN_RANGES:
            rng = getattr(self, name)
            if rng is None:
                continue
            if not all(np.isfinite(rng)):
                raise ValueError(f"{name}: range must be finite (got {list(rng)})")
            if rng[0] > rng[1]:
                raise ValueError(f"{name}: empty range (got [{rng[0]}, {rng[1]}])")
        if self.injection_modes is not None and not self.injection_modes:
            raise ValueError("injection_modes: empty list (got [])")
        if self.injection_nodes == () and self.reservoir_share < 1:
            raise ValueError(
                "injection_nodes: empty, but reservoir_share < 1 asks for boosters "
                f"(got reservoir_share {self.reservoir_share})"
            )
        return self

    def booster_nodes(self, junctions: tuple[str, ...] | None) -> tuple[str, ...]:
        """The booster candidates: the listed ids, or ``junctions`` for ``all``."""
        if self.injection_nodes != "all":
            return self.injection_nodes
        if junctions is None:
            raise ConfigError("injection_nodes 'all' needs the network's junctions")
        return junctions

    def draw(
        self, template: ScenarioConfig, seed: int, junctions: tuple[str, ...] | None = None
    ) -> ScenarioConfig:
        """The scenario with seed ``seed``: the template with every factor drawn."""
        rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))  # not the demand stream
        update: dict[str, Any] = {"seed": seed}
        boosters = self.booster_nodes(junctions)
        at_reservoir = rng.random() < self.reservoir_share
        booster = boosters[rng.integers(len(boosters))] if boosters else None
        if not at_reservoir:
            update["injection_node"] = booster
        if self.injection_modes is not None:
            update["injection_mode"] = self.injection_modes[rng.integers(len(self.injection_modes))]
        decay_on = rng.random() < self.bulk_decay_share
        step = template.pattern_step_s
        for name, whole_seconds in DRAWN_RANGES.items():
            bounds = getattr(self, name)
            if bounds is None:
                continue
            if whole_seconds:
                low, high = int(np.ceil(bounds[0] / step)), int(bounds[1] // step)
                update[name] = int(rng.integers(low, max(low, high) + 1)) * step
            else:
                update[name] = float(rng.uniform(*bounds))
        if not decay_on:
            update["bulk_decay_per_day"] = 0.0
        try:
            return ScenarioConfig.model_validate({**template.model_dump(), **update})
        except ValidationError as exc:
            raise ConfigError(_format_validation_error("design draw", exc)) from None


def checked_sensors(sensors: Sequence[Any]) -> tuple[str, ...]:
    """A chlorine sensor set as node ids (strings): ConfigError unless it names at least one
    node, each once -- the one rule of the design's :class:`SensorSet` and
    :class:`~wdn_explain.features.InputSpec`."""
    ids = tuple(str(node) for node in sensors)
    repeated = sorted({node for node in ids if ids.count(node) > 1})
    if not ids or repeated:
        raise ConfigError(
            f"quality_node_sensors must name at least one node, each once (got {list(ids)})"
        )
    return ids


class SensorSet(_Config):
    """What the utility measures, in EPyT-Flow's ``SensorConfig`` terms: chlorine analysers at
    the nodes ``quality_node_sensors`` (at least one, each once; every id must be a node of
    the network, checked before anything is simulated).

    The simulation records every node and link whatever the set (the labels are chlorine at
    every node); a model trained on the design reads chlorine only at these nodes (``train``
    takes the set from the design, :class:`~wdn_explain.features.InputSpec`). Flows, the
    booster setpoint and the dosing plan stay inputs everywhere: the hydraulic model and the
    operator know them.
    """

    quality_node_sensors: tuple[str, ...]

    @field_validator("quality_node_sensors", mode="after")
    @classmethod
    def _each_once(cls, sensors: tuple[str, ...]) -> tuple[str, ...]:
        return checked_sensors(sensors)


class SimulationConfig(_Config):
    """A set of scenarios: the template varied by a per-scenario seed and, with a ``design``,
    by seeded draws of where, how strongly and when chlorine enters and of the demands."""

    n_scenarios: int = Field(1, gt=0)
    seed: int = Field(0, ge=0, description="master seed; scenario seeds derive from it")
    scenario: ScenarioConfig = ScenarioConfig()
    design: ScenarioDesign | None = None
    sensors: SensorSet | None = Field(
        None, description="what the utility measures (none: chlorine at every node)"
    )
    scheduler: str | None = Field(
        None,
        exclude=True,  # where it runs changes no output byte: not dumped, not hashed
        description="Dask scheduler address to run on (see wdn_explain.cluster); none: here",
    )

    @model_serializer(mode="wrap")
    def _hashed_form(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        """For :meth:`config_hash`, without ``sensors``: what a utility measures changes no
        simulated byte (every node and link is recorded), so the data of a design stay
        current when its sensors move, and a design without sensors hashes as before they
        existed. The sensors reach a model's identity through its card instead."""
        data = handler(self)
        if info.context and info.context.get(HASH_FORM):
            data.pop("sensors", None)
        return data

    @model_validator(mode="after")
    def _check_design_range(self) -> SimulationConfig:
        """Refuse, at load, a design that can draw an invalid scenario: the template with
        the lowest and highest value every range can draw (times on the pattern-step grid;
        other values uniformly from ``[low, high)``) and with each injection mode must
        validate, so a bad range never fails mid-run."""
        if self.design is None:
            return self
        design, template = self.design, self.scenario
        step = template.pattern_step_s
        trials: list[tuple[str, Any, str, Any]] = []
        for name, whole_seconds in DRAWN_RANGES.items():
            bounds = getattr(design, name)
            if bounds is None:
                continue
            low, high = float(bounds[0]), float(bounds[1])
            ends: tuple[Any, ...] = (low, high if low == high else float(np.nextafter(high, low)))
            if whole_seconds:  # the grid points :meth:`ScenarioDesign.draw` can reach
                first, last = int(np.ceil(low / step)), int(high // step)
                ends = (first * step, max(first, last) * step)
            trials += [(name, list(bounds), name, end) for end in ends]
        for mode in design.injection_modes or ():
            trials.append(("injection_modes", list(design.injection_modes), "injection_mode", mode))
        base = template.model_dump()
        for key, shown, field, value in trials:
            try:
                ScenarioConfig.model_validate({**base, field: value})
            except ValidationError as exc:
                why = exc.errors()[0]["msg"].removeprefix("Value error, ")
                raise ValueError(
                    f"design.{key}: can draw {field} = {value:.6g}, which a scenario refuses "
                    f"({why}) (got {shown})"
                    if not isinstance(value, str)
                    else f"design.{key}: mode '{value}' is refused with this template ({why})"
                ) from None
        return self

    def scenario_seed(self, index: int) -> int:
        """Seed of scenario ``index``, derived from the master seed (stable across runs)."""
        return int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0])

    def scenario_config(
        self, index: int, junctions: tuple[str, ...] | None = None
    ) -> ScenarioConfig:
        """The fully specified config of scenario ``index``.

        Args:
            junctions: The network's junction ids (needed for ``injection_nodes: all``;
                loaded from the network when missing).
        """
        if not 0 <= index < self.n_scenarios:
            raise ConfigError(f"scenario index {index} out of range (0..{self.n_scenarios - 1})")
        seed = self.scenario_seed(index)
        if self.design is None:
            return self.scenario.model_copy(update={"seed": seed})
        if self.design.injection_nodes == "all" and junctions is None:
            from .network import load_network

            junctions = load_network(self.scenario.network).junctions
        return self.design.draw(self.scenario, seed, junctions)


def _legacy_defaults(cls: type[_Config], data: Any) -> Any:
    """Files written before pressure-driven analysis existed hold demand-driven runs: a stored
    scenario without ``demand_model`` was simulated demand-driven (a config read from YAML or
    built in code gets the current default, PDA, instead)."""
    if not isinstance(data, dict):
        return data
    if cls is ScenarioConfig:
        return {"demand_model": "DDA", **data}
    if cls is SimulationConfig and isinstance(data.get("scenario"), dict):
        return {**data, "scenario": _legacy_defaults(ScenarioConfig, data["scenario"])}
    return data


def _format_validation_error(source: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown key '{where}'")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if "(got" not in msg:
                msg += f" (got {err.get('input')!r})"
            parts.append(f"{where}: {msg}" if where else msg)  # a whole-config check names its key
    return f"{source}: " + "; ".join(parts)


def parse_config(data: dict[str, Any], source: str = "config") -> SimulationConfig:
    """Validate a mapping into a SimulationConfig; errors name the key and value."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of keys, got {type(data).__name__}")
    try:
        return SimulationConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(source, exc)) from None


def load_config(path: str | Path) -> SimulationConfig:
    """Read a simulation config from a YAML file (see ``simulations/``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file '{path}' does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except UnicodeDecodeError:
        raise ConfigError(f"config file '{path}' is not a text file") from None
    except RecursionError:
        raise ConfigError(f"config file '{path}' is not valid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:  # one line: the problem and where, not the quoted text
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"config file '{path}' is not valid YAML: {problem}{where}") from None
    scenario = data.get("scenario") if isinstance(data, dict) else None
    if isinstance(scenario, dict) and isinstance(scenario.get("network"), str):
        scenario["network"] = _absolute_network(scenario["network"], path.parent)
    return parse_config(data, source=str(path))


def _absolute_network(network: str, folder: Path) -> str:
    """An .inp path made absolute -- relative to the config's folder, else to the working
    directory -- so that datasets and timelines made from it work from anywhere; a built-in
    name is kept."""
    path = Path(network)
    if path.suffix.lower() != ".inp" or path.is_absolute():
        return network
    beside = folder / path
    return str((beside if beside.is_file() else path).resolve())
