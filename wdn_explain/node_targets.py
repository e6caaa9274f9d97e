"""Which nodes a node-level model's timeline explains (the ones asked for, else a node that
chlorine reaches and leaves again), the model's forecast at every node, and the
timeline's node-level fields assembled from the run's series (:mod:`.node_series` holds what
follows from them once in a timeline). Used by :func:`~.pipeline.explain_scenario`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import ConfigError
from .explain_settings import ExplainSettings
from .features import InputSpec

if TYPE_CHECKING:
    from torch_geometric.data import Data

    from .network import Network


def target_nodes(
    settings: ExplainSettings, inputs: InputSpec, network: Network
) -> list[int] | None:
    """The indices of the nodes ``settings.target_nodes`` names (None: the default target,
    chosen from the forecast by :func:`default_target`); refused for a share model and for an
    id not in the network, before any simulation."""
    if settings.target_nodes is None:
        return None
    if not inputs.node_level:
        raise ConfigError(
            f"target nodes ({', '.join(settings.target_nodes)}) apply to node-level models; "
            "this model forecasts the share of chlorinated nodes"
        )
    return [network.node_index(node) for node in settings.target_nodes]


def default_target(
    node_forecast: np.ndarray, min_residual_mg_l: float, injection_index: int
) -> int:
    """The node explained unless one is asked for: among the nodes other than the injection
    node whose forecast reaches the minimum residual, the one whose forecast falls back below
    it at the most steps after first reaching it (where chlorine comes and goes: what a
    switching or intermittent source does to its customers), the earliest reached on a tie;
    where none falls back, the reached node with the lowest mean forecast; the injection node
    when no other node is reached. A node reached only late, or one always dosed, would leave
    the opening view silent or trivial for most of the scenario.

    Args:
        node_forecast: (T, n) node forecasts in mg/L.
    """
    above = node_forecast >= min_residual_mg_l
    reached = above.any(axis=0)
    reached[injection_index] = False
    if not reached.any():
        return injection_index
    first = np.where(reached, above.argmax(axis=0), len(above))
    after = np.arange(len(above))[:, None] >= first[None, :]
    drops = np.where(reached, (~above & after).sum(axis=0), -1)
    if drops.max() > 0:
        candidates = np.flatnonzero(drops == drops.max())
        return int(candidates[np.argmin(first[candidates])])
    mean = np.where(reached, node_forecast.mean(axis=0), np.inf)
    return int(np.argmin(mean))


def node_forecasts(model: Any, graphs: list[Data]) -> np.ndarray:
    """A node-level model's forecast at every node of every graph, shape (len(graphs), n)."""
    import torch

    with torch.no_grad():
        return np.stack(
            [model(g.x, g.edge_index, g.edge_attr).reshape(-1).cpu().numpy() for g in graphs]
        )


def node_fields(
    ids: list[str],
    series: dict[str, list],
    node_forecast: np.ndarray,
    node_truth: np.ndarray,
    inputs: InputSpec,
) -> tuple[dict[str, Any], dict[str, list]]:
    """A node-level timeline's node fields (every node's forecast and truth, the true
    compliance share, each target node's explanations per reference) and the explanation
    series of the first target node, which the timeline shows by default. The served
    compliance share needs the risk (:func:`~.compliance.compliance_share`): the caller's."""
    targets = {
        node: {r: [per_step[j] for per_step in s_] for r, s_ in series.items()}
        for j, node in enumerate(ids)
    }
    fields = {
        "node_forecast": node_forecast,
        "node_truth": node_truth,
        "compliance_truth": inputs.compliance(node_truth),
        "targets": targets,
    }
    return fields, dict(targets[ids[0]])
