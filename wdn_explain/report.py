"""Reports of a timeline for people who were not at the app: a self-contained HTML page
(title, how to read it, the animated SI-Graph, forecast against simulated truth with its
interval) and an animated GIF (node labels, markers, legend, forecast with its interval and
simulated truth per frame)."""

from __future__ import annotations

import html
import io
import json
import re
import tempfile
import textwrap
import zipfile
from pathlib import Path

import numpy as np

from .files import atomic_write
from .narrative import (
    HOW_TO_READ,
    NO_COORDINATES,
    forecast_time,
    index_label,
    index_name,
    interval_range,
    reference_label,
    resolved_order,
    scenario_text,
    summary,
    threshold_text,
    unit,
    warnings_of,
)
from .network import Network
from .plot import (
    LABELLED_NODES,
    NEGATIVE,
    POSITIVE,
    SOURCE_ON,
    forecast_figure,
    frame_data,
    marker_scale,
    opening_step,
    timeline_figure,
)
from .simulation import injection_node
from .timeline import REFERENCES, Timeline

TITLE_PT = 10  # the GIF's title lines (points)


def _markdown(text: str) -> str:
    """The few Markdown marks of :data:`HOW_TO_READ` as HTML paragraphs."""
    paragraphs = [p.strip() for p in text.strip().split("\n\n")]
    bold = [re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(p)) for p in paragraphs]
    return "\n".join(f"<p>{p}</p>" for p in bold)


def interval_text(timeline: Timeline) -> str | None:
    """The sentence naming the forecast interval's nominal coverage and method (None for a
    timeline without intervals)."""
    if timeline.lower is None:
        return None
    interval = timeline.meta["interval"]
    return (
        f"The shaded band around the forecast is its {interval['confidence']:.0%} interval "
        f"({interval['method']}): for forecasts like these the simulated share falls inside "
        f"it {interval['confidence']:.0%} of the time."
    )


def report_html(
    timeline: Timeline,
    network: Network,
    *,
    index: str = "k-SII",
    order: int | None = None,
    top_k: int = 10,
) -> str:
    """The HTML report: title (scenario, index, reference), how to read it, what counts as
    chlorinated, the summary sentence, the animated SI-Graph and the forecast chart with a
    time marker (plotly.js inlined: the file works offline). The sentence and the marker
    follow the map's frame (:data:`_FOLLOW_JS`); the page opens on :func:`opening_step`."""
    start = opening_step(timeline)
    si = timeline_figure(timeline, network, index=index, order=order, top_k=top_k, start=start)
    order = resolved_order(timeline, index, order)
    scenario = scenario_text(timeline.scenario)
    sentences = [summary(timeline, network, t, index, order) for t in range(len(timeline))]
    follow = {
        "sentences": sentences,
        "minutes": (timeline.times_s / 60).tolist(),
        "forecast": timeline.forecast.tolist(),
    }
    notes = (interval_text(timeline), timeline.meta.get("uncertainty"))
    title = f"Why the model expects chlorine there: {scenario}"
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
        "p{line-height:1.4}.warning{background:#fff8e1;padding:.6em;border-radius:4px}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Network <b>{html.escape(network.name)}</b>: {network.n_nodes} nodes, "
        f"{network.n_links} links.</p>",
        f"<p><b>{html.escape(index_label(index, order))}</b> values relative to "
        f"<b>{html.escape(REFERENCES[timeline.reference][1])}</b>, in {unit(timeline)}. A node counts "
        f"as chlorinated with {html.escape(threshold_text(timeline))}. Model "
        f"{html.escape(str(timeline.meta['model_hash']))}, "
        f"{html.escape(timeline.engine_label)}.</p>",
        *(
            f"<p class='warning'><b>{html.escape(heading)}</b> -- {html.escape(text)}.</p>"
            for heading, text in warnings_of(timeline)
        ),
        f"<p><i id='summary'>{html.escape(sentences[start])}</i></p>",
        "" if network.has_coordinates else f"<p><b>Note:</b> {html.escape(NO_COORDINATES)}</p>",
        si.to_html(full_html=False, include_plotlyjs=True, auto_play=False, div_id="si-graph"),
        forecast_figure(timeline, start).to_html(
            full_html=False, include_plotlyjs=False, div_id="forecast"
        ),
        *(f"<p>{html.escape(text)}</p>" for text in notes if text),
        f"<script>const FOLLOW = {json.dumps(follow)};\n{_FOLLOW_JS}</script>",
        "<h2>How to read this</h2>",
        _markdown(HOW_TO_READ),
        "</body></html>",
    ]
    return "\n".join(parts)


# Moves the summary sentence and the forecast chart's marker ("now" trace, dotted line) to
# the SI-Graph's frame whenever it changes (play, pause, slider).
_FOLLOW_JS = """
document.getElementById('si-graph').on('plotly_animatingframe', function (event) {
  const t = Number(event.name);
  document.getElementById('summary').textContent = FOLLOW.sentences[t];
  const chart = document.getElementById('forecast');
  const now = chart.data.findIndex(trace => trace.name === 'now');
  const x = FOLLOW.minutes[t];
  Plotly.restyle(chart, {x: [[x]], y: [[FOLLOW.forecast[t]]]}, [now]);
  Plotly.relayout(chart, {'shapes[0].x0': x, 'shapes[0].x1': x});
});
"""


