"""Another node of a node-level timeline explained on demand: the timeline gains the node's
explanations (every step, every reference it holds) from the model and settings that made
it, without recomputing the target nodes it already holds."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import DataError
from .model_folder import load_model, model_hash
from .pipeline import _explain_steps, parallel_references, scenario_graphs
from .progress import ProgressArg
from .simulation import simulate
from .timeline import Timeline, settings_of

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .network import Network


def timeline_graphs(timeline: Timeline, model_dir: str | Path, network: Network) -> list[Data]:
    """The model inputs at every report of the timeline's scenario, simulated again (the
    simulation is deterministic); DataError when its chlorine is not the stored one (another
    simulator version) or ``model_dir`` holds another model than the one that made it."""
    if model_hash(model_dir) != timeline.meta["model_hash"]:
        raise DataError(
            f"model '{model_dir}' is not the one that made this timeline "
            f"(model {timeline.meta['model_hash']})"
        )
    _, card = load_model(model_dir)
    result = simulate(timeline.scenario, network)
    steps = np.asarray(timeline.steps)
    if steps.max() >= result.n_steps or not np.allclose(
        result.node_chlorine_mg_l[steps], timeline.chlorine, atol=1e-4
    ):
        raise DataError(
            f"the scenario of this timeline ({timeline.scenario.describe()}) no longer "
            "simulates to its stored chlorine: explain it again"
        )
    return scenario_graphs(result, network, card.input_spec)


def with_node(
    timeline: Timeline,
    node: str,
    model_dir: str | Path,
    network: Network,
    *,
    graphs: list[Data] | None = None,
    progress: ProgressArg = False,
) -> Timeline:
    """``timeline`` (a node-level model's) with the forecasts at ``node`` explained too, at
    every step relative to every reference it holds, with the settings that made it; the
    node is added to ``meta["target_nodes"]`` and the nodes already held are kept as they
    are. Unchanged when it holds ``node`` already.

    Args:
        timeline: A node-level timeline (:attr:`Timeline.node_level`).
        node: A node id of ``network``.
        model_dir: The model folder that made the timeline.
        network: The timeline's network.
        graphs: The model inputs of every report (:func:`timeline_graphs`), when the caller
            keeps them from an earlier node; simulated again otherwise.
        progress: As in :func:`~wdn_explain.pipeline.explain_scenario`.

    Raises:
        DataError: a share model's timeline, or a model or simulation other than the
            timeline's (:func:`timeline_graphs`).
        ConfigError: ``node`` is not in the network.
    """
    from .explain import GraphSHAPIQ

    node = str(node)
    if not timeline.node_level:
        raise DataError(
            f"node '{node}' cannot be explained: this timeline's model forecasts the share of "
            "chlorinated nodes, not chlorine at a node"
        )
    index = network.node_index(node)
    if node in timeline.targets:
        return timeline
    graphs = graphs if graphs is not None else timeline_graphs(timeline, model_dir, network)
    model, _ = load_model(model_dir)
    settings = settings_of(timeline.meta)
    side_by_side = parallel_references(settings)
    explainers = {
        reference: GraphSHAPIQ(model, **settings.explainer_options(reference, side_by_side))
        for reference in timeline.references
    }
    series, _ = _explain_steps(
        explainers,
        graphs,
        np.asarray(timeline.steps),
        None,
        settings,
        progress,
        threading.Event(),
        [index],
    )
    explained = {reference: [step[0] for step in steps] for reference, steps in series.items()}
    held = list(timeline.meta.get("target_nodes") or timeline.targets)
    return replace(
        timeline,
        targets={**timeline.targets, node: explained},
        meta={**timeline.meta, "target_nodes": [*held, node]},
    )
