"""A timeline's simulated hydraulics: the link flows (L/s), node pressures (m) and
delivered demand fractions at its steps, taken from the run's simulation or, for a timeline file written before they were
stored, simulated again from its scenario."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .errors import WdnExplainError
from .simulation import SimulationResult, simulate
from .timeline import HYDRAULICS, Timeline

if TYPE_CHECKING:
    from .network import Network

logger = logging.getLogger(__name__)


def hydraulics_at(result: SimulationResult, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The simulated link flows (L/s), node pressures (m) and delivered demand fractions at
    ``steps``, as the :class:`~wdn_explain.timeline.Timeline` fields of the same names."""
    return {name: getattr(result, name)[steps].astype(np.float32) for name in HYDRAULICS}


def with_hydraulics(timeline: Timeline, network: Network | None = None) -> Timeline:
    """``timeline`` with its link flows and node pressures: its own when it holds them,
    else simulated again from its scenario (a timeline file written before they were
    stored). The simulation is deterministic; when it fails or its chlorine differs from the
    stored one (another simulator version) the timeline is returned without them."""
    if all(getattr(timeline, name) is not None for name in HYDRAULICS):
        return timeline
    from .network import load_network

    scenario = timeline.scenario
    try:
        result = simulate(scenario, network or load_network(scenario.network))
    except WdnExplainError as exc:  # the maps then draw plain pipes
        logger.warning("timeline of %s: no flows (%s)", scenario.describe(), exc)
        return timeline
    steps = np.asarray(timeline.steps)
    if steps.max() >= result.n_steps or not np.allclose(
        result.node_chlorine_mg_l[steps], timeline.chlorine, atol=1e-4
    ):
        logger.warning("timeline of %s: its simulation is not reproduced", scenario.describe())
        return timeline
    return replace(timeline, **hydraulics_at(result, steps))
