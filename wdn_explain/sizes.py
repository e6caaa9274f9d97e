"""Size estimates (time, disk, memory) of long work, checked before it starts so an absurd
request is refused with the figures instead of running for hours."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:
    from .network import Network
    from .scenario import SimulationConfig


@dataclass(frozen=True)
class SizeEstimate:
    """Rough cost of a piece of work: wall time in s, disk and memory in bytes."""

    seconds: float
    disk_bytes: float
    memory_bytes: float

    def __str__(self) -> str:
        return (
            f"about {_duration(self.seconds)}, {self.disk_bytes / 1e9:.1f} GB on disk, "
            f"{self.memory_bytes / 1e9:.1f} GB of memory"
        )


LIMITS = SizeEstimate(seconds=12 * 3600, disk_bytes=20e9, memory_bytes=16e9)
"""Work estimated beyond any of these is refused unless explicitly allowed."""


SIMULATOR_BYTES = 100
"""Memory one run holds per reported state of each node and link: measured ~84 bytes on
Hanoi (peak RSS 221 MB at 2 881 reports, 269 MB at 11 521), rounded up for the copies made
when the result is stored."""


BYTES_PER_PARAMETER = 16
"""Memory training takes per model parameter: float32 weights, gradients and Adam's two
moments."""


def check_parameters(n_parameters: int, what: str) -> None:
    """Refuse a model whose training would hold more than :data:`LIMITS`' memory in
    parameters alone, before anything is allocated or written.

    Raises:
        ConfigError: naming ``what`` (the options that size the model) and the figures.
    """
    need = n_parameters * BYTES_PER_PARAMETER
    if need > LIMITS.memory_bytes:
        raise ConfigError(
            f"{what} make {n_parameters:.3g} parameters, {need / 1e9:,.0f} GB to train "
            f"(limit {LIMITS.memory_bytes / 1e9:.0f} GB); choose a smaller model"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_waq(config: SimulationConfig, network: Network, n_workers: int) -> SizeEstimate:
    """Estimate of simulating a WAQ set: time on ``n_workers`` (measured on Hanoi: ~30 ms
    per run plus ~20 µs per quality step, scaled with the node count), the scenario files,
    and the larger of two memory peaks: the arrays that training stacks (node chlorine and
    link flows) and the runs in flight, each holding every reported state of its network
    (:data:`SIMULATOR_BYTES`) until it ends."""
    s, n, e = config.scenario, network.n_nodes, network.n_links
    per_run = (0.03 + 2e-5 * s.duration_s / s.quality_step_s) * max(1.0, n / 32)
    per_file = s.n_reports * ((5 * n + 2 * e) * 4 + 8) + 4096  # float32 states, npz headers
    in_flight = min(max(1, n_workers), config.n_scenarios)
    return SizeEstimate(
        seconds=per_run * config.n_scenarios / max(1, n_workers),
        disk_bytes=float(per_file * config.n_scenarios),
        memory_bytes=float(
            max(
                s.n_reports * (n + e) * 4 * config.n_scenarios,
                s.n_reports * (n + e) * SIMULATOR_BYTES * in_flight,
            )
        ),
    )


def estimate_timeline(n_steps: int, n_interactions: int) -> SizeEstimate:
    """Estimate of explaining ``n_steps`` steps exactly with ``n_interactions`` (|I|) each
    (measured on Hanoi, L = 3, 2 CPU cores: ~0.15 s, ~1 MB in memory and ~0.1 MB
    compressed on disk per step at |I| = 101 115)."""
    return SizeEstimate(
        seconds=1.5e-6 * n_interactions * n_steps,
        disk_bytes=1.1 * n_interactions * n_steps,
        memory_bytes=10.0 * n_interactions * n_steps,
    )


def check_size(estimate: SizeEstimate, folder: str | Path, *, allow_large: bool = False) -> None:
    """Refuse work whose estimate exceeds :data:`LIMITS` or the free space under ``folder``.

    Raises:
        ConfigError: naming the estimate and the limit, unless ``allow_large``.
    """
    if allow_large:
        return
    existing = next(p for p in (Path(folder), *Path(folder).parents) if p.exists())
    free = shutil.disk_usage(existing).free
    over = [
        f"{what} {_fmt(getattr(estimate, field), field)} > {_fmt(limit, field)}"
        for what, field, limit in (
            ("time", "seconds", LIMITS.seconds),
            ("disk", "disk_bytes", min(LIMITS.disk_bytes, free)),
            ("memory", "memory_bytes", LIMITS.memory_bytes),
        )
        if getattr(estimate, field) > limit
    ]
    if over:
        raise ConfigError(
            f"this would take {estimate} ({'; '.join(over)}); reduce the size or pass "
            "--yes to proceed anyway"
        )


def _fmt(value: float, field: str) -> str:
    return _duration(value) if field == "seconds" else f"{value / 1e9:.1f} GB"
