"""Which conformal groups suit the node model's intervals, one figure per line.

Usage: python benchmarks/node_intervals.py FRESH_DATA [MODEL]

Calibrates the 90 % intervals of a node-level model (default models/hanoi-nodes) on the
calibration split of its training data twice -- with the share model's groups (injection,
schedule, timing: every node of a forecast in its sample's group) and with those groups
split by the node forecast's level (:func:`wdn_explain.conformal.node_bins`: dry below
0.05 mg/L, or chlorinated) -- and prints, on every scenario of FRESH_DATA, the coverage and
mean half-width of each, overall and for dry and chlorinated node forecasts.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wdn_explain.conformal import DRY_MG_L, calibrate, intervals, node_bins
from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.features import LABEL_RANGE
from wdn_explain.model_folder import load_model
from wdn_explain.training import predict


def main() -> None:
    torch.set_num_threads(1)
    fresh = sys.argv[1]
    model_dir = sys.argv[2] if len(sys.argv) > 2 else "models/hanoi-nodes"
    model, card = load_model(model_dir)
    inputs, seed = card.input_spec, card.train["split_seed"]
    calib = WaqDataset.for_inputs(card.data.folder, "calib", inputs, split_seed=seed)
    test = WaqDataset.for_inputs(
        fresh, "all", inputs, split_seed=seed, arrays=load_waq_arrays(fresh)
    )
    pred_calib, pred = predict(model, calib), predict(model, test)
    truth, n = test.targets(), pred.shape[1]
    dry = pred < DRY_MG_L
    for name, bins_calib, bins in (
        (
            "sample groups",
            np.repeat(calib.mondrian_bins()[:, None], n, axis=1),
            np.repeat(test.mondrian_bins()[:, None], n, axis=1),
        ),
        (
            "sample groups x node forecast level",
            node_bins(calib.mondrian_bins(), pred_calib),
            node_bins(test.mondrian_bins(), pred),
        ),
    ):
        record = calibrate(calib.targets() - pred_calib, bins_calib)
        lower, upper = intervals(record, pred, bins, LABEL_RANGE[inputs.target])
        covered, half = (truth >= lower) & (truth <= upper), (upper - lower) / 2
        print(f"{name}: coverage {covered.mean():.3f}, mean half-width {half.mean():.4f} mg/L")
        for part, sel in (("dry", dry), ("chlorinated", ~dry)):
            print(
                f"{name}, {part} node forecasts ({sel.mean():.0%}): coverage "
                f"{covered[sel].mean():.3f}, mean half-width {half[sel].mean():.4f} mg/L"
            )


if __name__ == "__main__":
    main()
