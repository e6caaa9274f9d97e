"""The forecast goals of issue 18 measured on fresh scenarios, one figure per line.

Usage: python benchmarks/quality/forecast_goals.py FRESH_DATA [MODEL] [FIT_DATA]

FRESH_DATA: a WAQ folder of the model's design simulated with an unseen seed (every
scenario is scored: split ``all``); MODEL: default models/default; FIT_DATA: where the tree
baseline is fitted (default: the model card's data folder). Prints the share model's MAE
beside the tree, persistence and climatology, on forecasts with a switch inside the horizon,
the worst factor level, the intervals' coverage overall and per factor level, and whether
the worst 1 % of scenarios meet MAE <= 0.05 or carry the uncertainty notice.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wdn_explain.conformal import WIDE_INTERVAL, intervals
from wdn_explain.dataset import WaqDataset
from wdn_explain.evaluation import forecast_bins
from wdn_explain.model_folder import load_model
from wdn_explain.training import evaluate, predict


def main() -> None:
    torch.set_num_threads(1)
    fresh = sys.argv[1]
    model_dir = sys.argv[2] if len(sys.argv) > 2 else "models/default"
    model, card = load_model(model_dir)
    fit_dir = sys.argv[3] if len(sys.argv) > 3 else card.data.folder
    ds = WaqDataset.for_card(card, fresh, "all")
    fit_on = WaqDataset.for_card(card, fit_dir, "train")
    res = evaluate(model, ds, conformal=card.conformal, tree_data=fit_on)
    print(f"fresh scenarios: {ds.arrays.n_scenarios}, forecasts: {res['n_samples']}")
    for name in ("", "tree_", "persistence_", "climatology_"):
        print(f"{name or 'model_'}mae {res[name + 'mae']:.4f}")
    print(f"model vs tree: {100 * (1 - res['mae'] / res['tree_mae']):.1f} % lower")
    for row in res["per_factor"]["switch"]:
        gain = 100 * (1 - row["model_mae"] / row["tree_mae"])
        print(
            f"switch {row['level']}: model {row['model_mae']:.4f} tree {row['tree_mae']:.4f} "
            f"({gain:.1f} % lower; {row['n_samples']} forecasts)"
        )
    rows = [(f, r) for f, rs in res["per_factor"].items() for r in rs]
    for factor, r in rows:
        print(
            f"level {factor}={r['level']}: model {r['model_mae']:.4f} tree {r['tree_mae']:.4f}"
            + (f" coverage {r['coverage']:.3f}" if "coverage" in r else "")
        )
    factor, worst = max(rows, key=lambda fr: fr[1]["model_mae"])
    print(f"worst factor level: {factor}={worst['level']} MAE {worst['model_mae']:.4f}")
    if "coverage" not in res:
        return
    print(f"coverage {res['coverage']:.3f} at nominal {res['confidence']:.2f}")
    print(f"mean half-width {res['half_width']:.4f}")
    cover = [r["coverage"] for _, r in rows]
    print(f"coverage per factor level: {min(cover):.3f} to {max(cover):.3f}")
    pred, true = predict(model, ds), ds.targets()
    bins = forecast_bins(ds, pred, groups=card.conformal["groups"])
    lower, upper = intervals(card.conformal, pred, bins)
    per = ds.n_times
    mae = np.abs(pred - true).reshape(-1, per).mean(axis=1)
    flagged = ((upper - lower) / 2 > WIDE_INTERVAL).reshape(-1, per).any(axis=1)
    worst_1 = np.argsort(mae)[::-1][: max(1, len(mae) // 100)]
    ok = (mae[worst_1] <= 0.05) | flagged[worst_1]
    print(
        f"worst 1 % of scenarios ({len(worst_1)}): MAE {mae[worst_1].min():.3f}-"
        f"{mae[worst_1].max():.3f}, {int(ok.sum())} meet MAE <= 0.05 or carry the notice"
    )
    print(f"scenarios with the uncertainty notice: {int(flagged.sum())} of {len(mae)}")


if __name__ == "__main__":
    main()
