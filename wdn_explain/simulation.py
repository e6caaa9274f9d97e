"""Run one chlorine scenario with EPyT-Flow and keep its states as plain arrays.

Units (SI, converted at the EPANET boundary): time s, flow L/s (signed: positive from a
link's start node to its end node), pressure m, concentration mg/L.

File format (one scenario): an uncompressed NumPy ``.npz`` holding only numeric and
unicode arrays (readable with ``allow_pickle=False``): ``times_s`` (T,), ``node_ids`` (n,),
``link_ids`` (E,), ``node_chlorine_mg_l`` (T, n), ``link_chlorine_mg_l`` (T, E),
``link_flow_lps`` (T, E), ``node_demand_lps`` (T, n: the demand EPANET delivered; at a
reservoir or tank its net outflow, negative), ``node_requested_demand_lps`` (T, n: what the
junctions asked for, base demand x pattern; equal to the delivered demand under demand-driven
analysis, at reservoirs and tanks, and in files written before it was stored),
``node_pressure_m`` (T, n), ``node_source_mg_l`` (T, n: the booster setpoint at the injection
node, 0 elsewhere and while the booster is off), and ``config_json`` (the scenario config as
a 0-d string).
"""

from __future__ import annotations

import warnings
import zipfile
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import ConfigError, DataError
from .files import atomic_write, load_npz
from .network import Network, load_network, scenario_simulator
from .scenario import ScenarioConfig

if TYPE_CHECKING:
    from epyt_flow.simulation import ScenarioSimulator

_ARRAYS = (
    "times_s",
    "node_ids",
    "link_ids",
    "node_chlorine_mg_l",
    "link_chlorine_mg_l",
    "link_flow_lps",
    "node_demand_lps",
    "node_requested_demand_lps",
    "node_pressure_m",
    "node_source_mg_l",
)
_SINCE_PDA = "node_requested_demand_lps"
"""Stored since pressure-driven analysis; older (demand-driven) files delivered every demand."""

SHORTFALL = 0.01
"""A node counts as under-served while it gets less than ``1 - SHORTFALL`` of its demand."""


SIMULATION_VERSION = "2"
"""Raised whenever the simulator gives other numbers for the same scenario (2: a reservoir
source follows its schedule); recorded in every timeline, whose cache identity it is part of,
so a timeline simulated before a fix is recomputed, never shown as current."""

NEGATIVE_PRESSURE_M = -1e-3
"""Pressures below this (m) count as negative (EPANET rounds a zero head to about -1e-5)."""


