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
        (dict(model_config=dict(task_level="node")), "task_level must be 'graph' \\(got 'node'\\)"),
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

    readme = (ROOT / "README.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "Explainer(" in b)
    scope: dict = {}
    exec(code, scope)  # the README's TUDataset-style example, data built in code
    e = scope["explanation"]
    assert e.node_mask.shape == (9, 1) and not e.interactions.estimated
    assert e.graphshapiq.method == "local"  # the GIN runs on the state graph
    total = e.graphshapiq.prediction - e.graphshapiq.empty_prediction
    assert float(e.node_mask.sum()) == pytest.approx(total, abs=1e-5)
