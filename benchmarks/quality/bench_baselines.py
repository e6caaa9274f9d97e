"""Approximation quality by budget (the paper's §4.2 experiment, in small).

MSE of k-SII (order 2) against the exact GraphSHAP-IQ values for the lambda-approximation
and shapiq's approximators with interactions outside I fixed to zero, on a few WAQ graphs
with a 2-layer model (|I| = 3023). One line per (method, budget).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wdn_explain.dataset import WaqDataset
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.explain.baselines import APPROXIMATORS, informed_approximation
from wdn_explain.model import ChlorineGNN


def mse(exact, approx) -> float:
    keys = [k for k in set(exact.dict_values) | set(approx.dict_values) if len(k) >= 1]
    return float(np.mean([(exact[k] - approx[k]) ** 2 for k in keys]))


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    data_dir = sys.argv[1]
    torch.manual_seed(0)
    model = ChlorineGNN(num_layers=2).eval()
    ds = WaqDataset(data_dir, "test")
    graphs = [ds[i] for i in (5, 40, 120)]
    explainer = GraphSHAPIQ(model)
    explanations = [explainer.explain(g) for g in graphs]
    exact = [e.interaction_values("k-SII", 2) for e in explanations]
    results: dict[tuple[str, int], list[float]] = {}
    for lam in range(1, 10):
        for g, ex in zip(graphs, exact):
            e = explainer.explain(g, budget=lam)
            results.setdefault(("lambda", e.n_graph_evaluations), []).append(
                mse(ex, e.interaction_values("k-SII", 2))
            )
    for name in APPROXIMATORS:
        for budget in (500, 1000, 2000, 3000):
            for g, e in zip(graphs, explanations):
                ref = e.interaction_values(*(("SV", 1) if name == "KernelSHAP" else ("k-SII", 2)))
                approx = informed_approximation(explainer, g, name, budget, seed=0)
                results.setdefault((name, budget), []).append(mse(ref, approx))
    for (name, budget), values in results.items():
        print(f"{name:<24} budget {budget:>6}: MSE {np.mean(values):.3e}")


if __name__ == "__main__":
    main()
