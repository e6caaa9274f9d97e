"""SI-Graphs over the network map and the side panels (Plotly); reports live in
:mod:`.report`.

Node colour and size show the first-order value of the chosen index, in the forecast's unit
(share of nodes chlorinated); pairwise interactions are curved arcs between the two nodes
(red positive, blue negative, width by magnitude, also for nodes that are not adjacent) over
light grey straight pipes; higher-order interactions are translucent dashed hulls with a ▲
marker naming their members. One colour scale is fixed across all frames so that frames
compare.

Maps stay readable at utility scale (hundreds to thousands of nodes): every map trace is
SVG up to 1000 nodes and WebGL (``scattergl``) beyond (:func:`trace_type`), the pipes are one line trace, markers shrink with the network's size
(:func:`marker_scale`), node labels are written only on small networks (hover names every
node), only the ``top_k`` strongest interactions are drawn, and the axes keep an equal
aspect under Plotly's own zoom. Nodes are drawn at
:attr:`~wdn_explain.network.Network.map_coordinates` (a computed layout for a network whose
.inp has no coordinates).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from .explain.indices import check_index
from .narrative import (
    UNIT,
    forecast_time,
    horizon_s,
    index_label,
    index_name,
    minutes,
    reference_label,
    resolved_order,
    threshold_text,
)
from .network import Network
from .simulation import injection_node
from .timeline import Timeline

POSITIVE, NEGATIVE = "#d62728", "#1f77b4"
COLORSCALE = "RdBu_r"
LABELLED_NODES = 60  # node ids are written on maps of at most this many nodes
_REFERENCE_NODES = 32  # markers keep their full size up to this many nodes (Hanoi)


WEBGL_NODES = 1000  # maps of larger networks are drawn with WebGL


def trace_type(network: Network) -> str:
    """``scatter`` (SVG) up to :data:`WEBGL_NODES` nodes, else ``scattergl`` (WebGL): a
    browser without a GPU redraws even L-Town's 785 nodes faster as SVG (3.7 s against
    5.9 s per play step in headless Chromium on 2 busy cores), while WebGL keeps networks
    of thousands of nodes drawable."""
    return "scattergl" if network.n_nodes > WEBGL_NODES else "scatter"


def marker_scale(n_nodes: int) -> float:
    """How much node markers shrink on a network of ``n_nodes`` (1 up to Hanoi's 32 nodes,
    falling with the square root of the node count, never below 0.35)."""
    return float(np.clip(np.sqrt(_REFERENCE_NODES / max(n_nodes, 1)), 0.35, 1.0))


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
    """The pipes as one trace of thin, light grey straight segments separated by NaN
    (interactions are drawn curved)."""
    xy = network.map_coordinates
    ends = xy[network.link_nodes]  # (n_links, 2 ends, 2)
    gaps = np.full((network.n_links, 1, 2), np.nan)
    segments = np.concatenate([ends, gaps], axis=1).reshape(-1, 2)
    return dict(
        type=trace_type(network),
        x=segments[:, 0],
        y=segments[:, 1],
        mode="lines",
        line=dict(color=PIPE, width=2 * marker_scale(network.n_nodes) ** 0.5),
        hoverinfo="skip",
        name="pipes",
    )


PIPE = "#d4d4d4"
DEVICES = {"pump": "triangle-right", "valve": "bowtie"}  # link types drawn as a marker


def _device_traces(network: Network) -> list[dict]:
    """One trace of markers at the middle of the network's pumps and valves (none when it
    has neither), so that they stand out from plain pipes; hover names them."""
    kinds = np.array(network.link_types)
    keep = np.flatnonzero(np.isin(kinds, list(DEVICES)))
    if not len(keep):
        return []
    mid = network.map_coordinates[network.link_nodes[keep]].mean(axis=1)
    return [
        dict(
            type=trace_type(network),
            x=mid[:, 0],
            y=mid[:, 1],
            mode="markers",
            marker=dict(
                symbol=[DEVICES[k] for k in kinds[keep]],
                size=14,
                color="#555",
                line=dict(width=1, color="black"),
            ),
            hovertext=[f"{kinds[k]} {network.link_ids[k]}" for k in keep],
            hoverinfo="text",
            name="pumps and valves",
        )
    ]


WIDTHS = (1.5, 4.0, 8.0)  # pair lines are drawn in three width classes by magnitude
BEND = 0.2  # a pair's arc bulges sideways by this share of the distance between its nodes


def _arc(a: np.ndarray, b: np.ndarray, n: int = 16) -> np.ndarray:
    """Points of a quadratic Bézier arc from ``a`` to ``b`` bent to one side, shape (n, 2),
    so that an interaction never lies on the pipe between the same two nodes."""
    control = (a + b) / 2 + BEND * np.array([-(b - a)[1], (b - a)[0]])
    u = np.linspace(0, 1, n)[:, None]
    return (1 - u) ** 2 * a + 2 * u * (1 - u) * control + u**2 * b


def _pair_traces(network: Network, pairs, index: str) -> list[dict]:
    """Six line traces (sign x width class) of curved arcs, hover-free so that hovering a
    node shows the node, plus one trace of arc midpoints carrying each pair's hover text."""
    xy = network.map_coordinates
    top = max((abs(v) for _, v in pairs), default=0.0) or 1.0
    traces, mids, text, colours = [], [], [], []
    for colour, sign in ((POSITIVE, 1), (NEGATIVE, -1)):
        for c, width in enumerate(WIDTHS):
            xs, ys = [], []
            for (i, j), value in pairs:
                cls = min(int(3 * abs(value) / top), 2)
                if np.sign(value) != sign or cls != c:
                    continue
                arc = _arc(xy[i], xy[j])
                xs += [*arc[:, 0], np.nan]
                ys += [*arc[:, 1], np.nan]
                mids.append(arc[len(arc) // 2])
                colours.append(colour)
                text.append(
                    f"pair {{{network.node_ids[i]}, {network.node_ids[j]}}}<br>"
                    f"{index} {value:+.4f} (share of nodes)"
                )
            traces.append(
                dict(
                    type=trace_type(network),
                    x=np.array(xs or [np.nan]),  # NaN separates segments; arrays validate fast
                    y=np.array(ys or [np.nan]),
                    mode="lines",
                    opacity=0.7,
                    line=dict(color=colour, width=width),
                    hoverinfo="skip",
                    name=f"pairs {'+' if sign > 0 else '-'}",
                )
            )
    mids_xy = np.array(mids).reshape(-1, 2)
    traces.append(
        dict(
            type=trace_type(network),
            x=mids_xy[:, 0] if len(mids) else np.array([np.nan]),
            y=mids_xy[:, 1] if len(mids) else np.array([np.nan]),
            mode="markers",
            marker=dict(size=7, color=colours or ["#000"], symbol="circle-open"),
            hovertext=text or [""],
            hoverinfo="text",
            name="pair values",
        )
    )
    return traces


def _hyperedge_traces(network: Network, higher, index: str) -> list[dict]:
    """Two filled traces (sign) of translucent hulls with dashed outlines around each set of
    three or more nodes, and one trace of ▲ markers at their centres naming the members."""
    xy = network.map_coordinates
    traces, centres, text, colours = [], [], [], []
    for colour, sign in ((POSITIVE, 1), (NEGATIVE, -1)):
        xs, ys = [], []
        for members, value in higher:
            if np.sign(value) != sign:
                continue
            pts = xy[list(members)]
            centre = pts.mean(axis=0)
            ring = pts[np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))]
            ring = centre + 1.15 * (ring - centre)
            xs += [*ring[:, 0], ring[0, 0], np.nan]
            ys += [*ring[:, 1], ring[0, 1], np.nan]
            centres.append(centre)
            colours.append(colour)
            ids = ", ".join(network.node_ids[m] for m in members)
            text.append(f"order {len(members)}: {{{ids}}}<br>{index} {value:+.4f} (share of nodes)")
        traces.append(
            dict(
                type=trace_type(network),
                x=np.array(xs or [np.nan]),
                y=np.array(ys or [np.nan]),
                mode="lines",
                fill="toself",
                fillcolor=colour,
                opacity=0.3,
                line=dict(width=1.5, color=colour, dash="dash"),
                hoverinfo="skip",
                name=f"hyperedges {'+' if sign > 0 else '-'}",
            )
        )
    xy_c = np.array(centres).reshape(-1, 2)
    traces.append(
        dict(
            type=trace_type(network),
            x=xy_c[:, 0] if centres else np.array([np.nan]),
            y=xy_c[:, 1] if centres else np.array([np.nan]),
            mode="markers",
            marker=dict(size=11, color=colours or ["#000"], symbol="triangle-up"),
            hovertext=text or [""],
            hoverinfo="text",
            name="group values",
        )
    )
    return traces


