"""How the share model's interval groups were chosen, on held-out scenarios of its design.

Usage: python benchmarks/quality/share_interval_groups.py [MODEL] [DRAWS]

MODEL: default models/default; DRAWS: default 100. The model's forecasts on the 300
scenarios of its data folder that training never fitted (calibration, validation and test
splits) are split at random by scenario, DRAWS times: intervals calibrated on 100 of them
(``wdn_explain.conformal.calibrate``, as ``wdn-explain calibrate`` does) are scored on the
other 200, per factor level. Per grouping, one line: the mean coverage, the largest gap
between a factor level's mean coverage and the nominal level, the mean lowest level, the
share of draws where every level lies within 3 points of nominal and the mean half-width.
Groupings: the schedule groups alone (``injection/pattern/timing``), the share forecast's
level after them and before them (shipped, :func:`wdn_explain.conformal.forecast_groups`).
Fresh scenarios play no part here (they confirm the choice: ``forecast_goals.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import torch

from wdn_explain.conformal import (
    CONFIDENCE,
    absolute_errors,
    calibrate,
    forecast_groups,
    intervals,
    share_level,
)
from wdn_explain.dataset import WaqDataset
from wdn_explain.model_folder import load_model
from wdn_explain.training import predict

N_CALIBRATION = 100
TOLERANCE = 0.03


def held_out(model_dir: str) -> dict[str, np.ndarray]:
    """Forecast, truth, schedule group, scenario and factor levels of every forecast of the
    held-out splits."""
    model, card = load_model(model_dir)
    parts = []
    for split in ("calib", "val", "test"):
        ds = WaqDataset.for_card(card, card.data.folder, split)
        pred = predict(model, ds)
        part = {"forecast": pred, "truth": ds.targets(), "sample": ds.mondrian_bins()}
        part["scenario"] = ds.sample_index()[0]
        for factor, lv in ds.factor_levels().items():
            part |= {f"level {factor}={v}": lv == v for v in np.unique(lv)}
        parts.append(part)
    names = set.intersection(*(set(p) for p in parts))
    return {k: np.concatenate([p[k] for p in parts]) for k in names}


GROUPINGS: dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]] = {
    "schedule groups": lambda d: d["sample"],
    "schedule, then share level": lambda d: np.char.add(
        np.char.add(d["sample"], "/"), share_level(d["forecast"])
    ),
    "share level, then schedule (shipped)": lambda d: forecast_groups(
        d["sample"], d["forecast"], False
    ),
}


def main() -> None:
    torch.set_num_threads(1)
    model_dir = sys.argv[1] if len(sys.argv) > 1 else "models/default"
    draws = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    data = held_out(model_dir)
    levels = sorted(k for k in data if k.startswith("level "))
    scenarios = np.unique(data["scenario"])
    errors = absolute_errors(data["truth"], data["forecast"])
    print(f"held-out scenarios: {len(scenarios)}, calibrated on {N_CALIBRATION} per draw")
    for name, grouping in GROUPINGS.items():
        groups = grouping(data)
        gen = np.random.default_rng(0)  # the same draws for every grouping
        coverage, width = [], []
        for _ in range(draws):
            calib = np.isin(data["scenario"], gen.permutation(scenarios)[:N_CALIBRATION])
            record = calibrate(errors[calib], groups[calib], groups=name)
            lower, upper = intervals(record, data["forecast"][~calib], groups[~calib])
            truth = data["truth"][~calib]
            covered = (truth >= lower) & (truth <= upper)
            coverage.append([covered[data[k][~calib]].mean() for k in levels] + [covered.mean()])
            width.append(((upper - lower) / 2).mean())
        per_level = np.array(coverage)[:, :-1]
        gap = np.abs(per_level.mean(axis=0) - CONFIDENCE)
        within = (np.abs(per_level - CONFIDENCE) <= TOLERANCE).all(axis=1).mean()
        print(
            f"{name}: coverage {np.mean(coverage, axis=0)[-1]:.3f}, largest level gap "
            f"{gap.max():.3f} ({levels[int(gap.argmax())][6:]}), lowest level "
            f"{per_level.min(axis=1).mean():.3f}, every level within {TOLERANCE:g} in "
            f"{within:.2f} of draws, mean half-width {np.mean(width):.4f}"
        )


if __name__ == "__main__":
    main()
