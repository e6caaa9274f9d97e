"""The server's share of two app goals, by phase (one figure per line): a new 2-hour Hanoi
scenario from the sidebar form, and a switch to the L-Town model.

Each checkout's app runs in a process of its own under Streamlit's AppTest (no browser),
torch on one thread, with an empty scenario cache: the first view, then the background
warm-up is waited for, then the form's "simulate, forecast, explain" with a 120-min
duration (seconds of the whole rerun, and inside it: simulation, model inputs, the engine's
explanations, the resumable step store, writing the timeline file, reading it back, and the
rest: figures, page, checks), then the switch to L-Town (seconds of the rerun, and the bytes
of every chart's figure JSON the rerun sends). With ``--old PATH`` the same runs on another
checkout first, ``--repeats`` times alternately, so both meet the same machine load; each
line gives every run's figure. What the browser adds: ``bench_app_browser.py``. Run from the
repository root: ``OMP_NUM_THREADS=1 python benchmarks/speed/bench_scenario.py --old ../main``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# (module, attribute, phase): what each wrapped function's time counts as; the phases do not
# overlap, except the step store's, which is part of the explanations' (wall-clock) time
PHASES = (
    ("wdn_explain.pipeline", "simulate", "simulation (EPyT-Flow)"),
    ("wdn_explain.pipeline", "scenario_graphs", "model inputs"),
    ("wdn_explain.pipeline", "_explain_steps", "explanations (engine and step store, wall)"),
    ("wdn_explain.stepstore", "StepStore.put", "step store (resumable steps)"),
    ("wdn_explain.stepstore", "StepStore.remove", "step store (resumable steps)"),
    ("wdn_explain.timeline", "Timeline.save", "timeline file written"),
    ("wdn_explain.timeline", "Timeline.as_saved", "timeline as the file holds it"),
    ("wdn_explain.timeline", "Timeline.load", "timeline file read back"),
)
INSIDE = {"step store (resumable steps)"}  # phases inside another one


def _wrap(spent: dict[str, float]) -> None:
    """Add every call's seconds of each function of :data:`PHASES` to its phase."""
    import importlib

    for module_name, attribute, phase in PHASES:
        owner = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        if not hasattr(owner, name):  # a checkout without it
            continue
        original = getattr(owner, name)

        def timed(*args, _original=original, _phase=phase, **kwargs):
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_phase] += time.perf_counter() - start

        setattr(owner, name, timed)


def _widget(at, kind: str, name: str):
    return next(w for w in getattr(at, kind) if (w.key or "").partition("@")[0] == name)


def child() -> None:
    """One checkout's figures (this process imports that checkout), as JSON on stdout."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path.cwd() / "app" / "main.py"), default_timeout=300)
    at.run()
    import torch

    torch.set_num_threads(1)
    for thread in threading.enumerate():
        if thread.name == "wdn-explain-warm-up":
            thread.join()
    spent: dict[str, float] = defaultdict(float)
    _wrap(spent)
    _widget(at, "number_input", "new_duration").set_value(120)
    button = next(b for b in at.sidebar.button if b.label == "simulate, forecast, explain")
    start = time.perf_counter()
    button.click().run()
    total = time.perf_counter() - start
    assert not at.exception, at.exception
    out = {"new Hanoi scenario, 2 h: the whole rerun": total}
    out |= {f"  of which {phase}": seconds for phase, seconds in spent.items()}
    outside = sum(seconds for phase, seconds in spent.items() if phase not in INSIDE)
    out["  of which the rest (figures, page, checks)"] = total - outside
    start = time.perf_counter()
    at.selectbox(key="model").select("l-town").run()
    out["switch to l-town: the whole rerun"] = time.perf_counter() - start
    assert not at.exception, at.exception
    sent = sum(len(chart.proto.spec) for chart in at.get("plotly_chart"))
    out["switch to l-town: figure JSON sent (kB)"] = sent / 1000
    print(json.dumps(out))


def run(root: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "WDN_EXPLAIN_CACHE": cache, "OMP_NUM_THREADS": "1"}
        env.pop("WDN_EXPLAIN_MODEL", None)
        env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="another checkout, measured in the same run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    sys.stdout.reconfigure(line_buffering=True)
    print(f"machine: {os.cpu_count()} cores; uptime: {os.popen('uptime').read().strip()}")
    roots = {"new": ROOT} | ({"old": args.old.resolve()} if args.old else {})
    figures: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _ in range(args.repeats):
        for label in sorted(roots, reverse=True):  # old first
            for key, value in run(roots[label]).items():
                figures[key][label].append(value)
    for key, by_label in figures.items():
        unit = "" if "(kB)" in key else " s"
        shown = "; ".join(
            f"{label} {', '.join(f'{v:.2f}' for v in values)}{unit}"
            for label, values in sorted(by_label.items(), reverse=True)
        )
        print(f"{key}: {shown}")
    print(f"at the end: uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
