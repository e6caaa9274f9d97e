"""Axioms on games built to have them, MI recovery, and the published |I| counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.explain import GraphSHAPIQ, complexity, receptive_fields
from wdn_explain.explain.hypercube import subset_sum

from conftest import path_graph


@pytest.mark.parametrize(("layers", "count"), [(1, 175), (2, 3023), (3, 101115)])
def test_hanoi_interaction_counts(hanoi, layers, count):
    c = complexity(hanoi.edge_index, hanoi.n_nodes, layers)
    assert c.exact and c.n_interactions == count
    assert c.n_coalitions == 2**32


@pytest.mark.slow
def test_hanoi_four_layer_count(hanoi):
    assert complexity(hanoi.edge_index, hanoi.n_nodes, 4).n_interactions == 2813462


def test_bound_when_fields_are_large(hanoi):
    c = complexity(hanoi.edge_index, hanoi.n_nodes, 4, max_exact_field=10)
    assert not c.exact and c.n_interactions >= 2813462


def test_receptive_fields_follow_edge_direction():
    ei = torch.tensor([[0, 1], [1, 2]])  # 0 -> 1 -> 2
    f = receptive_fields(ei, 3, 2)
    assert [a.tolist() for a in f[1]] == [[0], [0, 1], [1, 2]]
    assert [a.tolist() for a in f[2]] == [[0], [0, 1], [0, 1, 2]]


@pytest.fixture
def explained(wdn_model, small_graph):
    return GraphSHAPIQ(wdn_model).explain(small_graph)


def test_efficiency(explained):
    gap = explained.prediction - explained.empty_prediction
    assert explained.efficiency_gap() == pytest.approx(0, abs=1e-9)
    for index, order in [("SV", 1), ("k-SII", 2), ("STII", 2), ("FSII", 3)]:
        iv = explained.interaction_values(index, order)
        total = sum(v for k, v in iv.dict_values.items() if len(k) > 0)
        assert total == pytest.approx(gap, abs=1e-9), index


def test_moebius_recovery_on_every_coalition(explained, wdn_model, small_graph):
    game = GraphSHAPIQ(wdn_model).game(small_graph)
    n = small_graph.num_nodes
    masks = np.arange(2**n)
    coalitions = ((masks[:, None] >> np.arange(n)) & 1).astype(bool)
    table = np.zeros((1, 2**n))
    for key, value in explained.moebius.dict_values.items():
        table[0, sum(1 << i for i in key)] = value
    np.testing.assert_allclose(subset_sum(table)[0], game.evaluate(coalitions), atol=1e-9)


def test_dummy_and_symmetry():
    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(4)
    model = ChlorineGNN(num_layers=1, hidden_channels=6).double()
    # a star: centre 0, leaves 1..4 with identical features and flows -> symmetric leaves
    src = [0, 0, 0, 0, 1, 2, 3, 4]
    dst = [1, 2, 3, 4, 0, 0, 0, 0]
    x = torch.tensor([[0.7], [0.2], [0.2], [0.2], [0.2]], dtype=torch.float64)
    data = Data(
        x=x, edge_index=torch.tensor([src, dst]), edge_attr=torch.ones(8, 1, dtype=torch.float64)
    )
    sv = GraphSHAPIQ(model).explain(data).interaction_values("SV", 1)
    assert sv[(1,)] == pytest.approx(sv[(2,)], abs=1e-12) == pytest.approx(sv[(4,)], abs=1e-12)
    # with the mean baseline equal to every node's feature, no node changes anything (dummy)
    flat = Data(
        x=torch.full((5, 1), 0.3, dtype=torch.float64),
        edge_index=data.edge_index,
        edge_attr=data.edge_attr,
    )
    flat_sv = GraphSHAPIQ(model).explain(flat).interaction_values("k-SII", 2)
    assert max(abs(v) for k, v in flat_sv.dict_values.items() if k) < 1e-12


def test_linearity_in_the_readout(wdn_model, small_graph):
    """Scaling the head scales every non-empty MI."""
    a = GraphSHAPIQ(wdn_model).explain(small_graph).moebius
    with torch.no_grad():
        wdn_model.readout.weight.mul_(3.0)
    b = GraphSHAPIQ(wdn_model).explain(small_graph).moebius
    for key, value in a.dict_values.items():
        if key:
            assert b[key] == pytest.approx(3 * value, abs=1e-12)


def test_explanation_round_trip(tmp_path, explained):
    from wdn_explain.explain import Explanation

    path = explained.save(tmp_path / "e.npz")
    back = Explanation.load(path)
    assert back.prediction == explained.prediction and back.method == explained.method
    a, b = explained.interaction_values("FSII", 2), back.interaction_values("FSII", 2)
    assert a.dict_values == b.dict_values


def test_variable_graphs_have_no_mi_outside_fields(wdn_model):
    data = path_graph(12, seed=8)
    e = GraphSHAPIQ(wdn_model).explain(data)
    fields = [set(f.tolist()) for f in receptive_fields(data.edge_index, 12, 2)[-1]]
    for key in e.moebius.dict_values:
        assert any(set(key) <= f for f in fields)
