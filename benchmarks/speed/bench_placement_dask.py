"""Global importance of every node's reading (``sensors place``) on a 2-worker Dask
LocalCluster against one process, same scenarios, same bytes (one figure per line).

Usage: python benchmarks/speed/bench_placement_dask.py [N_SCENARIOS] [MODEL] [DATA]

Defaults: 100 scenarios of data/monitoring with models/hanoi-nodes, chunks of 10. Both runs
start from empty folders and include loading the model and the data; the cluster run also
includes starting its two single-threaded worker processes (what ``--workers 2`` costs a
user). The one-process run is timed first, then the cluster run; the importance values must
be equal byte for byte. Prints the machine's load average before and after: on a shared
machine the ratio is only as good as the load was steady.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from wdn_explain.placement import global_importance


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(1)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    model = sys.argv[2] if len(sys.argv) > 2 else "models/hanoi-nodes"
    data = sys.argv[3] if len(sys.argv) > 3 else "data/monitoring"
    print(f"scenarios: {n} of {data}, model {model}, torch threads {torch.get_num_threads()}")
    print(f"cores usable: {len(os.sched_getaffinity(0))}, load before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        timings, values = {}, {}
        for name, workers in (("one process", 1), ("2-worker Dask LocalCluster", 2)):
            start = time.perf_counter()
            found = global_importance(model, data, Path(tmp) / name, n_scenarios=n, workers=workers)
            timings[name] = time.perf_counter() - start
            values[name] = found.per_target.tobytes()
            print(f"{name}: {timings[name]:.1f} s ({found.n_forecasts} forecasts)")
        same = values["one process"] == values["2-worker Dask LocalCluster"]
        print(f"same values byte for byte: {same}")
        ratio = timings["2-worker Dask LocalCluster"] / timings["one process"]
        print(f"time ratio 2 workers / one process: {ratio:.2f} (goal <= 0.6)")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
