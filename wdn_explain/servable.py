"""What demand a network can serve: the largest demand level at which every junction keeps
the required pressure, and a design's check against it before anything is simulated.

A demand level ``m`` multiplies every base demand. Pressures fall as ``m`` rises, so one
bisection over steady demand-driven solves (one EPANET session, milliseconds each) finds the servable level ``m*`` (to
:data:`LEVEL_TOLERANCE`). A design's demand peaks at ``demand_scale * (1 + diurnal_amplitude)
* (1 + demand_variation)`` (every junction at the top of its noise at the diurnal peak); a
corner of the design (each of these three factors at the low or high end of its range) whose
peak exceeds ``m*`` cannot deliver its demand at the required pressure: pressure-driven
analysis then delivers less than asked, and demand-driven analysis goes to negative pressures.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from .errors import ConfigError
from .network import Network, load_network, scenario_simulator
from .scenario import ScenarioConfig, SimulationConfig

LEVEL_TOLERANCE = 0.005
"""Resolution (x base demand) of :func:`servable_demand_level`."""
MAX_LEVEL = 4.0
"""The highest demand level searched: a network serving more reports this."""
DEMAND_FACTORS = ("demand_scale", "diurnal_amplitude", "demand_variation")
"""The factors that set a scenario's demand peak (see the module docstring)."""


def peak_demand_level(demand_scale: float, diurnal_amplitude: float, variation: float) -> float:
    """The highest demand multiplier a scenario with these factors asks of a junction."""
    return demand_scale * (1 + diurnal_amplitude) * (1 + variation)


