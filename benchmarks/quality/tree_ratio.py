"""A model against the strong tree on the same inputs, on fresh scenarios and the test split,
one figure per line (issue 31's goals: share MAE <= 0.8x the tree; node MAE and compliance
MAE <= 0.85x one tree per node; overall, on reservoir sources and around switches).

Usage: python benchmarks/quality/tree_ratio.py MODEL FRESH_DATA [FIT_DATA]

The tree (``wdn_explain.tree``: the model's inputs, the plan, the summaries; iterations tuned
on FIT_DATA's validation scenarios) is fitted once on FIT_DATA's training scenarios (default:
data/monitoring) -- once per node for a node model -- and forecasts the fresh folder (split
``all``) and FIT_DATA's test split in one call, so the 32 node trees of Hanoi are fitted once
for both (``evaluate`` fits them per folder). The test split's tree MAE equals the card's
``tree_mae`` (the same fit).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.evaluation import predict
from wdn_explain.features import LABEL_RANGE
from wdn_explain.model_folder import load_model
from wdn_explain.tree import _tuned_forecast, tree_features


def main() -> None:
    torch.set_num_threads(1)
    model_dir, fresh_dir = sys.argv[1], sys.argv[2]
    fit_dir = sys.argv[3] if len(sys.argv) > 3 else "data/monitoring"
    model, card = load_model(model_dir)
    inputs = card.input_spec
    fit_arrays = load_waq_arrays(fit_dir)
    train = WaqDataset.for_card(card, fit_dir, "train", fit_arrays)
    scored = {
        "fresh": WaqDataset.for_card(card, fresh_dir, "all"),
        "test": WaqDataset.for_card(card, fit_dir, "test", fit_arrays),
    }
    fit, val = train.train_scenarios, train.split_of("val")
    x, x_val = tree_features(train, fit), tree_features(train, val)
    y, y_val = train.targets(fit), train.targets(val)
    x_out = np.concatenate([tree_features(d) for d in scored.values()])
    if inputs.node_level:
        columns = [
            _tuned_forecast(x, y[:, i], x_val, y_val[:, i], x_out, 0) for i in range(y.shape[1])
        ]
        tree = np.stack(columns, axis=1)
    else:
        tree = _tuned_forecast(x, y, x_val, y_val, x_out, 0)
    tree = np.clip(tree, *LABEL_RANGE[inputs.target])
    start = 0
    for name, ds in scored.items():
        trees, start = tree[start : start + len(ds)], start + len(ds)
        gnn = np.clip(inputs.physical(predict(model, ds)), *LABEL_RANGE[inputs.target])
        truth, levels = ds.targets(), ds.factor_levels()
        rows = {"all": np.ones(len(ds), bool)}
        rows |= {
            f"{k} {v}": levels[k] == v for k in ("injection", "switch") for v in set(levels[k])
        }
        for label, m in rows.items():
            g, t = np.abs(gnn[m] - truth[m]).mean(), np.abs(trees[m] - truth[m]).mean()
            line = f"{name} {label:22s} n={m.sum():5d} MAE model {g:.4f} tree {t:.4f} ratio {g / t:.2f}"
            if inputs.node_level:
                share = inputs.compliance
                gc = np.abs(share(gnn[m]) - share(truth[m])).mean()
                tc = np.abs(share(trees[m]) - share(truth[m])).mean()
                line += f" | compliance model {gc:.4f} tree {tc:.4f} ratio {gc / tc:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