@dataclass(frozen=True)
class SimulationResult:
    """States of one scenario at every reported time step (see the module docstring)."""

    config: ScenarioConfig
    times_s: np.ndarray
    node_ids: np.ndarray
    link_ids: np.ndarray
    node_chlorine_mg_l: np.ndarray
    link_chlorine_mg_l: np.ndarray
    link_flow_lps: np.ndarray
    node_demand_lps: np.ndarray
    node_requested_demand_lps: np.ndarray
    node_pressure_m: np.ndarray
    node_source_mg_l: np.ndarray

    @property
    def n_steps(self) -> int:
        return len(self.times_s)

    @property
    def node_delivered_fraction(self) -> np.ndarray:
        """Delivered / requested demand per step and node, shape (T, n); 1 where nothing is
        requested (reservoirs, tanks, junctions without demand)."""
        asked = self.node_requested_demand_lps
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(asked > 0, self.node_demand_lps / asked, 1.0)
        return np.clip(fraction, 0.0, 1.0)

    @property
    def delivery_warning(self) -> str | None:
        """One sentence when pressure-driven hydraulics deliver less than the demand (a node
        below its required pressure), else None."""
        short = self.node_delivered_fraction < 1 - SHORTFALL
        if not short.any():
            return None
        asked = float(self.node_requested_demand_lps.clip(min=0).sum())
        got = float(
            np.minimum(self.node_demand_lps, self.node_requested_demand_lps).clip(min=0).sum()
        )
        worst = np.unravel_index(int(np.argmin(self.node_delivered_fraction)), short.shape)
        return (
            f"demand not met at {int(short.any(axis=0).sum())} of {len(self.node_ids)} nodes "
            f"({short.mean():.0%} of node states; {got / asked:.0%} of all demand delivered), "
            f"down to {self.node_delivered_fraction[worst]:.0%} at node {self.node_ids[worst[1]]} at "
            f"{int(self.times_s[worst[0]])} s: pressure there is below the required "
            f"{self.config.pressure_required_m:g} m"
        )

    @property
    def pressure_warning(self) -> str | None:
        """One sentence when pressures go negative, else None (read from the stored
        ``node_pressure_m``, so every scenario file carries it), saying what it means under
        the scenario's demand model. Demand-driven hydraulics then deliver demands the network
        cannot, so flows and the chlorine they carry are not physical there (EPANET only
        warns and runs on); pressure-driven analysis delivers nothing below the minimum
        pressure, and where no demand is asked (a pump's suction side) it is the pressure the
        hydraulics give."""
        low = self.node_pressure_m < NEGATIVE_PRESSURE_M
        if not low.any():
            return None
        worst = np.unravel_index(int(np.argmin(self.node_pressure_m)), low.shape)
        where = (
            f"negative pressure at {int(low.any(axis=0).sum())} of {len(self.node_ids)} nodes "
            f"({low.mean():.0%} of node states), down to "
            f"{float(self.node_pressure_m[worst]):.4g} m at node {self.node_ids[worst[1]]} "
            f"at {int(self.times_s[worst[0]])} s: "
        )
        if self.config.demand_model != "PDA":
            return where + (
                "demand-driven hydraulics deliver demands the network cannot, so flows and "
                "chlorine there are not physical"
            )
        asked = float(self.node_requested_demand_lps[low].clip(min=0).sum())
        if asked <= 0:
            return where + (
                "no demand is asked there then, so pressure-driven analysis lost none; the "
                "pressure is below atmospheric (a pump's suction side, or ground above the "
                "supply's head: check the elevations if that is not expected)"
            )
        got = float(
            np.minimum(self.node_demand_lps[low], self.node_requested_demand_lps[low])
            .clip(min=0)
            .sum()
        )
        return where + (
            f"pressure-driven analysis delivers nothing below {self.config.pressure_min_m:g} m, "
            f"so those nodes got {got / asked:.0%} of the demand they asked for then"
        )

    def save(self, path: str | Path) -> Path:
        """Write atomically: a temporary file renamed into place, never a half-written file."""
        path = Path(path)
        with atomic_write(path) as tmp, open(tmp, "wb") as handle:
            np.savez(
                handle,
                config_json=np.array(self.config.model_dump_json()),
                **{name: getattr(self, name) for name in _ARRAYS},
            )
        return path

    @classmethod
    def load(cls, path: str | Path) -> SimulationResult:
        """Read a scenario file; a truncated or corrupt file raises DataError naming it."""
        path = Path(path)
        try:
            with load_npz(path) as data:
                config = ScenarioConfig.from_record(str(data["config_json"]))
                stored = [name for name in _ARRAYS if name != _SINCE_PDA or name in data.files]
                arrays = {name: data[name] for name in stored}
                arrays.setdefault(_SINCE_PDA, arrays["node_demand_lps"])
        except FileNotFoundError:
            raise DataError(f"scenario file '{path}' does not exist") from None
        except KeyError as exc:
            raise DataError(
                f"scenario file '{path}' lacks {exc} (written by an older wdn-explain? "
                "simulate again with --overwrite)"
            ) from None
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DataError(f"scenario file '{path}' is truncated or corrupt ({exc})") from None
        result = cls(config=config, **arrays)
        result._check_shapes(path)
        return result

    def _check_shapes(self, path: Path) -> None:
        n_t, n, n_e = len(self.times_s), len(self.node_ids), len(self.link_ids)
        for f in fields(self):
            if f.name.startswith("node_") and f.name != "node_ids":
                expected = (n_t, n)
            elif f.name.startswith("link_") and f.name != "link_ids":
                expected = (n_t, n_e)
            else:
                continue
            if getattr(self, f.name).shape != expected:
                raise DataError(
                    f"scenario file '{path}' is corrupt: {f.name} has shape "
                    f"{getattr(self, f.name).shape}, expected {expected}"
                )


def _demand_patterns(
    config: ScenarioConfig, base_demands: dict[str, float]
) -> dict[str, np.ndarray]:
    """Seeded per-junction demand multipliers, one per pattern step (see ScenarioConfig)."""
    rng = np.random.default_rng(config.seed)
    n_steps = config.n_pattern_steps
    hours = config.start_hour + np.arange(n_steps) * config.pattern_step_s / 3600
    diurnal = 1.0 + config.diurnal_amplitude * np.sin(2 * np.pi * (hours - 6) / 24)
    low, high = 1.0 - config.demand_variation, 1.0 + config.demand_variation
    return {
        node: config.demand_scale * diurnal * rng.uniform(low, high, size=n_steps)
        for node in sorted(base_demands)
    }


