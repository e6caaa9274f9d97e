"""Which 4 chlorine sensors, and which model on them: the budget ranking behind
``models/hanoi-sensors``, one figure per line.

Usage: python benchmarks/quality/sensor_sets.py proxy DATA [K]
       python benchmarks/quality/sensor_sets.py rank DATA SENSORS HIDDEN LAYERS EPOCHS
       python benchmarks/quality/sensor_sets.py chama DATA K

``proxy``: greedy forward selection of K sensors (default 4) by a ridge regression (the same
inputs as the model on sensors, flattened: chlorine now and its history at the sensors, the
source and the plan at every node, the link flows and flushes) of chlorine at every node
``horizon`` reports ahead, fitted on DATA's training split and scored by the node MAE on its
validation split; also scores the 4-median of hop distances (3, 10, 16, 30) and no sensor.
``rank``: the GNN on SENSORS (comma-separated) trained as ``train --target node`` trains it
(the recipe's inputs and optimisation, cosine over EPOCHS, seed 0), without the test split's
baselines; prints the validation node MAE after every epoch.
``chama``: the K nodes chama's ``ImpactFormulation`` picks to see the training split's drops
below the minimum residual soonest (:func:`wdn_explain.placement_scores.chama_placement`; no
model needed, so it scales to L-Town's 785 nodes where ``sensors place`` would first need a
full-state node model), their drop detection on the validation split, and the ``sensors:``
block for the design.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from wdn_explain import recipe
from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.model import ModelConfig, forecaster
from wdn_explain.placement_scores import chama_placement, detection, first_drops
from wdn_explain.training import TrainConfig, fit

HOP_MEDIAN = ("3", "10", "16", "30")


def proxy(folder: str, k: int) -> None:
    arrays = load_waq_arrays(folder)
    common = dict(
        arrays=arrays,
        target="node_chlorine_mg_l",
        node_features=recipe.NODE_FEATURES,
        edge_features=recipe.EDGE_FEATURES,
    )
    train, val = (WaqDataset(folder, split, **common) for split in ("train", "val"))
    ids = arrays.manifest.network.node_ids
    horizon = train.horizon
    # columns of the full-state inputs: chlorine, source, plan (horizon), history (horizon)
    chlorine = [0, *range(2 + horizon, 2 + 2 * horizon)]
    known = [1, *range(2, 2 + horizon)]

    def parts(ds: WaqDataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s, t = ds.sample_index()
        edges = ds.stacked().edge_attr.reshape(len(s), -1).numpy()
        return ds.stacked().x.numpy(), edges, ds.targets()

    (x, e, y), (x_val, e_val, y_val) = parts(train), parts(val)

    def design(x: np.ndarray, e: np.ndarray, sensors: list[int]) -> np.ndarray:
        read = x[:, sensors][:, :, chlorine].reshape(len(x), -1)
        return np.hstack([read, x[:, :, known].reshape(len(x), -1), e, np.ones((len(x), 1))])

    def score(sensors: list[int]) -> float:
        a, b = design(x, e, sensors), design(x_val, e_val, sensors)
        w = np.linalg.solve(a.T @ a + 1e-2 * np.eye(a.shape[1]), a.T @ y)
        return float(np.abs(b @ w - y_val).mean())

    print(f"no sensor: validation node MAE {score([]):.4f} mg/L")
    median = [ids.index(n) for n in HOP_MEDIAN]
    print(f"sensors {list(HOP_MEDIAN)} (4-median of hops): {score(median):.4f} mg/L")
    chosen: list[int] = []
    for _ in range(k):
        best, node = min((score([*chosen, j]), j) for j in range(len(ids)) if j not in chosen)
        chosen.append(node)
        print(f"greedy sensors {[ids[j] for j in chosen]}: {best:.4f} mg/L", flush=True)


def rank(folder: str, sensors: str, hidden: int, layers: int, epochs: int) -> None:
    nodes = tuple(sensors.split(","))
    cfg = TrainConfig(epochs=epochs, target="node_chlorine_mg_l", quality_node_sensors=nodes)
    cfg = cfg.for_device(torch.device("cpu"))
    arrays = load_waq_arrays(folder)
    common = dict(
        arrays=arrays,
        target=cfg.target,
        node_features=recipe.NODE_FEATURES,
        edge_features=recipe.EDGE_FEATURES,
        quality_node_sensors=nodes,
    )
    train, val = (WaqDataset(folder, split, **common) for split in ("train", "val"))
    torch.manual_seed(cfg.seed)
    inputs = train.inputs
    config = ModelConfig(
        hidden_channels=hidden,
        num_layers=layers,
        in_channels=inputs.in_channels,
        edge_channels=inputs.edge_channels,
    )
    start = time.perf_counter()
    result = fit(forecaster(config, True), train.stacked(), val.stacked(), cfg, "cpu")
    seconds = time.perf_counter() - start
    print(f"sensors {list(nodes)}, hidden {hidden}, {layers} layers, {epochs} epochs")
    print(f"seconds: {seconds:.0f} (threads: {torch.get_num_threads()})")
    print(
        "validation node MAE per epoch: " + ", ".join(f"{h['val_mae']:.4f}" for h in result.history)
    )


def chama(folder: str, k: int) -> None:
    arrays = load_waq_arrays(folder)
    train, val = (
        WaqDataset(folder, split, arrays=arrays, target="node_chlorine_mg_l")
        for split in ("train", "val")
    )
    residual = train.inputs.min_residual_mg_l
    n_reports = arrays.chlorine_mg_l.shape[1]
    step_s = float(arrays.times_s[1] - arrays.times_s[0])
    ids = arrays.manifest.network.node_ids

    def drops(ds: WaqDataset) -> np.ndarray:
        return first_drops(arrays.chlorine_mg_l[ds.scenarios], residual)

    start = time.perf_counter()
    sensors = chama_placement(drops(train), k, n_reports)
    seconds = time.perf_counter() - start
    share, delay, impact = detection(drops(val), sensors, step_s, n_reports)
    print(f"chama, {k} sensors of {len(ids)} nodes, {seconds:.0f} s (threads: 1)")
    print(
        f"validation: drops seen {share:.3f}, time to detect {delay:.1f} min, impact {impact:.1f} min"
    )
    print("sensors:\n  quality_node_sensors: [" + ", ".join(ids[j] for j in sensors) + "]")


if __name__ == "__main__":
    torch.set_num_threads(1)
    mode, *rest = sys.argv[1:]
    if mode == "proxy":
        proxy(rest[0], int(rest[1]) if len(rest) > 1 else 4)
    elif mode == "chama":
        chama(rest[0], int(rest[1]))
    else:
        rank(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]))
