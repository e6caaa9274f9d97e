"""Speed of WAQ generation and dataset building (one figure per line).

Usage: python benchmarks/speed/bench_simulation.py [CONFIG] [N_SCENARIOS]

CONFIG defaults to simulations/waq.yaml (the monitoring design: simulations/monitoring.yaml,
L-Town: simulations/ltown.yaml).

First times one scenario at a time in this process: `simulate` as shipped against the
straightforward way (EPyT-Flow's `set_node_demand_pattern` per junction, which rebuilds the
sensor configuration on every call), and checks both give identical arrays. Then compares
`generate_waq` (worker processes, one simulator setup per worker) with a straightforward
serial loop (one fresh EPyT-Flow simulation and file per scenario, in this process), checks
both give identical arrays, then times building the PyG dataset. Prints the machine's load
and thread settings first: the figures depend on them.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

from wdn_explain import simulation
from wdn_explain.dataset import WaqDataset
from wdn_explain.network import load_network
from wdn_explain.scenario import load_config
from wdn_explain.simulation import SimulationResult, simulate
from wdn_explain.waq import generate_waq, scenario_path

ROOT = Path(__file__).resolve().parents[2]
N_PER_SCENARIO = 3  # scenarios timed one by one


def _patterns_one_by_one(sim, patterns: dict[str, np.ndarray], base: dict[str, float]) -> None:
    """The straightforward way: EPyT-Flow's own setter, once per junction."""
    for node, pattern in patterns.items():
        sim.set_node_demand_pattern(node, base[node], f"wdn_{node}", pattern)


def _per_scenario(config) -> None:
    """Seconds per scenario, shipped vs straightforward demand patterns, same arrays."""
    network = load_network(config.scenario.network)
    n = min(N_PER_SCENARIO, config.n_scenarios)
    configs = [config.scenario_config(i, network.junctions) for i in range(n)]
    simulation.simulate(configs[0], network)  # warm up EPANET and the imports
    timed = {}
    ways = {
        "shipped": simulation._set_demand_patterns,
        "EPyT-Flow setter per junction": _patterns_one_by_one,
    }
    for name, setter in ways.items():
        with mock.patch.object(simulation, "_set_demand_patterns", setter):
            start = time.perf_counter()
            timed[name] = [simulation.simulate(c, network) for c in configs]
            seconds = (time.perf_counter() - start) / n
        print(f"one scenario, {name}, {network.name}, mean of {n}: {seconds:.2f} s")
    same = all(
        np.array_equal(getattr(a, f), getattr(b, f))
        for a, b in zip(*timed.values(), strict=True)
        for f in ("node_chlorine_mg_l", "link_flow_lps", "node_demand_lps", "node_pressure_m")
    )
    print(f"identical arrays (shipped vs setter per junction): {same}")


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "simulations" / "waq.yaml"
    config = load_config(path)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else config.n_scenarios
    config = config.model_copy(update={"n_scenarios": n})
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load}, OMP_NUM_THREADS={threads}")
    _per_scenario(config)
    with tempfile.TemporaryDirectory() as tmp:
        fast = Path(tmp) / "fast"
        start = time.perf_counter()
        generate_waq(config, fast)
        t_fast = time.perf_counter() - start
        print(f"generate_waq, {path.name}, {n} scenarios, {os.cpu_count()} workers: {t_fast:.1f} s")
        serial = Path(tmp) / "serial"
        serial.mkdir()
        start = time.perf_counter()
        for i in range(n):
            simulate(config.scenario_config(i)).save(serial / f"scenario_{i:05d}.npz")
        t_serial = time.perf_counter() - start
        print(f"serial loop (fresh simulator per scenario, one process): {t_serial:.1f} s")
        print(f"speed-up: {t_serial / t_fast:.1f}x")
        same = all(
            np.array_equal(
                SimulationResult.load(scenario_path(fast, i)).node_chlorine_mg_l,
                SimulationResult.load(serial / f"scenario_{i:05d}.npz").node_chlorine_mg_l,
            )
            for i in range(n)
        )
        print(f"identical arrays: {same}")
        start = time.perf_counter()
        ds = WaqDataset(fast, "train")
        print(
            f"WaqDataset over {n} scenarios ({len(ds)} training samples): {time.perf_counter() - start:.2f} s"
        )


if __name__ == "__main__":
    main()
