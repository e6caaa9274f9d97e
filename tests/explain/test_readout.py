"""The readout check: what it catches (grand coalition, float32 precision) and what passes."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.utils import scatter

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ, check_linear_readout, receptive_fields

from conftest import path_graph
from models import classifier


class FullGraphTerm(torch.nn.Module):
    """A GCN plus ``size`` when every node keeps its own (positive) features: a non-linearity
    that only the grand coalition sees (masked nodes are zero)."""

    num_layers = 1

    def __init__(self, size: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.inner = classifier("gcn", layers=1).to(dtype)
        self.size = size

    def forward(self, x, edge_index, batch=None):
        batch = torch.zeros(len(x), dtype=torch.long) if batch is None else batch
        present = scatter(x[:, 0], batch, reduce="min") > 0.5
        return self.inner(x, edge_index, batch) + self.size * present[:, None]


def positive_graph(dtype=torch.float64):
    data = path_graph(9, seed=2, features=3, edge_features=None)
    data.x = (1 + data.x.abs()).to(dtype)
    return data


def test_a_term_on_the_whole_graph_only_is_caught():
    data = positive_graph()
    model = FullGraphTerm(0.15, torch.float64)
    assert check_linear_readout(model, data, baseline="zeros") < 1e-12  # random coalitions miss it
    with pytest.raises(
        ExplainError, match="misses by 0.15 on the whole graph \\(efficiency gap\\)"
    ):
        GraphSHAPIQ(model, baseline="zeros").explain(data)
    assert GraphSHAPIQ(FullGraphTerm(0.0, torch.float64), baseline="zeros").explain(data).exact


def test_float32_tolerance_follows_the_precision():
    data = positive_graph(torch.float32)
    assert GraphSHAPIQ(FullGraphTerm(0.0, torch.float32), baseline="zeros").explain(data).exact
    with pytest.raises(
        ExplainError, match="misses by [56].*e-05 .*tolerance 1.*e-05 for torch.float32"
    ):
        GraphSHAPIQ(FullGraphTerm(6e-5, torch.float32), baseline="zeros").explain(data)


def test_float32_wdn_model_on_hanoi_passes(hanoi):
    from torch_geometric.data import Data

    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(5)
    model = ChlorineGNN(num_layers=2, hidden_channels=32)
    gen = torch.Generator().manual_seed(3)
    data = Data(
        x=torch.rand(32, 1, generator=gen),
        edge_index=hanoi.edge_index,
        edge_attr=torch.randn(68, 1, generator=gen),
    )
    assert GraphSHAPIQ(model).explain(data).method == "local"


def test_a_term_on_a_receptive_field_only_is_caught():
    """The node games of ``local`` never see a term the forward adds on the coalitions that
    equal a receptive field; only the fields' own coalitions reveal it."""
    from wdn_explain.model import ChlorineGNN

    data = path_graph(9, seed=4)
    data.x = 1 + data.x.abs()
    fields = [f.tolist() for f in receptive_fields(data.edge_index, 9, 1)[-1] if len(f) == 3]
    patterns = torch.zeros(len(fields), 9, dtype=torch.bool)
    for row, field in enumerate(fields):
        patterns[row, field] = True

    class FieldTerm(ChlorineGNN):
        def forward(self, x, edge_index, edge_attr, batch=None):
            present = (x[:, 0] > 0.5).reshape(-1, 9)  # graphs of 9 nodes, masked ones are 0
            hit = (present[:, None, :] == patterns[None]).all(dim=2).any(dim=1)
            return super().forward(x, edge_index, edge_attr, batch) + 0.01 * hit

    torch.manual_seed(2)
    model = FieldTerm(num_layers=1, hidden_channels=4).double()
    with pytest.raises(
        ExplainError, match="misses by 0.01 on receptive field \\d \\(largest first\\)"
    ):
        GraphSHAPIQ(model, baseline="zeros").explain(data)