def _node_trace(
    network: Network, timeline: Timeline, step: int, values: np.ndarray, scale: float, index: str
) -> dict:
    xy = network.map_coordinates
    roles = np.array(network.node_roles)
    injection = injection_node(timeline.scenario, network)
    size = marker_scale(network.n_nodes)
    labelled = network.n_nodes <= LABELLED_NODES
    hover = [
        f"<b>node {nid}</b> ({role})<br>chlorine {c:.3f} mg/L<br>{index} {v:+.4f} (share of nodes)"
        for nid, role, c, v in zip(network.node_ids, roles, timeline.chlorine[step], values)
    ]
    return dict(
        type=trace_type(network),
        x=xy[:, 0],
        y=xy[:, 1],
        mode="markers+text" if labelled else "markers",
        text=list(network.node_ids) if labelled else None,
        textposition="top right",
        textfont=dict(size=12, color="#222"),
        hovertext=hover,
        hoverinfo="text",
        name="nodes",
        marker=dict(
            size=size * (9 + 22 * np.abs(values) / (scale or 1.0)),
            color=values,
            colorscale=COLORSCALE,
            cmin=-scale,
            cmax=scale,
            colorbar=dict(
                title=dict(text=f"{index}<br>(share of<br>nodes)", side="top"), thickness=14
            ),
            symbol=np.where(
                roles == "reservoir", "square", np.where(roles == "tank", "diamond", "circle")
            ),
            line=dict(
                width=np.where(np.array(network.node_ids) == injection, 4, size), color="black"
            ),
        ),
    )