def injection_node(config: ScenarioConfig, network: Network) -> str:
    """Where chlorine enters: the configured node, else the network's first reservoir.

    Raises:
        ConfigError: the node is not in the network, or none is given and the network has
            no reservoir.
    """
    if config.injection_node is not None:
        network.node_index(config.injection_node)  # raises ConfigError for an unknown node
        return config.injection_node
    if not network.reservoirs:
        raise ConfigError(
            f"network '{network.name}' has no reservoir: give scenario.injection_node "
            f"(one of its nodes, e.g. '{network.node_ids[0]}')"
        )
    return network.reservoirs[0]


RESERVOIR_OFF = 1e-12
"""Source multiplier of a reservoir source while it is off (see :func:`source_schedule`)."""


def source_schedule(
    config: ScenarioConfig, network: Network, injection: str
) -> tuple[int, np.ndarray]:
    """The EPANET source type and pattern that make ``injection`` follow the schedule.

    At a junction or tank: a SETPOINT booster with the schedule's 0/1 multipliers (off adds
    nothing; the node's inflow passes unchanged). At a reservoir, EPANET keeps the reservoir's
    last quality whenever its source contributes exactly 0 (``qualroute.c``: a zero source
    quality leaves the node quality as it was), so a SETPOINT source there never switched off.
    A reservoir gets a CONCEN source instead (its outflow quality is the source's), whose off
    steps carry :data:`RESERVOIR_OFF` (1e-12 x the strength: no chlorine to any reported
    digit, yet not the 0 that EPANET skips).
    """
    from epanet_plus import EpanetConstants

    multipliers = config.injection_multipliers()
    if network.node_roles[network.node_index(injection)] != "reservoir":
        return EpanetConstants.EN_SETPOINT, multipliers
    return EpanetConstants.EN_CONCEN, np.where(multipliers > 0, multipliers, RESERVOIR_OFF)


def _set_demand_patterns(
    sim: ScenarioSimulator, patterns: dict[str, np.ndarray], base: dict[str, float]
) -> None:
    """Give each junction its own demand pattern through the EPANET toolkit.

    Does what ``ScenarioSimulator.set_node_demand_pattern`` does, without the sensor
    configuration that method rebuilds on every call (94 % of an L-Town scenario's time).
    """
    api = sim.epanet_api
    for node, pattern in patterns.items():
        index = api.get_node_idx(node)
        api.add_pattern(f"wdn_{node}", pattern.tolist())
        api.setjuncdata(index, api.get_node_elevation(index), base[node], f"wdn_{node}")


def _si_flow_units() -> tuple[int, ...]:
    """EPANET's SI flow units. Switching a US network to L/s in EPANET changes its results
    (Net1's chlorine by up to 0.07 mg/L): US networks are converted after the run instead."""
    from epanet_plus import EpanetConstants as E

    return (E.EN_LPS, E.EN_LPM, E.EN_MLD, E.EN_CMH, E.EN_CMD, E.EN_CMS)


def use_si_units(sim: ScenarioSimulator) -> None:
    """Have EPANET report an SI network in L/s and m itself (no conversion of its results
    afterwards); a US network keeps its units (see :func:`_si_flow_units`)."""
    from epanet_plus import EpanetConstants as E

    if sim.get_flow_units() in _si_flow_units():
        sim.set_general_parameters(flow_units_id=E.EN_LPS, pressure_units_id=E.EN_METERS)


def metres_to_pressure_unit(sim: ScenarioSimulator) -> float:
    """The factor from metres to the pressure unit EPANET reads and reports for ``sim``."""
    from epanet_plus import EpanetConstants as E
    from epyt_flow.utils import _get_pressure_convert_factor  # EPyT-Flow's own unit table

    return _get_pressure_convert_factor(
        int(sim.epanet_api.getoption(E.EN_PRESS_UNITS)), E.EN_METERS
    )


def _demand_model(config: ScenarioConfig, sim: ScenarioSimulator) -> dict[str, float | int]:
    """EPyT-Flow's ``demand_model`` argument for the scenario, its pressures given in the
    network's pressure unit (EPANET reads them so; the config holds metres)."""
    from epanet_plus import EpanetConstants as E

    to_unit = metres_to_pressure_unit(sim)
    return {
        "type": E.EN_PDA if config.demand_model == "PDA" else E.EN_DDA,
        "pressure_min": config.pressure_min_m * to_unit,
        "pressure_required": config.pressure_required_m * to_unit,
        "pressure_exponent": config.pressure_exponent,
    }


