"""Speed of ``wdn-explain replay`` per step (issue 32: <= 0.3 s on Hanoi). One figure per line.

Usage: python benchmarks/speed/bench_replay.py [MODEL_DIR] [SCENARIO_YAML]

The scenario (default: the app's ``simulations/default_scenario.yaml``, 37 reports) is
simulated and its chlorine at the model's sensors (default ``models/hanoi-sensors``) written as
a readings CSV; then, on one torch thread:

* the replay (:func:`wdn_explain.replay.replay`): seconds per step between consecutive steps
  (flags, inputs, forecast, interval, risk, every node's exact explanation over the sensors,
  the step file written), median and worst, and its start (model, simulation) once;
* the offline timeline path written here: all reports' graphs at once
  (:func:`~wdn_explain.pipeline.scenario_graphs`), one batch of forecasts, intervals and
  risk for all, then every step's explanations over the same sensors: seconds per step.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default=str(REPO / "models" / "hanoi-sensors"))
    parser.add_argument(
        "scenario", nargs="?", default=str(REPO / "simulations/default_scenario.yaml")
    )
    args = parser.parse_args()
    torch.set_num_threads(1)

    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.explain_settings import DEFAULT_REFERENCE, ExplainSettings
    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.node_targets import node_forecasts
    from wdn_explain.pipeline import forecast_intervals, scenario_graphs, scenario_risk
    from wdn_explain.readings import Readings, readings_csv
    from wdn_explain.replay import replay
    from wdn_explain.scenario import load_config
    from wdn_explain.simulation import simulate

    scenario = load_config(args.scenario).scenario_config(0)
    model, card = load_model(args.model)
    network = load_network(scenario.network)
    result = simulate(scenario, network)
    sensors = tuple(card.input_spec.quality_node_sensors)
    index = [network.node_index(s) for s in sensors]
    folder = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    readings = folder / "readings.csv"
    simulated = Readings(result.times_s, sensors, result.node_chlorine_mg_l[:, index])
    readings.write_text("\n".join(readings_csv(simulated)) + "\n")

    stamps: list[float] = []
    start = time.perf_counter()
    out, _ = replay(
        readings,
        scenario,
        args.model,
        folder / "out",
        on_step=lambda s: stamps.append(time.perf_counter()),
    )
    per_step = np.diff([start, *stamps])[1:]  # the first interval holds the start-up
    print(f"replay steps: {len(out.steps)}")
    print(f"replay start-up and first step s: {stamps[0] - start:.3f}")
    print(f"replay s per step (median): {np.median(per_step):.3f}")
    print(f"replay s per step (worst): {per_step.max():.3f}")

    begin = time.perf_counter()
    graphs = scenario_graphs(result, network, card.input_spec)
    raw = node_forecasts(model, graphs)
    forecast = card.input_spec.physical(raw)
    forecast_intervals(
        card, scenario, network, result.times_s, forecast, result.node_chlorine_mg_l[0]
    )
    scenario_risk(card, scenario, network, raw)
    explainer = GraphSHAPIQ(
        model, progress=False, **ExplainSettings().explainer_options(DEFAULT_REFERENCE)
    )
    nodes = list(range(network.n_nodes))
    for graph in graphs:
        explainer.explain_nodes(graph, nodes, players=sorted(index))
    offline = (time.perf_counter() - begin) / len(graphs)
    print(f"offline timeline path s per step: {offline:.3f}")
    print(f"replay / offline per step: {np.median(per_step) / offline:.2f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