def frame_traces(
    network: Network, timeline: Timeline, step: int, data: FrameData, scale: float, index: str
) -> list[dict]:
    """The traces of one frame, nodes and the source last (on top): pipes, pumps and valves
    (if any), six pair classes and the pair values, two hyperedge signs and the group
    values, nodes, the source."""
    name = index_name(index)
    return [
        _pipe_trace(network),
        *_device_traces(network),
        *_pair_traces(network, data.pairs, name),
        *_hyperedge_traces(network, data.higher, name),
        _node_trace(network, timeline, step, data.node_values, scale, name),
        _source_trace(network, timeline, step),
    ]


def source_state(timeline: Timeline, step: int) -> str:
    """``source on (1.5 mg/L)`` or ``source off``: the planned setpoint of the injection at
    the time of ``step``."""
    setpoint = float(timeline.scenario.injection_setpoint_mg_l(timeline.times_s[step]))
    return f"source on ({setpoint:g} mg/L)" if setpoint > 0 else "source off"


def _source_trace(network: Network, timeline: Timeline, step: int) -> dict:
    """A hollow star around the node where chlorine enters (the node's colour stays
    visible), labelled with its state at ``step``: orange and bold while on, grey while off."""
    node = network.node_index(injection_node(timeline.scenario, network))
    state = source_state(timeline, step)
    on = state != "source off"
    x, y = network.map_coordinates[node]
    return dict(
        type=trace_type(network),
        x=[x],
        y=[y],
        mode="markers+text",
        text=[f"{network.node_ids[node]}: {state}"],
        textposition="bottom center",
        textfont=dict(size=12, color="#000" if on else "#666"),
        marker=dict(
            symbol="star-open",
            size=30,
            color="#e67300" if on else "#888",
            line=dict(width=3 if on else 1.5),
        ),
        hoverinfo="text",
        hovertext=[f"<b>node {network.node_ids[node]}</b>: chlorine enters here, {state}"],
        name="source",
    )


def opening_step(timeline: Timeline) -> int:
    """The step a view opens on: the first informative step
    (:meth:`Timeline.first_informative_step`), moved on to the first step at which some
    node carries chlorine, so that the chlorine map is not blank (unchanged when chlorine
    never appears)."""
    first = timeline.first_informative_step()
    wet = np.flatnonzero(timeline.chlorine[first:].max(axis=1) > 0)
    return first + int(wet[0]) if len(wet) else first


def focused_layout(network: Network, node: int, share: float = 0.12) -> dict:
    """Axis ranges that zoom a map onto ``node``: a window of ``share`` of the network's
    extent around it."""
    xy = network.map_coordinates
    half = share * (xy.max(axis=0) - xy.min(axis=0)).max() / 2
    x, y = xy[node]
    return dict(xaxis=dict(range=[x - half, x + half]), yaxis=dict(range=[y - half, y + half]))


def found_trace(network: Network, node: int) -> dict:
    """A large ring and the id at ``node`` (the node found by id)."""
    x, y = network.map_coordinates[node]
    return dict(
        type=trace_type(network),
        x=[x],
        y=[y],
        mode="markers+text",
        text=[network.node_ids[node]],
        textposition="top center",
        textfont=dict(size=14, color="#000"),
        marker=dict(symbol="circle-open", size=34, color="#000", line=dict(width=3)),
        hoverinfo="skip",
        name="found",
    )