def base_demands(sim: ScenarioSimulator, network: Network) -> dict[str, float]:
    """The junctions' non-zero (primary) base demands in the simulator's flow unit: what the
    scenario's demand patterns multiply."""
    return {
        n: d
        for n in network.node_ids
        if (d := sim.get_node_base_demand(n))
        and network.node_roles[network.node_index(n)] == "junction"
    }


def simulate(config: ScenarioConfig, network: Network | None = None) -> SimulationResult:
    """Simulate chlorine spreading from the injection node with EPyT-Flow.

    Args:
        config: The scenario.
        network: The already loaded network of ``config.network`` (saves reading it again).

    Raises:
        ConfigError: unknown network or injection node, or nodes that no reservoir or tank
            can supply.
    """
    from epanet_plus import EpanetConstants
    from epyt_flow.utils import _get_flow_convert_factor  # EPyT-Flow's own unit table

    network = network or load_network(config.network)
    network.check_connected()
    injection = injection_node(config, network)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EPANET warns about negative pressures at peaks
        with scenario_simulator(network.inp_path) as sim:
            sim.set_general_parameters(
                simulation_duration=config.duration_s,
                hydraulic_time_step=config.hydraulic_step_s,
                quality_time_step=config.quality_step_s,
                reporting_time_step=config.reporting_step_s,
                pattern_time_step=config.pattern_step_s,
            )
            use_si_units(sim)
            sim.set_general_parameters(demand_model=_demand_model(config, sim))
            sim.enable_chemical_analysis()
            base = base_demands(sim, network)
            patterns = _demand_patterns(config, base)
            _set_demand_patterns(sim, patterns, base)
            base_multiplier = sim.epanet_api.getoption(EpanetConstants.EN_DEMANDMULT)
            flow_to_lps = _get_flow_convert_factor(EpanetConstants.EN_LPS, sim.get_flow_units())
            if config.bulk_decay_per_day:
                sim.set_quality_parameters(
                    global_bulk_reaction_coefficient=-config.bulk_decay_per_day, order_bulk=1
                )
            source_type, pattern = source_schedule(config, network, injection)
            sim.add_quality_source(
                injection,
                source_type,
                pattern=pattern,
                source_strength=config.injection_strength_mg_l,
            )
            nodes, links = list(network.node_ids), list(network.link_ids)
            sensors = sim.sensor_config  # set at once: each EPyT-Flow setter rebuilds it
            sensors.quality_node_sensors = sensors.pressure_sensors = nodes
            sensors.demand_sensors = nodes
            sensors.quality_link_sensors = sensors.flow_sensors = links
            sim.sensor_config = sensors
            scada = sim.run_simulation()
            scada = (
                scada.convert_units(
                    flow_unit=EpanetConstants.EN_LPS, pressure_unit=EpanetConstants.EN_METERS
                )
                if sim.get_flow_units() != EpanetConstants.EN_LPS
                else scada
            )
    f32 = np.float32
    times_s = np.asarray(scada.sensor_readings_time, dtype=np.int64)
    source = np.zeros((len(times_s), network.n_nodes), dtype=f32)
    source[:, network.node_index(injection)] = config.injection_setpoint_mg_l(times_s)
    delivered = scada.get_data_demands().astype(f32)
    requested = delivered.copy()
    period = np.minimum(times_s // config.pattern_step_s, config.n_pattern_steps - 1)
    for node, pattern in patterns.items():
        requested[:, network.node_index(node)] = base[node] * base_multiplier * pattern[period]
    requested[:, [network.node_index(n) for n in patterns]] *= flow_to_lps
    return SimulationResult(
        config=config,
        times_s=times_s,
        node_ids=np.array(nodes),
        link_ids=np.array(links),
        node_chlorine_mg_l=scada.get_data_nodes_quality().astype(f32),
        link_chlorine_mg_l=scada.get_data_links_quality().astype(f32),
        link_flow_lps=scada.get_data_flows().astype(f32),
        node_demand_lps=delivered,
        node_requested_demand_lps=requested,
        node_pressure_m=scada.get_data_pressures().astype(f32),
        node_source_mg_l=source,
    )
