"""AlkaneCarbonyl (paper version) models on every molecule outside their training split.

Usage: ``python benchmarks/chem_paper_alkane_population.py [--root DATA_ROOT] [--paper-checkpoint
PTH] MODEL_DIR ...``. A 112-molecule test set measures a model to about 2 points (binomial);
the 4 326 molecules hold 3 426 outside any training split (all 3 201 unsampled negatives
included), which measure it to about 0.4 point. For each model folder prints its test
accuracy and, on the molecules outside its training split, the share of positives and of
negatives it gets right and their 1:2 mixture (the class ratio of the paper's pool: what the
expected test accuracy is). ``--paper-checkpoint``: the GraphSHAP-IQ repository's
``GCN_AlkaneCarbonyl_3_True_True_64_True_True_True.pth`` (a state dict, loaded with
``weights_only=True``), whose training split is unknown: scored on all molecules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Batch

from wdn_explain.chem.datasets import load_dataset
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.chem.training import load_classifier, training_split


def scores(model: MoleculeGNN, graphs: list) -> tuple[float, float, float]:
    """Share of positives and of negatives predicted right, and their 1:2 mixture (%)."""
    batch = Batch.from_data_list(graphs)
    with torch.no_grad():
        pred = model(batch.x, batch.edge_index, batch.edge_attr, batch=batch.batch).argmax(1)
    pos = 100 * float((pred[batch.y == 1] == 1).float().mean())
    neg = 100 * float((pred[batch.y == 0] == 0).float().mean())
    return pos, neg, (pos + 2 * neg) / 3


def paper_checkpoint(path: Path) -> MoleculeGNN:
    """The paper's GCN-3 (hidden 64) state dict under MoleculeGNN's parameter names."""
    theirs = torch.load(path, weights_only=True, map_location="cpu")
    names = {"lin.": "head."}
    for i in range(3):
        names[f"node_model.conv_{i}."] = f"convs.{i}."
        names[f"node_model.batch_norm_{i}.module."] = f"norms.{i}."
    ours = {}
    for key, value in theirs.items():
        prefix = next(p for p in names if key.startswith(p))
        ours[names[prefix] + key[len(prefix) :]] = value
    model = MoleculeGNN(ChemModelConfig(architecture="GCN", in_channels=14, num_layers=3))
    model.load_state_dict(ours)
    return model.eval()


def main() -> None:
    torch.set_num_threads(1)
    args = sys.argv[1:]
    root, checkpoint = Path("../shared/datasets/chem"), None
    if "--root" in args:
        at = args.index("--root")
        root = Path(args[at + 1])
        del args[at : at + 2]
    if "--paper-checkpoint" in args:
        at = args.index("--paper-checkpoint")
        checkpoint = Path(args[at + 1])
        del args[at : at + 2]
    data = load_dataset("AlkaneCarbonyl", root, version="paper")
    labels = data.labels.numpy()
    if checkpoint is not None:
        model = paper_checkpoint(checkpoint)
        pos, neg, mix = scores(model, data.graphs)
        steps = int(
            torch.load(checkpoint, weights_only=True, map_location="cpu")[
                "node_model.batch_norm_0.module.num_batches_tracked"
            ]
        )
        print(
            f"paper's checkpoint ({steps} batches = {steps / 15:.0f} epochs of 15): all "
            f"{len(labels)} molecules: positives {pos:.1f} % negatives {neg:.1f} % 1:2 {mix:.2f} %"
        )
    rows = []
    for folder in args:
        model, card = load_classifier(folder)
        train = set(training_split(labels, card.train)["train"].tolist())
        outside = [g for i, g in enumerate(data.graphs) if i not in train]
        pos, neg, mix = scores(model, outside)
        rows.append((100 * card.accuracy["test"], mix))
        print(
            f"{Path(folder).name}: test {rows[-1][0]:.1f} % | outside its training split "
            f"({len(outside)}): positives {pos:.1f} % negatives {neg:.1f} % 1:2 {mix:.2f} %"
        )
    if len(rows) > 1:
        test, mix = np.mean(rows, axis=0)
        print(
            f"mean of {len(rows)}: test {test:.2f} % | 1:2 outside the training split {mix:.2f} %"
        )


if __name__ == "__main__":
    main()
