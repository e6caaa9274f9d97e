"""Axioms on games built to have them, MI recovery, and the published |I| counts."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.explain import GraphSHAPIQ, complexity, receptive_fields
from wdn_explain.explain.hypercube import subset_sum

from conftest import path_graph
from oracle import masked_game


def plain_family(edge_index, n_nodes: int, layers: int) -> set[frozenset[int]]:
    """I by plain enumeration: every subset of every L-hop in-neighbourhood (networkx)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n_nodes))
    graph.add_edges_from(edge_index.T.tolist())
    reverse = graph.reverse()  # fields follow edges backwards: who reaches node i
    family = set()
    for i in range(n_nodes):
        field = sorted(nx.single_source_shortest_path_length(reverse, i, cutoff=layers))
        for size in range(len(field) + 1):
            family.update(map(frozenset, itertools.combinations(field, size)))
    return family


@pytest.mark.parametrize(("layers", "published"), [(1, 175), (2, 3023)])
def test_hanoi_interaction_counts(hanoi, layers, published):
    c = complexity(hanoi.edge_index, hanoi.n_nodes, layers)
    assert c.exact and c.n_interactions == published == len(
        plain_family(hanoi.edge_index, 32, layers)
    )
    assert c.n_coalitions == 2**32


@pytest.mark.parametrize("seed", range(4))
def test_counts_and_fields_on_random_graphs_by_enumeration(seed):
    graph = nx.gnm_random_graph(12, 16, seed=seed, directed=True)
    edge_index = np.array(list(graph.edges()), dtype=np.int64).T.reshape(2, -1)
    for layers in (1, 2, 3):
        family = plain_family(edge_index, 12, layers)
        assert complexity(edge_index, 12, layers).n_interactions == len(family)
        fields = receptive_fields(edge_index, 12, layers)[-1]
        assert {frozenset(s) for f in fields for s in _subsets(f)} == family


def _subsets(field):
    return itertools.chain.from_iterable(
        itertools.combinations(field.tolist(), k) for k in range(len(field) + 1)
    )


@pytest.mark.slow
def test_hanoi_three_layer_count_by_enumeration(hanoi):
    assert len(plain_family(hanoi.edge_index, 32, 3)) == 101115


@pytest.mark.slow
def test_hanoi_four_layer_count(hanoi):
    assert complexity(hanoi.edge_index, hanoi.n_nodes, 4).n_interactions == 2813462


def test_hanoi_fields_of_ten_nodes_against_moebius_converter(hanoi):
    """L = 2 on Hanoi (fields up to 10 nodes): MIs recover the test's own unbatched model
    calls; every index equals shapiq's MoebiusConverter of those MIs (non-empty sets)."""
    from shapiq.game_theory.moebius_converter import MoebiusConverter

    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(1)
    model = ChlorineGNN(num_layers=2, hidden_channels=16, out_channels=2).double().eval()
    gen = torch.Generator().manual_seed(2)
    data = Data(
        x=torch.rand(32, 1, generator=gen, dtype=torch.float64),
        edge_index=hanoi.edge_index,
        edge_attr=torch.randn(68, 1, generator=gen, dtype=torch.float64),
    )
    e = GraphSHAPIQ(model).explain(data, output_index=1)
    fields = receptive_fields(hanoi.edge_index, 32, 2)[-1]
    assert max(len(f) for f in fields) == 10 and e.n_interactions == 3023
    game = masked_game(lambda x: model(x, data.edge_index, data.edge_attr), data.x, 1)
    rng = np.random.default_rng(0)
    coalitions = [rng.random(32) < p for p in np.linspace(0.1, 0.9, 12)]
    coalitions += [np.isin(np.arange(32), f) for f in fields[:8]]
    moebius = e.moebius.dict_values
    for row in coalitions:
        inside = set(np.flatnonzero(row).tolist())
        recovered = sum(v for k, v in moebius.items() if set(k) <= inside)
        assert recovered == pytest.approx(game(row[None])[0], abs=1e-10)
    converter = MoebiusConverter(e.moebius)
    for index, order in [
        ("SV", 1),
        ("k-SII", 2),
        ("k-SII", 3),
        ("STII", 2),
        ("FSII", 2),
        ("BV", 1),
    ]:
        ours = e.interaction_values(index, order)
        ref = converter(index, order)
        keys = (set(ours.interaction_lookup) | set(ref.interaction_lookup)) - {()}
        assert max(abs(ours[k] - ref[k]) for k in keys) < 1e-12, index


def test_bound_when_fields_are_large(hanoi):
    c = complexity(hanoi.edge_index, hanoi.n_nodes, 4, max_exact_field=10)
    assert not c.exact and c.n_interactions >= 2813462


def test_bound_when_the_count_would_not_fit_in_memory(hanoi):
    """The memory guard bounds instead of counting: Theorem 3.7 over the maximal fields,
    here computed by plain enumeration with networkx."""
    graph = nx.DiGraph(hanoi.edge_index.T.tolist()).reverse()
    fields = {
        frozenset(nx.single_source_shortest_path_length(graph, i, cutoff=2))
        for i in range(hanoi.n_nodes)
    }
    maximal = [f for f in fields if not any(f < g for g in fields)]
    c = complexity(hanoi.edge_index, hanoi.n_nodes, 2, max_count_bytes=1000)
    assert not c.exact and c.n_interactions == sum(2 ** len(f) for f in maximal)
    assert complexity(hanoi.edge_index, hanoi.n_nodes, 2).n_interactions == 3023


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
