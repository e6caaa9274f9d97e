"""Issue 31's risk goals on fresh scenarios: the expected calibration error and Brier score of
a node model's risk of non-compliance (:mod:`wdn_explain.risk`) beside the alternatives,
one figure a line:

- ``risk model`` (shipped where the folder has one, :mod:`wdn_explain.risk_model`):
  sigmoid(a_ik + b_ik g_i) of the risk GNN's output g_i, the heads from the card;
- ``logistic head per node and injection kind`` (on the forecast, the fallback of a folder
  without a risk model): sigmoid(a_ik + b_ik f_i), fitted on the calibration split
  (:func:`wdn_explain.risk.fit_risk`);
- ``logistic head per node``: one (a_i, b_i) for both kinds of injection;
- ``logistic head pooled``: one (a, b) for every node and kind;
- ``conformal predictive system``: crepes' Mondrian ``ConformalPredictiveSystem`` on the
  calibration residuals, grouped as the intervals are (:func:`wdn_explain.conformal.node_bins`),
  P(y < minimum) read off each forecast's predictive distribution (each group's residuals
  subsampled to ``--cps-residuals``, seeded: crepes holds test x calibration arrays);
- ``tree classifier``: one scikit-learn ``HistGradientBoostingClassifier`` per node on the
  strong tree's inputs (:func:`wdn_explain.tree.tree_features`), fitted on the training
  split, its iterations chosen on the validation split by Brier score (as the tree regressor
  by MAE); ``--no-tree`` leaves it out, ``--tree-every k`` fits it at every k-th node only
  and scores the risk model and the forecast's head on those nodes beside it (about 2 min
  per node on a busy core); ``--trees FOLDER`` saves each node's classifier risk there
  (``tree_risk_<node>.npy``) or reads it back when present: the trees do not depend on the
  GNN, so risk models trained again are scored against the same fit.

Then the 90 % node intervals on the fresh scenarios: coverage overall, its range over the
factor levels of ``evaluate`` and where the *true* chlorine is 0.05-0.2 mg/L (issue 31's
goals: within 3 points of nominal, >= 0.75), calibrated here on the calibration split as
``calibrate`` does: grouped by the risk model's risk bands with the lower bound at 0 where
the risk reaches the lower tail (:func:`wdn_explain.conformal.intervals`; with a risk
model), and grouped without the risk (sample group and node-forecast level).

    OMP_NUM_THREADS=1 python benchmarks/quality/risk_goals.py --model models/hanoi-nodes \\
        --data /work/data/monitoring-fresh
"""

from __future__ import annotations

import argparse
import warnings
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from wdn_explain.conformal import (
    DRY_MG_L,
    RISK_BANDS,
    absolute_errors,
    calibrate,
    intervals,
    node_bins,
)
from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.model_folder import load_model
from wdn_explain.risk import brier_score, calibration_error, fit_risk, node_risk
from wdn_explain.risk_model import load_risk_model
from wdn_explain.training import predict
from wdn_explain.tree import TREE_ITERATIONS, TREE_LEARNING_RATE, tree_features


def line(name: str, risk: np.ndarray, below: np.ndarray) -> None:
    print(
        f"{name}: calibration error {calibration_error(risk, below):.4f}, "
        f"Brier score {brier_score(risk, below):.5f}",
        flush=True,
    )


def interval_line(name, record, forecast, truth, bins, factors, risk=None) -> None:
    """Coverage of a conformal record's intervals: overall, per factor level, near the line."""
    lower, upper = intervals(record, forecast, bins, (0.0, np.inf), risk)
    covered = (truth >= lower) & (truth <= upper)
    per_level = [covered[v == level].mean() for v in factors.values() for level in np.unique(v)]
    near = (truth >= DRY_MG_L) & (truth < 0.2)
    print(
        f"{name}: coverage {covered.mean():.3f}, per factor level {min(per_level):.3f} to "
        f"{max(per_level):.3f}, true chlorine 0.05-0.2 mg/L ({near.sum()} forecasts) "
        f"{covered[near].mean():.3f}, mean half-width {((upper - lower) / 2).mean():.4f} mg/L",
        flush=True,
    )


def cps_risk(residuals, bins_calib, forecast, bins, minimum, most, seed=0) -> np.ndarray:
    """P(y < minimum) from crepes' Mondrian conformal predictive system."""
    from crepes import ConformalPredictiveSystem

    rng = np.random.default_rng(seed)
    keep = np.concatenate(
        [rng.permutation(np.flatnonzero(bins_calib == g))[:most] for g in np.unique(bins_calib)]
    )
    cps = ConformalPredictiveSystem().fit(residuals[keep], bins=bins_calib[keep])
    out = np.empty(len(forecast))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, len(forecast), 2000):
            part = slice(start, start + 2000)
            out[part] = cps.predict(
                forecast[part], bins=bins[part], y=np.full(len(forecast[part]), minimum), seed=seed
            )
    return out


def tree_risk(
    fit_on: WaqDataset,
    fresh: WaqDataset,
    minimum: float,
    nodes: np.ndarray,
    seed: int = 0,
    saved: Path | None = None,
) -> np.ndarray:
    """One gradient-boosted classifier per node of ``nodes`` (see the module docstring),
    read from or saved to the folder ``saved``."""
    if saved is not None:
        paths = [saved / f"tree_risk_{node}.npy" for node in nodes]
        if all(p.exists() for p in paths):
            return np.stack([np.load(p, allow_pickle=False) for p in paths], axis=1)
    risk = fitted_tree_risk(fit_on, fresh, minimum, nodes, seed)
    if saved is not None:
        saved.mkdir(parents=True, exist_ok=True)
        for column, path in zip(risk.T, paths):
            np.save(path, column)
    return risk


