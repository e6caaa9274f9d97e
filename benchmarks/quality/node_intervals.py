"""Which conformal groups suit the node model's intervals, one figure per line.

Usage: python benchmarks/quality/node_intervals.py FRESH_DATA [MODEL]

Calibrates the 90 % intervals of a node-level model (default models/hanoi-nodes) on the
calibration split of its training data four ways and prints, on every scenario of
FRESH_DATA, the coverage and mean half-width of each, overall and per node-forecast level
(dry below 0.005 and 0.005-0.05 mg/L, then 0.05-0.2, 0.2-0.5, >= 0.5 mg/L), and the range of the coverage
over the factor levels of ``evaluate`` (all node forecasts, and chlorinated ones only):

- ``sample groups``: every node of a forecast in its sample's group (injection, schedule,
  timing), as the share model;
- ``dry/chlorinated, raw centre``: those groups split by dry or chlorinated node forecast,
  errors and intervals around the raw forecast (a negative forecast of a dry node counts as
  an error in calibration, but its served interval, clipped to [0, 0], covers it);
- ``dry/chlorinated``: the same groups around the forecast clipped to [0, inf);
- ``node forecast level`` (shipped, :func:`wdn_explain.conformal.node_bins`): the
  dry group split in two, the chlorinated group in three bands; a band too rare for the level takes the
  chlorinated group's half-width;
- ``node forecast level, front nearby``: those groups, each split by whether chlorine now
  reaches :data:`~wdn_explain.conformal.DRY_MG_L` at the node or within two pipes of it
  (known at forecast time: where a front can arrive within the horizon).

Each grouping's coverage is also given where the *true* chlorine is 0.05-0.2 mg/L, just
below the usual minimum residual (issue 31's goal: >= 0.75 at 90 %). Ends with the shipped
grouping's coverage per factor level (all / chlorinated).
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wdn_explain.conformal import (
    DRY_MG_L,
    absolute_errors,
    calibrate,
    half_widths,
    intervals,
    node_bins,
    node_level,
)
from wdn_explain.dataset import WaqDataset
from wdn_explain.features import LABEL_RANGE
from wdn_explain.model_folder import load_model
from wdn_explain.training import predict


def dry_or_chlorinated(bins: np.ndarray) -> np.ndarray:
    """Node groups without the level's band: ``.../chlorinated/0.2-0.5`` to
    ``.../chlorinated``, ``.../dry/< 0.005`` to ``.../dry``."""
    coarse = [b.rsplit("/", 1)[0] for b in bins.ravel()]
    return np.array(coarse).reshape(bins.shape)


def front_nearby(dataset: WaqDataset) -> np.ndarray:
    """Per forecast and node, whether chlorine now reaches DRY_MG_L at the node or at a node
    within two pipes of it (either direction), shape (N, n)."""
    now = dataset.persistence()
    src, dst = dataset.arrays.edge_index
    reach = now.copy()
    for _ in range(2):
        spread = reach.copy()
        np.maximum.at(spread.T, dst, reach.T[src])
        reach = spread
    return reach >= DRY_MG_L


def with_front(bins: np.ndarray, front: np.ndarray) -> np.ndarray:
    """``bins`` with ``/front`` or ``/no front`` appended."""
    return np.char.add(np.char.add(bins.astype(str), "/"), np.where(front, "front", "no front"))


def main() -> None:
    torch.set_num_threads(1)
    fresh = sys.argv[1]
    model_dir = sys.argv[2] if len(sys.argv) > 2 else "models/hanoi-nodes"
    model, card = load_model(model_dir)
    limits = LABEL_RANGE[card.input_spec.target]
    calib, test = (
        WaqDataset.for_card(card, card.data.folder, "calib"),
        WaqDataset.for_card(card, fresh, "all"),
    )
    pred_calib, pred = predict(model, calib), predict(model, test)
    truth, n = test.targets(), pred.shape[1]
    node_calib, node_test = (
        node_bins(calib.mondrian_bins(), pred_calib),
        node_bins(test.mondrian_bins(), pred),
    )
    level = node_level(pred)
    chlorinated = pred >= DRY_MG_L
    factors = test.factor_levels()
    for name, bins_calib, bins, clipped in (
        (
            "sample groups",
            np.repeat(calib.mondrian_bins()[:, None], n, axis=1),
            np.repeat(test.mondrian_bins()[:, None], n, axis=1),
            True,
        ),
        (
            "dry/chlorinated, raw centre",
            dry_or_chlorinated(node_calib),
            dry_or_chlorinated(node_test),
            False,
        ),
        ("dry/chlorinated", dry_or_chlorinated(node_calib), dry_or_chlorinated(node_test), True),
        (
            "node forecast level, front nearby",
            with_front(node_calib, front_nearby(calib)),
            with_front(node_test, front_nearby(test)),
            True,
        ),
        ("node forecast level", node_calib, node_test, True),
    ):
        if clipped:
            record = calibrate(absolute_errors(calib.targets(), pred_calib, limits), bins_calib)
            lower, upper = intervals(record, pred, bins, limits)
        else:
            record = calibrate(np.abs(calib.targets() - pred_calib), bins_calib)
            half = half_widths(record, bins)
            lower, upper = np.clip(pred - half, *limits), np.clip(pred + half, *limits)
        covered, half = (truth >= lower) & (truth <= upper), (upper - lower) / 2
        print(f"{name}: coverage {covered.mean():.3f}, mean half-width {half.mean():.4f} mg/L")
        for part in np.unique(level):
            sel = level == part
            print(
                f"{name}, {part} node forecasts ({sel.mean():.1%}): coverage "
                f"{covered[sel].mean():.3f}, mean half-width {half[sel].mean():.4f} mg/L"
            )
        band = (truth >= DRY_MG_L) & (truth < 0.2)
        print(
            f"{name}, true chlorine 0.05-0.2 mg/L ({band.mean():.1%}): coverage "
            f"{covered[band].mean():.3f}, mean half-width {half[band].mean():.4f} mg/L"
        )
        rows = [
            (f"{factor}={value}", covered[levels == value], chlorinated[levels == value])
            for factor, levels in factors.items()
            for value in np.unique(levels)
        ]
        every = [c.mean() for _, c, _ in rows]
        chl = [c[h].mean() for _, c, h in rows]
        print(
            f"{name}, coverage per factor level: {min(every):.3f} to {max(every):.3f}; "
            f"chlorinated node forecasts: {min(chl):.3f} to {max(chl):.3f}"
        )
    for label, c, h in rows:  # the last grouping's: the shipped one
        print(
            f"node forecast level, {label}: coverage {c.mean():.3f}, chlorinated {c[h].mean():.3f}"
        )


if __name__ == "__main__":
    main()
