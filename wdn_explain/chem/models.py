"""GCN, GIN and GAT graph classifiers with a linear readout (the paper's appendix architecture).

Each of the L layers is conv -> batch norm -> LeakyReLU -> dropout; the outputs of all
layers are concatenated (jumping knowledge), summed over the nodes (global add pooling) and
mapped to class logits by one linear layer. In eval mode batch norm is an affine map per
node and dropout is off, so pooling and readout stay linear and GraphSHAP-IQ is exact.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, global_add_pool

Architecture = Literal["GCN", "GIN", "GAT"]
ARCHITECTURES = ("GCN", "GIN", "GAT")


class ChemModelConfig(BaseModel):
    """Architecture of a molecule classifier (stored in the model card)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    architecture: Architecture = "GIN"
    in_channels: int = Field(ge=1)
    hidden: int = Field(64, ge=1)
    num_layers: int = Field(2, ge=1, le=3)
    n_classes: int = Field(2, ge=2)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)


def _conv(architecture: Architecture, n_in: int, n_out: int) -> nn.Module:
    if architecture == "GCN":
        return GCNConv(n_in, n_out)
    if architecture == "GIN":
        return GINConv(nn.Sequential(nn.Linear(n_in, n_out), nn.ReLU(), nn.Linear(n_out, n_out)))
    return GATConv(n_in, n_out, heads=1)


class MoleculeGNN(nn.Module):
    """Graph classifier called as ``model(x, edge_index, batch=batch)`` -> (n_graphs, C) logits.

    ``edge_attr`` is accepted (the engine passes the bond types) but not used: the paper's
    GCN/GIN/GAT see atom types only.
    """

    def __init__(self, config: ChemModelConfig) -> None:
        super().__init__()
        self.config = config
        dims = [config.in_channels] + [config.hidden] * config.num_layers
        self.convs = nn.ModuleList(
            _conv(config.architecture, a, b) for a, b in zip(dims[:-1], dims[1:])
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(config.hidden) for _ in self.convs)
        self.act = nn.LeakyReLU()
        self.dropout = nn.Dropout(config.dropout)
        self.head = nn.Linear(config.hidden * config.num_layers, config.n_classes)

    @property
    def num_layers(self) -> int:
        return self.config.num_layers

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_attr: Tensor | None = None,
        batch: Tensor | None = None,
    ) -> Tensor:
        if batch is None:
            batch = torch.zeros(len(x), dtype=torch.long, device=x.device)
        layers = []
        for conv, norm in zip(self.convs, self.norms):
            x = self.dropout(self.act(norm(conv(x, edge_index))))
            layers.append(x)
        return self.head(global_add_pool(torch.cat(layers, dim=1), batch))
