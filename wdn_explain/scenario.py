"""Scenario configuration: what one chlorine simulation does, and how a WAQ set varies it.

Configs are frozen pydantic models that reject unknown keys by name, round-trip to YAML and
are hashed into every manifest and result. Times are in seconds, concentrations in mg/L.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    def config_hash(self) -> str:
        """Short SHA-256 of the canonical JSON form; equal configs hash equally."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_yaml(self, path: str | Path) -> None:
        Path(path).write_text(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))


class ScenarioConfig(_Config):
    """One chlorine-spread simulation.

    Demand variation: every junction with a base demand gets its own demand pattern, with
    multipliers drawn uniformly from ``demand_scale * [1 - v, 1 + v]`` per pattern step from a
    generator seeded with ``seed`` (``v = demand_variation``). This really changes the flows
    (EPyT-Flow's ``randomize_demands`` does not on Hanoi, which has no patterns to shuffle).
    """

    network: str = Field("hanoi", description="built-in network name or path to an .inp file")
    duration_s: int = Field(3 * 3600, gt=0, description="simulated time")
    reporting_step_s: int = Field(300, gt=0, description="time between reported states")
    hydraulic_step_s: int = Field(300, gt=0)
    quality_step_s: int = Field(60, gt=0)
    pattern_step_s: int = Field(900, gt=0, description="time between demand multipliers")
    injection_node: str | None = Field(None, description="node id; default: the first reservoir")
    injection_strength_mg_l: float = Field(1.0, gt=0, description="source concentration")
    injection_pattern: tuple[float, ...] | None = Field(
        None, description="source multipliers per pattern step (default: constant 1)"
    )
    demand_variation: float = Field(0.2, ge=0, lt=1)
    demand_scale: float = Field(1.0, gt=0, description="multiplies every base demand (surges)")
    bulk_decay_per_day: float = Field(0.0, ge=0, description="first-order bulk decay rate")
    seed: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _check_steps(self) -> ScenarioConfig:
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
        return self

    @property
    def n_reports(self) -> int:
        """Number of reported time steps, the initial state included."""
        return self.duration_s // self.reporting_step_s + 1


class SimulationConfig(_Config):
    """A set of scenarios: the template varied by a per-scenario seed (the WAQ design)."""

    n_scenarios: int = Field(1, gt=0)
    seed: int = Field(0, ge=0, description="master seed; scenario seeds derive from it")
    scenario: ScenarioConfig = ScenarioConfig()

    def scenario_seed(self, index: int) -> int:
        """Seed of scenario ``index``, derived from the master seed (stable across runs)."""
        return int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0])

    def scenario_config(self, index: int) -> ScenarioConfig:
        """The fully specified config of scenario ``index``."""
        if not 0 <= index < self.n_scenarios:
            raise ConfigError(f"scenario index {index} out of range (0..{self.n_scenarios - 1})")
        return self.scenario.model_copy(update={"seed": self.scenario_seed(index)})


def _format_validation_error(source: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "config"
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown key '{where}'")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            if "(got" not in msg:
                msg += f" (got {err.get('input')!r})"
            parts.append(f"{where}: {msg}")
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
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file '{path}' is not valid YAML: {exc}") from None
    return parse_config(data, source=str(path))
