"""GCN, GIN and GAT graph classifiers with a linear readout (the paper's appendix architecture).

Each of the L layers is conv -> batch norm -> LeakyReLU -> dropout; the outputs of all
layers are concatenated (jumping knowledge), optionally passed through one node-level layer
(linear -> LeakyReLU, ``node_hidden``), summed over the nodes (global add pooling) and
mapped to class logits by one linear layer. In eval mode batch norm is an affine map per
node and dropout is off; everything before the pooling acts per node, so pooling and
readout stay linear and GraphSHAP-IQ is exact.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINConv, global_add_pool

from ..errors import ExplainError

Architecture = Literal["GCN", "GIN", "GAT"]
ARCHITECTURES: tuple[str, ...] = get_args(Architecture)


class ChemModelConfig(BaseModel):
    """Architecture of a molecule classifier (stored in the model card)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    architecture: Architecture = "GIN"
    in_channels: int = Field(ge=1)
    hidden: int = Field(64, ge=1)
    num_layers: int = Field(2, ge=1, le=3)
    n_classes: int = Field(2, ge=2)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    # width of a node-level layer (linear -> LeakyReLU) between the concatenated layer outputs
    # and the pooling, so that each atom's contribution to the sum can saturate; None: no such
    # layer (the paper's model: pooling right after the concatenation)
    node_hidden: int | None = Field(None, ge=1)
    # GCNConv options (GCN only): Kipf's "improved" self loop weight 2, self loops, symmetric
    # degree normalisation, and the bond order (1, 2, 3, aromatic 1.5) as edge weight
    improved: bool = False
    self_loops: bool = True
    normalize: bool = True
    bond_weights: bool = False

    @model_validator(mode="after")
    def _gcn_options(self) -> ChemModelConfig:
        default = (False, True, True, False)
        options = (self.improved, self.self_loops, self.normalize, self.bond_weights)
        if self.architecture != "GCN" and options != default:
            raise ValueError(
                f"improved, self_loops, normalize and bond_weights are GCN options "
                f"(architecture is {self.architecture})"
            )
        if self.self_loops and not self.normalize:
            raise ValueError("self_loops needs normalize (GCNConv adds them while normalising)")
        return self


# bond order of each BOND_TYPES entry (single, double, triple, aromatic)
BOND_ORDERS = (1.0, 2.0, 3.0, 1.5)


def _conv(config: ChemModelConfig, n_in: int, n_out: int) -> nn.Module:
    if config.architecture == "GCN":
        return GCNConv(
            n_in,
            n_out,
            improved=config.improved,
            add_self_loops=config.self_loops,
            normalize=config.normalize,
        )
    if config.architecture == "GIN":
        return GINConv(nn.Sequential(nn.Linear(n_in, n_out), nn.ReLU(), nn.Linear(n_out, n_out)))
    return GATConv(n_in, n_out, heads=1)


class MoleculeGNN(nn.Module):
    """Graph classifier called as ``model(x, edge_index, batch=batch)`` -> (n_graphs, C) logits.

    ``edge_attr`` (the bond type one-hots the engine passes) is used only by a GCN with
    ``bond_weights``, as the bond order edge weight; otherwise the model sees atoms only.
    """

    def __init__(self, config: ChemModelConfig) -> None:
        super().__init__()
        self.config = config
        dims = [config.in_channels] + [config.hidden] * config.num_layers
        self.convs = nn.ModuleList(_conv(config, a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(config.hidden) for _ in self.convs)
        self.act = nn.LeakyReLU()
        self.dropout = nn.Dropout(config.dropout)
        width = config.hidden * config.num_layers
        self.node_layer: nn.Module = nn.Identity()
        if config.node_hidden is not None:
            self.node_layer = nn.Sequential(nn.Linear(width, config.node_hidden), nn.LeakyReLU())
            width = config.node_hidden
        self.head = nn.Linear(width, config.n_classes)
        self.register_buffer("bond_orders", torch.tensor(BOND_ORDERS), persistent=False)

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
        args = (edge_index,)
        if self.config.architecture == "GCN":
            args += (self._edge_weight(x, edge_index, edge_attr),)
        layers = []
        for conv, norm in zip(self.convs, self.norms):
            x = self.dropout(self.act(norm(conv(x, *args))))
            layers.append(x)
        nodes = self.node_layer(torch.cat(layers, dim=1))
        return self.head(global_add_pool(nodes, batch))

    def _edge_weight(self, x: Tensor, edge_index: Tensor, edge_attr: Tensor | None) -> Tensor:
        """GCN edge weights: bond orders, or ones (explicit, as PyG 2.8 applies ``improved``'s
        self loop weight 2 only when edge weights are given)."""
        if not self.config.bond_weights:
            return x.new_ones(edge_index.shape[1])
        if edge_attr is None:
            raise ExplainError("a GCN with bond_weights needs edge_attr (the bond type one-hots)")
        return edge_attr.to(x.dtype) @ self.bond_orders
