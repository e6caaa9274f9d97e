"""GCN options (improved, self loops, normalisation, bond order weights) and the node-level
layer before pooling against dense algebra."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.errors import ExplainError

# a 4-atom chain 0 -single- 1 -double- 2 -aromatic- 3, both directions of every bond
EDGES = [(0, 1, 0), (1, 2, 1), (2, 3, 3)]
ORDER = {0: 1.0, 1: 2.0, 2: 3.0, 3: 1.5}


def _graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    pairs = [(i, j, k) for i, j, k in EDGES] + [(j, i, k) for i, j, k in EDGES]
    edge_index = torch.tensor([[i for i, _, _ in pairs], [j for _, j, _ in pairs]])
    edge_attr = torch.nn.functional.one_hot(torch.tensor([k for *_, k in pairs]), 4).float()
    x = torch.tensor(np.random.default_rng(0).normal(size=(4, 3)), dtype=torch.float32)
    return x, edge_index, edge_attr


def _dense_logits(model: MoleculeGNN, x: np.ndarray, options: dict) -> np.ndarray:
    """One GCN layer in eval mode written out: propagation matrix, batch norm, LeakyReLU, sum."""
    adj = np.zeros((4, 4))
    for i, j, kind in EDGES:
        adj[i, j] = adj[j, i] = ORDER[kind] if options.get("bond_weights") else 1.0
    if options.get("self_loops", True):
        adj += np.eye(4) * (2.0 if options.get("improved") else 1.0)
    if options.get("normalize", True):
        scale = 1 / np.sqrt(adj.sum(axis=0))
        adj = scale[:, None] * adj * scale[None, :]
    conv, norm = model.convs[0], model.norms[0]
    weight = conv.lin.weight.detach().numpy()
    h = adj @ x @ weight.T + conv.bias.detach().numpy()
    h = (h - norm.running_mean.numpy()) / np.sqrt(norm.running_var.numpy() + norm.eps)
    h = h * norm.weight.detach().numpy() + norm.bias.detach().numpy()
    h = np.where(h > 0, h, 0.01 * h)
    if options.get("node_hidden"):  # the node-level layer: linear, LeakyReLU, per atom
        layer = model.node_layer[0]
        h = h @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()
        h = np.where(h > 0, h, 0.01 * h)
    return h.sum(axis=0) @ model.head.weight.detach().numpy().T + model.head.bias.detach().numpy()


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"improved": True},
        {"bond_weights": True},
        {"improved": True, "bond_weights": True},
        {"self_loops": False, "normalize": False},
        {"self_loops": False, "normalize": False, "bond_weights": True},
        {"node_hidden": 7},
        {"node_hidden": 7, "bond_weights": True},
    ],
)
def test_gcn_options_match_dense_propagation(options):
    torch.manual_seed(1)
    config = ChemModelConfig(architecture="GCN", in_channels=3, hidden=5, num_layers=1, **options)
    model = MoleculeGNN(config).eval()
    with torch.no_grad():  # batch norm statistics away from the identity
        model.norms[0].running_mean.uniform_(-0.5, 0.5)
        model.norms[0].running_var.uniform_(0.5, 2.0)
    x, edge_index, edge_attr = _graph()
    got = model(x, edge_index, edge_attr).detach().numpy()[0]
    np.testing.assert_allclose(got, _dense_logits(model, x.numpy(), options), rtol=1e-5, atol=1e-5)


def test_improved_changes_the_model():
    x, edge_index, edge_attr = _graph()
    logits = []
    for improved in (False, True):
        torch.manual_seed(1)
        config = ChemModelConfig(architecture="GCN", in_channels=3, hidden=5, improved=improved)
        logits.append(MoleculeGNN(config).eval()(x, edge_index, edge_attr))
    assert not torch.allclose(*logits)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"architecture": "GIN", "improved": True}, r"GCN options \(architecture is GIN\)"),
        ({"architecture": "GAT", "bond_weights": True}, r"GCN options \(architecture is GAT\)"),
        ({"architecture": "GCN", "normalize": False}, "self_loops needs normalize"),
    ],
)
def test_gcn_options_refused(options, message):
    with pytest.raises(ValidationError, match=message):
        ChemModelConfig(in_channels=3, **options)


def test_bond_weights_need_edge_attr():
    config = ChemModelConfig(architecture="GCN", in_channels=3, bond_weights=True)
    x, edge_index, _ = _graph()
    with pytest.raises(ExplainError, match="needs edge_attr"):
        MoleculeGNN(config).eval()(x, edge_index)
