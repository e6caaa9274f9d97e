"""Reliability figures (one per line): concurrent saves of one timeline, and the cost of a
resume that verifies the files it skips.

Usage: python benchmarks/quality/bench_reliability.py MODEL_DIR [CONFIG]

1. Two threads (two app sessions share one process) save one timeline at the same moment,
   15 times: with the previous helper (temporary name from the PID only) and with
   ``atomic_write`` (unique per process, thread and call), in the same run.
2. ``generate_waq`` of CONFIG (default simulations/waq.yaml) into a fresh folder, then the
   resume that loads and checks every finished file, against skipping by existence only.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import torch

from wdn_explain import timeline as timeline_module
from wdn_explain import waq
from wdn_explain.files import atomic_write
from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import ScenarioConfig, load_config
from wdn_explain.waq import generate_waq


@contextmanager
def pid_only(path):
    """The previous helper: the temporary name holds the PID only."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _save(timeline, out: Path, barrier: threading.Barrier, errors: list) -> None:
    try:
        barrier.wait()
        timeline.save(out)
    except Exception as exc:  # counted, not raised
        errors.append(exc)


def failed_saves(timeline, out: Path, trials: int = 15) -> int:
    failures = 0
    for _ in range(trials):
        errors: list = []
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=_save, args=(timeline, out, barrier, errors)) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failures += bool(errors)
    return failures


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    torch.set_num_threads(1)
    model = sys.argv[1]
    config = load_config(sys.argv[2] if len(sys.argv) > 2 else "simulations/waq.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        timeline, _ = explain_scenario(ScenarioConfig(duration_s=10800), model)
        for name, helper in (
            ("PID-only temporary names", pid_only),
            ("atomic_write", atomic_write),
        ):
            timeline_module.atomic_write = helper
            n = failed_saves(timeline, Path(tmp, f"{helper.__name__}.npz"))
            print(f"two threads saving one timeline, {name}: {n} of 15 trials failed")
        timeline_module.atomic_write = atomic_write
        folder = Path(tmp, "waq")
        start = time.perf_counter()
        generate_waq(config, folder, n_workers=2)
        print(
            f"generate {config.n_scenarios} scenarios, 2 workers: {time.perf_counter() - start:.1f} s"
        )
        start = time.perf_counter()
        generate_waq(config, folder, n_workers=2)
        print(
            f"resume, every finished file loaded and checked: {time.perf_counter() - start:.2f} s"
        )
        present = {e.name for e in os.scandir(folder)}
        start = time.perf_counter()
        todo = [
            i for i in range(config.n_scenarios) if waq.scenario_path(folder, i).name not in present
        ]
        print(f"resume by existence only (todo {len(todo)}): {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
