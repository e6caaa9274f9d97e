"""Every public option of the engine against the independent oracle: each baseline kind, each
output of a 2-output model, edge weights and extra inputs, graph- and node-level targets.
The oracle is computed in the test itself (one unbatched model call per coalition, fed to
shapiq's ExactComputer); every case checks SV, k-SII, STII, FSII, Möbius and BV."""

from __future__ import annotations

import functools

import pytest
import torch

from wdn_explain.explain import GraphSHAPIQ

from conftest import path_graph
from models import classifier, node_chlorine, node_gcn
from oracle import Oracle, max_error

INDICES = [("Moebius", None), ("SV", None), ("k-SII", 2), ("STII", 2), ("FSII", 2), ("BV", None)]
N = 8
VECTOR = torch.tensor([0.7], dtype=torch.float64)


def assert_matches(computer, explanation, n=N):
    for index, order in INDICES:
        expected = computer(index, order or (n if index == "Moebius" else 1))
        assert max_error(expected, explanation.interaction_values(index, order)) <= 1e-9, index


@functools.cache
def chlorine_case(level: str, baseline: str):
    """A 2-output ChlorineGNN (graph-level) or its node-level twin on an 8-node graph, and
    the oracle of all its outputs masked with ``baseline``."""
    from wdn_explain.model import ChlorineGNN

    data = path_graph(N, seed=2, extra=[(1, 5)])
    torch.manual_seed(4)
    if level == "graph":
        model = ChlorineGNN(num_layers=2, hidden_channels=8, out_channels=2).double().eval()
    else:
        model = node_chlorine(layers=2, outputs=2, seed=4).eval()
    vector = {"mean": None, "zeros": torch.zeros(1, dtype=torch.float64), "vector": VECTOR}
    oracle = Oracle(lambda x: model(x, data.edge_index, data.edge_attr), data.x, vector[baseline])
    option = VECTOR if baseline == "vector" else baseline
    return model, data, functools.cache(oracle), option


@pytest.mark.parametrize("baseline", ["mean", "zeros", "vector"])
@pytest.mark.parametrize("method", ["local", "masked"])
@pytest.mark.parametrize("level", ["graph", "node"])
def test_each_baseline_kind_matches_the_oracle(level, method, baseline):
    model, data, oracle, option = chlorine_case(level, baseline)
    explainer = GraphSHAPIQ(model, method=method, baseline=option)
    if level == "graph":
        e = explainer.explain(data, output_index=1)
        assert_matches(oracle(1), e)
    else:
        e = explainer.explain(data, node=5, output_index=1)
        assert_matches(oracle(5 * 2 + 1), e)
    expected = {"mean": data.x.mean(dim=0), "zeros": torch.zeros(1), "vector": VECTOR}
    assert e.baseline.tolist() == pytest.approx(expected[baseline].tolist(), abs=1e-12)


@pytest.mark.parametrize("output_index", [0, 1])
@pytest.mark.parametrize("level", ["graph", "node"])
def test_each_output_of_a_two_output_model_matches_the_oracle(level, output_index):
    model, data, oracle, _ = chlorine_case(level, "mean")
    if level == "graph":
        e = GraphSHAPIQ(model).explain(data, output_index=output_index)
        assert e.output_index == output_index
        assert_matches(oracle(output_index), e)
        return
    explanations = GraphSHAPIQ(model).explain_nodes(data, [0, 3, 7], output_index=output_index)
    for e in explanations:
        assert e.output_index == output_index
        assert_matches(oracle(e.node * 2 + output_index), e)


def test_graph_classifier_outputs_by_masked_graphs():
    """A 2-class GCN (no LocalMessagePassing): classes 0 and 1 from the masked method."""
    data = path_graph(N, seed=6, features=3, edge_features=None, extra=[(0, 6)])
    model = classifier("gcn", layers=2, classes=2).eval()
    oracle = Oracle(lambda x: model(x, data.edge_index), data.x)
    for output_index in (0, 1):
        e = GraphSHAPIQ(model, method="masked").explain(data, output_index=output_index)
        assert e.method == "masked"
        assert_matches(oracle(output_index), e)


@pytest.fixture(scope="module")
def weighted():
    """A node-level GCN reading edge weights and a graph-level vector u, and its oracle."""
    data = path_graph(N, seed=7, features=3, edge_features=None, extra=[(2, 6)])
    gen = torch.Generator().manual_seed(8)
    data.edge_weight = torch.rand(data.edge_index.shape[1], generator=gen, dtype=torch.float64)
    data.u = torch.randn(1, 6, generator=gen, dtype=torch.float64)
    model = node_gcn(seed=2).eval()
    oracle = Oracle(lambda x: model(x, data.edge_index, data.edge_weight, data.u), data.x)
    return model, data, functools.cache(oracle)


@pytest.mark.parametrize("output_index", [0, 1])
def test_node_targets_with_edge_weights_and_extra_inputs(weighted, output_index):
    model, data, oracle = weighted
    explanations = GraphSHAPIQ(model).explain_nodes(data, [1, 4, 6], output_index=output_index)
    for e in explanations:
        assert e.method == "masked" and e.node in (1, 4, 6)
        assert_matches(oracle(e.node * 2 + output_index), e)


def test_node_targets_by_brute_force_and_lambda_equal_the_oracle(weighted):
    model, data, oracle = weighted
    brute = GraphSHAPIQ(model, method="bruteforce").explain(data, node=4, output_index=1)
    assert_matches(oracle(4 * 2 + 1), brute)
    full = GraphSHAPIQ(model).explain(data, node=4, output_index=1, budget=N)
    assert full.exact and full.method == "approximate"
    assert_matches(oracle(4 * 2 + 1), full)
