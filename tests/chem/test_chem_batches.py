"""Batches cut from graphs collated once equal PyG's DataLoader batches; training on them
gives the weights of a plain loop over PyG's DataLoader."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Batch
from torch_geometric.loader import DataLoader

from wdn_explain.chem.batches import PackedGraphs
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.chem.training import ChemTrainConfig, stratified_split, train_classifier


def test_batch_equals_pyg_collation_in_any_order(mutag):
    graphs = mutag.graphs[:40]
    packed = PackedGraphs(graphs)
    index = torch.randperm(40, generator=torch.Generator().manual_seed(0))[:17]
    ours = packed.batch(index)
    theirs = Batch.from_data_list([graphs[int(i)] for i in index])
    for name in ("x", "edge_index", "edge_attr", "y", "batch"):
        assert torch.equal(getattr(ours, name), getattr(theirs, name)), name
    assert torch.equal(packed.all().edge_index, Batch.from_data_list(graphs).edge_index)


def test_training_equals_a_plain_loop_over_pyg_batches(mutag):
    """Weights after 4 epochs (last epoch kept) equal those of a plain Adam loop over PyG's
    DataLoader with the same shuffling generator, split and initialisation."""
    config = ChemModelConfig(architecture="GCN", in_channels=7, hidden=8, dropout=0.3)
    train = ChemTrainConfig(epochs=4, patience=4, keep="last", batch_size=16, seed=2)
    model, _ = train_classifier(mutag, config, train, device="cpu")

    torch.manual_seed(2)
    split = stratified_split(mutag.labels.numpy(), seed=2)
    plain = MoleculeGNN(config)
    optimiser = torch.optim.Adam(plain.parameters(), lr=train.lr)
    loader = DataLoader(
        [mutag.graphs[i] for i in split["train"]],
        batch_size=16,
        shuffle=True,
        generator=torch.Generator().manual_seed(2),
    )
    for _ in range(4):
        plain.train()
        for batch in loader:
            optimiser.zero_grad()
            logits = plain(batch.x, batch.edge_index, batch=batch.batch)
            torch.nn.functional.cross_entropy(logits, batch.y).backward()
            optimiser.step()
    ours, theirs = model.state_dict(), plain.state_dict()
    for name in theirs:
        np.testing.assert_array_equal(ours[name].numpy(), theirs[name].numpy(), err_msg=name)
