import pytest

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ, receptive_fields
from wdn_explain.explain.baselines import APPROXIMATORS, informed_approximation


@pytest.mark.parametrize("name", APPROXIMATORS)
def test_informed_approximators_zero_outside_fields(wdn_model, small_graph, name):
    explainer = GraphSHAPIQ(wdn_model)
    approx = informed_approximation(explainer, small_graph, name, 2**small_graph.num_nodes, seed=1)
    fields = [set(f.tolist()) for f in receptive_fields(small_graph.edge_index, 10, 2)[-1]]
    assert approx.dict_values
    assert all(any(set(k) <= f for f in fields) for k in approx.dict_values)
    exact = explainer.explain(small_graph).interaction_values(
        "SV" if name == "KernelSHAP" else "k-SII", 1 if name == "KernelSHAP" else 2
    )
    if name in ("KernelSHAPIQ", "KernelSHAP"):  # full budget: the regression is exact
        for key, value in exact.dict_values.items():
            if len(key) == 1:
                assert approx[key] == pytest.approx(value, abs=1e-6)


def test_bad_approximator(wdn_model, small_graph):
    with pytest.raises(ExplainError, match="unknown approximator 'Magic'"):
        informed_approximation(GraphSHAPIQ(wdn_model), small_graph, "Magic", 100)
