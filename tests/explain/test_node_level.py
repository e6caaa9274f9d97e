"""Node-level explanations against an independent oracle: the output at a target node is
computed in the test itself (one unbatched model call per coalition over all n nodes) and
fed to shapiq's ExactComputer; receptive fields come from networkx."""

from __future__ import annotations

import functools

import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.utils import to_networkx

from wdn_explain.explain import METHOD_TABLE, METHODS, Explanation, GraphSHAPIQ
from wdn_explain.explain import graphshapiq as engine

from conftest import path_graph
from models import node_chlorine
from oracle import Oracle, max_error

INDICES = [
    ("Moebius", None),
    ("SV", None),
    ("k-SII", 2),
    ("STII", 2),
    ("FSII", 2),
    ("BV", None),
    ("SII", 2),
    ("BII", 2),
    ("FBII", 2),
]
N = 10
OUTPUTS = 2


@pytest.fixture(scope="module")
def chlorine():
    """A 2-layer node-level ChlorineGNN with 2 outputs per node on a 10-node graph, and the
    oracle table of every node's outputs over all 2^10 coalitions."""
    data = path_graph(N, seed=3, extra=[(0, 4), (5, 9)])
    model = node_chlorine(layers=2, outputs=OUTPUTS, seed=1).eval()
    oracle = Oracle(lambda x: model(x, data.edge_index, data.edge_attr), data.x)
    oracle.computer = functools.cache(oracle)  # one ExactComputer (and its results) per output
    return model, data, oracle


def field(data, node: int, hops: int) -> set[int]:
    """Nodes within ``hops`` of ``node`` (networkx, both directions)."""
    graph = to_networkx(data, to_undirected=True)
    return set(nx.single_source_shortest_path_length(graph, node, cutoff=hops))


def assert_matches_oracle(oracle, explanation: Explanation, indices=INDICES, tol=1e-9):
    computer = oracle.computer(explanation.node * OUTPUTS + explanation.output_index)
    for index, order in indices:
        expected = computer(index, order or (N if index == "Moebius" else 1))
        assert max_error(expected, explanation.interaction_values(index, order)) <= tol, index


@pytest.mark.parametrize("method", ["local", "masked", "bruteforce"])
def test_one_target_node_matches_the_oracle(chlorine, method):
    model, data, oracle = chlorine
    e = GraphSHAPIQ(model, method=method).explain(data, node=4, output_index=1)
    assert (e.node, e.output_index, e.method, e.exact) == (4, 1, method, True)
    assert e.n_players == N
    assert e.prediction == pytest.approx(oracle.table[-1, 4 * OUTPUTS + 1], abs=1e-12)
    assert e.empty_prediction == pytest.approx(oracle.table[0, 4 * OUTPUTS + 1], abs=1e-12)
    assert_matches_oracle(oracle, e)


@pytest.mark.parametrize("method", ["local", "masked"])
def test_every_node_at_once_matches_the_oracle(chlorine, method):
    """The default output of each target is its own predicted class."""
    model, data, oracle = chlorine
    explanations = GraphSHAPIQ(model, method=method).explain_nodes(data)
    predicted = oracle.table[-1].reshape(N, OUTPUTS).argmax(axis=1)
    assert [e.node for e in explanations] == list(range(N))
    assert [e.output_index for e in explanations] == predicted.tolist()
    assert len(set(predicted.tolist())) == 2  # both classes occur: two shared games
    for e in explanations:
        assert_matches_oracle(oracle, e, [("Moebius", None), ("SV", None)])


def test_targets_in_any_order_with_their_own_outputs(chlorine):
    model, data, oracle = chlorine
    explanations = GraphSHAPIQ(model).explain_nodes(data, [7, 2, 7], output_index=[0, 1, 1])
    assert [(e.node, e.output_index) for e in explanations] == [(7, 0), (2, 1), (7, 1)]
    for e in explanations:
        assert_matches_oracle(oracle, e, [("Moebius", None), ("k-SII", 2)])


def test_nodes_outside_the_receptive_field_are_dummies(chlorine):
    model, data, _ = chlorine
    e = GraphSHAPIQ(model).explain(data, node=2, output_index=0)
    inside = field(data, 2, hops=2)
    assert set(e.blocks.groups) == {len(inside)}
    sv = e.node_values("SV")
    assert np.all(sv[sorted(set(range(N)) - inside)] == 0.0)
    assert np.all(sv[sorted(inside)] != 0.0)
    members = set().union(*e.interaction_values("Moebius").interaction_lookup)
    assert members == inside and e.n_interactions == 2 ** len(inside)


