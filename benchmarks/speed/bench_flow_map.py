"""What drawing the pipes by flow costs a map (one figure per line).

For the shipped Hanoi and L-Town timelines: simulating a timeline's flows and pressures
again (``with_hydraulics``, what the app does for a file written before they were stored)
against reading the file; then each map of one step built and serialised as the app sends
it (``to_json``), with flows (four pipe classes, one arrow and hover marker per link, node
hover with the .inp's properties and pressure) against the same map with plain grey pipes
(the same timeline without flows, the map before); then the compliance map. Best of five
after one warm-up, one thread.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]


def best(action, repeats: int = 5) -> float:
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    from wdn_explain.pipeline import with_hydraulics
    from wdn_explain.plot import chlorine_figure, compliance_figure, si_graph_figure
    from wdn_explain.shipped import model_network
    from wdn_explain.timeline import Timeline

    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    for model in ("default", "l-town"):
        folder = ROOT / "models" / model
        net = model_network(folder)
        path = folder / "default_timeline.npz"
        bare = replace(Timeline.load(path), link_flow_lps=None, node_pressure_m=None)
        read = best(lambda path=path: Timeline.load(path), 3)
        flows = with_hydraulics(bare, net)
        simulated = best(lambda bare=bare, net=net: with_hydraulics(bare, net), 3)
        print(
            f"{net.name}: reading the timeline {read:.3f} s, simulating its flows {simulated:.3f} s"
        )
        step = len(flows) // 2
        for name, figure in (("SI-Graph", si_graph_figure), ("chlorine map", chlorine_figure)):
            with_flows = best(lambda f=figure, tl=flows, n=net, t=step: f(tl, n, t).to_json())
            plain = best(lambda f=figure, tl=bare, n=net, t=step: f(tl, n, t).to_json())
            print(f"{net.name}: {name} with flows {with_flows:.3f} s, plain pipes {plain:.3f} s")
        compliance = best(lambda tl=flows, n=net, t=step: compliance_figure(tl, n, t).to_json())
        print(f"{net.name}: compliance map with flows {compliance:.3f} s")


if __name__ == "__main__":
    main()
