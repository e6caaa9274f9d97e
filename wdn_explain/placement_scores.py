"""Sensor placements scored and compared at the same k: importance, random, chama.

Metrics of a placement (a tuple of node ids):

* **node MAE** (mg/L) of a fixed, cheap forecaster given only those sensors: scikit-learn's
  ``Ridge`` (alpha :data:`RIDGE_ALPHA`, one linear map to every node at once) on the model's
  inputs masked as ``InputSpec.quality_node_sensors`` masks them (chlorine 0 off the sensors,
  the ``measured`` flag, source, plan and flows kept), flattened. It is identical for every
  placement, deterministic, and fits the Hanoi design's 700 training scenarios in under a
  second on one core, so 22 placements cost seconds. It ranks placements as a forest does:
  scikit-learn's ``ExtraTreesRegressor`` (10 trees, all nodes at once) scored 0.0681, 0.0659
  and 0.0622 mg/L against its 0.0671, 0.0663 and 0.0573 on three random 4-sensor sets, in
  55-82 s each against 0.5-0.6 s (fresh scenarios, one thread, a busy machine). Fitted on
  the training split of the fit folder, scored on every forecast of the evaluation folder.
* **drop detection**: a *drop* at a node is a report whose chlorine falls below the minimum
  residual (0.2 mg/L) after a report at or above it. A scenario with a drop is detected when
  a sensor node drops too; the **time to detect** is the first drop at a sensor minus the
  first drop anywhere (minutes), over the detected scenarios; the **impact** (chama's
  objective) averages it over every scenario with a drop, an undetected one counting its
  remaining time plus one report.

The chama placement (Sandia's sensor placement, the ``[placement]`` extra with a MILP solver,
GLPK's ``glpsol``) minimises the mean time to detect over the same scenarios with chama's
``ImpactFormulation``: impact = a node's first drop minus the scenario's first drop; an
undetected scenario costs its remaining time plus one report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import ConfigError

if TYPE_CHECKING:
    from .dataset import WaqArrays
    from .features import InputSpec

RIDGE_ALPHA = 1.0
N_RANDOM = 20
"""Random placements the importance placement is compared with."""


@dataclass(frozen=True)
class PlacementScore:
    """The metrics of one placement (see the module docstring)."""

    name: str
    sensors: tuple[str, ...]
    node_mae_mg_l: float
    detected_share: float
    time_to_detect_min: float
    impact_min: float


def sensor_mae(
    inputs: InputSpec,
    sensors: Sequence[str],
    fit: tuple[str, WaqArrays],
    evaluate: tuple[str, WaqArrays],
    split_seed: int = 0,
) -> float:
    """Node MAE (mg/L) of the ridge forecaster given only ``sensors`` (module docstring);
    ``fit`` and ``evaluate`` are (folder, arrays) pairs."""
    from sklearn.linear_model import Ridge

    from .dataset import WaqDataset

    spec = replace(inputs, quality_node_sensors=tuple(sensors))
    train = WaqDataset.for_inputs(fit[0], "train", spec, split_seed=split_seed, arrays=fit[1])
    scored = WaqDataset.for_inputs(evaluate[0], "all", spec, arrays=evaluate[1])
    ridge = Ridge(alpha=RIDGE_ALPHA).fit(train.flat_inputs(), train.targets())
    return float(np.abs(ridge.predict(scored.flat_inputs()) - scored.targets()).mean())


def first_drops(chlorine_mg_l: np.ndarray, min_residual_mg_l: float) -> np.ndarray:
    """The report index of each node's first drop below ``min_residual_mg_l`` (module
    docstring) per scenario, shape (S, n) from (S, T, n) chlorine; -1 where none."""
    drop = (chlorine_mg_l[:, :-1] >= min_residual_mg_l) & (chlorine_mg_l[:, 1:] < min_residual_mg_l)
    return np.where(drop.any(axis=1), drop.argmax(axis=1) + 1, -1)


def detection(
    drops: np.ndarray, sensors: np.ndarray, step_s: float, n_reports: int
) -> tuple[float, float, float]:
    """For node indices ``sensors``, over the scenarios with a drop: the share a sensor sees,
    the mean time to detect over those seen (minutes; NaN when none is), and chama's
    objective, the mean impact (minutes; an unseen scenario counts as detected at report
    ``n_reports``, the number of reports: its remaining time plus one report)."""
    events = (drops >= 0).any(axis=1)
    first = np.where(drops >= 0, drops, np.iinfo(np.int64).max).min(axis=1)[events]
    at_sensors = drops[events][:, sensors]
    seen = (at_sensors >= 0).any(axis=1)
    detected = np.where(at_sensors >= 0, at_sensors, n_reports).min(axis=1)
    delay = (detected - first) * step_s / 60.0
    if not events.any():
        return float("nan"), float("nan"), float("nan")
    seen_delay = float(delay[seen].mean()) if seen.any() else float("nan")
    return float(seen.mean()), seen_delay, float(delay.mean())


def random_placements(n_nodes: int, k: int, count: int = N_RANDOM, seed: int = 0) -> list:
    """``count`` random placements of ``k`` distinct node indices (seeded)."""
    generator = np.random.default_rng(seed)
    return [np.sort(generator.choice(n_nodes, size=k, replace=False)) for _ in range(count)]


def chama_placement(drops: np.ndarray, k: int, n_reports: int) -> np.ndarray:
    """The ``k`` node indices chama's ``ImpactFormulation`` picks to minimise the mean time
    to detect (in reports) over the scenarios with a drop (module docstring).

    Raises:
        ConfigError: chama, pyomo or the GLPK solver missing; no scenario has a drop.
    """
    try:
        import chama
        import pandas as pd
    except ImportError:
        raise ConfigError(
            "the chama placement needs chama and GLPK: pip install 'wdn-explain[placement]' "
            "and the glpk-utils package (glpsol)"
        ) from None
    events = np.flatnonzero((drops >= 0).any(axis=1))
    if not len(events):
        raise ConfigError(
            "no scenario drops below the minimum residual: chama has nothing to place"
        )
    rows = []
    for s in events:
        first = drops[s][drops[s] >= 0].min()
        rows += [
            (f"s{s}", f"n{j}", int(drops[s, j] - first)) for j in np.flatnonzero(drops[s] >= 0)
        ]
    impact = pd.DataFrame(rows, columns=["Scenario", "Sensor", "Impact"])
    scenario = pd.DataFrame(
        {
            "Scenario": [f"s{s}" for s in events],
            "Undetected Impact": [n_reports - drops[s][drops[s] >= 0].min() for s in events],
        }
    )
    sensor = pd.DataFrame({"Sensor": [f"n{j}" for j in range(drops.shape[1])]})
    for frame in (impact, scenario, sensor):  # chama checks for object columns (pandas 3: str)
        for column in ("Scenario", "Sensor"):
            if column in frame:
                frame[column] = frame[column].astype(object)
    try:
        result = chama.optimize.ImpactFormulation().solve(
            impact=impact, sensor=sensor, scenario=scenario, sensor_budget=k
        )
    except Exception as exc:  # pyomo raises bare errors when the solver is absent
        raise ConfigError(
            f"chama could not solve the placement ({exc}); is glpsol installed?"
        ) from None
    return np.sort([int(name[1:]) for name in result["Sensors"]])


def score(
    name: str,
    sensors: np.ndarray,
    node_ids: Sequence[str],
    inputs: InputSpec,
    fit: tuple[str, WaqArrays],
    evaluate: tuple[str, WaqArrays],
    split_seed: int = 0,
) -> PlacementScore:
    """The metrics of the placement at node indices ``sensors``, scored on ``evaluate``."""
    names = tuple(node_ids[i] for i in sensors)
    arrays = evaluate[1]
    drops = first_drops(arrays.chlorine_mg_l, inputs.min_residual_mg_l)
    step_s = float(arrays.times_s[1] - arrays.times_s[0])
    n_reports = arrays.chlorine_mg_l.shape[1]
    share, delay, impact = detection(drops, np.asarray(sensors), step_s, n_reports)
    mae = sensor_mae(inputs, names, fit, evaluate, split_seed)
    return PlacementScore(name, names, mae, share, delay, impact)


def comparison_table(scores: Sequence[PlacementScore], random: Sequence[PlacementScore]) -> str:
    """A Markdown table: each placement, then the mean (and spread) of the random ones."""
    lines = [
        "| placement | sensors | node MAE (mg/L) | drops detected | time to detect (min) "
        "| impact (min) |",
        "|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.name} | {', '.join(s.sensors)} | {s.node_mae_mg_l:.4f} | "
            f"{s.detected_share:.3f} | {s.time_to_detect_min:.1f} | {s.impact_min:.1f} |"
        )
    if random:
        mae = np.array([s.node_mae_mg_l for s in random])
        share = np.array([s.detected_share for s in random])
        delay = np.array([s.time_to_detect_min for s in random])
        impact = np.array([s.impact_min for s in random])
        lines.append(
            f"| mean of {len(random)} random | - | {mae.mean():.4f} (sd {mae.std():.4f}) | "
            f"{share.mean():.3f} | {np.nanmean(delay):.1f} | {impact.mean():.1f} |"
        )
    return "\n".join(lines) + "\n"


def check_comparison(model_dir: str | Path, compare_dir: str | Path, n_random: int) -> None:
    """Refuse a comparison before any placement work: ConfigError for a negative ``n_random``,
    DataError for a ``compare_dir`` that holds no WAQ design or one simulated on another
    network than the model's."""
    from .evaluation import check_data_matches
    from .model_folder import read_card
    from .waq import read_manifest

    if n_random < 0:
        raise ConfigError(f"random placements must be >= 0 (got {n_random})")
    check_data_matches(read_card(model_dir), read_manifest(compare_dir), compare_dir)