def value_scale(timeline: Timeline, index: str, order: int | None) -> float:
    """One colour scale for every frame: the largest first-order magnitude of the timeline."""
    return float(np.abs(timeline.node_values(index, order)).max()) or 1.0


def frame_title(timeline: Timeline, step: int, index: str, order: int | None) -> str:
    """Two short lines: what and when, then forecast, truth and reference forecast."""
    order = resolved_order(timeline, index, order)
    e = timeline.explanations[step]
    return (
        f"{index_label(index, order)}, {forecast_time(timeline, step)}<br><sup>"
        f"forecast {e.prediction:.2f}, simulated {timeline.truth[step]:.2f}, reference "
        f"{e.empty_prediction:.2f} ({reference_label(timeline.reference)}) — {UNIT}</sup>"
    )


def _map_layout(network: Network, height: int, title: str) -> dict:
    """A map layout with room around the nodes (labels and big markers are not clipped),
    equal aspect, and the title at the left, clear of any toolbar at the right."""
    xy = network.map_coordinates
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    pad = 0.08 * (hi - lo)
    return dict(
        height=height,
        margin=dict(l=10, r=10, t=60, b=10),
        plot_bgcolor="white",
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=14)),
        xaxis=dict(visible=False, range=[lo[0] - pad[0], hi[0] + 1.5 * pad[0]]),
        yaxis=dict(
            visible=False,
            range=[lo[1] - pad[1], hi[1] + pad[1]],
            scaleanchor="x",
            scaleratio=1,
        ),
        showlegend=False,
        hovermode="closest",
    )


def si_graph_figure(
    timeline: Timeline,
    network: Network,
    step: int,
    *,
    index: str = "k-SII",
    order: int | None = 2,
    top_k: int = 10,
    scale: float | None = None,
    height: int = 620,
    focus: int | None = None,
) -> go.Figure:
    """The SI-Graph of one step (the app draws the step of its time cursor); with ``focus``
    (a node index) the map is zoomed onto that node and rings it."""
    scale = value_scale(timeline, index, order) if scale is None else scale
    data = frame_data(timeline, step, index, order, top_k)
    layout = _map_layout(network, height, frame_title(timeline, step, index, order))
    traces = drawn(frame_traces(network, timeline, step, data, scale, index))
    return _focused(go.Figure(dict(data=traces, layout=layout)), network, focus)


def drawn(traces: list[dict]) -> list[dict]:
    """``traces`` less the empty placeholders (a single NaN point) that keep an animation's
    frames trace by trace alike: a one-step figure draws the same picture without them, and
    every trace costs the browser a redraw per step (Hanoi: 13 traces -> 3 to 8)."""
    return [t for t in traces if not (len(t["x"]) == 1 and np.isnan(t["x"][0]))]


def _focused(fig: go.Figure, network: Network, focus: int | None) -> go.Figure:
    if focus is not None:
        fig.add_trace(found_trace(network, focus))
        fig.update_layout(focused_layout(network, focus))
    return fig


def timeline_figure(
    timeline: Timeline,
    network: Network,
    *,
    index: str = "k-SII",
    order: int | None = None,
    top_k: int = 10,
    height: int = 680,
    start: int | None = None,
) -> go.Figure:
    """Animated SI-Graph: one frame per explained step, play/pause and a time slider (the
    HTML report's figure).

    The figure opens on frame ``start`` (default: :func:`opening_step`)."""
    start = opening_step(timeline) if start is None else start
    scale = value_scale(timeline, index, order)
    frames = [
        dict(
            name=str(t),
            data=frame_traces(
                network, timeline, t, frame_data(timeline, t, index, order, top_k), scale, index
            ),
            layout=dict(title=dict(text=frame_title(timeline, t, index, order))),
        )
        for t in range(len(timeline))
    ]
    layout = _map_layout(network, height, frame_title(timeline, start, index, order))
    layout["margin"]["b"] = 90
    layout["updatemenus"] = [
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
    ]
    layout["sliders"] = [
        dict(
            active=start,
            x=0.22,
            len=0.78,
            y=-0.02,
            pad=dict(t=30),
            currentvalue=dict(prefix="forecast made at ", xanchor="left"),
            steps=[
                dict(
                    label=minutes(timeline.times_s[t]),
                    method="animate",
                    args=[[str(t)], dict(mode="immediate", frame=dict(duration=0, redraw=True))],
                )
                for t in range(len(frames))
            ],
        )
    ]
    return go.Figure(dict(data=frames[start]["data"], layout=layout, frames=frames))


