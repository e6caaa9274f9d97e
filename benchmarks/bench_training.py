"""Seconds per training epoch of the default config on this machine's CPU.

Usage: python benchmarks/bench_training.py DATA_DIR [EPOCHS]

Compared in the same run: a plain PyTorch loop over PyG's DataLoader (per-sample
collation, no validation or early stopping), the straightforward way to train this model.
"""

from __future__ import annotations

import sys
import tempfile
import time

import torch
from torch_geometric.loader import DataLoader

from wdn_explain.dataset import WaqDataset
from wdn_explain.model import ChlorineGNN, ModelConfig
from wdn_explain.training import TrainConfig, train


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    data = sys.argv[1]
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as tmp:
        card = train(data, tmp, train_config=TrainConfig(epochs=epochs), device="cpu")
    print(
        f"wdn-explain train, default config, {epochs} epochs: {card['epoch_seconds']:.2f} s/epoch (2 threads)"
    )
    torch.manual_seed(0)
    dataset = WaqDataset(data, "train")
    model = ChlorineGNN(ModelConfig(in_channels=dataset.inputs.in_channels))
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    start = time.perf_counter()
    for batch in loader:
        optimiser.zero_grad()
        loss = torch.nn.functional.l1_loss(
            model(batch.x, batch.edge_index, batch.edge_attr, batch.batch), batch.y
        )
        loss.backward()
        optimiser.step()
    print(f"plain loop, one epoch, no validation: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
