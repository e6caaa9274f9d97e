"""SI-Graphs over the network map (Plotly) and a GIF of a timeline (matplotlib).

Node colour and size show the first-order value of the chosen index; pairwise interactions
are lines between the two nodes (red positive, blue negative, width by magnitude, also for
nodes that are not adjacent); higher-order interactions are translucent hulls over their
nodes. One colour scale is fixed across all frames so that frames compare.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from .explain.indices import check_index
from .network import Network
from .timeline import Timeline

POSITIVE, NEGATIVE = "#d62728", "#1f77b4"
COLORSCALE = "RdBu_r"


@dataclass(frozen=True)
class FrameData:
    """What one frame shows: node values (n,), pair and higher-order interactions."""

    node_values: np.ndarray
    pairs: list[tuple[tuple[int, int], float]]
    higher: list[tuple[tuple[int, ...], float]]


def frame_data(
    timeline: Timeline, step: int, index: str, order: int | None, top_k: int
) -> FrameData:
    """Values of explained step ``step``: all first-order values and the ``top_k`` largest
    interactions of order 2 and of order >= 3 (by magnitude)."""
    e = timeline.explanations[step]
    order = check_index(index, order, e.blocks.max_size)[1]
    node_values = e.node_values(index, order)
    pairs, higher = [], []
    for size in range(2, order + 1):
        members, values = e.index_values(index, order, size)
        keep = np.argsort(-np.abs(values))[:top_k]
        items = [
            (tuple(int(v) for v in members[i]), float(values[i]))
            for i in keep
            if abs(values[i]) > 0
        ]
        (pairs if size == 2 else higher).extend(items)
    higher = sorted(higher, key=lambda kv: -abs(kv[1]))[:top_k]
    return FrameData(node_values, pairs, higher)


def _pipe_trace(network: Network) -> dict:
    xy = network.coordinates
    xs, ys = [], []
    for u, v in network.link_nodes:
        xs += [xy[u, 0], xy[v, 0], np.nan]
        ys += [xy[u, 1], xy[v, 1], np.nan]
    return dict(
        type="scatter",
        x=np.array(xs),
        y=np.array(ys),
        mode="lines",
        line=dict(color="#bbbbbb", width=3),
        hoverinfo="skip",
        name="pipes",
    )


WIDTHS = (1.5, 4.0, 8.0)  # pair lines are drawn in three width classes by magnitude


def _pair_traces(network: Network, pairs, index: str) -> list[dict]:
    """Six traces (sign x width class), each a set of None-separated segments."""
    xy = network.coordinates
    top = max((abs(v) for _, v in pairs), default=0.0) or 1.0
    traces = []
    for colour, sign in ((POSITIVE, 1), (NEGATIVE, -1)):
        for c, width in enumerate(WIDTHS):
            xs, ys, text = [], [], []
            for (i, j), value in pairs:
                cls = min(int(3 * abs(value) / top), 2)
                if np.sign(value) != sign or cls != c:
                    continue
                label = f"{index} {{{network.node_ids[i]}, {network.node_ids[j]}}} = {value:+.4g}"
                xs += [xy[i, 0], xy[j, 0], np.nan]
                ys += [xy[i, 1], xy[j, 1], np.nan]
                text += [label, label, ""]
            traces.append(
                dict(
                    type="scatter",
                    x=np.array(xs or [np.nan]),  # NaN separates segments; arrays validate fast
                    y=np.array(ys or [np.nan]),
                    mode="lines",
                    opacity=0.75,
                    line=dict(color=colour, width=width),
                    hovertext=text or [""],
                    hoverinfo="text",
                    name=f"pairs {'+' if sign > 0 else '-'}",
                )
            )
    return traces


def _hyperedge_traces(network: Network, higher, index: str) -> list[dict]:
    """Two filled traces (sign): translucent hulls around each higher-order set."""
    xy = network.coordinates
    traces = []
    for colour, sign in ((POSITIVE, 1), (NEGATIVE, -1)):
        xs, ys, text = [], [], []
        for members, value in higher:
            if np.sign(value) != sign:
                continue
            pts = xy[list(members)]
            centre = pts.mean(axis=0)
            ring = pts[np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))]
            ring = centre + 1.15 * (ring - centre)
            label = f"{index} {{{', '.join(network.node_ids[m] for m in members)}}} = {value:+.4g}"
            xs += [*ring[:, 0], ring[0, 0], np.nan]
            ys += [*ring[:, 1], ring[0, 1], np.nan]
            text += [label] * (len(ring) + 1) + [""]
        traces.append(
            dict(
                type="scatter",
                x=np.array(xs or [np.nan]),
                y=np.array(ys or [np.nan]),
                mode="lines",
                fill="toself",
                fillcolor=colour,
                opacity=0.18,
                line=dict(width=0),
                hovertext=text or [""],
                hoverinfo="text",
                name=f"hyperedges {'+' if sign > 0 else '-'}",
            )
        )
    return traces


def _node_trace(
    network: Network, timeline: Timeline, step: int, values: np.ndarray, scale: float, index: str
) -> dict:
    xy = network.coordinates
    roles = np.array(network.node_roles)
    injection = timeline.scenario.injection_node or network.reservoirs[0]
    hover = [
        f"node {nid} ({role})<br>chlorine {c:.3f} of source<br>{index} {v:+.4g}"
        for nid, role, c, v in zip(network.node_ids, roles, timeline.chlorine[step], values)
    ]
    return dict(
        type="scatter",
        x=xy[:, 0],
        y=xy[:, 1],
        mode="markers+text",
        text=list(network.node_ids),
        textposition="top center",
        textfont=dict(size=9),
        hovertext=hover,
        hoverinfo="text",
        name="nodes",
        marker=dict(
            size=10 + 30 * np.abs(values) / (scale or 1.0),
            color=values,
            colorscale=COLORSCALE,
            cmin=-scale,
            cmax=scale,
            colorbar=dict(title=dict(text=index), thickness=14),
            symbol=np.where(
                roles == "reservoir", "square", np.where(roles == "tank", "diamond", "circle")
            ),
            line=dict(width=np.where(np.array(network.node_ids) == injection, 4, 1), color="black"),
        ),
    )


def frame_traces(
    network: Network, timeline: Timeline, step: int, data: FrameData, scale: float, index: str
) -> list[dict]:
    """The ten traces of one frame: pipes, six pair classes, two hyperedge signs, nodes."""
    return [
        _pipe_trace(network),
        *_pair_traces(network, data.pairs, index),
        *_hyperedge_traces(network, data.higher, index),
        _node_trace(network, timeline, step, data.node_values, scale, index),
    ]


def timeline_figure(
    timeline: Timeline,
    network: Network,
    *,
    index: str = "k-SII",
    order: int | None = None,
    top_k: int = 10,
    height: int = 620,
) -> go.Figure:
    """Animated SI-Graph: one frame per explained step, play/pause and a time slider."""
    frames_data = [frame_data(timeline, t, index, order, top_k) for t in range(len(timeline))]
    scale = max(float(np.abs(f.node_values).max()) for f in frames_data) or 1.0
    minutes = [f"{s / 60:.0f} min" for s in timeline.times_s]
    order = check_index(index, order, timeline.explanations[0].blocks.max_size)[1]
    label = index if index in ("SV", "BV") else f"{index} order {order}"
    titles = [
        f"{label} — forecast at {minutes[t]}: {timeline.forecast[t]:.3f} (simulated {timeline.truth[t]:.3f})"
        for t in range(len(timeline))
    ]
    frames = [
        dict(
            name=str(t),
            data=frame_traces(network, timeline, t, d, scale, index),
            layout=dict(title=dict(text=titles[t])),
        )
        for t, d in enumerate(frames_data)
    ]
    layout = dict(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        plot_bgcolor="white",
        title=dict(text=titles[0]),
        xaxis=dict(visible=False),
        yaxis=dict(visible=False, scaleanchor="x"),
        showlegend=False,
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                x=0.0,
                y=-0.02,
                xanchor="left",
                yanchor="top",
                buttons=[
                    dict(
                        label="▶ play",
                        method="animate",
                        args=[
                            None,
                            dict(
                                frame=dict(duration=600, redraw=True),
                                fromcurrent=True,
                                transition=dict(duration=0),
                            ),
                        ],
                    ),
                    dict(
                        label="❚❚ pause",
                        method="animate",
                        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")],
                    ),
                ],
            )
        ],
        sliders=[
            dict(
                active=0,
                x=0.2,
                len=0.8,
                y=-0.02,
                currentvalue=dict(prefix="forecast made at "),
                steps=[
                    dict(
                        label=minutes[t],
                        method="animate",
                        args=[
                            [str(t)],
                            dict(mode="immediate", frame=dict(duration=0, redraw=True)),
                        ],
                    )
                    for t in range(len(frames))
                ],
            )
        ],
    )
    return go.Figure(dict(data=frames[0]["data"], layout=layout, frames=frames))


def write_gif(
    timeline: Timeline,
    network: Network,
    path,
    *,
    index: str = "SV",
    order: int | None = None,
    fps: int = 3,
) -> None:
    """An animated GIF of node values over time (for slides), drawn with matplotlib."""
    import imageio.v2 as imageio
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = np.stack(
        [frame_data(timeline, t, index, order, 0).node_values for t in range(len(timeline))]
    )
    scale = float(np.abs(values).max()) or 1.0
    xy = network.coordinates
    images = []
    for t in range(len(timeline)):
        fig, ax = plt.subplots(figsize=(6, 5), dpi=80)
        for u, v in network.link_nodes:
            ax.plot(xy[[u, v], 0], xy[[u, v], 1], color="#bbbbbb", lw=2, zorder=1)
        sc = ax.scatter(
            xy[:, 0],
            xy[:, 1],
            c=values[t],
            cmap="RdBu_r",
            vmin=-scale,
            vmax=scale,
            s=40 + 300 * np.abs(values[t]) / scale,
            edgecolors="black",
            zorder=2,
        )
        fig.colorbar(sc, ax=ax, label=index)
        ax.set_title(
            f"{index} at {timeline.times_s[t] / 60:.0f} min: forecast {timeline.forecast[t]:.3f}"
        )
        ax.set_axis_off()
        fig.canvas.draw()
        images.append(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())
        plt.close(fig)
    imageio.mimsave(path, images, duration=1000 / fps, loop=0)


def forecast_figure(timeline: Timeline, step: int | None = None, height: int = 260) -> go.Figure:
    """Forecast vs simulated truth (fraction chlorinated at t + horizon) over time."""
    minutes = timeline.times_s / 60
    fig = go.Figure(
        [
            go.Scatter(
                x=minutes,
                y=timeline.truth,
                name="simulated",
                mode="lines+markers",
                line=dict(color="#444"),
            ),
            go.Scatter(
                x=minutes,
                y=timeline.forecast,
                name="forecast",
                mode="lines+markers",
                line=dict(color=POSITIVE),
            ),
        ]
    )
    if step is not None:
        fig.add_vline(x=float(minutes[step]), line=dict(color="#999", dash="dot"))
    h = timeline.meta.get("horizon", "?")
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        title=f"fraction chlorinated {h} steps ahead",
        xaxis_title="forecast made at (min)",
        yaxis=dict(range=[-0.05, 1.05]),
        legend=dict(orientation="h", y=-0.35),
    )
    return fig


def chlorine_figure(
    timeline: Timeline, network: Network, step: int, height: int = 320
) -> go.Figure:
    """Chlorine (fraction of the source concentration) on the map at one step."""
    xy = network.coordinates
    fig = go.Figure(
        [
            _pipe_trace(network),
            go.Scatter(
                x=xy[:, 0],
                y=xy[:, 1],
                mode="markers",
                marker=dict(
                    size=12,
                    color=timeline.chlorine[step],
                    colorscale="Greens",
                    cmin=0,
                    cmax=1,
                    line=dict(width=1, color="black"),
                    colorbar=dict(title="Cl", thickness=10),
                ),
                hovertext=[
                    f"node {n}: {c:.3f}" for n, c in zip(network.node_ids, timeline.chlorine[step])
                ],
                hoverinfo="text",
                name="chlorine",
            ),
        ]
    )
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        showlegend=False,
        plot_bgcolor="white",
        title=f"chlorine at {timeline.times_s[step] / 60:.0f} min",
        xaxis=dict(visible=False),
        yaxis=dict(visible=False, scaleanchor="x"),
    )
    return fig


def value_over_time(
    timeline: Timeline, members: tuple[int, ...], index: str, order: int
) -> np.ndarray:
    """The value of one node (or node set) of ``index`` at every explained step."""
    out = np.zeros(len(timeline))
    for t, e in enumerate(timeline.explanations):
        sets, values = e.index_values(index, order, len(members))
        hit = np.flatnonzero((sets == np.array(members)[None, :]).all(axis=1))
        out[t] = values[hit[0]] if len(hit) else 0.0
    return out


def value_figure(
    timeline: Timeline,
    network: Network,
    members: tuple[int, ...],
    index: str,
    order: int,
    height: int = 260,
) -> go.Figure:
    """A node's (or pair's) value over time."""
    label = ", ".join(network.node_ids[m] for m in members)
    fig = go.Figure(
        go.Bar(
            x=timeline.times_s / 60,
            y=value_over_time(timeline, members, index, order),
            marker_color=POSITIVE,
        )
    )
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        title=f"{index} of {{{label}}} over time",
        xaxis_title="forecast made at (min)",
    )
    return fig