@functools.lru_cache(maxsize=16)
def _servable(inp_path: str, sha256: str, required_m: float) -> tuple[float, tuple[str, ...]]:
    """Bisection over EPANET's demand multiplier in one hydraulic session: steady solves at
    the start, every junction with a base demand on a constant pattern (as :func:`simulate`
    gives them their own patterns), the file's own demand multiplier kept."""
    from epanet_plus import EpanetConstants as E

    from .simulation import base_demands, metres_to_pressure_unit, use_si_units

    del sha256  # part of the cache key only: a changed file is searched again
    network = load_network(inp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # EPANET warns of negative pressures while searching
        with scenario_simulator(inp_path) as sim:
            use_si_units(sim)
            api = sim.epanet_api
            demands = [network.node_index(n) for n in base_demands(sim, network)]
            for i in demands:
                api.setnodevalue(i + 1, E.EN_PATTERN, 0)
            required = required_m * metres_to_pressure_unit(sim)
            file_multiplier = api.getoption(E.EN_DEMANDMULT)

            def pressures(level: float) -> np.ndarray:
                api.setoption(E.EN_DEMANDMULT, level * file_multiplier)
                api.initH(0)
                api.runH()
                return np.asarray(api.getnodevalues(E.EN_PRESSURE))[demands]

            api.openH()
            try:
                reach = pressures(LEVEL_TOLERANCE) >= required
                never = tuple(network.node_ids[i] for i, ok in zip(demands, reach) if not ok)
                if not reach.any():
                    return 0.0, never
                if (pressures(MAX_LEVEL)[reach] >= required).all():
                    return MAX_LEVEL, never
                low, high = LEVEL_TOLERANCE, MAX_LEVEL
                while high - low > LEVEL_TOLERANCE:
                    mid = (low + high) / 2
                    serves = (pressures(mid)[reach] >= required).all()
                    low, high = (mid, high) if serves else (low, mid)
                return low, never
            finally:
                api.closeH()


def servable_demand_level(
    network: Network, template: ScenarioConfig
) -> tuple[float, tuple[str, ...]]:
    """The largest demand level (x base demand, to :data:`LEVEL_TOLERANCE`) at which every
    junction with a demand keeps ``template.pressure_required_m`` in a steady solve at the
    start (tanks at their initial levels), and the junctions that never do (below it even at
    a trickle of demand: their pressure is set by elevation, not by the demand; they are left
    out of the level). The level is 0 when no junction reaches the pressure, :data:`MAX_LEVEL`
    when that level still serves. Cached per network file and required pressure."""
    return _servable(str(network.inp_path), network.file_sha256, template.pressure_required_m)


@dataclass(frozen=True)
class DesignCheck:
    """A design's demand peaks against what its network serves at the required pressure."""

    servable_level: float
    """:func:`servable_demand_level` of the design's network."""
    never_served: tuple[str, ...]
    """Junctions below the required pressure at any demand (see :func:`servable_demand_level`)."""
    corner_peaks: tuple[float, ...]
    """The peak demand level of every corner of the design's demand factors."""
    pressure_required_m: float
    demand_model: str = "PDA"

    @property
    def n_unservable(self) -> int:
        return sum(peak > self.servable_level for peak in self.corner_peaks)

    @property
    def unservable_share(self) -> float:
        """The share of the design's corners that cannot deliver their demand at the required
        pressure."""
        return self.n_unservable / len(self.corner_peaks)

    @property
    def message(self) -> str:
        """One line for the command line and the app."""
        return (
            f"design check: {self.n_unservable} of {len(self.corner_peaks)} corners of the "
            f"design's demand ({self.unservable_share:.0%}) exceed what the network serves at "
            f"{self.pressure_required_m:g} m ({self.servable_level:.2f} x base demand; the "
            f"design peaks at {min(self.corner_peaks):.2f}-{max(self.corner_peaks):.2f} x): "
            + (
                (
                    "pressure-driven analysis delivers less than asked there"
                    if self.demand_model == "PDA"
                    else "demand-driven analysis runs to negative pressures there"
                )
                if self.n_unservable
                else "every demand is delivered in full"
            )
            + (
                f"; {len(self.never_served)} junctions (e.g. {self.never_served[0]}) are below "
                f"{self.pressure_required_m:g} m at any demand and always get less"
                if self.never_served
                else ""
            )
        )


def check_design(config: SimulationConfig, network: Network | None = None) -> DesignCheck:
    """Check, before simulating, which corners of a design (or of a single scenario) can
    deliver their demand at the required pressure.

    Raises:
        ConfigError: pressure-driven, and no junction reaches the required pressure at any
            demand (nothing would be delivered in full).
    """
    template, design = config.scenario, config.design
    network = network or load_network(template.network)
    ranges = []
    for name in DEMAND_FACTORS:
        drawn = getattr(design, name, None) if design is not None else None
        ranges.append(tuple(sorted(set(drawn))) if drawn else (getattr(template, name),))
    peaks = tuple(peak_demand_level(*corner) for corner in itertools.product(*ranges))
    level, never = servable_demand_level(network, template)
    check = DesignCheck(
        servable_level=level,
        never_served=never,
        corner_peaks=peaks,
        pressure_required_m=template.pressure_required_m,
        demand_model=template.demand_model,
    )
    if template.demand_model == "PDA" and level <= 0:
        raise ConfigError(
            f"pressure_required_m: no junction of network '{network.name}' reaches "
            f"{template.pressure_required_m:g} m even at a trickle of demand, so no demand "
            f"would ever be delivered in full (got {template.pressure_required_m:g})"
        )
    return check


def servable_demand_scale(
    network: Network, template: ScenarioConfig, *, diurnal_high: float, low_fraction: float
) -> tuple[float, float]:
    """A ``demand_scale`` range whose top level, at the diurnal peak, stays within what the
    network serves at the required pressure (at most 1 x base demand), its bottom at
    ``low_fraction`` of the top; rounded down to 0.01.

    Raises:
        ConfigError: the network serves no demand at the required pressure.
    """
    level, _ = servable_demand_level(network, template)
    if level <= 0:
        raise ConfigError(
            f"network '{network.name}' keeps no junction at the required pressure of "
            f"{template.pressure_required_m:g} m even at {LEVEL_TOLERANCE:g} x base demand: "
            "lower pressure_required_m"
        )
    high = float(np.floor(min(1.0, level / (1 + diurnal_high)) * 100) / 100)
    return float(np.floor(high * low_fraction * 100) / 100), high
