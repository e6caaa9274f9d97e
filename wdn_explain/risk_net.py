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
from .features import RISK_INPUTS, InputSpec, network_setpoint
from .model import NodeChlorineGNN


def can_add(inputs: InputSpec) -> bool:
    """Whether node inputs built by ``inputs`` hold what :data:`~.features.RISK_INPUTS` are
    built from (the source now and the plan)."""
    return {"source_mg_l", "source_plan_mg_l"} <= set(inputs.node_features)


def added_channels(inputs: InputSpec) -> int:
    """Columns :data:`~.features.RISK_INPUTS` add to node inputs built by ``inputs``."""
    return 1 + inputs.horizon


class RiskScorer(nn.Module):
    """``gnn`` (its ``in_channels`` the forecaster's plus :func:`added_channels`) on the
    forecaster's node inputs ``x`` (built by ``inputs``) with the risk's own columns appended.

    Raises:
        ConfigError: a forecaster without the source and the plan among its inputs, or a GNN
            of another width.
    """

    def __init__(self, gnn: NodeChlorineGNN, inputs: InputSpec) -> None:
        super().__init__()
        if not can_add(inputs):
            raise ConfigError(
                f"the risk model's {', '.join(RISK_INPUTS)} needs source_mg_l and "
                f"source_plan_mg_l among the forecaster's node features "
                f"(got {list(inputs.node_features)})"
            )
        want = inputs.in_channels + added_channels(inputs)
        if gnn.config.in_channels != want:
            raise ConfigError(
                f"the risk model's GNN must read {want} node features "
                f"(got {gnn.config.in_channels})"
            )
        self.gnn, self.inputs = gnn, inputs

    @property
    def config(self):
        return self.gnn.config

    def risk_inputs(self, x: Tensor, n_graphs: int = 1) -> Tensor:
        """The GNN's node features: ``x`` ((b n, F) rows of ``n_graphs`` graphs of the
        forecaster's inputs) with :func:`~.features.network_setpoint` appended."""
        return torch.cat([x, network_setpoint(x, self.inputs, x.shape[0] // n_graphs)], dim=-1)

    def forward(
        self, x: Tensor, edge_index: Tensor, edge_attr: Tensor, batch: Tensor | None = None
    ) -> Tensor:
        n_graphs = 1 if batch is None else int(batch.max()) + 1
        return self.gnn(self.risk_inputs(x, n_graphs), edge_index, edge_attr, batch)
