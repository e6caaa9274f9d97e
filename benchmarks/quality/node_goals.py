"""The node model's goals of issue 18 measured on fresh scenarios, one figure per line.

Usage: python benchmarks/quality/node_goals.py FRESH_DATA [MODEL]

FRESH_DATA: a WAQ folder of the model's design simulated with an unseen seed (every
scenario is scored: split ``all``); MODEL: default models/hanoi-nodes. Prints the per-node
MAE (mg/L) and the compliance share's MAE (nodes below the card's minimum residual, derived
from the node forecast) beside persistence and the time-step climatology (fitted on the
fresh folder's own training split, as ``evaluate`` does for every model), the worst factor
level, and the coverage of the 90 % intervals per node forecast, overall and per factor
level. Goals: per-node MAE <= 0.03 mg/L, compliance MAE <= 0.02.
"""

from __future__ import annotations

import sys

import torch

from wdn_explain.dataset import WaqDataset
from wdn_explain.model_folder import load_model
from wdn_explain.training import evaluate


def main() -> None:
    torch.set_num_threads(1)
    fresh = sys.argv[1]
    model_dir = sys.argv[2] if len(sys.argv) > 2 else "models/hanoi-nodes"
    model, card = load_model(model_dir)
    inputs = card.input_spec
    ds = WaqDataset.for_card(card, fresh, "all")
    res = evaluate(model, ds, conformal=card.conformal)
    n_nodes = ds.arrays.chlorine_mg_l.shape[2]
    print(f"fresh scenarios: {ds.arrays.n_scenarios}, forecasts: {res['n_samples']} x {n_nodes}")
    for name in ("", "persistence_", "climatology_"):
        print(f"node {name or 'model_'}mae {res[name + 'mae']:.4f} mg/L")
    print(f"compliance share: nodes below {inputs.min_residual_mg_l:g} mg/L")
    for name in ("", "persistence_", "climatology_"):
        print(f"compliance {name or 'model_'}mae {res['compliance_' + name + 'mae']:.4f}")
    rows = [(f, r) for f, rs in res["per_factor"].items() for r in rs]
    for factor, r in rows:
        print(
            f"level {factor}={r['level']}: node {r['model_mae']:.4f} "
            f"(persistence {r['persistence_mae']:.4f}) compliance {r['compliance_model_mae']:.4f}"
            + (f" coverage {r['coverage']:.3f}" if "coverage" in r else "")
        )
    factor, worst = max(rows, key=lambda fr: fr[1]["model_mae"])
    print(f"worst factor level: {factor}={worst['level']} node MAE {worst['model_mae']:.4f}")
    if "coverage" in res:
        print(f"coverage {res['coverage']:.3f} at nominal {res['confidence']:.2f}")
        print(f"mean half-width {res['half_width']:.4f} mg/L")
        cover = [r["coverage"] for _, r in rows]
        print(f"coverage per factor level: {min(cover):.3f} to {max(cover):.3f}")


if __name__ == "__main__":
    main()
