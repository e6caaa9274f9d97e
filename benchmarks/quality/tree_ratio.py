"""A model against the strong tree on the same inputs, on fresh scenarios and the test split,
one figure per line (issue 31's goals: share MAE <= 0.8x the tree; node MAE and compliance
MAE <= 0.85x one tree per node; overall, on reservoir sources and around switches).

Usage: python benchmarks/quality/tree_ratio.py MODEL FRESH_DATA [FIT_DATA] [--trees FOLDER]

The tree (``wdn_explain.tree``: the model's inputs, the plan, the summaries; iterations tuned
on FIT_DATA's validation scenarios) is fitted once on FIT_DATA's training scenarios (default:
data/monitoring) -- once per node for a node model -- and forecasts the fresh folder (split
``all``) and FIT_DATA's test split in one call, so the 32 node trees of Hanoi are fitted once
for both (``evaluate`` fits them per folder). The test split's tree MAE equals the card's
``tree_mae`` (the same fit). With ``--trees FOLDER`` the tree forecasts are saved there
(``tree_<target>_<fresh|test>.npy``) or, when present, read back instead of refitted: the
trees do not depend on the GNN, so models of other widths or seeds on the same inputs are
scored against the same fit (32 node trees take about 45 CPU-minutes on a busy machine).
A node model's compliance share is the one it serves (``wdn_explain.compliance``: the
card's estimator per kind of injection), the tree's the share of its forecasts below the
minimum.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from wdn_explain.compliance import compliance_share
from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.evaluation import predict
from wdn_explain.features import LABEL_RANGE
from wdn_explain.model_folder import load_model
from wdn_explain.risk_model import dataset_risk, load_risk_model
from wdn_explain.tree import _tuned_forecast, tree_features


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("fresh")
    parser.add_argument("fit", nargs="?", default="data/monitoring")
    parser.add_argument("--trees", type=Path, help="folder of saved tree forecasts")
    args = parser.parse_args()
    model_dir, fresh_dir, fit_dir = args.model, args.fresh, args.fit
    model, card = load_model(model_dir)
    inputs = card.input_spec
    risk_net = load_risk_model(model_dir, card)
    fit_arrays = load_waq_arrays(fit_dir)
    train = WaqDataset.for_card(card, fit_dir, "train", fit_arrays)
    scored = {
        "fresh": WaqDataset.for_card(card, fresh_dir, "all"),
        "test": WaqDataset.for_card(card, fit_dir, "test", fit_arrays),
    }
    saved = {n: args.trees / f"tree_{inputs.target}_{n}.npy" for n in scored} if args.trees else {}
    if saved and all(path.exists() for path in saved.values()):
        tree = np.concatenate([np.load(saved[name], allow_pickle=False) for name in scored])
    else:
        tree = _fitted_trees(train, scored, inputs.node_level)
        for path, part in zip(saved.values(), np.split(tree, [len(scored["fresh"])])):
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, part)
    tree = np.clip(tree, *LABEL_RANGE[inputs.target])
    start = 0
    for name, ds in scored.items():
        trees, start = tree[start : start + len(ds)], start + len(ds)
        gnn = np.clip(inputs.physical(predict(model, ds)), *LABEL_RANGE[inputs.target])
        truth, levels = ds.targets(), ds.factor_levels()
        if inputs.node_level:  # the share the model serves (the card's estimator per kind)
            risk = dataset_risk(risk_net, card.risk, ds)
            minimum = inputs.min_residual_mg_l
            served = compliance_share(card.compliance, gnn, risk, levels["injection"], minimum)
        rows = {"all": np.ones(len(ds), bool)}
        rows |= {
            f"{k} {v}": levels[k] == v for k in ("injection", "switch") for v in set(levels[k])
        }
        for label, m in rows.items():
            g, t = np.abs(gnn[m] - truth[m]).mean(), np.abs(trees[m] - truth[m]).mean()
            line = f"{name} {label:22s} n={m.sum():5d} MAE model {g:.4f} tree {t:.4f} ratio {g / t:.2f}"
            if inputs.node_level:
                share = inputs.compliance
                gc = np.abs(served[m] - share(truth[m])).mean()
                tc = np.abs(share(trees[m]) - share(truth[m])).mean()
                line += f" | compliance model {gc:.4f} tree {tc:.4f} ratio {gc / tc:.2f}"
            print(line, flush=True)


def _fitted_trees(train: WaqDataset, scored: dict[str, WaqDataset], node_level: bool) -> np.ndarray:
    """The strong tree's forecasts of the scored datasets, in order (one tree per node of a
    node model), fitted on ``train``'s training scenarios and tuned on its validation ones."""
    fit, val = train.train_scenarios, train.split_of("val")
    x, x_val = tree_features(train, fit), tree_features(train, val)
    y, y_val = train.targets(fit), train.targets(val)
    x_out = np.concatenate([tree_features(d) for d in scored.values()])
    if not node_level:
        return _tuned_forecast(x, y, x_val, y_val, x_out, 0)
    columns = [_tuned_forecast(x, y[:, i], x_val, y_val[:, i], x_out, 0) for i in range(y.shape[1])]
    return np.stack(columns, axis=1)


if __name__ == "__main__":
    main()
