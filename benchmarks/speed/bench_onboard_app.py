"""Onboarding a network: the app's build (Streamlit's AppTest, the sidebar's upload) against
``wdn-explain network onboard`` on the same .inp, scenarios, epochs and seed, in one run.

Usage:
    python benchmarks/speed/bench_onboard_app.py [INP] [--scenarios 40] [--no-cause]

INP defaults to EPyT's Net1. The command line runs first (a subprocess, simulation on one
worker as the app's), then the app in this process, each into a fresh model folder. Prints
one figure per line: each one's wall time, the seconds of each stage (from the stage lines
both print), the training's mean epoch time from the card, and whether both made the same
model (scenario arrays, weights, test scores); then the cause of the gap the app had: two
epochs of the same training in a thread of this process with torch's and scikit-learn's
default thread counts, and with onboarding's (:func:`~wdn_explain.explain.threads.numeric_threads`).
The environment (``OMP_NUM_THREADS``) is the same for every part: say it with the figures
(unset, as a server is usually started, shows the gap).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app" / "main.py")
STAGE = re.compile(r"\[(\d)/6\] (\w+) \(at (\d+) s\)")
BUILT = re.compile(r"was built in (\d+) s")


def stage_seconds(lines: list[str], total: float) -> dict[str, float]:
    """Each stage's seconds from the ``[k/6] name (at N s)`` lines and the explain stage's
    ``built in N s``; what the wall time adds (imports, the last line, exit) as ``other``."""
    starts = [(m[2], float(m[3])) for line in lines if (m := STAGE.search(line))]
    built = next(float(m[1]) for line in lines if (m := BUILT.search(line)))
    ends = [at for _, at in starts[1:]] + [built]
    stages = {name: end - at for (name, at), end in zip(starts, ends, strict=True)}
    return stages | {"other": total - built}


def show(label: str, wall: float, stages: dict[str, float], folder: Path) -> None:
    """Print one side's figures."""
    from wdn_explain.model_folder import read_card

    card = read_card(folder)
    print(f"{label}: wall {wall:.1f} s")
    for name, seconds in stages.items():
        print(f"{label}: stage {name} {seconds:.1f} s")
    print(f"{label}: training {len(card.history)} epochs at {card.epoch_seconds:.2f} s/epoch")
    print(f"{label}: test MAE {card.metrics['mae']:.6f}, tree {card.metrics['tree_mae']:.6f}")


def same_results(one: Path, other: Path) -> str:
    """Whether two model folders hold the same scenarios, weights and test scores."""
    import numpy as np
    import torch

    from wdn_explain.model_folder import read_card

    scenarios = sorted(p.name for p in (one / "data").glob("scenario_*.npz"))
    for name in scenarios:
        with np.load(one / "data" / name) as a, np.load(other / "data" / name) as b:
            if any(not np.array_equal(a[k], b[k]) for k in a.files if k != "config_json"):
                return f"no: scenario {name} differs"
    mine, theirs = (torch.load(f / "model.pt", weights_only=True) for f in (one, other))
    if any(not torch.equal(mine[k], theirs[k]) for k in mine):
        return "no: the weights differ"
    if read_card(one).metrics != read_card(other).metrics:
        return "no: the test scores differ"
    return f"yes ({len(scenarios)} scenarios, weights and test scores equal)"


def training_threads(data: Path, work: Path) -> None:
    """The cause: two epochs of the same training in a thread of this process (as the
    app's script runs) with torch's and scikit-learn's default threads, then inside
    :func:`~wdn_explain.explain.threads.numeric_threads` (what onboarding uses)."""
    import threading

    import torch

    from wdn_explain.explain.threads import numeric_threads
    from wdn_explain.model_folder import read_card
    from wdn_explain.training import TrainConfig, train

    def fit(out: Path, limited: bool) -> None:
        def run() -> None:
            config = TrainConfig(epochs=2, patience=10)
            if limited:
                with numeric_threads():
                    train(data, out, train_config=config, device="cpu", overwrite=True)
            else:
                train(data, out, train_config=config, device="cpu", overwrite=True)

        thread = threading.Thread(target=run)
        start = time.perf_counter()
        thread.start()
        thread.join()
        wall = time.perf_counter() - start
        seconds = read_card(out).epoch_seconds
        threads = "default" if not limited else "numeric_threads"
        print(
            f"2 epochs in a thread, {threads} (torch {torch.get_num_threads()} threads "
            f"outside): {seconds:.2f} s/epoch, {wall:.1f} s with the final evaluation"
        )

    fit(work / "default", limited=False)
    fit(work / "one", limited=True)


def cli_side(inp: Path, folder: Path, scenarios: int) -> tuple[float, dict[str, float]]:
    args = [sys.executable, "-m", "wdn_explain", "network", "onboard", str(inp), "--out"]
    args += [str(folder), "--scenarios", str(scenarios), "--workers", "1", "--device", "cpu"]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    return wall, stage_seconds(done.stdout.splitlines(), wall)


def app_side(inp: Path, models: Path, scenarios: int) -> tuple[float, dict[str, float]]:
    """The sidebar's upload and build button in AppTest; the stage lines the app writes
    into its status box are read from the library call it makes."""
    from streamlit.testing.v1 import AppTest

    import wdn_explain.onboard as onboarding

    os.environ["WDN_EXPLAIN_MODELS"] = str(models)
    lines: list[str] = []
    real = onboarding.onboard

    def recorded(*args, say=None, **kwargs):
        def tee(line: str) -> None:
            lines.append(line)
            say(line)

        return real(*args, say=tee, **kwargs)

    onboarding.onboard = recorded  # the sidebar imports it when the script first runs
    at = AppTest.from_file(APP, default_timeout=3600).run()
    at.sidebar.get("file_uploader")[0].set_value((inp.name, inp.read_bytes(), "text/plain"))
    at.run()
    at.number_input(key="own_scenarios").set_value(scenarios)
    button = at.button(key="own_build")
    start = time.perf_counter()
    at = button.click().run()
    wall = time.perf_counter() - start
    assert not at.exception and not at.sidebar.error, (at.exception, at.sidebar.error)
    onboarding.onboard = real
    return wall, stage_seconds(lines, wall)


def main() -> None:
    from wdn_explain.network import builtin_network_path
    from wdn_explain.shipped import model_name_for

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inp", nargs="?", type=Path, default=builtin_network_path("net1"))
    parser.add_argument("--scenarios", type=int, default=40)
    parser.add_argument("--no-cause", action="store_true", help="skip the threads' comparison")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    import torch

    print(f"network {args.inp.name}, {args.scenarios} scenarios, default epochs")
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, {os.cpu_count()} cores")
    print(f"torch threads in this process: {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory(prefix="bench-onboard-") as tmp:
        cli_folder, models = Path(tmp, "cli"), Path(tmp, "models")
        cli_wall, cli_stages = cli_side(args.inp, cli_folder, args.scenarios)
        show("cli", cli_wall, cli_stages, cli_folder)
        app_wall, app_stages = app_side(args.inp, models, args.scenarios)
        app_folder = models / model_name_for(args.inp.name)
        show("app", app_wall, app_stages, app_folder)
        print(f"app / cli wall: {app_wall / cli_wall:.2f}")
        print(f"same results: {same_results(cli_folder, app_folder)}")
        if not args.no_cause:
            training_threads(cli_folder / "data", Path(tmp))


if __name__ == "__main__":
    main()