def shapiq_zip(timeline: Timeline, index: str, order: int | None) -> bytes:
    """The shapiq JSON files of every step (see :meth:`Timeline.write_json`, with node
    ids) in one zip archive."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = timeline.write_json(tmp, index, order)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in paths:
                archive.write(path, path.name)
    return buffer.getvalue()


def write_gif(
    timeline: Timeline,
    network: Network,
    path: str | Path,
    *,
    index: str = "SV",
    order: int | None = None,
    top_k: int = 10,
    fps: int = 2,
) -> None:
    """An animated GIF of the SI-Graph over time (for slides), drawn with matplotlib: node
    values, the ``top_k`` strongest pairs as lines (red raise, blue lower, width by
    magnitude; order >= 2), node labels (on small networks), reservoir and injection markers,
    a labelled colour bar and, per frame, the forecast, the simulated truth and the
    reference forecast. Markers shrink with the network's size
    (:func:`~.plot.marker_scale`), so that large networks stay readable."""
    import imageio.v2 as imageio
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = resolved_order(timeline, index, order)
    frames = [frame_data(timeline, t, index, order, top_k) for t in range(len(timeline))]
    scale = float(np.abs(np.stack([f.node_values for f in frames])).max()) or 1.0
    top = max((abs(v) for f in frames for _, v in f.pairs), default=0.0) or 1.0
    images = []
    for t, data in enumerate(frames):
        fig = gif_frame(timeline, network, t, data, index, order, scale=scale, top=top)
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())
        plt.close(fig)
    with atomic_write(path) as tmp:
        imageio.mimsave(tmp, images, format="GIF", duration=1000 / fps, loop=0)


def gif_frame(
    timeline: Timeline,
    network: Network,
    t: int,
    data,
    index: str,
    order: int,
    *,
    scale: float,
    top: float,
):
    """One GIF frame (a matplotlib Figure) of step ``t``: ``data`` is its
    :class:`~.plot.FrameData`, ``scale`` the largest node value and ``top`` the largest pair
    value of the whole timeline (fixed colour and width scales)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    xy = network.map_coordinates
    roles = np.array(network.node_roles)
    injection = network.node_index(injection_node(timeline.scenario, network))
    area = marker_scale(network.n_nodes) ** 2  # matplotlib sizes are areas
    values = data.node_values
    fig, ax = plt.subplots(figsize=(8, 6.4), dpi=80)
    pipes = LineCollection(xy[network.link_nodes], colors="#cccccc", lw=2 * area**0.5)
    ax.add_collection(pipes, autolim=True)
    if data.pairs:
        members = np.array([m for m, _ in data.pairs])
        strength = np.array([v for _, v in data.pairs])
        pairs = LineCollection(
            xy[members],
            colors=np.where(strength > 0, POSITIVE, NEGATIVE),
            lw=1 + 5 * np.abs(strength) / top,
            alpha=0.7,
            zorder=1.5,
            label="pairs",
        )
        ax.add_collection(pairs)
    for role, marker in (("junction", "o"), ("reservoir", "s"), ("tank", "D")):
        keep = roles == role
        if keep.any():
            sc = ax.scatter(
                xy[keep, 0],
                xy[keep, 1],
                c=values[keep],
                cmap="RdBu_r",
                vmin=-scale,
                vmax=scale,
                s=area * (50 + 300 * np.abs(values[keep]) / scale),
                marker=marker,
                edgecolors="black",
                linewidths=area**0.5,
                zorder=2,
            )
    ax.scatter(  # the source as on the app's maps: a hollow orange star
        *xy[injection],
        s=700 * area**0.5,
        marker="*",
        facecolors="none",
        edgecolors=SOURCE_ON,
        lw=2,
        zorder=3,
    )
    if network.n_nodes <= LABELLED_NODES:
        for i, nid in enumerate(network.node_ids):
            ax.annotate(nid, xy[i], xytext=(5, 5), textcoords="offset points", fontsize=9)
    name = index_name(index)
    fig.colorbar(sc, ax=ax, label=f"{name} of a node ({unit(timeline)})", shrink=0.8)
    handles = [
        Line2D([], [], marker="s", ls="", color="grey", label="reservoir"),
        Line2D(
            [], [], marker="*", ls="", mfc="none", mec=SOURCE_ON, ms=14, label="chlorine enters"
        ),
        Line2D([], [], marker="o", ls="", color=POSITIVE, label="raises forecast"),
        Line2D([], [], marker="o", ls="", color=NEGATIVE, label="lowers forecast"),
    ]
    if order >= 2:
        handles += [
            Line2D([], [], color=POSITIVE, lw=3, label="pair raises"),
            Line2D([], [], color=NEGATIVE, lw=3, label="pair lowers"),
        ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=len(handles) // 2 if order >= 2 else 4,
        fontsize=8,
        frameon=False,
    )
    e = timeline.explanations[t]
    drawn = ", nodes and strongest pairs" if order >= 2 else ""
    interval = interval_range(timeline, t)
    interval = f" ({interval})" if interval else ""
    lines = (
        f"{index_label(index, order)}{drawn}: {forecast_time(timeline, t)}",
        f"forecast {e.prediction:.2f}{interval}, simulated {timeline.truth[t]:.2f}",
        f"reference ({reference_label(timeline.reference)}) {e.empty_prediction:.2f} — "
        f"{unit(timeline)}",
    )
    # each line kept inside the frame: ~0.6 em a character in matplotlib's sans-serif
    fits = int(fig.get_figwidth() * 72 / (0.6 * TITLE_PT))
    fig.suptitle("\n".join(textwrap.fill(line, fits) for line in lines), fontsize=TITLE_PT)
    ax.set_axis_off()
    ax.set_aspect("equal")
    ax.margins(0.08)
    fig.tight_layout()
    return fig
