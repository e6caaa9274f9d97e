"""Speed of WAQ generation and dataset building (one figure per line).

Usage: python benchmarks/bench_simulation.py [CONFIG] [N_SCENARIOS]

CONFIG defaults to simulations/waq.yaml (the monitoring design: simulations/monitoring.yaml).

Compares `generate_waq` (worker processes, one simulator setup per worker) with a
straightforward serial loop (one fresh EPyT-Flow simulation and file per scenario, in this
process), checks both give identical arrays, then times building the PyG dataset.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wdn_explain.dataset import WaqDataset
from wdn_explain.scenario import load_config
from wdn_explain.simulation import SimulationResult, simulate
from wdn_explain.waq import generate_waq, scenario_path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "simulations" / "waq.yaml"
    config = load_config(path)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else config.n_scenarios
    config = config.model_copy(update={"n_scenarios": n})
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
