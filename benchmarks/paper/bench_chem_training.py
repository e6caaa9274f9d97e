"""Chemistry training speed: seconds per epoch, PyG DataLoader loop against ``train_classifier``.

Usage: ``python benchmarks/paper/bench_chem_training.py [DATA_ROOT] [--epochs 20]`` (default
``../shared/datasets/chem``). Trains the paper's AlkaneCarbonyl GCN-3 (its data version, 900
training molecules, batch 64, dropout 0.5, Adam 1e-2) on one CPU thread, twice with the same
seed: the straightforward loop (PyG's DataLoader collating ``Data`` objects every batch of
every epoch, validation in batches of 64: the project's loop before issue 23's speed-up) and
:func:`wdn_explain.chem.training.train_classifier` (splits collated once, batches cut by
indexing, validation in one batch). Prints one figure per line, and whether the two give
the same weights (they draw the same batches and dropout masks).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch_geometric.loader import DataLoader

from wdn_explain.chem.datasets import load_dataset
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.chem.training import (
    PAPER_TRAINING,
    ChemTrainConfig,
    train_classifier,
    training_split,
)

SEED = 0


def dataloader_loop(data, config: ChemModelConfig, train: ChemTrainConfig) -> MoleculeGNN:
    """The straightforward loop: PyG DataLoaders, validation in batches, last epoch kept."""
    torch.manual_seed(train.seed)
    split = training_split(data.labels.numpy(), train)
    loaders = {
        k: DataLoader(
            [data.graphs[i] for i in v],
            batch_size=train.batch_size,
            shuffle=k == "train",
            generator=torch.Generator().manual_seed(train.seed),
        )
        for k, v in split.items()
    }
    model = MoleculeGNN(config)
    optimiser = torch.optim.Adam(model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
    for _ in range(train.epochs):
        model.train()
        for batch in loaders["train"]:
            optimiser.zero_grad()
            logits = model(batch.x, batch.edge_index, batch=batch.batch)
            loss = torch.nn.functional.cross_entropy(logits, batch.y)
            loss.backward()
            optimiser.step()
        model.eval()
        with torch.no_grad():
            for batch in loaders["val"]:
                logits = model(batch.x, batch.edge_index, batch=batch.batch)
                float(torch.nn.functional.cross_entropy(logits, batch.y, reduction="sum"))
    return model


def main() -> None:
    torch.set_num_threads(1)
    args = sys.argv[1:]
    epochs = 20
    if "--epochs" in args:
        at = args.index("--epochs")
        epochs = int(args[at + 1])
        del args[at : at + 2]
    root = Path(args[0] if args else "../shared/datasets/chem")
    data = load_dataset("AlkaneCarbonyl", root, version="paper")
    config = ChemModelConfig(
        architecture="GCN",
        in_channels=len(data.feature_names),
        hidden=64,
        num_layers=3,
        dropout=0.5,
    )
    train = ChemTrainConfig(
        epochs=epochs,
        patience=epochs,
        lr=1e-2,
        weight_decay=5e-4,
        keep="last",
        seed=SEED,
        **PAPER_TRAINING["AlkaneCarbonyl"],
    )
    start = time.perf_counter()
    plain = dataloader_loop(data, config, train)
    old = (time.perf_counter() - start) / epochs
    start = time.perf_counter()
    model, _ = train_classifier(data, config, train, device="cpu")
    new = (time.perf_counter() - start) / epochs
    same = all(
        torch.equal(a, b) for a, b in zip(plain.state_dict().values(), model.state_dict().values())
    )
    print(f"epochs timed: {epochs} (AlkaneCarbonyl paper version, GCN-3, 900 training molecules)")
    print(f"PyG DataLoader loop: {old:.3f} s per epoch")
    print(f"train_classifier: {new:.3f} s per epoch")
    print(f"speed-up: {old / new:.1f}x")
    print(f"same weights: {same}")


if __name__ == "__main__":
    main()
