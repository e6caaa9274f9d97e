"""Every refusal names the problem."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ, check_linear_readout

from conftest import path_graph
from models import classifier


def test_graph_without_nodes_or_edges(wdn_model):
    with pytest.raises(ExplainError, match="n >= 1"):
        GraphSHAPIQ(wdn_model).explain(
            Data(x=torch.zeros(0, 1), edge_index=torch.zeros(2, 0, dtype=torch.long))
        )
    with pytest.raises(ExplainError, match="at least one edge"):
        GraphSHAPIQ(wdn_model).explain(
            Data(x=torch.zeros(3, 1), edge_index=torch.zeros(2, 0, dtype=torch.long))
        )


def test_nan_features(wdn_model, small_graph):
    small_graph.x[2, 0] = float("nan")
    with pytest.raises(ExplainError, match="x hold NaN or inf"):
        GraphSHAPIQ(wdn_model).explain(small_graph)


def test_layers_below_one(wdn_model):
    with pytest.raises(ExplainError, match="n_layers must be >= 1 \\(got 0\\)"):
        GraphSHAPIQ(wdn_model, 0)


def test_baseline_shape_and_name(wdn_model, small_graph):
    with pytest.raises(ExplainError, match="shape \\(1,\\) \\(got \\(3,\\)\\)"):
        GraphSHAPIQ(wdn_model, baseline=torch.zeros(3)).explain(small_graph)
    with pytest.raises(
        ExplainError, match="baseline must be 'mean', 'zeros' or a vector \\(got 'median'\\)"
    ):
        GraphSHAPIQ(wdn_model, baseline="median").explain(small_graph)


def test_zero_baseline_is_used(wdn_model, small_graph):
    e = GraphSHAPIQ(wdn_model, baseline="zeros").explain(small_graph)
    assert e.baseline.tolist() == [0.0]


def test_model_output_of_wrong_shape(small_graph):
    class PerNode(torch.nn.Module):
        num_layers = 1

        def forward(self, x, edge_index, edge_attr=None, batch=None):
            return x.sum(dim=1)  # one value per node, not per graph

    with pytest.raises(ExplainError, match="must return shape \\(1,\\) or \\(1, C\\)"):
        GraphSHAPIQ(PerNode()).explain(small_graph)


def test_output_index_out_of_range(wdn_model, small_graph):
    with pytest.raises(ExplainError, match="output_index must be in 0..0 \\(got 3\\)"):
        GraphSHAPIQ(wdn_model).explain(small_graph, output_index=3)


def test_interaction_limit_suggests_budget(wdn_model, hanoi):
    data = Data(
        x=torch.rand(32, 1, dtype=torch.float64),
        edge_index=hanoi.edge_index,
        edge_attr=torch.rand(68, 1, dtype=torch.float64),
    )
    with pytest.raises(
        ExplainError,
        match=r"needs \|I\| = 3023 model calls, over max_interactions=500.*try budget=\d",
    ):
        GraphSHAPIQ(wdn_model, max_interactions=500).explain(data)


def test_unknown_index_order_and_method(wdn_model, small_graph):
    e = GraphSHAPIQ(wdn_model).explain(small_graph)
    with pytest.raises(ExplainError, match="unknown index 'SHAP'"):
        e.interaction_values("SHAP", 1)
    with pytest.raises(ExplainError, match="order must be a positive integer \\(got 0\\)"):
        e.interaction_values("k-SII", 0)
    with pytest.raises(ExplainError, match="index 'SV' has order 1 \\(got order 2\\)"):
        e.interaction_values("SV", 2)
    with pytest.raises(ExplainError, match="unknown method 'fast'"):
        GraphSHAPIQ(wdn_model, method="fast")
    with pytest.raises(ExplainError, match="method 'local' needs a model implementing"):
        GraphSHAPIQ(classifier("gcn"), method="local")
    with pytest.raises(ExplainError, match="budget \\(lambda\\) must be an integer >= 1"):
        GraphSHAPIQ(wdn_model).explain(small_graph, budget=0)


def test_deep_readout_fails_the_check():
    data = path_graph(9, seed=2, features=3, edge_features=None)
    linear = classifier("gin", layers=1)
    deep = classifier("gin", layers=1, deep_head=True)
    assert check_linear_readout(linear, data) < 1e-9
    assert check_linear_readout(deep, data) > 1e-6
    with pytest.raises(ExplainError, match="not a linear readout of 1-hop node embeddings"):
        GraphSHAPIQ(deep).explain(data)
    with pytest.warns(UserWarning, match="not a linear readout"):
        GraphSHAPIQ(deep, readout_check="warn").explain(data)
    assert GraphSHAPIQ(deep, readout_check="off").explain(data).exact


def test_too_few_layers(wdn_model, small_graph):
    with pytest.raises(ExplainError, match="n_layers=1 is below the model's num_layers=2"):
        GraphSHAPIQ(wdn_model, 1, method="masked")
    # a model that does not say its depth is caught by the readout check
    model = classifier("gcn", layers=2)
    del model.num_layers
    data = path_graph(9, seed=2, features=3, edge_features=None)
    with pytest.raises(ExplainError, match="not a linear readout of 1-hop"):
        GraphSHAPIQ(model, 1).explain(data)


def test_train_mode_is_restored(wdn_model, small_graph):
    wdn_model.train()
    GraphSHAPIQ(wdn_model).explain(small_graph)
    assert wdn_model.training
