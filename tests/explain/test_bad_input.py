"""Every refusal names the problem."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.errors import ExplainError
from wdn_explain.explain import GraphSHAPIQ, check_linear_readout

from conftest import path_graph
from models import classifier, edge_model


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
    with pytest.raises(ExplainError, match="output_index must be an integer in 0..0 \\(got 3\\)"):
        GraphSHAPIQ(wdn_model).explain(small_graph, output_index=3)
    with pytest.raises(ExplainError, match="output_index must be an integer in 0..0 \\(got '0'\\)"):
        GraphSHAPIQ(wdn_model).explain(small_graph, output_index="0")


def test_interaction_limit_suggests_budget(wdn_model, hanoi):
    data = Data(
        x=torch.rand(32, 1, dtype=torch.float64),
        edge_index=hanoi.edge_index,
        edge_attr=torch.rand(68, 1, dtype=torch.float64),
    )
    with pytest.raises(
        ExplainError,
        match=r"needs \|I\| = 3023 model calls, over max_interactions=500.*lambda-approximation with budget=1 \(about",
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


def test_moebius_spelled_either_way(wdn_model, small_graph):
    e = GraphSHAPIQ(wdn_model).explain(small_graph)
    umlaut, ascii_ = e.interaction_values("Möbius", 2), e.interaction_values("Moebius", 2)
    assert umlaut.index == "Moebius" and umlaut.interaction_lookup == ascii_.interaction_lookup
    np.testing.assert_array_equal(umlaut.values, ascii_.values)
    with pytest.raises(ExplainError, match="EdgeModel: TransformerConv is not one of the layers"):
        GraphSHAPIQ(edge_model("transformer"), method="local")
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


def test_batch_of_several_graphs_is_refused(wdn_model):
    from torch_geometric.data import Batch

    graphs = [path_graph(3, seed=s) for s in (1, 2)]
    with pytest.raises(ExplainError, match="batch of 2 graphs; GraphSHAP-IQ explains one graph"):
        GraphSHAPIQ(wdn_model).explain(Batch.from_data_list(graphs))
    one = GraphSHAPIQ(wdn_model).explain(Batch.from_data_list(graphs[:1]))
    assert one.prediction == pytest.approx(GraphSHAPIQ(wdn_model).explain(graphs[0]).prediction)


def test_local_needs_the_models_depth_and_pooling(wdn_model, small_graph):
    with pytest.raises(ExplainError, match="n_layers must equal num_layers=2 \\(got n_layers=3\\)"):
        GraphSHAPIQ(wdn_model, 3, method="local")
    # auto with more layers than the model has: exact by masked graphs
    assert GraphSHAPIQ(wdn_model, 3).explain(small_graph).method == "masked"
    wdn_model.pooling = "max"
    with pytest.raises(ExplainError, match="needs pooling 'mean' or 'add' \\(got 'max'"):
        GraphSHAPIQ(wdn_model, method="local")
    with pytest.raises(ExplainError, match="needs pooling 'mean' or 'add'"):
        GraphSHAPIQ(wdn_model).explain(small_graph)
    with pytest.raises(ExplainError, match="n_layers must be an integer >= 1 \\(got 2.5\\)"):
        GraphSHAPIQ(wdn_model, 2.5)


def test_edge_attr_missing_or_unexpected(wdn_model, small_graph):
    no_edges = Data(x=small_graph.x, edge_index=small_graph.edge_index)
    with pytest.raises(ExplainError, match="ChlorineGNN.forward\\(.*\\) needs edge_attr, which"):
        GraphSHAPIQ(wdn_model).explain(no_edges)
    gcn = classifier("gcn")
    data = path_graph(6, seed=1, features=3)  # has edge_attr, which the GCN does not take
    with pytest.raises(ExplainError, match="the graph has edge_attr but Classifier.forward"):
        GraphSHAPIQ(gcn).explain(data)
    small_graph.edge_attr = small_graph.edge_attr[:-1]
    with pytest.raises(ExplainError, match="edge_attr must have one row per edge \\(22\\)"):
        GraphSHAPIQ(wdn_model).explain(small_graph)


def test_models_that_cannot_be_called_say_what_was_tried(small_graph):
    class TakesData(torch.nn.Module):
        num_layers = 1

        def forward(self, data):
            return data.x.sum()

    with pytest.raises(
        ExplainError, match="cannot be called as model\\(x, edge_index, ...\\).*DataModel"
    ):
        GraphSHAPIQ(TakesData()).explain(small_graph)

    class Broken(torch.nn.Module):
        num_layers = 1

        def forward(self, x, edge_index, edge_attr, batch=None):
            return torch.cat(x, edge_index)  # raises TypeError

    with pytest.raises(
        ExplainError,
        match="calling the model as Broken\\(x, edge_index, edge_attr=..., batch=...\\) failed",
    ):
        GraphSHAPIQ(Broken()).explain(small_graph)


def test_local_refuses_inputs_it_cannot_pass(wdn_model, small_graph):
    class WithWeight(type(wdn_model)):
        def forward(self, x, edge_index, edge_attr, edge_weight, batch=None):
            return super().forward(x, edge_index, edge_attr * edge_weight[:, None], batch)

    model = WithWeight(wdn_model.config).double()
    small_graph.edge_weight = torch.rand(22, dtype=torch.float64)
    with pytest.raises(ExplainError, match="method 'local' passes only x and edge_attr"):
        GraphSHAPIQ(model, method="local").explain(small_graph)
    assert GraphSHAPIQ(model).explain(small_graph).method == "masked"


def test_bad_budget_and_set_size(wdn_model, small_graph):
    with pytest.raises(
        ExplainError, match="budget \\(lambda\\) must be an integer >= 1 \\(got 1.5\\)"
    ):
        GraphSHAPIQ(wdn_model).explain(small_graph, budget=1.5)
    e = GraphSHAPIQ(wdn_model).explain(small_graph)
    with pytest.raises(
        ExplainError, match="set size must be an integer in 0..2 for k-SII of order 2 \\(got 3\\)"
    ):
        e.index_values("k-SII", 2, 3)
    with pytest.raises(ExplainError, match="order must be a positive integer \\(got 0\\)"):
        e.node_values("k-SII", 0)


def counted(model):
    """``model`` with a list that records each forward call."""
    calls = []
    model.register_forward_hook(lambda *args: calls.append(1))
    return model, calls


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (-1, "target node must be an integer in 0..9 \\(got -1\\)"),
        (10, "target node must be an integer in 0..9 \\(got 10\\)"),
        (np.int64(12), "target node must be an integer in 0..9 \\(got 12\\)"),
        (2.0, "node must be an integer node index \\(got 2.0\\); explain_nodes"),
        ("3", "node must be an integer node index \\(got '3'\\)"),
        (True, "node must be an integer node index \\(got True\\)"),
        ([1, 2], "node must be an integer node index \\(got \\[1, 2\\]\\); explain_nodes"),
    ],
)
def test_bad_target_node_is_refused_before_any_model_call(node, message):
    from models import node_chlorine

    model, calls = counted(node_chlorine().eval())
    with pytest.raises(ExplainError, match=message):
        GraphSHAPIQ(model).explain(path_graph(10, seed=1), node=node)
    assert calls == []


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([], "nodes must be a non-empty list of node indices \\(got \\[\\]\\)"),
        (3, "nodes must be a non-empty list of node indices \\(got 3\\)"),
        ([0, 10], "target node must be an integer in 0..9 \\(got 10\\)"),
        ([0, 1.5], "target node must be an integer in 0..9 \\(got 1.5\\)"),
    ],
)
def test_bad_target_list_is_refused_before_any_model_call(nodes, message):
    from models import node_chlorine

    model, calls = counted(node_chlorine().eval())
    with pytest.raises(ExplainError, match=message):
        GraphSHAPIQ(model).explain_nodes(path_graph(10, seed=1), nodes)
    assert calls == []
    with pytest.raises(
        ExplainError, match="one integer or one per target node \\(2\\) \\(got 3\\)"
    ):
        GraphSHAPIQ(model).explain_nodes(path_graph(10, seed=1), [0, 1], output_index=[0, 1, 0])


def test_node_target_on_a_graph_level_model(wdn_model, small_graph):
    with pytest.raises(
        ExplainError,
        match="a target node needs one output row per node, but ChlorineGNN returns one per "
        "graph, shape \\(1,\\) \\(explain the graph without node=\\)",
    ):
        GraphSHAPIQ(wdn_model).explain(small_graph, node=0)


def test_node_level_output_of_the_wrong_shape(small_graph):
    class Shape(torch.nn.Module):
        num_layers = 1

        def __init__(self, shape):
            super().__init__()
            self.shape = shape

        def forward(self, x, edge_index, edge_attr, batch=None):
            return x.sum() * torch.ones(self.shape, dtype=x.dtype)

    for shape in [(9,), (10, 2, 2), (2, 1)]:
        with pytest.raises(
            ExplainError,
            match=f"a node-level model must return shape \\(10,\\) or \\(10, C\\) for a graph "
            f"of 10 nodes \\(got {re.escape(str(shape))} from Shape\\)",
        ):
            GraphSHAPIQ(Shape(shape)).explain(small_graph, node=1)
    with pytest.raises(
        ExplainError,
        match="must return shape \\(1,\\) or \\(1, C\\) for one graph \\(got \\(10, 2\\)\\); a "
        "per-node output is explained with node=",
    ):
        GraphSHAPIQ(Shape((10, 2))).explain(small_graph)


def test_local_pooling_must_fit_the_target(small_graph):
    from models import node_chlorine

    model = node_chlorine().eval()
    model.pooling = "mean"  # declares a graph readout, returns one row per node
    with pytest.raises(
        ExplainError, match="method 'local' explains node outputs of models with pooling None"
    ):
        GraphSHAPIQ(model).explain(small_graph, node=2)
    assert GraphSHAPIQ(model, method="masked").explain(small_graph, node=2).exact


def test_node_output_beyond_the_receptive_field_fails_the_check():
    """A 2-layer node model explained with 1-hop fields: the locality check catches it."""
    from models import node_gcn

    model = node_gcn(seed=2).eval()
    model.num_layers = None  # a model that does not say its depth
    data = path_graph(8, seed=7, features=3, edge_features=None)
    data.edge_weight = torch.ones(data.edge_index.shape[1], dtype=torch.float64)
    data.u = torch.zeros(1, 6, dtype=torch.float64)
    with pytest.raises(
        ExplainError,
        match="the model's output at node \\d is not a function of its 1-hop receptive field: "
        "Möbius recovery misses by",
    ):
        GraphSHAPIQ(model, 1).explain_nodes(data, [1, 4])
    with pytest.warns(UserWarning, match="not a function of its 1-hop receptive field"):
        GraphSHAPIQ(model, 1, readout_check="warn").explain(data, node=4)
    assert GraphSHAPIQ(model, 2).explain(data, node=4).exact


def test_node_targets_over_the_memory_budget_are_refused_with_advice():
    """Nodes 0 and 5 have 2-hop fields of 6 and 7 nodes: 2^6 + 2^7 = 192 game values."""
    from models import node_chlorine

    model = node_chlorine(layers=2).eval()
    data = path_graph(10, seed=1, extra=[(0, 5)])
    with pytest.raises(
        ExplainError,
        match=r"holds 192 node-game values .* over half the memory budget .*"
        r"\(memory_budget_gb=.*\); try the lambda-approximation with budget=\d",
    ):
        GraphSHAPIQ(model, memory_budget_gb=1e-6).explain_nodes(data, [0, 5])
