"""Throughput of WAQ generation and timeline explanation on a local Dask cluster with 1 and
2 worker processes, against a local serial run in the same process (one figure per line).

Usage: python benchmarks/speed/bench_cluster.py [N_SCENARIOS] [DURATION_S]

Generation: N_SCENARIOS (default 24) of simulations/waq.yaml. Explanation: one scenario of
DURATION_S seconds (default 7200) with the shipped default model, every step against both
references. Each cluster run is checked to give the serial run's bytes. Workers import
the package before the clock starts (a one-off cost of a few seconds per worker process).
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from distributed import Client, LocalCluster

from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import load_config
from wdn_explain.shipped import default_model
from wdn_explain.waq import generate_waq

ROOT = Path(__file__).resolve().parents[2]


def _bytes(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.glob("scenario_*.npz"))]


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(1)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    duration_s = int(sys.argv[2]) if len(sys.argv) > 2 else 7200
    config = load_config(ROOT / "simulations" / "waq.yaml").model_copy(update={"n_scenarios": n})
    scenario = config.scenario_config(0).model_copy(update={"duration_s": duration_s})
    model = default_model()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        generate_waq(config, tmp / "serial", n_workers=1)
        print(f"generation, serial here: {n / (time.perf_counter() - start):.2f} scenarios/s")
        start = time.perf_counter()
        timeline, _ = explain_scenario(scenario, model, out=tmp / "serial.npz")
        n_steps = 2 * len(timeline)  # both references
        print(f"explanation, serial here: {n_steps / (time.perf_counter() - start):.2f} steps/s")
        for workers in (1, 2):
            with LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster:
                address = cluster.scheduler_address
                with Client(address) as client:  # warm up: imports (torch, EPyT-Flow)
                    client.run(importlib.import_module, "wdn_explain.pipeline")
                    client.run(importlib.import_module, "wdn_explain.training")
                start = time.perf_counter()
                out = generate_waq(config, tmp / f"cluster{workers}", scheduler=address)
                rate = n / (time.perf_counter() - start)
                same = _bytes(out) == _bytes(tmp / "serial")
                print(
                    f"generation, {workers} Dask workers: {rate:.2f} scenarios/s (same bytes: {same})"
                )
                path = tmp / f"cluster{workers}.npz"
                start = time.perf_counter()
                explain_scenario(scenario, model, out=path, scheduler=address)
                rate = n_steps / (time.perf_counter() - start)
                same = path.read_bytes() == (tmp / "serial.npz").read_bytes()
                print(
                    f"explanation, {workers} Dask workers: {rate:.2f} steps/s (same bytes: {same})"
                )
    print(f"load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
