"""Standard PyG layers on the state graph (explain/standard.py): every layer type against
the masked path and against the brute-force oracle computed in the test, and the cases
that must stay on masked graphs or be refused."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import (
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GINEConv,
    GraphConv,
    SAGEConv,
    global_add_pool,
    global_mean_pool,
)

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ

from conftest import path_graph
from models import classifier
from oracle import exact_computer, max_error

SHORT = [("Moebius", None), ("SV", None), ("k-SII", 2), ("STII", 3), ("FSII", 2)]


def mlp(i: int, o: int) -> nn.Module:
    return nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o))


LAYERS = {  # (layer maker, what forward passes besides x and edge_index)
    "gcn_weighted": (lambda i, o: GCNConv(i, o), "edge_weight"),
    "gcn_improved": (lambda i, o: GCNConv(i, o, improved=True), "edge_weight"),
    "gin": (lambda i, o: GINConv(mlp(i, o), train_eps=True), None),
    "gine": (lambda i, o: GINEConv(mlp(i, o), edge_dim=2), "edge_attr"),
    "gat": (lambda i, o: GATConv(i, o, heads=2, concat=False), None),
    "gat_edges": (lambda i, o: GATConv(i, o, heads=2, edge_dim=2, concat=False), "edge_attr"),
    "gatv2": (lambda i, o: GATv2Conv(i, o, heads=2, edge_dim=2, concat=False), "edge_attr"),
    "sage": (lambda i, o: SAGEConv(i, o), None),
    "sage_max": (lambda i, o: SAGEConv(i, o, aggr="max"), None),
    "graphconv": (lambda i, o: GraphConv(i, o), "edge_weight"),
}


class Standard(nn.Module):
    """Two layers of one kind with ReLU, eval-mode batch norm and dropout between them,
    mean or add pooling and a linear head."""

    num_layers = 2

    def __init__(self, kind: str, pooling: str = "mean", in_channels: int = 3, hidden: int = 6):
        super().__init__()
        make, self.extra = LAYERS[kind]
        self.convs = nn.ModuleList([make(in_channels, hidden), make(hidden, hidden)])
        self.norm = nn.BatchNorm1d(hidden)
        self.dropout = nn.Dropout(0.3)
        self.pool = global_add_pool if pooling == "add" else global_mean_pool
        self.head = nn.Linear(hidden, 2)

    def forward(self, x, edge_index, edge_weight=None, edge_attr=None, batch=None):
        extra = {"edge_weight": edge_weight, "edge_attr": edge_attr}.get(self.extra)
        for conv in self.convs:
            x = conv(x, edge_index) if extra is None else conv(x, edge_index, extra)
            x = self.dropout(self.norm(torch.relu(x)))
        return self.head(self.pool(x, batch))


def standard(kind: str, pooling: str = "mean", seed: int = 0) -> Standard:
    torch.manual_seed(seed)
    model = Standard(kind, pooling).double()
    model.norm.running_mean.uniform_(-1, 1)
    model.norm.running_var.uniform_(0.5, 2.0)
    return model.eval()


def graph(seed: int, extra: str | None) -> Data:
    """Nine nodes: a path with chords; edge weights or 2 edge features when asked."""
    data = path_graph(9, seed=seed, features=3, edge_features=2, extra=[(1, 6), (3, 8)])
    gen = torch.Generator().manual_seed(seed)
    if extra == "edge_weight":
        data.edge_weight = torch.rand(data.edge_index.shape[1], generator=gen, dtype=torch.float64)
    if extra != "edge_attr":
        del data.edge_attr
    return data


def oracle_call(model: Standard, data: Data):
    kwargs = {k: data[k] for k in ("edge_weight", "edge_attr") if k in data}
    return lambda x: model(x, data.edge_index, **kwargs)


@pytest.mark.parametrize("kind", list(LAYERS))
def test_each_layer_on_the_state_graph_matches_masked_and_the_oracle(kind):
    model = standard(kind, pooling="add" if kind in ("gin", "sage") else "mean")
    data = graph(seed=3, extra=model.extra)
    ours = GraphSHAPIQ(model).explain(data, output_index=1)
    assert ours.method == "local" and ours.n_graph_evaluations == 0 and ours.n_node_states > 0
    masked = GraphSHAPIQ(model, method="masked").explain(data, output_index=1)
    oracle = exact_computer(oracle_call(model, data), data.x, 1)
    for index, order in SHORT:
        size = order or (9 if index == "Moebius" else 1)
        assert max_error(oracle(index, size), ours.interaction_values(index, order)) <= 1e-9
        mine, theirs = (
            ours.interaction_values(index, order),
            masked.interaction_values(index, order),
        )
        assert max_error(mine, theirs) <= 1e-9, (index, order)


@pytest.mark.parametrize("baseline", ["zeros", "vector"])
def test_baselines_on_the_state_graph_match_the_oracle(baseline):
    model = standard("gcn_weighted")
    data = graph(seed=5, extra="edge_weight")
    vector = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    value = torch.zeros(3, dtype=torch.float64) if baseline == "zeros" else vector
    ours = GraphSHAPIQ(model, baseline="zeros" if baseline == "zeros" else vector).explain(data)
    assert ours.method == "local"
    oracle = exact_computer(oracle_call(model, data), data.x, ours.output_index, value)
    for index, order in SHORT:
        size = order or (9 if index == "Moebius" else 1)
        assert max_error(oracle(index, size), ours.interaction_values(index, order)) <= 1e-9


def test_gcn_edge_weights_matter_and_are_followed():
    """The same GCN with other edge weights gives other values: each one its oracle's."""
    model = standard("gcn_weighted")
    data = graph(seed=5, extra="edge_weight")
    ones = data.clone()
    ones.edge_weight = torch.ones_like(data.edge_weight)
    sv = {}
    for name, d in (("weighted", data), ("ones", ones)):
        ours = GraphSHAPIQ(model).explain(d, output_index=0)
        oracle = exact_computer(oracle_call(model, d), d.x, 0)
        assert max_error(oracle("SV", 1), ours.interaction_values("SV")) <= 1e-9
        sv[name] = ours.node_values("SV")
    assert np.abs(sv["weighted"] - sv["ones"]).max() > 1e-3


