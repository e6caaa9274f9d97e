"""The documentation's picture: the shipped default timeline's SI-Graph at its opening step,
drawn with Matplotlib (node colour and size: first-order k-SII; lines: the strongest pairs).

    python scripts/docs_picture.py [docs/assets/si-graph.png]
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from wdn_explain.narrative import index_label
from wdn_explain.network import load_network
from wdn_explain.plot import opening_step
from wdn_explain.shipped import DEFAULT_TIMELINE
from wdn_explain.timeline import Timeline


def main(out: str = "docs/assets/si-graph.png") -> None:
    tl = Timeline.load(DEFAULT_TIMELINE).relative_to("none")
    net = load_network(tl.scenario.network)
    xy = net.map_coordinates
    step = min(len(tl) - 1, opening_step(tl) + 6)  # chlorine has spread: more to see
    iv = tl.interaction_values(step, "k-SII", 2)
    first = np.zeros(net.n_nodes)
    pairs = []
    for members, value in iv.dict_values.items():
        if len(members) == 1:
            first[members[0]] = value
        elif len(members) == 2:
            pairs.append((abs(value), value, members))
    scale = np.abs(first).max() or 1.0
    fig, ax = plt.subplots(figsize=(7, 5), dpi=120)
    for a, b in net.edge_index.T:
        ax.plot(*xy[[a, b]].T, color="#d4d4d4", lw=1.5, zorder=1)
    for _, value, (a, b) in sorted(pairs, reverse=True)[:8]:
        colour = "#d62728" if value > 0 else "#1f77b4"
        ax.plot(*xy[[a, b]].T, color=colour, lw=3, alpha=0.6, zorder=2)
    ax.scatter(
        *xy.T,
        c=first,
        cmap="RdBu_r",
        vmin=-scale,
        vmax=scale,
        s=60 + 400 * np.abs(first) / scale,
        edgecolors="#333",
        zorder=3,
    )
    ax.set_title(f"{index_label('k-SII', 2)}, forecast made at {int(tl.times_s[step] // 60)} min")
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(*sys.argv[1:])
