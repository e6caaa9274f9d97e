"""Global importance of every node's reading (``sensors place``) on a 2-worker Dask
LocalCluster against one process, same scenarios, same bytes (one figure per line).

Usage: python benchmarks/speed/bench_placement_dask.py [N_SCENARIOS] [MODEL] [DATA]

Defaults: 100 scenarios of data/monitoring with models/hanoi-nodes, chunks of
``CHUNK_SCENARIOS``. Both runs start from empty folders and include loading the model and
the data; the cluster run also includes starting its two single-threaded worker processes
(what ``--workers 2`` costs a user). The one-process run is timed first, then the cluster
run; the importance values must be equal byte for byte. This process keeps its freed
buffers as the command line does (``allocator.keep_freed_memory``), the workers as
``--workers`` starts them.

On a shared machine the wall-clock ratio is only as good as the load was steady, so the
load average is printed before and after, and so are the user and system CPU time and the
minor page faults per chunk (whole process, ``getrusage``): of the main process in the
one-process run, of the worker processes in the cluster run, which other processes' load
hardly changes; and what this process, which holds the cluster's scheduler and nannies,
used while the cluster ran (CPU the workers' two cores lose).
The CPU model and cache sizes are printed too: how much two busy cores slow each other, and so
the ratio, depends on the host.
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

from wdn_explain.allocator import keep_freed_memory
from wdn_explain.cluster import local_cluster
from wdn_explain.placement import CHUNK_SCENARIOS, global_importance


def machine() -> str:
    """The CPU model and the unified caches of core 0 (caches on Linux only; the model from
    ``platform`` elsewhere): the ratio depends on the host, which may change between runs."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.exists() else []
    model = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), "")
    caches = sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"))
    unified = [c for c in caches if (c / "type").read_text().strip() == "Unified"]
    sizes = [
        f"L{(c / 'level').read_text().strip()} {(c / 'size').read_text().strip()}" for c in unified
    ]
    return ", ".join([model or platform.processor() or "unknown", *sizes])


def usage() -> tuple[float, float, int]:
    """User and system CPU seconds and minor page faults of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


def per_chunk(before: tuple, after: tuple, n_chunks: int) -> str:
    """The usage between two :func:`usage` readings, per chunk, in words."""
    user, system, faults = ((a - b) / n_chunks for a, b in zip(after, before))
    return f"user {user:.2f} s, system {system:.2f} s, minor faults {faults:,.0f}"


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(1)
    keep_freed_memory()
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    model = sys.argv[2] if len(sys.argv) > 2 else "models/hanoi-nodes"
    data = sys.argv[3] if len(sys.argv) > 3 else "data/monitoring"
    n_chunks = -(-n // CHUNK_SCENARIOS)
    print(
        f"scenarios: {n} of {data} in {n_chunks} chunks, model {model}, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(f"machine: {machine()}")
    print(f"cores usable: {len(os.sched_getaffinity(0))}, load before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        start, used = time.perf_counter(), usage()
        one = global_importance(model, data, Path(tmp) / "one", n_scenarios=n)
        one_s, one_used = time.perf_counter() - start, per_chunk(used, usage(), n_chunks)
        print(f"one process: {one_s:.1f} s ({one.n_forecasts} forecasts)")
        print(f"one process per chunk: {one_used}")
        start, main_used = time.perf_counter(), usage()
        with local_cluster(2) as address:
            up_s = time.perf_counter() - start
            from distributed import Client

            with Client(address, set_as_default=False) as client:
                before = client.run(usage)
                two = global_importance(
                    model, data, Path(tmp) / "two", n_scenarios=n, scheduler=address
                )
                after = client.run(usage)
        two_s, main_used = time.perf_counter() - start, [b - a for a, b in zip(main_used, usage())]
        total = [tuple(map(sum, zip(*d.values()))) for d in (before, after)]
        print(f"2-worker Dask LocalCluster: {two_s:.1f} s, of which starting it {up_s:.1f} s")
        print(f"2 workers per chunk (both processes): {per_chunk(*total, n_chunks)}")
        print(
            f"this process (scheduler, nannies, client) during the cluster run: user "
            f"{main_used[0]:.1f} s, system {main_used[1]:.1f} s"
        )
        same = one.per_target.tobytes() == two.per_target.tobytes()
        print(f"same values byte for byte: {same}")
        print(f"time ratio 2 workers / one process: {two_s / one_s:.2f} (goal <= 0.6)")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
