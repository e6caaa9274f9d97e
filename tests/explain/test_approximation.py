"""Budget-lambda approximation (Algorithm 3)."""

from __future__ import annotations

import pytest

from wdn_explain.explain import GraphSHAPIQ, receptive_fields


@pytest.fixture
def exact(wdn_model, small_graph):
    return GraphSHAPIQ(wdn_model).explain(small_graph)


def largest_field(data, layers=2):
    return max(len(f) for f in receptive_fields(data.edge_index, data.num_nodes, layers)[-1])


def test_exact_at_largest_field_minus_one(wdn_model, small_graph, exact):
    lam = largest_field(small_graph) - 1
    approx = GraphSHAPIQ(wdn_model).explain(small_graph, budget=lam)
    assert approx.exact and approx.method == "approximate"
    keys = set(exact.moebius.interaction_lookup) | set(approx.moebius.interaction_lookup)
    assert max(abs(exact.moebius[k] - approx.moebius[k]) for k in keys) < 1e-9


@pytest.mark.parametrize("lam", [1, 2, 3])
def test_efficient_and_cheaper_below(wdn_model, small_graph, exact, lam):
    approx = GraphSHAPIQ(wdn_model).explain(small_graph, budget=lam)
    assert not approx.exact
    assert approx.efficiency_gap() == pytest.approx(0, abs=1e-9)
    sv = approx.interaction_values("SV", 1)
    total = sum(v for k, v in sv.dict_values.items() if k)
    assert total == pytest.approx(approx.prediction - approx.empty_prediction, abs=1e-9)
    assert approx.n_graph_evaluations < exact.n_interactions
    # every MI of size <= lambda is exact
    for key, value in exact.moebius.dict_values.items():
        if len(key) <= lam:
            assert approx.moebius[key] == pytest.approx(value, abs=1e-9)


def test_error_shrinks_with_budget(wdn_model, small_graph, exact):
    ref = exact.interaction_values("SV", 1)
    errors = []
    for lam in (1, 3, largest_field(small_graph) - 1):
        sv = GraphSHAPIQ(wdn_model).explain(small_graph, budget=lam).interaction_values("SV", 1)
        errors.append(sum((ref[(i,)] - sv[(i,)]) ** 2 for i in range(small_graph.num_nodes)))
    assert errors[-1] < 1e-18 and errors[-1] <= errors[0]
