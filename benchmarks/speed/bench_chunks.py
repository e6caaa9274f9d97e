"""Chunk size of the state-graph engine on a CPU (issue 32): one figure per line.

Usage: python benchmarks/speed/bench_chunks.py [--repeats 2] [--scenarios 10]
       [--skip-processes]

Compares the engine's CPU chunks (at most ``CPU_CHUNK_BYTES`` of hidden states, 8 192
states at 64 float32 channels) with the earlier cap of 65 536 states, in the same run,
settings interleaved, best of ``--repeats``, one torch thread:

* a large explanation: Hanoi with a 4-layer ChlorineGNN of random weights (3.6 million node
  states), and one warm step of the shipped 3-layer model;
* a placement chunk (``placement.chunk_importance``, ``--scenarios`` scenarios of
  data/monitoring with models/hanoi-nodes, after a warm-up scenario, each run in a fresh
  process with the command line's malloc settings, ``allocator.keep_freed_memory``) alone,
  then in two processes side by side (as the two workers of ``sensors place --workers 2``):
  the user CPU time of a process (the mean of the two side by side). Side by side on a
  2-core machine, what one process costs more than alone is what a 2-worker cluster loses
  against 0.5x of one process;
* the same chunk alone (default cap) with glibc's malloc defaults and with the command
  line's settings: user and system CPU and minor page faults of each run.

The load average is printed before and after: other processes share the caches too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from wdn_explain.explain import local

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
OLD_CAP_STATES = 1 << 16
"""The CPU cap of the engine before this benchmark: 65 536 target states a chunk."""
DEFAULT_CAP_BYTES = local.CPU_CHUNK_BYTES
"""The engine's own CPU cap, kept before any setting here changes it."""


def set_cap(old: bool, hidden: int, itemsize: int = 4) -> str:
    """Set the engine's CPU chunk cap: the earlier 65 536 states, or the default; its name."""
    local.CPU_CHUNK_BYTES = OLD_CAP_STATES * hidden * itemsize if old else DEFAULT_CAP_BYTES
    states = local.CPU_CHUNK_BYTES // (hidden * itemsize)
    return f"{'earlier' if old else 'default'} cap ({states:,} states)"


def explanations(repeats: int) -> None:
    """The large 4-layer explanation and a warm 3-layer step under both caps."""
    import torch

    from wdn_explain.explain import GraphSHAPIQ

    from bench_engine import hanoi_step

    torch.set_num_threads(1)
    cases = {"Hanoi, 4-layer random model, 3.6 M states": hanoi_step(4)}
    cases["Hanoi step, shipped 3-layer model, warm"] = hanoi_step(3)
    for name, (model, data) in cases.items():
        hidden = model.config.hidden_channels
        best: dict[str, float] = {}
        for _ in range(repeats):
            for old in (True, False):
                label = set_cap(old, hidden)
                explainer = GraphSHAPIQ(model, num_threads=1)
                if "warm" in name:
                    explainer.explain(data)
                start = time.perf_counter()
                explainer.explain(data)
                seconds = time.perf_counter() - start
                best[label] = min(best.get(label, float("inf")), seconds)
        for label, seconds in best.items():
            print(f"{name}, {label}, 1 thread: {seconds:.3f} s (best of {repeats})")


def child(old: bool, kept: bool, n: int) -> None:
    """One placement chunk after a warm-up scenario; prints its wall time, user and system
    CPU and minor page faults (JSON). ``kept``: the command line's malloc settings."""
    import torch

    from wdn_explain import placement
    from wdn_explain.allocator import keep_freed_memory

    torch.set_num_threads(1)
    if kept:
        keep_freed_memory()
    set_cap(old, 64)
    model, data = str(ROOT / "models/hanoi-nodes"), str(ROOT / "data/monitoring")
    placement.chunk_importance(model, data, [0])
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    sums = placement.chunk_importance(model, data, list(range(1, n + 1)))
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
    used = {
        "user": after.ru_utime - before.ru_utime,
        "system": after.ru_stime - before.ru_stime,
        "faults": after.ru_minflt - before.ru_minflt,
    }
    print(json.dumps({"wall": wall, "sum": float(sums.sum()), **used}))


def chunks_in(together: int, old: bool, kept: bool, n: int) -> list[dict]:
    """``together`` placement chunks run side by side, each in its own process (one thread)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, __file__, "--scenarios", str(n), "--child"]
    command += ["old" if old else "default", "kept" if kept else "defaults"]
    runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE) for _ in range(together)]
    results = []
    for run in runs:
        out, _ = run.communicate()
        if run.returncode:
            sys.exit(f"the placement chunk failed (exit {run.returncode})")
        results.append(json.loads(out.splitlines()[-1]))
    return results


def side_by_side(repeats: int, n: int) -> set[float]:
    """A placement chunk alone and two side by side, under both caps, with the malloc
    settings (user CPU a process); the importance sums seen."""
    best: dict[tuple[str, str], float] = {}
    sums = set()
    for _ in range(repeats):
        for old in (True, False):
            label = set_cap(old, 64)
            for together in (1, 2):
                results = chunks_in(together, old, True, n)
                sums |= {r["sum"] for r in results}
                user = sum(r["user"] for r in results) / together
                key = (label, "alone" if together == 1 else "side by side")
                best[key] = min(best.get(key, float("inf")), user)
    for label in dict.fromkeys(k[0] for k in best):
        alone, pair = best[(label, "alone")], best[(label, "side by side")]
        print(
            f"placement chunk ({n} scenarios), {label}: user CPU {alone:.2f} s alone, "
            f"{pair:.2f} s a process, two side by side ({pair / alone - 1:+.0%}; best of {repeats})"
        )
    return sums


def malloc_settings(repeats: int, n: int) -> set[float]:
    """A placement chunk alone with glibc's defaults and with the command line's malloc
    settings (default cap): CPU and faults of each run; the importance sums seen."""
    sums = set()
    for _ in range(repeats):
        for kept in (False, True):
            (result,) = chunks_in(1, False, kept, n)
            sums.add(result["sum"])
            print(
                f"placement chunk ({n} scenarios), one process, "
                f"{'keep_freed_memory()' if kept else 'glibc defaults'}: user "
                f"{result['user']:.2f} s, system {result['system']:.2f} s, "
                f"minor faults {result['faults']:,}"
            )
    return sums


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--skip-processes", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("CAP", "MALLOC"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0] == "old", args.child[1] == "kept", args.scenarios)
        return
    print(f"cores usable: {len(os.sched_getaffinity(0))}, load before: {os.getloadavg()[0]:.1f}")
    explanations(args.repeats)
    if not args.skip_processes:
        sums = side_by_side(args.repeats, args.scenarios)
        sums |= malloc_settings(args.repeats, args.scenarios)
        print(f"same importance sums in every run: {len(sums) == 1}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