def fitted_tree_risk(
    fit_on: WaqDataset, fresh: WaqDataset, minimum: float, nodes: np.ndarray, seed: int = 0
) -> np.ndarray:
    """The classifiers of :func:`tree_risk` fitted here."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    train, val = fit_on.train_scenarios, fit_on.split_of("val")
    x, x_val, x_out = tree_features(fit_on, train), tree_features(fit_on, val), tree_features(fresh)
    y, y_val = fit_on.targets(train)[:, nodes] < minimum, fit_on.targets(val)[:, nodes] < minimum
    risk = np.empty((len(x_out), len(nodes)))
    for i in range(len(nodes)):
        if y[:, i].all() or not y[:, i].any():
            risk[:, i] = y[:, i].mean()
            continue
        tree = HistGradientBoostingClassifier(
            max_iter=TREE_ITERATIONS,
            learning_rate=TREE_LEARNING_RATE,
            early_stopping=False,
            random_state=seed,
        ).fit(x, y[:, i])
        staged = [brier_score(p[:, 1], y_val[:, i]) for p in tree.staged_predict_proba(x_val)]
        best = int(np.argmin(staged))
        risk[:, i] = next(islice(tree.staged_predict_proba(x_out), best, None))[:, 1]
    return risk


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="models/hanoi-nodes")
    parser.add_argument("--data", required=True, help="fresh scenarios (measured)")
    parser.add_argument("--cps-residuals", type=int, default=2000)
    parser.add_argument("--no-tree", action="store_true")
    parser.add_argument("--no-cps", action="store_true")
    parser.add_argument("--tree-every", type=int, default=1, help="the tree at every k-th node")
    parser.add_argument("--trees", type=Path, help="folder of saved tree classifier risks")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, card = load_model(args.model)
    minimum = card.input_spec.min_residual_mg_l
    arrays = load_waq_arrays(card.data.folder)
    calib = WaqDataset.for_card(card, card.data.folder, "calib", arrays)
    fresh = WaqDataset.for_card(card, args.data, "all")
    f_calib, f_fresh = predict(model, calib), predict(model, fresh)
    y_calib, y_fresh = calib.targets(), fresh.targets()
    below = y_fresh < minimum
    print(f"fresh node forecasts: {below.size}; below {minimum:g} mg/L: {below.mean():.4f}")
    kinds_calib, kinds = calib.factor_levels()["injection"], fresh.factor_levels()["injection"]
    risk_net = load_risk_model(args.model, card)
    scored = {}
    if risk_net is not None:
        scored["risk model (shipped)"] = node_risk(card.risk, predict(risk_net, fresh), kinds)
    record = fit_risk(f_calib, y_calib, kinds_calib, minimum)
    scored["logistic head per node and injection kind"] = node_risk(record, f_fresh, kinds)
    for name, risk in scored.items():
        line(name, risk, below)
    factors, errors = fresh.factor_levels(), absolute_errors(y_calib, f_calib, (0.0, np.inf))
    if risk_net is not None:
        risk_calib = node_risk(card.risk, predict(risk_net, calib), kinds_calib)
        banded = calibrate(errors, node_bins(calib.mondrian_bins(), f_calib, risk_calib))
        banded["risk_bands"] = list(RISK_BANDS)
        risk = scored["risk model (shipped)"]
        bins = node_bins(fresh.mondrian_bins(), f_fresh, risk)
        interval_line(
            "intervals grouped by the risk", banded, f_fresh, y_fresh, bins, factors, risk
        )
    plain = calibrate(errors, node_bins(calib.mondrian_bins(), f_calib))
    bins = node_bins(fresh.mondrian_bins(), f_fresh)
    interval_line("intervals without the risk", plain, f_fresh, y_fresh, bins, factors)
    one = fit_risk(f_calib, y_calib, np.full(len(kinds_calib), "any"), minimum)
    line("logistic head per node", node_risk(one, f_fresh, "any"), below)
    n = f_calib.shape[1]
    a, b = record["pooled"]
    pooled = {"heads": {"any": {"intercept": [a] * n, "slope": [b] * n}}}
    line("logistic head pooled", node_risk(pooled, f_fresh, "any"), below)
    if not args.no_cps:
        cps = cps_risk(
            (y_calib - f_calib).ravel(),
            node_bins(calib.mondrian_bins(), f_calib).ravel(),
            f_fresh.ravel(),
            node_bins(fresh.mondrian_bins(), f_fresh).ravel(),
            minimum,
            args.cps_residuals,
        )
        line("conformal predictive system (Mondrian)", cps.reshape(below.shape), below)
    if not args.no_tree:
        train = WaqDataset.for_card(card, card.data.folder, "train", arrays)
        nodes = np.arange(0, n, args.tree_every)
        which = "" if args.tree_every == 1 else f", nodes {', '.join(map(str, nodes))}"
        for name, risk in scored.items():
            line(f"{name}{which}", risk[:, nodes], below[:, nodes])
        tree = tree_risk(train, fresh, minimum, nodes, saved=args.trees)
        line(f"tree classifier per node{which}", tree, below[:, nodes])


if __name__ == "__main__":
    main()
