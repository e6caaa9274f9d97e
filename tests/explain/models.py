"""Small seeded graph classifiers built from torch_geometric layers (test helpers)."""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import (
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GraphConv,
    SAGEConv,
    TransformerConv,
    global_add_pool,
    global_mean_pool,
)


class Classifier(nn.Module):
    """``layers`` convolutions of one kind, sum or mean pooling, a linear head."""

    def __init__(
        self,
        kind: str,
        in_channels: int,
        hidden: int,
        classes: int,
        layers: int,
        pooling: str = "mean",
        deep_head: bool = False,
    ) -> None:
        super().__init__()
        self.num_layers = layers
        make = {
            "gcn": lambda i, o: GCNConv(i, o),
            "gin": lambda i, o: GINConv(nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o))),
            "gat": lambda i, o: GATConv(i, o, heads=2, concat=False),
        }[kind]
        dims = [in_channels] + [hidden] * layers
        self.convs = nn.ModuleList(make(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.pool = global_add_pool if pooling == "add" else global_mean_pool
        self.head = (
            nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, classes))
            if deep_head
            else nn.Linear(hidden, classes)
        )

    def forward(self, x, edge_index, batch=None):
        for conv in self.convs:
            x = torch.relu(conv(x, edge_index))
        return self.head(self.pool(x, batch))


def classifier(kind: str, *, layers: int = 2, seed: int = 0, **kwargs) -> Classifier:
    torch.manual_seed(seed)
    return Classifier(
        kind,
        kwargs.pop("in_channels", 3),
        kwargs.pop("hidden", 8),
        kwargs.pop("classes", 3),
        layers,
        **kwargs,
    ).double()


class EdgeModel(nn.Module):
    """Two layers of one PyG convolution that reads edge weights or edge features.

    ``forward(x, edge_index, edge_weight=None, edge_attr=None, batch=None)``; kinds:
    ``gcn`` and ``graphconv`` (edge_weight), ``sage_mean``, ``sage_max``, ``gatv2`` and
    ``transformer`` (edge_attr of ``edge_dim`` columns).
    """

    def __init__(self, kind: str, in_channels: int = 3, hidden: int = 8, classes: int = 3):
        super().__init__()
        self.num_layers = 2
        make = {
            "gcn": lambda i, o: GCNConv(i, o),
            "graphconv": lambda i, o: GraphConv(i, o),
            "sage_mean": lambda i, o: SAGEConv(i, o, aggr="mean"),
            "sage_max": lambda i, o: SAGEConv(i, o, aggr="max"),
            "gatv2": lambda i, o: GATv2Conv(i, o, heads=2, concat=False, edge_dim=2),
            "transformer": lambda i, o: TransformerConv(i, o, heads=2, concat=False, edge_dim=2),
        }[kind]
        self.kind = kind
        self.convs = nn.ModuleList([make(in_channels, hidden), make(hidden, hidden)])
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edge_index, edge_weight=None, edge_attr=None, batch=None):
        for conv in self.convs:
            if self.kind in ("gcn", "graphconv"):
                x = conv(x, edge_index, edge_weight)
            elif self.kind in ("gatv2", "transformer"):
                x = conv(x, edge_index, edge_attr)
            else:
                x = conv(x, edge_index)
            x = torch.tanh(x)
        return self.head(global_mean_pool(x, batch))


def edge_model(kind: str, *, seed: int = 0) -> EdgeModel:
    torch.manual_seed(seed)
    return EdgeModel(kind).double()


class NodeChlorine(nn.Module):
    """A node-level ChlorineGNN: the same layers, its head on every node (``pooling = None``,
    the LocalMessagePassing mark of a node-level model); output (n, C)."""

    pooling = None

    def __init__(self, **config: int) -> None:
        from wdn_explain.model import ChlorineGNN

        super().__init__()
        self.inner = ChlorineGNN(**config)
        self.num_layers = self.inner.num_layers
        self.encode = self.inner.encode
        self.propagate_layer = self.inner.propagate_layer
        self.readout_parameters = self.inner.readout_parameters

    def forward(self, x, edge_index, edge_attr, batch=None):
        return self.inner.readout(self.inner.node_embeddings(x, edge_index, edge_attr))


def node_chlorine(*, layers: int = 2, outputs: int = 2, seed: int = 0) -> NodeChlorine:
    torch.manual_seed(seed)
    return NodeChlorine(num_layers=layers, hidden_channels=8, out_channels=outputs).double()


class NodeGCN(nn.Module):
    """A node classifier: two GCN layers reading edge weights, a per-edge scale of the
    messages (an extra per-edge input), a graph-level vector ``u`` added to every node's
    state (one row per graph, indexed by ``batch``) and a linear head per node."""

    num_layers = 2

    def __init__(self, in_channels: int = 3, hidden: int = 6, classes: int = 2) -> None:
        super().__init__()
        self.c1, self.c2 = GCNConv(in_channels, hidden), GCNConv(hidden, hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edge_index, edge_weight, u, batch=None):
        h = torch.tanh(self.c1(x, edge_index, edge_weight))
        h = torch.tanh(self.c2(h, edge_index, edge_weight))
        return self.head(h + (u if batch is None else u[batch]))


def node_gcn(*, seed: int = 0) -> NodeGCN:
    torch.manual_seed(seed)
    return NodeGCN().double()
