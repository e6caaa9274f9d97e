"""The risk model as it is served (:mod:`.risk_model`): its GNN reading the forecaster's node
inputs plus :data:`~.features.RISK_INPUTS`, built from those same inputs.

The GNN is a :class:`~.model.NodeChlorineGNN` (edge-feature message passing, a linear head on
every node): the engine explains it exactly on :meth:`RiskScorer.risk_inputs` (the node
features it reads, the added columns among them), as it explains the forecaster on its own.
The wrapper only builds those inputs, so everything that runs a node model on the
forecaster's graphs (timelines, replay, evaluation) runs the risk model unchanged.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .errors import ConfigError
from .features import (
    RISK_INPUTS,
    InputSpec,
    horizon_arrival,
    network_setpoint,
    source_travel,
)
from .model import NodeChlorineGNN


def addable(inputs: InputSpec) -> tuple[str, ...]:
    """The :data:`~.features.RISK_INPUTS` that node inputs and edges built by ``inputs`` can
    feed: the setpoint needs the source now and the plan; the travel time and the arrival at
    the horizon also the flow among the edge features and the links' volumes (a forecaster
    with ``pipe_flushes``). Empty, the setpoint alone, or all."""
    if not {"source_mg_l", "source_plan_mg_l"} <= set(inputs.node_features):
        return ()
    travel = "flow" in inputs.edge_features and inputs.link_volume_l is not None
    return RISK_INPUTS if travel and inputs.report_step_s is not None else RISK_INPUTS[:1]


def added_channels(inputs: InputSpec, added: tuple[str, ...] | None = None) -> int:
    """Columns the ``added`` inputs (default: :func:`addable`) add to node inputs built by
    ``inputs``."""
    widths = {"network_setpoint_mg_l": 1 + inputs.horizon}  # the others: 1 column each
    return sum(widths.get(name, 1) for name in (addable(inputs) if added is None else added))


class RiskScorer(nn.Module):
    """``gnn`` (its ``in_channels`` the forecaster's plus :func:`added_channels`) on the
    forecaster's node inputs ``x`` (built by ``inputs``) with the ``added`` columns appended
    (a non-empty prefix of :func:`addable`, by default all of it).

    Raises:
        ConfigError: added inputs unknown or not built from what the forecaster reads, or a
            GNN of another width.
    """

    def __init__(
        self, gnn: NodeChlorineGNN, inputs: InputSpec, added: tuple[str, ...] | None = None
    ) -> None:
        super().__init__()
        added = addable(inputs) if added is None else tuple(added)
        if not added or added != addable(inputs)[: len(added)]:
            raise ConfigError(
                f"the risk model's added inputs {list(added)} need source_mg_l and "
                f"source_plan_mg_l among the forecaster's node features (the travel time and "
                f"arrival also the flow among its edge features and the links' volumes; got "
                f"{list(inputs.node_features)}, {list(inputs.edge_features)}); known: "
                f"{list(RISK_INPUTS)}"
            )
        want = inputs.in_channels + added_channels(inputs, added)
        if gnn.config.in_channels != want:
            raise ConfigError(
                f"the risk model's GNN must read {want} node features "
                f"(got {gnn.config.in_channels})"
            )
        self.gnn, self.inputs, self.added = gnn, inputs, added

    @property
    def config(self):
        return self.gnn.config

    def risk_inputs(
        self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, n_graphs: int = 1
    ) -> Tensor:
        """The GNN's node features: ``x`` ((b n, F) rows of ``n_graphs`` graphs of the
        forecaster's inputs, with their batched ``edge_index`` and ``edge_attr``) with
        :func:`~.features.network_setpoint`, :func:`~.features.source_travel` and
        :func:`~.features.horizon_arrival` appended (as far as :attr:`added` names them)."""
        n_nodes = x.shape[0] // n_graphs
        columns = [network_setpoint(x, self.inputs, n_nodes)]
        if len(self.added) > 1:
            columns.append(source_travel(x, edge_index, edge_attr, self.inputs, n_nodes))
        if len(self.added) > 2:
            columns.append(horizon_arrival(columns[0], columns[1], self.inputs.horizon))
        return torch.cat([x, *columns], dim=-1)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, batch: Tensor | None = None
    ) -> Tensor:
        n_graphs = 1 if batch is None else int(batch.max()) + 1
        x = self.risk_inputs(x, edge_index, edge_attr, n_graphs)
        return self.gnn(x, edge_index, edge_attr, batch)
