"""GraphSHAP-IQ as a torch_geometric.explain algorithm."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.explain import Explainer

from wdn_explain.errors import ExplainError
from wdn_explain.explain import Explanation, GraphSHAPIQAlgorithm

from models import classifier
from oracle import Oracle, max_error

GRAPH_CONFIG = dict(mode="multiclass_classification", task_level="graph", return_type="raw")


def molecule(seed: int = 0) -> Data:
    """A MUTAG-like graph built in code: a 6-ring with two substituents, one-hot atoms."""
    ring = [(i, (i + 1) % 6) for i in range(6)]
    bonds = [*ring, (0, 6), (3, 7)]
    src = [a for a, b in bonds] + [b for a, b in bonds]
    dst = [b for a, b in bonds] + [a for a, b in bonds]
    atoms = torch.tensor([0, 0, 0, 0, 0, 0, 1, 2])
    x = torch.nn.functional.one_hot(atoms, 3).double()
    return Data(x=x + 0.1 * seed, edge_index=torch.tensor([src, dst]))


def explainer(model, **kwargs) -> Explainer:
    config = {**GRAPH_CONFIG, **kwargs.pop("model_config", {})}
    return Explainer(
        model,
        algorithm=GraphSHAPIQAlgorithm(**kwargs),
        explanation_type="model",
        node_mask_type="object",
        model_config=config,
    )


def test_node_mask_holds_exact_shapley_values_of_the_predicted_class():
    model = classifier("gin", layers=2, pooling="add").eval()
    data = molecule()
    explanation = explainer(model, index="STII", order=2)(data.x, data.edge_index)
    with torch.no_grad():
        predicted = int(model(data.x, data.edge_index).argmax())
    assert int(explanation.target) == predicted
    oracle = Oracle(lambda x: model(x, data.edge_index), data.x)(predicted)
    sv = oracle("SV", 1)
    assert explanation.node_mask.shape == (8, 1)
    assert max(abs(explanation.node_mask[i, 0].item() - sv[(i,)]) for i in range(8)) < 1e-9
    assert explanation.interactions.index == "STII"
    assert max_error(oracle("STII", 2), explanation.interactions) < 1e-9
    assert isinstance(explanation.graphshapiq, Explanation)


def test_regression_explains_the_chosen_output():
    model = classifier("gcn", layers=2).eval()
    data = molecule(seed=1)
    explanation = explainer(model, output_index=2, model_config=dict(mode="regression"))(
        data.x, data.edge_index
    )
    sv = Oracle(lambda x: model(x, data.edge_index), data.x)(2)("SV", 1)
    assert max(abs(explanation.node_mask[i, 0].item() - sv[(i,)]) for i in range(8)) < 1e-9


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        (
            dict(model_config=dict(task_level="edge")),
            "task_level must be 'graph' or 'node' \\(got 'edge'\\)",
        ),
        (dict(model_config=dict(return_type="probs")), "return_type must be 'raw': 'probs'"),
        (dict(node_mask_type="attributes"), "node_mask_type must be 'object'.*'attributes'"),
        (dict(edge_mask_type="object"), "edge_mask_type must be None \\(got 'object'\\)"),
        (
            dict(explanation_type="phenomenon", model_config=dict(mode="regression")),
            "'phenomenon' of a regression explains a loss",
        ),
    ],
)
def test_supports_refuses_what_would_not_be_exact(options, reason):
    config = {**GRAPH_CONFIG, **options.pop("model_config", {})}
    kwargs = {"explanation_type": "model", "node_mask_type": "object", **options}
    with pytest.raises(ExplainError, match=reason):
        Explainer(
            classifier("gcn"), algorithm=GraphSHAPIQAlgorithm(), model_config=config, **kwargs
        )


def test_non_linear_readout_and_batches_are_refused():
    data = molecule()
    deep = classifier("gin", layers=1, deep_head=True).eval()
    with pytest.raises(ExplainError, match="not a linear readout"):
        explainer(deep)(data.x, data.edge_index)
    batch = Batch.from_data_list([molecule(0), molecule(1)])
    model = classifier("gcn", layers=2).eval()
    with pytest.raises(ExplainError, match="batch of 2 graphs"):
        explainer(model)(batch.x, batch.edge_index, batch=batch.batch)


def test_readme_example_runs_and_is_efficient():
    import re

    from conftest import ROOT

    readme = "\n".join(  # the README and the docs site, where the examples live now
        f.read_text() for f in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    )
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "Explainer(" in b)
    scope: dict = {}
    exec(code, scope)  # the README's TUDataset-style example, data built in code
    e = scope["explanation"]
    assert e.node_mask.shape == (9, 1) and not e.interactions.estimated
    assert e.graphshapiq.method == "local"  # the GIN runs on the state graph
    total = e.graphshapiq.prediction - e.graphshapiq.empty_prediction
    assert float(e.node_mask.sum()) == pytest.approx(total, abs=1e-5)


@pytest.fixture(scope="module")
def node_task():
    """A node classifier (edge weights, a graph-level input u) and its oracle."""
    from conftest import path_graph
    from models import node_gcn

    data = path_graph(8, seed=7, features=3, edge_features=None, extra=[(2, 6)])
    gen = torch.Generator().manual_seed(8)
    data.edge_weight = torch.rand(data.edge_index.shape[1], generator=gen, dtype=torch.float64)
    data.u = torch.randn(1, 6, generator=gen, dtype=torch.float64)
    model = node_gcn(seed=6).eval()
    oracle = Oracle(lambda x: model(x, data.edge_index, data.edge_weight, data.u), data.x)
    with torch.no_grad():
        predicted = model(data.x, data.edge_index, data.edge_weight, data.u).argmax(dim=1)
    return model, data, oracle, predicted


def explain_nodes(model, data, nodes, **kwargs):
    config = {**GRAPH_CONFIG, "task_level": "node", **kwargs.pop("model_config", {})}
    return explainer(model, model_config=config, **kwargs)(
        data.x, data.edge_index, index=nodes, edge_weight=data.edge_weight, u=data.u
    )


def test_node_task_explains_the_predicted_class_of_the_index_node(node_task):
    model, data, oracle, predicted = node_task
    explanation = explain_nodes(model, data, 6, index="STII", order=2)
    c = int(predicted[6])
    reference = oracle(6 * 2 + c)
    sv = reference("SV", 1)
    assert [sv[(i,)] for i in range(8)] == pytest.approx(explanation.node_mask[:, 0].tolist())
    assert explanation.node_mask[0, 0] == 0.0  # node 0 is outside node 6's 2-hop field
    assert max_error(reference("STII", 2), explanation.interactions) < 1e-9
    (result,) = explanation.graphshapiq
    assert (result.node, result.output_index) == (6, c)


def test_several_index_nodes_explain_the_sum_of_their_outputs(node_task):
    """Each node with its own predicted class; Shapley values are linear in the game."""
    model, data, oracle, predicted = node_task
    explanation = explain_nodes(model, data, torch.tensor([1, 4]))
    assert [r.node for r in explanation.graphshapiq] == [1, 4]
    assert [r.output_index for r in explanation.graphshapiq] == [1, 0] == predicted[[1, 4]].tolist()
    svs = [oracle(v * 2 + int(predicted[v]))("SV", 1) for v in (1, 4)]
    expected = [svs[0][(i,)] + svs[1][(i,)] for i in range(8)]
    assert expected == pytest.approx(explanation.node_mask[:, 0].tolist(), abs=1e-9)


def test_node_regression_explains_every_node_when_index_is_none(node_task):
    model, data, oracle, _ = node_task
    explanation = explain_nodes(
        model, data, None, output_index=1, model_config=dict(mode="regression")
    )
    assert [r.node for r in explanation.graphshapiq] == list(range(8))
    svs = [oracle(v * 2 + 1)("SV", 1) for v in range(8)]
    expected = [sum(sv[(i,)] for sv in svs) for i in range(8)]
    assert expected == pytest.approx(explanation.node_mask[:, 0].tolist(), abs=1e-9)
