"""The sensor model's goals of issue 32 measured on fresh scenarios, one figure per line.

Usage: python benchmarks/quality/sensor_goals.py FRESH_DATA TRAINING_DATA [SENSOR_MODEL ...]
       [--full models/hanoi-nodes | --full '']

Every scenario of FRESH_DATA is scored (split ``all``). Prints the per-node MAE (mg/L, the
raw forecast as ``evaluate`` scores it) of persistence (chlorine now at every node: the full
state, which a sensor model does not read), the time-step climatology, the full-state node
model ``--full`` (``--full ''``: none, as on L-Town) and of each
model on chlorine sensors (default ``models/hanoi-sensors``), the ratio of the two, and the
MAE of one tree per node given the same inputs as each model (sensors, plan, arrival, ...;
:func:`wdn_explain.tree.tree_forecast` fitted on TRAINING_DATA's training split, its
iterations chosen on its validation split), overall and for reservoir and booster sources.
On a large network the trees are fitted at the sample of nodes ``evaluate`` fits them at (:func:`wdn_explain.tree.tree_nodes`, every k-th node) and the models are scored
on the same nodes beside them. Goals: within 1.5x of the full-state model, better than the
trees.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.evaluation import predict
from wdn_explain.model_folder import load_model
from wdn_explain.tree import tree_forecast, tree_nodes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("fresh")
    parser.add_argument("training")
    parser.add_argument("models", nargs="*", default=["models/hanoi-sensors"])
    parser.add_argument("--full", default="models/hanoi-nodes")
    args = parser.parse_args()
    torch.set_num_threads(1)
    fresh, training = load_waq_arrays(args.fresh), load_waq_arrays(args.training)

    def scored(model_dir: str) -> tuple[np.ndarray, WaqDataset, object]:
        model, card = load_model(model_dir)
        ds = WaqDataset.for_card(card, args.fresh, "all", fresh)
        return np.abs(predict(model, ds) - ds.targets()), ds, card

    full_error, ds, _ = scored(args.full or args.models[0])
    reservoir = ds.factor_levels()["injection"] == "reservoir"
    print(f"fresh scenarios: {fresh.n_scenarios}, forecasts: {len(ds)} x {full_error.shape[1]}")
    print(f"threads: {torch.get_num_threads()}")

    def line(name: str, error: np.ndarray) -> str:
        parts = (error.mean(), error[reservoir].mean(), error[~reservoir].mean())
        return f"{name}: node MAE {parts[0]:.4f} mg/L (reservoir {parts[1]:.4f}, booster {parts[2]:.4f})"

    print(line("persistence (every node now)", np.abs(ds.persistence() - ds.targets())))
    print(line("time-step climatology", np.abs(ds.climatology() - ds.targets())))
    if args.full:
        print(line(f"full state ({args.full})", full_error))
    scored_models = []
    for model_dir in args.models:  # the models first: the trees take CPU-minutes
        error, ds, card = scored(model_dir)
        sensors = card.input_spec.quality_node_sensors
        layers = card.model["num_layers"]
        print(line(f"{model_dir} ({layers} layers, sensors {list(sensors)})", error))
        if args.full:
            ratio = error.mean() / full_error.mean()
            print(f"{model_dir}: ratio to full state {ratio:.2f}x (goal <= 1.5x)", flush=True)
        scored_models.append((model_dir, error, ds, card))
    nodes = tree_nodes(full_error.shape[1])
    ids = ds.arrays.manifest.network.node_ids
    sampled = len(nodes) < full_error.shape[1]
    which = f" at nodes {', '.join(ids[i] for i in nodes)}" if sampled else ""
    trees: dict[object, np.ndarray] = {}  # the trees' errors per model inputs
    for model_dir, error, ds, card in scored_models:
        sensors, inputs = card.input_spec.quality_node_sensors, card.input_spec
        if inputs not in trees:
            fit_on = WaqDataset.for_card(card, args.training, "train", training)
            forecast = tree_forecast(ds, fit_on, nodes=nodes)
            trees[inputs] = np.abs(forecast - ds.targets()[:, nodes])
            features = ", ".join(inputs.node_features)
            name = f"one tree per node on sensors {list(sensors)} and {features}{which}"
            print(line(name, trees[inputs]), flush=True)
        if sampled:
            print(line(f"{model_dir}{which}", error[:, nodes]))
        ratio = error[:, nodes].mean() / trees[inputs].mean()
        print(f"{model_dir}: against the trees{which} {ratio:.2f}x (goal < 1)")


if __name__ == "__main__":
    main()