def compare(
    importance_sensors: Sequence[str],
    model_dir: str,
    fit_dir: str,
    evaluate_dir: str,
    n_scenarios: int | None,
    *,
    n_random: int = N_RANDOM,
    with_chama: bool = True,
) -> tuple[list[PlacementScore], list[PlacementScore]]:
    """Score the importance placement, chama's (placed on the first ``n_scenarios``, None for
    all, of ``fit_dir``: the scenarios the importance came from) and ``n_random`` random ones of the
    same k on every scenario of ``evaluate_dir``; (named scores, random scores).

    Raises:
        ConfigError: ``with_chama`` without chama or its solver; see :func:`check_comparison`.
        DataError: see :func:`check_comparison`.
    """
    from .dataset import load_waq_arrays
    from .model_folder import read_card

    check_comparison(model_dir, evaluate_dir, n_random)
    card = read_card(model_dir)
    inputs, seed = card.input_spec, card.train["split_seed"]
    fit = (fit_dir, load_waq_arrays(fit_dir))
    evaluate = (evaluate_dir, fit[1] if evaluate_dir == fit_dir else load_waq_arrays(evaluate_dir))
    node_ids = fit[1].manifest.network.node_ids
    k = len(importance_sensors)
    placements = {"global importance": np.array([node_ids.index(s) for s in importance_sensors])}
    if with_chama:
        chlorine = fit[1].chlorine_mg_l[:n_scenarios]
        drops = first_drops(chlorine, inputs.min_residual_mg_l)
        placements["chama (impact: time to detect)"] = chama_placement(drops, k, chlorine.shape[1])
    named = [
        score(name, p, node_ids, inputs, fit, evaluate, seed) for name, p in placements.items()
    ]
    random = [
        score(f"random {i}", p, node_ids, inputs, fit, evaluate, seed)
        for i, p in enumerate(random_placements(len(node_ids), k, n_random))
    ]
    return named, random
