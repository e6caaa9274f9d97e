"""Exactness of GraphSHAP-IQ against an independent oracle: the game is computed in the test
itself (one unbatched model call per coalition) and fed to shapiq's ExactComputer."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.explain import DataModel, GraphSHAPIQ

from conftest import path_graph
from models import classifier, edge_model
from oracle import Oracle, exact_computer, max_error

CASES = [
    ("Moebius", None),
    ("SV", None),
    ("k-SII", 2),
    ("k-SII", 3),
    ("STII", 2),
    ("FSII", 2),
    ("BII", 2),
    ("FBII", 2),
    ("SII", 2),
    ("BV", None),
]
SHORT = [("Moebius", None), ("SV", None), ("k-SII", 2), ("STII", 3), ("FSII", 2), ("BV", None)]


def assert_matches(oracle, ours, cases, n, tol=1e-9):
    for index, order in cases:
        ref = oracle(index, order or (n if index == "Moebius" else 1))
        assert max_error(ref, ours.interaction_values(index, order)) <= tol, (index, order)


def wdn_call(model, data):
    return lambda x: model(x, data.edge_index, data.edge_attr)


@pytest.fixture(scope="module")
def three_outputs():
    """A 3-output ChlorineGNN on the 10-node small graph, and its oracle."""
    from wdn_explain.model import ChlorineGNN

    data = path_graph(10, seed=3, extra=[(0, 4), (5, 9)])
    torch.manual_seed(0)
    model = ChlorineGNN(num_layers=2, hidden_channels=8, out_channels=3).double().eval()
    return model, data, Oracle(wdn_call(model, data), data.x)


@pytest.mark.parametrize("method", ["local", "masked"])
@pytest.mark.parametrize("output_index", [0, 2])
def test_multi_output_wdn_model_matches_oracle(three_outputs, method, output_index):
    model, data, oracle = three_outputs
    ours = GraphSHAPIQ(model, method=method).explain(data, output_index=output_index)
    assert ours.exact and ours.method == method and ours.output_index == output_index
    assert_matches(oracle(output_index), ours, CASES, data.num_nodes)


@pytest.mark.parametrize("method", ["auto", "masked"])
@pytest.mark.parametrize(("kind", "output_index"), [("gcn", 1), ("gin", 2), ("gat", None)])
def test_pyg_classifiers_match_oracle(kind, output_index, method):
    data = path_graph(9, seed=5, features=3, edge_features=None, extra=[(2, 7), (0, 8)])
    model = classifier(kind, layers=2, pooling="add" if kind == "gin" else "mean").eval()
    ours = GraphSHAPIQ(model, method=method).explain(data, output_index=output_index)
    with torch.no_grad():
        predicted = int(model(data.x, data.edge_index).argmax())
    assert ours.method == {"auto": "local", "masked": "masked"}[method]  # standard layers
    assert ours.output_index == (predicted if output_index is None else output_index)
    oracle = exact_computer(lambda x: model(x, data.edge_index), data.x, ours.output_index)
    assert_matches(oracle, ours, SHORT, data.num_nodes)


def graph_with_edges(seed: int) -> Data:
    data = path_graph(9, seed=seed, features=3, edge_features=2, extra=[(1, 6), (3, 8)])
    gen = torch.Generator().manual_seed(seed)
    data.edge_weight = torch.rand(data.edge_index.shape[1], generator=gen, dtype=torch.float64)
    return data


@pytest.mark.parametrize(
    "kind", ["gcn", "graphconv", "sage_mean", "sage_max", "gatv2", "transformer"]
)
def test_layer_types_with_edge_inputs_match_oracle(kind):
    data = graph_with_edges(seed=3)
    if kind not in ("gatv2", "transformer"):
        del data.edge_attr  # the model takes edge_weight only
    model = edge_model(kind).eval()
    ours = GraphSHAPIQ(model).explain(data, output_index=1)

    def call(x):
        return model(
            x, data.edge_index, edge_weight=data.edge_weight, edge_attr=data.get("edge_attr")
        )

    oracle = exact_computer(call, data.x, 1)
    assert_matches(oracle, ours, SHORT, data.num_nodes)


class ExtraInputs(torch.nn.Module):
    """A GCN fed a per-node weight (n, 1), a per-edge weight (E,) and a graph-level vector
    (1, H) added after pooling: all three must be batched and passed unmasked."""

    num_layers = 2

    def __init__(self) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv

        torch.manual_seed(3)
        self.c1, self.c2 = GCNConv(2, 6), GCNConv(6, 6)
        self.head = torch.nn.Linear(6, 2)

    def forward(self, x, edge_index, node_weight, edge_weight, u, batch=None):
        from torch_geometric.nn import global_add_pool

        h = torch.tanh(self.c1(x * node_weight, edge_index, edge_weight))
        h = torch.tanh(self.c2(h, edge_index, edge_weight))
        return self.head(global_add_pool(h, batch) + u)


def test_per_node_per_edge_and_graph_inputs_match_oracle():
    data = path_graph(9, seed=4, features=2, edge_features=None, extra=[(0, 5)])
    gen = torch.Generator().manual_seed(1)
    data.node_weight = torch.rand(9, 1, generator=gen, dtype=torch.float64)
    data.edge_weight = torch.rand(data.edge_index.shape[1], generator=gen, dtype=torch.float64)
    data.u = torch.randn(1, 6, generator=gen, dtype=torch.float64)
    model = ExtraInputs().double().eval()
    ours = GraphSHAPIQ(model).explain(data, output_index=1)
    oracle = exact_computer(
        lambda x: model(x, data.edge_index, data.node_weight, data.edge_weight, data.u), data.x, 1
    )
    assert_matches(oracle, ours, SHORT, data.num_nodes)


class TakesData(torch.nn.Module):
    """A model called as ``model(data)``."""

    num_layers = 2

    def __init__(self) -> None:
        super().__init__()
        self.inner = edge_model("gcn", seed=5)

    def forward(self, data):
        return self.inner(data.x, data.edge_index, data.edge_weight, batch=data.batch)


class PoolsEverything(torch.nn.Module):
    """No ``batch`` argument: pools over all nodes it is given (one graph per call)."""

    num_layers = 2

    def __init__(self) -> None:
        super().__init__()
        self.inner = edge_model("sage_mean", seed=6)

    def forward(self, x, edge_index):
        return self.inner(x, edge_index)


@pytest.mark.parametrize("wrapped", ["data", "no_batch"])
def test_other_calling_conventions_match_oracle(wrapped):
    data = graph_with_edges(seed=7)
    del data.edge_attr
    if wrapped == "data":
        inner = TakesData().double().eval()
        model = DataModel(inner)

        def call(x):
            return inner(Data(x=x, edge_index=data.edge_index, edge_weight=data.edge_weight))
    else:
        del data.edge_weight
        model = PoolsEverything().double().eval()

        def call(x):
            return model(x, data.edge_index)

    ours = GraphSHAPIQ(model).explain(data, output_index=2)
    assert_matches(exact_computer(call, data.x, 2), ours, SHORT, data.num_nodes)


def test_bruteforce_method_equals_masked():
    data = path_graph(8, seed=1, features=3, edge_features=None)
    model = classifier("gcn", layers=1)
    a = GraphSHAPIQ(model, method="masked").explain(data, output_index=2)
    b = GraphSHAPIQ(model, method="bruteforce").explain(data, output_index=2)
    assert a.output_index == b.output_index == 2
    assert b.n_graph_evaluations == 2**8
    assert max_error(a.moebius, b.moebius) <= 1e-9


def test_local_equals_masked_on_a_larger_graph(hanoi):
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
    for index, order in [("SV", None), ("k-SII", 3), ("FSII", 2)]:
        assert (
            max_error(fast.interaction_values(index, order), slow.interaction_values(index, order))
            <= 1e-9
        )


def test_float32_model_is_close(small_graph):
    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(0)
    model = ChlorineGNN(num_layers=2, hidden_channels=8).eval()
    ours = GraphSHAPIQ(model, method="local").explain(small_graph)
    data32 = Data(
        x=small_graph.x.float(),
        edge_index=small_graph.edge_index,
        edge_attr=small_graph.edge_attr.float(),
    )
    oracle = exact_computer(wdn_call(model, data32), data32.x, 0)
    assert max_error(oracle("SV", 1), ours.interaction_values("SV")) <= 1e-5


def test_model_without_a_readable_signature_uses_the_pyg_convention(
    monkeypatch, wdn_model, small_graph
):
    from wdn_explain.explain import inputs

    expected = GraphSHAPIQ(wdn_model).explain(small_graph).moebius

    def unreadable(_):
        raise ValueError("no signature found for builtin")

    monkeypatch.setattr(inputs.inspect, "signature", unreadable)
    assert max_error(GraphSHAPIQ(wdn_model).explain(small_graph).moebius, expected) == 0.0


def test_one_explainer_on_graphs_of_different_structure(wdn_model):
    """The state graph is cached per structure: a second structure of the same size must not
    reuse the first one's wiring."""
    explainer = GraphSHAPIQ(wdn_model)
    a = path_graph(9, seed=1, extra=[(0, 4)])
    b = path_graph(9, seed=1, extra=[(2, 8)])
    explainer.explain(a)
    again = explainer.explain(b).moebius
    assert max_error(again, GraphSHAPIQ(wdn_model).explain(b).moebius) == 0.0