@pytest.mark.parametrize("lam", [1, 2])
def test_lambda_approximation_of_a_node(chlorine, lam):
    """Algorithm 3 on one node game: its exact MIs up to size lambda inside the field, and
    one gap term on the whole field (computed here from the oracle's MIs)."""
    model, data, oracle = chlorine
    e = GraphSHAPIQ(model).explain(data, node=6, output_index=1, budget=lam)
    assert (e.method, e.exact, e.budget) == ("approximate", False, lam)
    column = 6 * OUTPUTS + 1
    moebius = oracle.computer(column)("Moebius", N)
    inside = tuple(sorted(field(data, 6, hops=2)))
    expected = {
        s: v for s, v in moebius.dict_values.items() if len(s) <= lam and set(s) <= set(inside)
    }
    expected[inside] = oracle.table[-1, column] - sum(expected.values())
    ours = e.moebius.dict_values
    assert set(ours) - set(expected) <= {s for s, v in ours.items() if v == 0.0}
    assert max(abs(ours.get(s, 0.0) - v) for s, v in expected.items()) <= 1e-9
    exact = GraphSHAPIQ(model).explain(data, node=6, output_index=1, budget=len(inside) - 1)
    assert exact.exact
    assert_matches_oracle(oracle, exact, [("Moebius", None)])


def test_a_saved_node_explanation_reads_back(chlorine, tmp_path):
    model, data, _ = chlorine
    e = GraphSHAPIQ(model).explain(data, node=3)
    back = Explanation.load(e.save(tmp_path / "node3.npz"))
    assert back.node == 3 and max_error(back.moebius, e.moebius) == 0.0


def test_one_target_runs_only_the_states_it_needs(chlorine):
    """One target's state graph holds its own field's states at the last layer, not every
    node's (the batch of all nodes holds them all)."""
    model, data, _ = chlorine
    one = GraphSHAPIQ(model).explain(data, node=0)
    every = GraphSHAPIQ(model).explain_nodes(data)
    assert one.n_node_states < every[0].n_node_states
    fields = engine.receptive_fields(data.edge_index, N, 2)
    needed = engine.needed_fields(fields, (0,))
    assert [len(f) for f in needed[2]] == [len(fields[2][0])] + [0] * (N - 1)
    assert {j for j, f in enumerate(needed[1]) if len(f)} == field(data, 0, hops=1)


def test_the_dispatch_table_is_what_explain_consults(chlorine, monkeypatch):
    model, data, oracle = chlorine
    assert METHODS == ("auto", *METHOD_TABLE)
    assert GraphSHAPIQ(model).explain(data, node=1).method == "local"
    calls = []

    def spy(explainer, game, fields, budget, progress):
        calls.append(game.nodes)
        return engine.GraphSHAPIQ._masked(explainer, game, fields, budget, progress)

    table = {"spy": engine.MethodSpec(spy, lambda explainer, game: None), **METHOD_TABLE}
    monkeypatch.setattr(engine, "METHOD_TABLE", table)
    e = GraphSHAPIQ(model).explain(data, node=1, output_index=0)
    assert e.method == "spy" and calls == [(1,)]
    assert_matches_oracle(oracle, e, [("SV", None)])
    assert GraphSHAPIQ(model, method="spy").explain(data, node=1).method == "spy"


def test_engine_messages_name_python_arguments_not_cli_options():
    import ast
    import re

    from conftest import ROOT

    for path in sorted((ROOT / "wdn_explain" / "explain").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not re.search(r"(?<![\w-])--[a-z]", node.value), (path.name, node.value)


def test_float_targets_are_exact_with_torch_default_dtype():
    """A float32 node-level model: local and masked agree to float rounding."""
    torch.manual_seed(0)
    data = path_graph(7, seed=1, extra=[(0, 3)])
    data.x, data.edge_attr = data.x.float(), data.edge_attr.float()
    model = node_chlorine(outputs=1).float().eval()
    fast = GraphSHAPIQ(model, method="local").explain_nodes(data)
    slow = GraphSHAPIQ(model, method="masked").explain_nodes(data)
    for a, b in zip(fast, slow):
        assert max_error(a.moebius, b.moebius) <= 1e-5


def test_readme_node_example_runs_and_is_exact():
    import re

    from conftest import ROOT

    readme = "\n".join(  # the README and the docs site, where the examples live now
        f.read_text() for f in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    )
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "node=5" in b)
    scope: dict = {}
    exec(code, scope)
    e, every = scope["e"], scope["every"]
    sv = e.node_values("SV")
    assert e.node == 5 and e.n_players == 12 and e.exact
    assert set(sv.nonzero()[0]) == {3, 4, 5, 6, 7}
    assert sv.sum() == pytest.approx(e.prediction - e.empty_prediction, abs=1e-5)
    assert [x.node for x in every] == list(range(12))
    assert max_error(every[5].moebius, e.moebius) <= 1e-6
