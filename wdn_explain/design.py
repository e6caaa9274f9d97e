"""What a scenario design covers: factor levels of a scenario, and the envelope a model was
trained on, against which a new scenario is checked (out-of-distribution warnings).

The envelope is stored in the model card as ``design``: the network, the report step, where
chlorine entered (node ids), the injection modes and the range of every drawn factor. A
scenario outside it is still simulated, forecast and explained -- exactly -- but the forecast
is an extrapolation, and the CLI, the timeline and the app say so, naming the factor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from .scenario import (
    DRAWN_RANGES,
    INJECTION_MODES,
    Range,
    ScenarioConfig,
    SimulationConfig,
    _Config,
)

# How each factor is named and measured in messages: (plain name, unit, scale to that unit).
_FACTOR_WORDS: dict[str, tuple[str, str, float]] = {
    "injection_strength_mg_l": ("strength", "mg/L", 1.0),
    "injection_start_s": ("injection start", "min", 1 / 60),
    "intermittent_on_s": ("booster on-time", "min", 1 / 60),
    "intermittent_off_s": ("booster off-time", "min", 1 / 60),
    "outage_start_s": ("outage start", "min", 1 / 60),
    "outage_duration_s": ("outage duration", "min", 1 / 60),
    "demand_scale": ("demand level", "x base demand", 1.0),
    "demand_variation": ("demand variation", "", 1.0),
    "diurnal_amplitude": ("diurnal amplitude", "", 1.0),
    "start_hour": ("start hour", "h", 1.0),
    "bulk_decay_per_day": ("bulk decay", "/day", 1.0),
}
# Factors that only matter for one injection mode.
_MODE_ONLY = {
    "intermittent_on_s": "intermittent",
    "intermittent_off_s": "intermittent",
    "outage_start_s": "failure",
    "outage_duration_s": "failure",
}


def factor_levels(scenario: ScenarioConfig, reservoirs: tuple[str, ...] = ()) -> dict[str, str]:
    """The level of every reported factor of a scenario, as short labels (for per-factor
    evaluation and ``data-stats``)."""
    s = scenario
    at_reservoir = s.injection_node is None or s.injection_node in reservoirs
    strength = s.injection_strength_mg_l
    return {
        "injection": "reservoir" if at_reservoir else "booster",
        "pattern": s.injection_mode if s.injection_pattern is None else "custom",
        "strength": (
            "< 0.5 mg/L"
            if strength < 0.5
            else "0.5-1 mg/L"
            if strength < 1
            else "1-2 mg/L"
            if strength < 2
            else ">= 2 mg/L"
        ),
        "start": "at t = 0" if s.injection_start_s < s.pattern_step_s else "delayed",
        "demand": (
            "low (< 0.9)"
            if s.demand_scale < 0.9
            else "high (> 1.1)"
            if s.demand_scale > 1.1
            else "normal"
        ),
        "decay": "with decay" if s.bulk_decay_per_day > 0 else "no decay",
    }


# The simulation steps a design fixes, how they are named, and what a differing value means.
STEPS: dict[str, str] = {
    "hydraulic_step_s": "hydraulic step",
    "quality_step_s": "quality step",
    "pattern_step_s": "demand pattern step",
}


class DesignEnvelope(_Config):
    """Where a model's training scenarios lie (stored in the card as ``design``).

    Besides the factors' ranges it records the simulation settings that shape the inputs
    (``duration_s`` and the hydraulic, quality and pattern steps; None in older cards: not
    checked) and ``bulk_decay_drawn``, the range of the non-zero decay rates actually drawn
    (a design that switches decay off in some scenarios has the box ``[0, high]`` in
    ``ranges`` but never saw a rate between 0 and its lowest draw), and ``hydraulics``, the
    demand model and its pressures (:attr:`~.scenario.ScenarioConfig.hydraulics`; None in
    cards older than pressure-driven analysis: demand-driven).
    """

    network: str
    reporting_step_s: int
    injection_nodes: tuple[str, ...]
    injection_modes: tuple[str, ...]
    ranges: dict[str, Range] = Field(default_factory=dict)
    duration_s: int | None = None
    hydraulic_step_s: int | None = None
    quality_step_s: int | None = None
    pattern_step_s: int | None = None
    bulk_decay_drawn: Range | None = None
    hydraulics: dict[str, str | float] | None = None

    @field_validator("ranges")
    @classmethod
    def _known_factors(cls, ranges: dict[str, Range]) -> dict[str, Range]:
        unknown = sorted(set(ranges) - set(DRAWN_RANGES))
        if unknown:
            raise ValueError(
                f"ranges of unknown factors {', '.join(unknown)} (known: {', '.join(DRAWN_RANGES)})"
            )
        return ranges

    @classmethod
    def of(
        cls, config: SimulationConfig, network: Any, scenarios: Sequence[ScenarioConfig] = ()
    ) -> DesignEnvelope:
        """The envelope of a simulation config on its loaded network: the design's ranges,
        and the template's value for every factor the design does not draw.

        Args:
            scenarios: The scenarios actually simulated (their non-zero decay rates give
                ``bulk_decay_drawn``; none given: the design's decay range).
        """
        t, d = config.scenario, config.design
        reservoir = network.reservoirs[0] if network.reservoirs else None
        if d is None:
            nodes = (t.injection_node or reservoir,)
            modes = (t.injection_mode,)
            ranges = {name: (float(getattr(t, name)),) * 2 for name in DRAWN_RANGES}
        else:
            boosters = d.booster_nodes(network.junctions)
            nodes = ((t.injection_node or reservoir,) if d.reservoir_share > 0 else ()) + tuple(
                boosters if d.reservoir_share < 1 else ()
            )
            modes = d.injection_modes or (t.injection_mode,)
            ranges = {}
            for name in DRAWN_RANGES:
                drawn = getattr(d, name)
                ranges[name] = (
                    (float(drawn[0]), float(drawn[1]))
                    if drawn is not None
                    else (float(getattr(t, name)),) * 2
                )
            if d.bulk_decay_share < 1:
                ranges["bulk_decay_per_day"] = (0.0, ranges["bulk_decay_per_day"][1])
        rates = [c.bulk_decay_per_day for c in scenarios if c.bulk_decay_per_day > 0]
        decay = ranges["bulk_decay_per_day"]
        if rates:
            decay = (float(min(rates)), float(max(rates)))
        elif d is not None and d.bulk_decay_per_day is not None:
            decay = (float(d.bulk_decay_per_day[0]), float(d.bulk_decay_per_day[1]))
        return cls(
            network=network.name,
            reporting_step_s=t.reporting_step_s,
            injection_nodes=tuple(dict.fromkeys(n for n in nodes if n is not None)),
            injection_modes=tuple(m for m in INJECTION_MODES if m in modes),
            ranges=ranges,
            duration_s=t.duration_s,
            **{name: getattr(t, name) for name in STEPS},
            bulk_decay_drawn=decay if decay[1] > 0 else None,
            hydraulics=t.hydraulics,
        )

    @property
    def trained_hydraulics(self) -> dict[str, str | float]:
        """The demand model of the training scenarios (cards older than it: demand-driven)."""
        return self.hydraulics or {"demand_model": "DDA"}

    def outside(self, scenario: ScenarioConfig, injection_node: str) -> list[str]:
        """One plain sentence per factor of ``scenario`` outside this envelope (empty: inside).

        Args:
            injection_node: Where the scenario's chlorine enters (its resolved node id).
        """
        s, notes = scenario, []
        if s.reporting_step_s != self.reporting_step_s:
            notes.append(
                f"reports every {s.reporting_step_s / 60:g} min: this model forecasts steps of "
                f"{self.reporting_step_s / 60:g} min"
            )
        for name, word in STEPS.items():
            trained = getattr(self, name)
            if trained is not None and getattr(s, name) != trained:
                notes.append(
                    f"{word} {getattr(s, name) / 60:g} min: this model was trained at "
                    f"{trained / 60:g} min"
                )
        if self.duration_s is not None and s.duration_s > self.duration_s:
            notes.append(
                f"duration {s.duration_s / 3600:g} h: this model saw only the first "
                f"{self.duration_s / 3600:g} h of a scenario"
            )
        decay, box = s.bulk_decay_per_day, self.ranges.get("bulk_decay_per_day")
        if self.bulk_decay_drawn is not None and box is not None and box[0] == 0:
            low, high = self.bulk_decay_drawn
            if 0 < decay < low:  # in the box, but in the gap between "off" and the draws
                notes.append(
                    f"bulk decay {decay:g} /day: the decay rates this model saw were 0 or "
                    f"{low:g}-{high:g} /day"
                )
        if s.hydraulics != self.trained_hydraulics:
            trained = ScenarioConfig.model_validate(self.trained_hydraulics)
            notes.append(
                f"{s.describe_hydraulics()} hydraulics: this model was trained on "
                f"{trained.describe_hydraulics()} ones"
            )
        if injection_node not in self.injection_nodes:
            notes.append(
                f"injection at node {injection_node}: this model never saw chlorine enter there"
            )
        if s.injection_pattern is not None:
            notes.append("a custom injection pattern: this model never saw one")
        elif s.injection_mode not in self.injection_modes:
            notes.append(
                f"a {s.injection_mode} booster: this model saw only "
                f"{' and '.join(self.injection_modes)} injection"
            )
        for name, (low, high) in self.ranges.items():
            mode = _MODE_ONLY.get(name)
            if mode is not None and (s.injection_mode != mode or s.injection_pattern is not None):
                continue
            value = float(getattr(s, name))
            tol = 1e-9 * max(1.0, abs(high))
            if low - tol <= value <= high + tol:
                continue
            word, unit, scale = _FACTOR_WORDS[name]
            seen = f"{low * scale:g}" if low == high else f"{low * scale:g}-{high * scale:g}"
            notes.append(
                f"{word} {value * scale:g} {unit}".rstrip()
                + f": outside the trained range {seen} {unit}".rstrip()
            )
        return notes


def trained_on(card: Any) -> str:
    """What a model card says the model was trained on, for a card without a design:
    ``1000 scenarios of data/waq on network hanoi (data config 25a1c0a4eb657611)``."""
    data = card.data
    return (
        f"{data.n_scenarios} scenarios of {data.folder} on network {data.network.name} "
        f"(data config {data.config_hash})"
    )


UNKNOWN_DESIGN = (
    "this model's card does not record the scenarios it was trained on: "
    "whether this scenario is inside them is unknown"
)
