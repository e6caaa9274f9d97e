"""Exactness of GraphSHAP-IQ against brute force over all 2^n coalitions."""

from __future__ import annotations

import pytest
import torch
from shapiq import ExactComputer

from wdn_explain.explain import GraphSHAPIQ

from conftest import path_graph
from models import classifier

CASES = [
    ("Moebius", None),
    ("SV", 1),
    ("k-SII", 2),
    ("k-SII", 3),
    ("STII", 2),
    ("FSII", 2),
    ("BII", 2),
    ("FBII", 2),
    ("SII", 2),
    ("BV", 1),
]


def max_error(a, b) -> float:
    keys = set(a.interaction_lookup) | set(b.interaction_lookup)
    return max(abs(a[k] - b[k]) for k in keys)


def oracle_and_ours(model, data, method, layers=None, **kwargs):
    explainer = GraphSHAPIQ(model, layers, method=method, **kwargs)
    ours = explainer.explain(data)
    game = explainer.game(data, ours.output_index)
    return ExactComputer(n_players=data.num_nodes, game=game), ours


@pytest.mark.parametrize("method", ["local", "masked"])
def test_wdn_model_matches_brute_force(wdn_model, small_graph, method):
    exact, ours = oracle_and_ours(wdn_model, small_graph, method)
    assert ours.exact
    for index, order in CASES:
        ref = exact(index, order or small_graph.num_nodes)
        assert max_error(ref, ours.interaction_values(index, order)) <= 1e-6, (index, order)


@pytest.mark.parametrize("kind", ["gcn", "gin", "gat"])
def test_pyg_classifiers_match_brute_force(kind):
    data = path_graph(11, seed=5, features=3, edge_features=None, extra=[(2, 7), (0, 10)])
    model = classifier(kind, layers=2, pooling="add" if kind == "gin" else "mean")
    exact, ours = oracle_and_ours(model, data, "auto")
    assert ours.method == "masked"
    assert ours.output_index == int(model(data.x, data.edge_index).argmax())
    for index, order in [
        ("Moebius", None),
        ("SV", 1),
        ("k-SII", 2),
        ("STII", 3),
        ("FSII", 2),
        ("BV", 1),
    ]:
        ref = exact(index, order or data.num_nodes)
        assert max_error(ref, ours.interaction_values(index, order)) <= 1e-6, (kind, index)


def test_other_class_and_bruteforce_method(small_graph):
    data = path_graph(8, seed=1, features=3, edge_features=None)
    model = classifier("gcn", layers=1)
    a = GraphSHAPIQ(model, method="masked").explain(data, output_index=2)
    b = GraphSHAPIQ(model, method="bruteforce").explain(data, output_index=2)
    assert a.output_index == b.output_index == 2
    assert b.n_graph_evaluations == 2**8
    assert max_error(a.moebius, b.moebius) <= 1e-9


def test_local_equals_masked_on_a_larger_graph(hanoi):
    from torch_geometric.data import Data

    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(1)
    model = ChlorineGNN(num_layers=2, hidden_channels=16).double()
    gen = torch.Generator().manual_seed(2)
    data = Data(
        x=torch.rand(32, 1, generator=gen, dtype=torch.float64),
        edge_index=hanoi.edge_index,
        edge_attr=torch.randn(68, 1, generator=gen, dtype=torch.float64),
    )
    fast = GraphSHAPIQ(model, method="local").explain(data)
    slow = GraphSHAPIQ(model, method="masked").explain(data)
    assert fast.n_interactions == slow.n_interactions == slow.n_graph_evaluations == 3023
    assert fast.n_graph_evaluations == 0 and fast.n_node_states > 0
    assert max_error(fast.moebius, slow.moebius) <= 1e-9
    for index, order in [("SV", 1), ("k-SII", 3), ("FSII", 2)]:
        assert (
            max_error(fast.interaction_values(index, order), slow.interaction_values(index, order))
            <= 1e-9
        )


def test_float32_model_is_close(small_graph):
    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(0)
    model = ChlorineGNN(num_layers=2, hidden_channels=8)
    exact, ours = oracle_and_ours(model, small_graph, "local")
    assert max_error(exact("SV", 1), ours.interaction_values("SV", 1)) <= 1e-5
