"""App responsiveness with Streamlit's AppTest on the shipped default (one figure per line).

First render in a fresh process (imports of torch, PyG, shapiq and the shipped timeline
included), then the first render of a second session in the same, warm process (what a
second visitor waits for), then every control change: time cursor, play tick, index, order,
top-k, reference. Compared in the same run with a rerun without any change (the cost of the
script itself) and with the straightforward way of drawing a control change: rebuilding the
animated figure of every step (the report's ``timeline_figure``) instead of the one step the
cursor shows (all after the background warm-up has finished: how long it still ran after
the first render is printed). Then what the browser redraws per time step, in counts that
do not depend on the machine's load (bytes of figure JSON and traces, against the animation
frame's every trace slot), what loading each shipped model costs without the warm-up (what
a first switch to it added before), switching to every shipped model (against computing
the published WAQ model's default timeline, what a switch to it cost before its timeline
shipped), a time step on L-Town, and the Molecules page's first render on the MUTAG model it opens on (against the
Benzene model it opened on before, which reads 12 000 molecules). Run it on an otherwise
idle machine; torch is held to one thread, as the app's work here is NumPy and Plotly, not
torch. What the browser adds (transfer, drawing): ``bench_app_browser.py``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app" / "main.py")
MOLECULES = str(ROOT / "app" / "pages" / "1_Molecules.py")


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    print(f"first render, fresh process (imports included): {timed(at.run):.2f} s")
    import torch

    torch.set_num_threads(1)
    print(f"torch threads: {torch.get_num_threads()} (of {os.cpu_count()} cores)")
    for thread in threading.enumerate():  # the figures below are for a warmed-up server
        if thread.name == "wdn-explain-warm-up":
            print(f"background warm-up, still running after that: {timed(thread.join):.2f} s")
    second = AppTest.from_file(APP, default_timeout=300)
    print(f"first render, second session (warm process): {timed(second.run):.2f} s")
    print(f"rerun without change (baseline): {timed(at.run):.2f} s")
    changes = {
        "move the time cursor to 60 min": lambda: at.select_slider(key="time_min").set_value(60),
        "play (one step)": lambda: at.button(key="play").click(),
        "play tick": lambda: at,
        "pause": lambda: at.button(key="pause").click(),
        "index k-SII -> FSII": lambda: at.selectbox(key="index").set_value("FSII"),
        "order 2 -> 3": lambda: at.slider(key="order").set_value(3),
        "top-k 8 -> 20": lambda: at.slider(key="top_k").set_value(20),
        "reference -> no chlorine": lambda: at.radio(key="reference").set_value("none"),
        "index FSII -> STII": lambda: at.selectbox(key="index").set_value("STII"),
        "index STII -> SV": lambda: at.selectbox(key="index").set_value("SV"),
        "index back to FSII (cached scale)": lambda: at.selectbox(key="index").set_value("FSII"),
    }
    for name, change in changes.items():
        print(f"control change, {name}: {timed(lambda change=change: change().run()):.2f} s")
    assert not at.exception, at.exception

    from wdn_explain.network import load_network
    from wdn_explain.plot import si_graph_figure, timeline_figure
    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    tl, net = Timeline.load(DEFAULT_TIMELINE), load_network("hanoi")
    timeline_figure(tl, net, index="k-SII", order=2, top_k=8)  # warm the index tables
    one = timed(lambda: si_graph_figure(tl, net, 12, index="k-SII", order=2, top_k=8))
    every = timed(lambda: timeline_figure(tl, net, index="k-SII", order=2, top_k=8))
    print(f"SI-Graph of the cursor's step: {one:.3f} s")
    print(f"animated SI-Graph of all {len(tl)} steps (straightforward): {every:.3f} s")
    payload()
    models(at)
    molecules()


def payload() -> None:
    """What the browser redraws per time step (load-independent counts): bytes of figure
    JSON and traces of the SI-Graph against its animation frame (every trace slot, also the
    empty ones: what the app drew before), on Hanoi and L-Town."""
    import plotly.graph_objects as go

    from wdn_explain.plot import (
        chlorine_figure,
        frame_data,
        frame_traces,
        opening_step,
        si_graph_figure,
        value_scale,
    )
    from wdn_explain.shipped import default_timeline, model_network
    from wdn_explain.timeline import Timeline

    for name in ("default", "l-town"):
        folder = ROOT / "models" / name
        net = model_network(folder)
        tl = Timeline.load(default_timeline(folder)).relative_to("none")
        step, scale = opening_step(tl) + 1, value_scale(tl, "k-SII", 2)
        fig = si_graph_figure(tl, net, step, index="k-SII", order=2, top_k=8, scale=scale)
        data = frame_data(tl, step, "k-SII", 2, 8)
        layout = fig.layout.to_plotly_json()
        slots = go.Figure(
            dict(data=frame_traces(net, tl, step, data, scale, "k-SII", layout), layout=layout)
        )
        chlorine = chlorine_figure(tl, net, step)
        print(
            f"{name} SI-Graph per step: {len(fig.to_json())} bytes, {len(fig.data)} traces "
            f"(every slot: {len(slots.to_json())} bytes, {len(slots.data)} traces); "
            f"chlorine map {len(chlorine.to_json())} bytes"
        )


def models(at) -> None:
    """Switching to every shipped model, a time step on L-Town, and the straightforward
    switch to waq-paper: explaining its default scenario into a cache."""
    import tempfile

    from wdn_explain.plot import value_scale
    from wdn_explain.shipped import default_timeline, model_network, water_models
    from wdn_explain.timeline import Timeline

    for name, folder in water_models().items():
        seconds = timed(
            lambda f=folder: (
                value_scale(Timeline.load(default_timeline(f)).relative_to("none"), "k-SII", 2)
                + model_network(f).n_nodes
            )
        )
        print(
            f"loading {name} (network, timeline, scale; a cold switch before the warm-up): {seconds:.2f} s"
        )
    for name in ("waq-paper", "l-town", "default", "l-town"):
        seconds = timed(lambda name=name: at.selectbox(key="model").select(name).run())
        print(f"switch to {name}: {seconds:.2f} s")
    seconds = timed(lambda: at.select_slider(key="time_min").set_value(20).run())
    print(f"L-Town time step (15 -> 20 min): {seconds:.2f} s")
    assert not at.exception, at.exception
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.shipped import default_scenario

    waq = ROOT / "models" / "waq-paper"
    with tempfile.TemporaryDirectory() as tmp:
        seconds = timed(lambda: explain_scenario(default_scenario(waq), waq, out=f"{tmp}/t.npz"))
    print(f"waq-paper without its shipped timeline (computed, straightforward): {seconds:.2f} s")


def molecules() -> None:
    """The Molecules page's first render (MUTAG) against the Benzene model first."""
    from streamlit.testing.v1 import AppTest

    page = AppTest.from_file(MOLECULES, default_timeout=300)
    print(f"Molecules page, first render (MUTAG model): {timed(page.run):.2f} s")
    assert not page.exception, page.exception
    benzene = lambda: page.sidebar.selectbox[0].select_index(0).run()  # noqa: E731
    print(
        f"Molecules page, Benzene model (12 000 molecules read; the old first view): "
        f"{timed(benzene):.2f} s"
    )


if __name__ == "__main__":
    main()
