"""Threads chosen for the work (issue 19): one figure per line.

Usage: python benchmarks/speed/bench_threads.py [--steps 33] [--repeats 2] [--skip-large]

Explains every step of the shipped default scenario (node 12, the shipped model, both
references as a timeline does: MIs + SV + k-SII(2)) with the engine's default thread
choice, with ``num_threads=1`` and with ``num_threads=2`` (torch's default before issue 19
on this 2-core machine), first with a busy second core (a bounded CPU burner started here),
then without it; settings interleaved, best of ``--repeats``. Then a large explanation
(Hanoi, 4-layer ChlorineGNN, 3.6 million node states in full chunks), where intra-op
threads could pay, with 1 and 2 threads, busy and not. Wall-clock seconds; the load
average of the machine is printed (other processes count too).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import hanoi_step, warm_imports

SETTINGS = {"engine default": None, "1 thread": 1, "2 threads": 2}
BURN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


@contextmanager
def busy_core(on: bool, seconds: float = 900):
    """A second process spinning on one core for at most ``seconds`` (when ``on``)."""
    burner = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=seconds)]) if on else None
    try:
        time.sleep(0.5 if on else 0)
        yield
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()


def scenario_steps(n_steps: int):
    """The shipped model and the step graphs of the default scenario."""
    from wdn_explain.features import InputSpec
    from wdn_explain.network import load_network
    from wdn_explain.scenario import load_config
    from wdn_explain.simulation import simulate
    from wdn_explain.timeline import DEFAULT_MODEL, DEFAULT_SCENARIO, scenario_graphs
    from wdn_explain.training import load_model

    model, card = load_model(DEFAULT_MODEL)
    net = load_network()
    result = simulate(load_config(DEFAULT_SCENARIO).scenario_config(0), net)
    return model, scenario_graphs(result, net, InputSpec.from_card(card))[:n_steps]


def explain_all(model, graphs, num_threads) -> float:
    """Seconds to explain every graph for both references, as a timeline does."""
    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.timeline import REFERENCES

    start = time.perf_counter()
    for baseline, _ in REFERENCES.values():
        explainer = GraphSHAPIQ(model, baseline=baseline, num_threads=num_threads)
        for data in graphs:
            e = explainer.explain(data)
            e.interaction_values("SV", 1)
            e.interaction_values("k-SII", 2)
    return time.perf_counter() - start


def best(run, settings: dict, repeats: int) -> dict[str, float]:
    times = {name: float("inf") for name in settings}
    for _ in range(repeats):
        for name, threads in settings.items():
            times[name] = min(times[name], run(threads))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=33)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-large", action="store_true")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    warm_imports()
    import torch

    print(f"torch threads at start {torch.get_num_threads()}, cpus {os.cpu_count()}")
    model, graphs = scenario_steps(args.steps)
    explain_all(model, graphs[:2], 1)  # warm up
    for busy in (True, False):
        with busy_core(busy):
            load = os.getloadavg()[0]
            times = best(lambda k: explain_all(model, graphs, k), SETTINGS, args.repeats)
        fastest = min(times.values())
        what = "busy second core" if busy else "no burner"
        for name, seconds in times.items():
            print(
                f"{len(graphs)} steps x 2 references, {what} (load {load:.1f}), {name}: "
                f"{seconds:.2f} s = {seconds / fastest:.2f}x the best"
            )
    if args.skip_large:
        return
    from wdn_explain.explain import GraphSHAPIQ

    large, data = hanoi_step(4)
    for busy in (True, False):
        with busy_core(busy):
            load = os.getloadavg()[0]

            def run(k, large=large, data=data):
                start = time.perf_counter()
                GraphSHAPIQ(large, num_threads=k).explain(data)
                return time.perf_counter() - start

            times = best(run, {"1 thread": 1, "2 threads": 2}, args.repeats)
        what = "busy second core" if busy else "no burner"
        print(
            f"Hanoi L=4 (3.6e6 states), {what} (load {load:.1f}): 1 thread "
            f"{times['1 thread']:.2f} s, 2 threads {times['2 threads']:.2f} s"
        )


if __name__ == "__main__":
    main()