def forecast_figure(timeline: Timeline, step: int | None = None, height: int = 330) -> go.Figure:
    """Forecast, simulated truth and reference forecast (share of nodes chlorinated at
    t + horizon) over the time the forecast is made; a marker at ``step``."""
    made = timeline.times_s / 60
    ref = reference_label(timeline.reference)
    traces = [
        go.Scatter(x=made, y=timeline.truth, name="simulated", line=dict(color="#444")),
        go.Scatter(x=made, y=timeline.forecast, name="forecast", line=dict(color=POSITIVE)),
        go.Scatter(
            x=made,
            y=timeline.reference_forecast,
            name=f"reference forecast ({ref})",
            line=dict(color="#999", dash="dash"),
        ),
    ]
    if step is not None:
        traces.append(
            go.Scatter(
                x=[made[step]],
                y=[timeline.forecast[step]],
                name="now",
                mode="markers",
                marker=dict(size=13, color=POSITIVE, line=dict(width=2, color="black")),
                showlegend=False,
            )
        )
    fig = go.Figure(traces)
    if step is not None:
        fig.add_vline(x=float(made[step]), line=dict(color="#999", dash="dot"))
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        title=dict(text=f"{UNIT}, {minutes(horizon_s(timeline))} ahead", x=0.01, xanchor="left"),
        xaxis_title="forecast made at (min)",
        yaxis=dict(range=[-0.05, 1.05], title="share of nodes"),
        legend=dict(orientation="h", y=-0.3),
    )
    return fig


def chlorine_figure(
    timeline: Timeline,
    network: Network,
    step: int,
    height: int = 320,
    focus: int | None = None,
) -> go.Figure:
    """Chlorine (mg/L) on the map at one step (colour scale up to the source strength), node
    ids on small networks, the source marked with its state; ``focus`` as in
    :func:`si_graph_figure`."""
    xy = network.map_coordinates
    labelled = network.n_nodes <= LABELLED_NODES
    fig = go.Figure(
        [
            _pipe_trace(network),
            *_device_traces(network),
            dict(
                type=trace_type(network),
                x=xy[:, 0],
                y=xy[:, 1],
                mode="markers+text" if labelled else "markers",
                text=list(network.node_ids) if labelled else None,
                textposition="top right",
                textfont=dict(size=10, color="#444"),
                marker=dict(
                    size=12 * marker_scale(network.n_nodes),
                    color=timeline.chlorine[step],
                    colorscale="Greens",
                    cmin=0,
                    cmax=max(timeline.scenario.injection_strength_mg_l, 1e-6),
                    line=dict(width=marker_scale(network.n_nodes), color="black"),
                    colorbar=dict(title=dict(text="chlorine<br>(mg/L)", side="top"), thickness=10),
                ),
                hovertext=[
                    f"<b>node {n}</b><br>chlorine {c:.3f} mg/L"
                    for n, c in zip(network.node_ids, timeline.chlorine[step])
                ],
                hoverinfo="text",
                name="chlorine",
            ),
            _source_trace(network, timeline, step),
        ]
    )
    fig.update_layout(
        _map_layout(
            network,
            height,
            f"chlorine at {minutes(timeline.times_s[step])}<br>"
            f"<sup>chlorinated: {threshold_text(timeline)}</sup>",  # short lines: clear of the toolbar
        )
    )
    fig.update_layout(margin=dict(t=50), title_font_size=13)
    return _focused(fig, network, focus)


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
    step: int | None = None,
    height: int = 260,
    values: np.ndarray | None = None,
) -> go.Figure:
    """A node's (or pair's) value over time (``values``: precomputed
    :func:`value_over_time`); the bar at ``step`` is outlined."""
    label = ", ".join(network.node_ids[m] for m in members)
    if values is None:
        values = value_over_time(timeline, members, index, order)
    outline = np.zeros(len(timeline))
    if step is not None:
        outline[step] = 3
    fig = go.Figure(
        go.Bar(
            x=timeline.times_s / 60,
            y=values,
            marker=dict(
                color=np.where(values >= 0, POSITIVE, NEGATIVE),
                line=dict(width=outline, color="black"),
            ),
        )
    )
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        title=dict(text=f"{index_name(index)} of {{{label}}} over time", x=0.01, xanchor="left"),
        xaxis_title="forecast made at (min)",
        yaxis_title="share of nodes",
    )
    return fig
