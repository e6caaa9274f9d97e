import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.nn import global_mean_pool

from wdn_explain.errors import ConfigError
from wdn_explain.explain import LocalMessagePassing
from wdn_explain.model import ChlorineGNN, ModelConfig


@pytest.fixture
def model():
    torch.manual_seed(0)
    return ChlorineGNN(ModelConfig(hidden_channels=16, num_layers=3)).eval()


def graph(hanoi, seed):
    gen = torch.Generator().manual_seed(seed)
    return Data(
        x=torch.rand(32, 1, generator=gen),
        edge_index=hanoi.edge_index,
        edge_attr=torch.randn(68, 1, generator=gen),
    )


def test_batched_forward_equals_single_graphs(model, hanoi):
    graphs = [graph(hanoi, s) for s in range(4)]
    batch = Batch.from_data_list(graphs)
    out = model(batch.x, batch.edge_index, batch.edge_attr, batch.batch)
    assert out.shape == (4,)
    single = torch.stack([model(g.x, g.edge_index, g.edge_attr) for g in graphs]).squeeze(-1)
    torch.testing.assert_close(out, single, atol=1e-6, rtol=1e-5)


def test_node_permutation_leaves_prediction_unchanged(model, hanoi):
    g = graph(hanoi, 1)
    perm = torch.randperm(32, generator=torch.Generator().manual_seed(3))
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(32)
    permuted = Data(x=g.x[perm], edge_index=inverse[g.edge_index], edge_attr=g.edge_attr)
    torch.testing.assert_close(
        model(g.x, g.edge_index, g.edge_attr),
        model(permuted.x, permuted.edge_index, permuted.edge_attr),
    )


def test_prediction_is_linear_readout_of_mean_embedding(model, hanoi):
    g = graph(hanoi, 2)
    h = model.node_embeddings(g.x, g.edge_index, g.edge_attr)
    weight, bias = model.readout_parameters()
    expected = (global_mean_pool(h, None) @ weight.T + bias).squeeze()
    torch.testing.assert_close(model(g.x, g.edge_index, g.edge_attr).squeeze(), expected)
    assert (
        isinstance(model, LocalMessagePassing) and model.num_layers == 3 and model.pooling == "mean"
    )


def test_bipartite_layer_equals_plain_layer(model, hanoi):
    g = graph(hanoi, 4)
    h, e = model.encode(g.x, g.edge_attr)
    torch.testing.assert_close(
        model.propagate_layer(0, h, g.edge_index, e),
        model.propagate_layer(0, (h, h), g.edge_index, e),
    )


def test_several_outputs_and_bad_config():
    m = ChlorineGNN(out_channels=3, hidden_channels=4, num_layers=1)
    x, ei = torch.rand(3, 1), torch.tensor([[0, 1], [1, 2]])
    assert m(x, ei, torch.rand(2, 1)).shape == (1, 3)
    with pytest.raises(ConfigError, match=r"num_layers must be an integer >= 1 \(got 0\)"):
        ChlorineGNN(num_layers=0)


def test_factored_layers_compute_the_shipped_models_layers(hanoi):
    """FactoredLayers (per (source, pipe) messages, own part per state) reproduce each layer
    of the shipped model, with its own weights, to float rounding; forward is untouched."""
    from wdn_explain.explain.local import FactoredLayers
    from wdn_explain.timeline import DEFAULT_MODEL
    from wdn_explain.training import load_model

    shipped, _ = load_model(DEFAULT_MODEL)
    assert isinstance(shipped, FactoredLayers) and shipped.aggregation == "mean"
    gen = torch.Generator().manual_seed(5)
    c = shipped.config
    x, edge_attr = torch.rand(32, c.in_channels, generator=gen), torch.rand(68, c.edge_channels)
    src, dst = edge_index = hanoi.edge_index
    with torch.no_grad():
        h, e = shipped.encode(x, edge_attr)
        for layer in range(shipped.num_layers):
            plain = shipped.propagate_layer(layer, h, edge_index, e)
            messages = shipped.layer_messages(layer, h[src], e)
            total = torch.zeros(32, messages.shape[1]).index_add_(0, dst, messages)
            degree = torch.bincount(dst, minlength=32).clamp(min=1)[:, None]
            factored = shipped.layer_update(layer, shipped.layer_self(layer, h), total / degree)
            torch.testing.assert_close(factored, plain, atol=2e-6, rtol=1e-5)
            h = plain


def test_a_deepened_copy_keeps_the_models_layers_and_learns_in_the_added_ones(hanoi):
    """deepened() appends layers after the model's own: with the added layers' update maps
    set to zero here the copy computes the model's output exactly (its own weights kept), as
    given they nudge it only a little, and a loss sends gradients into every added map (a
    zero layer is the identity but passes none); fewer layers are refused."""
    from wdn_explain.model import NodeChlorineGNN, deepened

    torch.manual_seed(0)
    model = NodeChlorineGNN(ModelConfig(hidden_channels=16, num_layers=2)).eval()
    data = graph(hanoi, 1)
    want = model(data.x, data.edge_index, data.edge_attr).detach()
    deep = deepened(model, 4)
    assert deep.config.num_layers == 4 and model.config.num_layers == 2
    out = deep(data.x, data.edge_index, data.edge_attr)
    assert 0 < (out - want).abs().max() < 0.2 * want.abs().max()
    out.square().sum().backward()
    for layer in deep.convs[2:]:
        for name, tensor in layer.named_parameters():
            assert tensor.grad.abs().sum() > 0, name
    with torch.no_grad():
        for layer in deep.convs[2:]:
            for tensor in (*layer.update_self.parameters(), *layer.update_aggr.parameters()):
                tensor.zero_()
    torch.testing.assert_close(deep(data.x, data.edge_index, data.edge_attr), want)
    assert deepened(model, 2) is model
    with pytest.raises(
        ConfigError, match=r"num_layers must be at least the model.s 2: .*\(got 1\)"
    ):
        deepened(model, 1)


def test_models_side_by_side_output_the_mean_of_their_outputs(hanoi):
    """side_by_side() of three node models (two of 8 hidden channels, one of 4) is one
    model of the same class, hidden channels summed, whose output is the mean of the three
    run here one by one; models of another depth are refused."""
    from wdn_explain.model import NodeChlorineGNN, side_by_side

    torch.manual_seed(3)
    models = [
        NodeChlorineGNN(ModelConfig(in_channels=1, hidden_channels=h, num_layers=3)).eval()
        for h in (8, 8, 4)
    ]
    merged = side_by_side(models)
    assert type(merged) is NodeChlorineGNN and merged.config.hidden_channels == 20
    graphs = [graph(hanoi, s) for s in range(3)]
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        want = sum(m(batch.x, batch.edge_index, batch.edge_attr) for m in models) / 3
        got = merged(batch.x, batch.edge_index, batch.edge_attr, batch.batch)
    torch.testing.assert_close(got, want)
    other = NodeChlorineGNN(ModelConfig(in_channels=1, hidden_channels=8, num_layers=2))
    with pytest.raises(ConfigError, match="side_by_side needs models of one class, inputs, depth"):
        side_by_side([models[0], other])