def test_chemistry_models_take_the_state_graph():
    from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN

    data = path_graph(8, seed=2, features=4, edge_features=None, extra=[(0, 5), (2, 7)])
    bonds = torch.nn.functional.one_hot(torch.arange(data.edge_index.shape[1]) % 4, 4)
    for architecture, options in (("GCN", {"bond_weights": True}), ("GIN", {}), ("GAT", {})):
        torch.manual_seed(1)
        config = ChemModelConfig(
            architecture=architecture, in_channels=4, hidden=6, num_layers=3, **options
        )
        model = MoleculeGNN(config).double().eval()
        for norm in model.norms:  # a trained-looking batch norm
            norm.running_mean.uniform_(-1, 1)
        d = Data(x=data.x, edge_index=data.edge_index, edge_attr=bonds.double())
        ours = GraphSHAPIQ(model).explain(d)
        assert ours.method == "local", architecture

        def call(x, model=model, d=d):
            return model(x, d.edge_index, d.edge_attr)

        oracle = exact_computer(call, d.x, ours.output_index)
        assert max_error(oracle("k-SII", 2), ours.interaction_values("k-SII", 2)) <= 1e-9


def test_what_cannot_be_proven_stays_masked_or_is_refused(caplog):
    data = path_graph(9, seed=2, features=3, edge_features=None)
    deep = classifier("gcn", deep_head=True).eval()  # a non-linear head: rows do not add up
    with caplog.at_level(logging.INFO, logger="wdn_explain.explain.graphshapiq"):
        with pytest.raises(ExplainError, match="not a linear readout"):
            GraphSHAPIQ(deep).explain(data)  # masked, then the readout check refuses it
    assert "masked graphs for Classifier: rows of the state graph miss" in caplog.text
    with pytest.raises(ExplainError, match="method 'local' cannot run Classifier on the state"):
        GraphSHAPIQ(deep, method="local").explain(data)
    looped = Data(x=data.x, edge_index=torch.cat([data.edge_index, torch.tensor([[4], [4]])], 1))
    gcn = classifier("gcn").eval()
    assert GraphSHAPIQ(gcn).explain(looped).method == "masked"
    with pytest.raises(ExplainError, match="the graph has self loops"):
        GraphSHAPIQ(gcn, method="local").explain(looped)
    cached = classifier("gcn").eval()
    cached.convs[0].cached = True
    with pytest.raises(ExplainError, match="GCNConv\\(cached=True\\)"):
        GraphSHAPIQ(cached, method="local")


def test_the_callers_model_is_left_as_it_was():
    """No hook stays on the layers and train mode is restored."""
    model = standard("gat")
    model.train()
    data = graph(seed=1, extra=None)
    GraphSHAPIQ(model).explain(data)
    assert model.training
    assert all(not conv._forward_pre_hooks for conv in model.convs)
