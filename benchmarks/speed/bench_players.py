"""Speed of explanations over a chosen player set (issue 32). One figure per line.

Usage: python benchmarks/speed/bench_players.py [MODEL_DIR] [DATA_DIR] [--steps 10]

For a node-level model on chlorine sensors (default ``models/hanoi-sensors``), every node's
forecast at ``--steps`` reports of the first scenario of ``DATA_DIR`` (default
``data/monitoring-fresh``) is explained twice, on one torch thread:

* over the model's sensors as the players (``players=``, the other nodes at their observed
  inputs; ``masked``): model calls and seconds per step;
* the straightforward way written here: every node as a player (``local``), then each
  target's MIs summed onto the sensors' part of every set (m_P(S) = sum of m(S') over
  S' with S' ∩ P = S, the game with the other nodes held at their observed inputs);
  node states and seconds per step, and the largest difference of the SVs (float rounding).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch


def projected_sv(explanation, players: np.ndarray) -> np.ndarray:
    """The sensors' SVs of the game over ``players`` from an explanation of every node."""
    keys_members, values = explanation.blocks.moebius()
    from wdn_explain.explain.hypercube import keys_to_members

    rows, cols = keys_to_members(keys_members)
    inside = np.isin(cols, players)
    sizes = np.bincount(rows[inside], minlength=len(values))  # |S' ∩ P| per MI
    sv = np.zeros(len(players))
    position = {int(p): k for k, p in enumerate(players)}
    for row, col in zip(rows[inside], cols[inside]):
        sv[position[int(col)]] += values[row] / sizes[row]
    return sv


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="models/hanoi-sensors")
    parser.add_argument("data", nargs="?", default="data/monitoring-fresh")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)

    from wdn_explain.dataset import WaqDataset
    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model_folder import load_model

    model, card = load_model(args.model)
    spec = card.input_spec
    data = WaqDataset.for_card(card, args.data, "all")
    players = np.flatnonzero(data.measured)
    graphs = [data.graph(int(data.scenarios[0]), t) for t in range(args.steps)]
    subset, every = GraphSHAPIQ(model, method="masked"), GraphSHAPIQ(model, method="local")
    subset.explain_nodes(graphs[0], players=players)  # warm both (imports, state graph)
    every.explain_nodes(graphs[0])

    start, calls = time.perf_counter(), 0
    found = []
    for g in graphs:
        found.append(subset.explain_nodes(g, players=players))
        calls += found[-1][0].n_graph_evaluations
    sub_s = (time.perf_counter() - start) / len(graphs)

    start, states, gap = time.perf_counter(), 0, 0.0
    for g, mine in zip(graphs, found):
        theirs = every.explain_nodes(g)
        states += theirs[0].n_node_states
        for a, b in zip(mine, theirs):
            gap = max(gap, float(np.abs(a.node_values("SV") - projected_sv(b, players)).max()))
    every_s = (time.perf_counter() - start) / len(graphs)

    print(
        f"model: {args.model} (sensors {list(spec.quality_node_sensors)}, "
        f"{card.model['num_layers']} layers)"
    )
    print(f"steps: {len(graphs)}, targets per step: {len(found[0])}, threads: 1")
    print(
        f"over the sensors (masked): {calls / len(graphs):.0f} model calls/step, {sub_s:.4f} s/step"
    )
    print(
        f"every node, then summed onto the sensors (local): {states / len(graphs):.0f} node states/step, {every_s:.4f} s/step"
    )
    print(f"speed-up: {every_s / sub_s:.1f}x")
    print(f"largest SV difference: {gap:.2e}")


if __name__ == "__main__":
    main()
