"""SI-Graphs over the network map and the side panels (Plotly); reports live in
:mod:`.report`.

Node colour and size show the first-order value of the chosen index, in the forecast's unit
(share of nodes chlorinated); pairwise interactions are curved arcs between the two nodes
(red positive, blue negative, width by magnitude, also for nodes that are not adjacent) over
light grey straight pipes; higher-order interactions are translucent dashed hulls with a ▲
marker naming their members. One colour scale is fixed across all frames so that frames
compare.

Maps stay readable at utility scale (hundreds to thousands of nodes): every map trace is
SVG up to 1000 nodes and WebGL (``scattergl``) beyond (:func:`trace_type`), the pipes are
four line traces by |flow| with one trace of arrows at their midpoints, markers shrink with the network's size
(:func:`marker_scale`), node labels are written only on small networks (hover names every
node), only the ``top_k`` strongest interactions are drawn, and the axes keep an equal
aspect under Plotly's own zoom. Nodes are drawn at
:attr:`~wdn_explain.network.Network.map_coordinates` (a computed layout for a network whose
.inp has no coordinates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from .explain.indices import check_index
from .map_labels import (
    COLUMN_WIDTHS_PX,
    MAP_WIDTHS_PX,
    PANEL_WIDTHS_PX,
    free_position,
    map_views,
)
from .narrative import (
    forecast_time,
    horizon_s,
    index_label,
    index_name,
    minutes,
    reference_label,
    resolved_order,
    threshold_text,
    two_decimals,
    unit,
    value_unit,
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
# Pipes by flow: |flow| in four classes of the timeline's largest |flow|, drawn on a grey
# scale (the SI-Graph's reds and blues stay the values') and wider as the flow grows.
FLOW_SCALE = [[0.0, "#d9d9d9"], [1.0, "#252525"]]
FLOW_WIDTHS = (1.0, 2.0, 3.5, 5.0)
STILL_LPS = 1e-3  # a link carrying less than this (L/s) gets no arrow
VALUE_BAR = dict(y=1.0, yanchor="top", len=0.5)
"""A map's values' colour bar: the upper half of the right margin, the flow bar below it
(the map itself stays free of both)."""


def flow_scale(timeline: Timeline) -> float:
    """The largest |flow| (L/s) of the timeline: one scale for every frame."""
    return float(np.abs(timeline.link_flow_lps).max()) or 1.0


def _pipe_traces(
    network: Network, timeline: Timeline, step: int, arrows: bool = True
) -> list[dict]:
    """The links at ``step``: coloured and widened by |flow| (four line traces) with an arrow
    at each midpoint pointing downstream, coloured by |flow| (with a colour bar in L/s);
    plain grey pipes when the timeline holds no flows. The midpoint markers carry each
    link's hover (id, diameter, length, flow); ``arrows=False`` leaves them out."""
    flows = None if timeline.link_flow_lps is None else timeline.link_flow_lps[step]
    xy = network.map_coordinates
    ends = xy[network.link_nodes]  # (n_links, 2 ends, 2)
    mid = ends.mean(axis=1)
    scale = marker_scale(network.n_nodes)
    if flows is None:
        return [
            _pipe_trace(network),
            *([_link_markers(network, mid, None, 0.0, scale)] if arrows else []),
        ]
    top = flow_scale(timeline)
    level = np.minimum((len(FLOW_WIDTHS) * np.abs(flows) / top).astype(int), len(FLOW_WIDTHS) - 1)
    colours = sample_colorscale(FLOW_SCALE, (np.arange(len(FLOW_WIDTHS)) + 0.5) / len(FLOW_WIDTHS))
    traces = []
    for c, (colour, width) in enumerate(zip(colours, FLOW_WIDTHS)):
        keep = ends[level == c]
        gaps = np.full((len(keep), 1, 2), np.nan)
        segments = np.concatenate([keep, gaps], axis=1).reshape(-1, 2)
        traces.append(
            dict(
                type=trace_type(network),
                x=segments[:, 0] if len(keep) else np.array([np.nan]),
                y=segments[:, 1] if len(keep) else np.array([np.nan]),
                mode="lines",
                line=dict(color=colour, width=width * scale**0.5),
                hoverinfo="skip",
                name=f"flow class {c + 1}",
            )
        )
    return [*traces, *([_link_markers(network, mid, flows, top, scale)] if arrows else [])]


def _link_markers(
    network: Network, mid: np.ndarray, flows: np.ndarray | None, top: float, scale: float
) -> dict:
    """One marker per link at its midpoint: a triangle pointing downstream coloured by
    |flow| (small where nothing flows), or, without flows, an invisible dot; hover
    names the link, its diameter, length and flow."""
    props = network.properties
    start, end = network.link_nodes[:, 0], network.link_nodes[:, 1]
    text = []
    for k, link in enumerate(network.link_ids):
        lines = [f"<b>{network.link_types[k]} {link}</b>"]
        if np.isfinite(props.link_diameter_mm[k]):
            lines.append(f"diameter {props.link_diameter_mm[k]:.0f} mm")
        if np.isfinite(props.link_length_m[k]):
            lines.append(f"length {props.link_length_m[k]:.0f} m")
        if flows is not None:
            a, b = (start[k], end[k]) if flows[k] >= 0 else (end[k], start[k])
            lines.append(
                f"flow {abs(flows[k]):.2f} L/s, {network.node_ids[a]} → {network.node_ids[b]}"
            )
        text.append("<br>".join(lines))
    trace = dict(
        type=trace_type(network),
        x=mid[:, 0],
        y=mid[:, 1],
        mode="markers",
        hovertext=np.array(text),  # an array validates faster than a list
        hoverinfo="text",
        name="flow" if flows is not None else "links",
    )
    if flows is None:
        return trace | dict(marker=dict(size=8 * scale, color="rgba(0,0,0,0)"))
    xy = network.map_coordinates
    direction = (xy[end] - xy[start]) * np.sign(flows)[:, None]
    moving = np.abs(flows) >= STILL_LPS
    return trace | dict(
        marker=dict(
            symbol="triangle-up",  # one symbol: per-point symbols validate slowly
            angle=np.degrees(np.arctan2(direction[:, 0], direction[:, 1])),
            size=np.where(moving, max(11 * scale, 6), 4),
            color=np.abs(flows),
            colorscale=FLOW_SCALE,
            cmin=0,
            cmax=top,
            line=dict(width=0),
            colorbar=dict(
                title=dict(text="flow<br>(L/s)", side="top"),
                y=0.0,  # the lower part of the right margin, under the values' colour bar
                yanchor="bottom",
                len=0.42,
                nticks=4,
                thickness=8,
            ),
        )
    )


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


def _pair_traces(network: Network, pairs, index: str, unit: str) -> list[dict]:
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
                    f"{index} {value:+.4f} ({unit})"
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


def _hyperedge_traces(network: Network, higher, index: str, unit: str) -> list[dict]:
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
            text.append(f"order {len(members)}: {{{ids}}}<br>{index} {value:+.4f} ({unit})")
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


def node_hover(network: Network, timeline: Timeline, step: int) -> list[str]:
    """Every node's hover text at ``step``: id, kind, elevation (a reservoir's head), base
    demand, chlorine now and, when the timeline holds it, pressure."""
    props = network.properties
    pressure = None if timeline.node_pressure_m is None else timeline.node_pressure_m[step]
    out = []
    for i, (node, role) in enumerate(zip(network.node_ids, network.node_roles)):
        height = "head" if role == "reservoir" else "elevation"
        lines = [f"<b>node {node}</b> ({role})", f"{height} {props.node_elevation_m[i]:.1f} m"]
        if np.isfinite(props.node_base_demand_lps[i]):
            lines.append(f"base demand {props.node_base_demand_lps[i]:.2f} L/s")
        lines.append(f"chlorine {timeline.chlorine[step, i]:.3f} mg/L")
        if pressure is not None:
            lines.append(f"pressure {pressure[i]:.1f} m")
        out.append("<br>".join(lines))
    return out


def _node_markers(network: Network, font: dict, **fields: Any) -> dict:
    """A map's nodes as one marker trace at the map coordinates, hovered by ``hovertext``,
    their ids written beside them on networks small enough for labels (in ``font``); the
    marker, hover texts and name come in ``fields``."""
    xy = network.map_coordinates
    labelled = network.n_nodes <= LABELLED_NODES
    return dict(
        type=trace_type(network),
        x=xy[:, 0],
        y=xy[:, 1],
        mode="markers+text" if labelled else "markers",
        text=list(network.node_ids) if labelled else None,
        textposition="top right",
        textfont=font,
        hoverinfo="text",
        **fields,
    )


def _node_trace(
    network: Network, timeline: Timeline, step: int, values: np.ndarray, scale: float, index: str
) -> dict:
    roles = np.array(network.node_roles)
    injection = injection_node(timeline.scenario, network)
    size = marker_scale(network.n_nodes)
    hover = [
        f"{text}<br>{index} {v:+.4f} ({value_unit(timeline)})"
        for text, v in zip(node_hover(network, timeline, step), values)
    ]
    return _node_markers(
        network,
        dict(size=12, color="#222"),
        hovertext=np.array(hover),  # an array validates and copies faster than a list
        name="nodes",
        marker=dict(
            size=size * (9 + 22 * np.abs(values) / (scale or 1.0)),
            color=values,
            colorscale=COLORSCALE,
            cmin=-scale,
            cmax=scale,
            colorbar=dict(
                title=dict(
                    text=f"{index}<br>({value_unit(timeline).replace(' of ', ' of<br>')})",
                    side="top",
                ),
                thickness=14,
                **VALUE_BAR,
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
    network: Network,
    timeline: Timeline,
    step: int,
    data: FrameData,
    scale: float,
    index: str,
    layout: dict,
    arrows: bool = True,
) -> list[dict]:
    """The traces of one frame, nodes and the source last (on top): pipes by flow with
    their arrows (:func:`_pipe_traces`; ``arrows=False``: without), pumps and valves (if
    any), six pair classes and the pair values, two hyperedge signs and the group values,
    nodes, the source (its label placed for the map's ``layout``, :func:`_map_layout`), and
    a node-level model's explained node."""
    name = index_name(index)
    nodes = _node_trace(network, timeline, step, data.node_values, scale, name)
    place = _label_place(network, layout, nodes, colorbar=True, widths=MAP_WIDTHS_PX)
    return [
        *_pipe_traces(network, timeline, step, arrows),
        *_device_traces(network),
        *_pair_traces(network, data.pairs, name, value_unit(timeline)),
        *_hyperedge_traces(network, data.higher, name, value_unit(timeline)),
        nodes,
        _source_trace(network, timeline, step, place),
        *([_explained_trace(network, timeline)] if timeline.node_level else []),
    ]


def _explained_trace(network: Network, timeline: Timeline) -> dict:
    """A node-level model's explained node (:attr:`Timeline.node`): an open square around
    it, with its hover, on top of every other trace."""
    node = network.node_index(timeline.node)
    x, y = network.map_coordinates[node]
    return dict(
        type=trace_type(network),
        x=[x],
        y=[y],
        mode="markers",
        marker=dict(
            symbol="square-open",
            size=30 * marker_scale(network.n_nodes),
            color="#000",
            line=dict(width=2),
        ),
        hoverinfo="text",
        hovertext=[f"<b>node {timeline.node}</b>: its forecast (mg/L) is the one explained"],
        name="explained node",
    )


def source_state(timeline: Timeline, step: int) -> str:
    """``source on (1.5 mg/L)`` or ``source off``: the planned setpoint of the injection at
    the time of ``step``."""
    setpoint = float(timeline.scenario.injection_setpoint_mg_l(timeline.times_s[step]))
    return f"source on ({setpoint:g} mg/L)" if setpoint > 0 else "source off"


SOURCE_PX, SOURCE_FONT_PX = 30, 12  # the source's star and its label
SOURCE_ON = "#e67300"  # the source's star while it doses (the report's GIF too)


def _panel_widths(network: Network) -> tuple[int, ...]:
    """The widths a side panel's map of ``network`` is shown at: beside the SI-Graph where
    nodes are labelled, in one of three columns below it on larger networks (the app's
    layout)."""
    return PANEL_WIDTHS_PX if network.n_nodes <= LABELLED_NODES else COLUMN_WIDTHS_PX


def _label_place(
    network: Network, layout: dict, nodes: dict, colorbar: bool, widths: tuple[int, ...]
) -> dict:
    """What places a label on a map of ``layout`` whose node trace is ``nodes``, shown at
    ``widths`` px (:func:`~wdn_explain.map_labels.position_clashes`' arguments less the
    label's own)."""
    text = nodes.get("text")
    return dict(
        xy=network.map_coordinates,
        node_px=nodes["marker"]["size"],
        views=map_views(
            layout["xaxis"]["range"],
            layout["yaxis"]["range"],
            layout["height"],
            layout["margin"],
            colorbar,
            widths,
        ),
        node_labels=None if text is None else (text, nodes["textfont"]["size"]),
    )


LABEL_BREAKS = ((": ", " "), (": ", "<br>"), (":<br>", "<br>"))
"""How a source label's three parts (node, state, strength) are joined, widest first: on one
line, the strength below, or each on its own line (a narrow map)."""


def source_label(network: Network, timeline: Timeline, step: int, place: dict) -> tuple[str, str]:
    """The source's label at ``step`` (``20: source on (1.5 mg/L)``) and its
    ``textposition``: where the label clashes with no node, its marker or id, and stays
    inside the map at every width the map is shown at (:mod:`.map_labels`; ``place``: what
    :func:`_label_place` gives), on more lines (:data:`LABEL_BREAKS`) where one line finds
    no free place (the fewest clashes where none does). Placed as the label reads while
    the source is on (the longer one), so it keeps its place through the steps where the
    markers around it keep their size (the SI-Graph's sizes follow the step's values and
    the compliance map enlarges the nodes below the minimum: there it may move)."""
    node = network.node_index(injection_node(timeline.scenario, network))
    name = network.node_ids[node]
    on = f"({timeline.scenario.injection_strength_mg_l:g} mg/L)"
    label = dict(at=node, font_px=SOURCE_FONT_PX, marker_px=SOURCE_PX, **place)
    best = None
    for after_name, after_state in LABEL_BREAKS:
        longest = f"{name}{after_name}source on{after_state}{on}"
        position, clashes = free_position(text=longest, **label)
        if best is None or clashes < best[0]:
            best = (clashes, after_name, after_state, position)
        if not clashes:
            break
    _, after_name, after_state, position = best
    state = source_state(timeline, step).replace(" (", f"{after_state}(")
    return f"{name}{after_name}{state}", position


def _source_trace(network: Network, timeline: Timeline, step: int, place: dict) -> dict:
    """A hollow star around the node where chlorine enters (the node's colour stays
    visible), labelled with its state at ``step`` where the label is free
    (:func:`source_label`): orange and bold while on, grey while off."""
    node = network.node_index(injection_node(timeline.scenario, network))
    state = source_state(timeline, step)
    on = state != "source off"
    x, y = network.map_coordinates[node]
    text, position = source_label(network, timeline, step, place)
    return dict(
        type=trace_type(network),
        x=[x],
        y=[y],
        mode="markers+text",
        text=[text],
        textposition=position,
        textfont=dict(size=SOURCE_FONT_PX, color="#000" if on else "#666"),
        marker=dict(
            symbol="star-open",
            size=SOURCE_PX,
            color=SOURCE_ON if on else "#888",
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
        f"forecast {two_decimals(e.prediction)}, simulated {timeline.truth[step]:.2f}, "
        f"reference {two_decimals(e.empty_prediction)} ({reference_label(timeline.reference)})"
        f" — {unit(timeline)}</sup>"
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
        xaxis=dict(visible=False, range=[lo[0] - 1.5 * pad[0], hi[0] + 1.5 * pad[0]]),
        yaxis=dict(
            visible=False,
            range=[lo[1] - pad[1], hi[1] + pad[1]],
            scaleanchor="x",
            scaleratio=1,
        ),
        showlegend=False,
        hovermode="closest",
        uirevision=network.name,  # a zoom survives the next step's figure (Plotly.react)
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
    arrows: bool = True,
) -> go.Figure:
    """The SI-Graph of one step (the app draws the step of its time cursor); with ``focus``
    (a node index) the map is zoomed onto that node and rings it. ``arrows=False`` draws the
    pipes by flow without the flow arrows and link hovers: what the app plays on large
    networks, as L-Town's 909 arrow markers cost the browser most of a step (2.1 against
    0.6 CPU s in headless Chromium)."""
    scale = value_scale(timeline, index, order) if scale is None else scale
    data = frame_data(timeline, step, index, order, top_k)
    layout = _map_layout(network, height, frame_title(timeline, step, index, order))
    traces = drawn(frame_traces(network, timeline, step, data, scale, index, layout, arrows))
    return map_figure(traces, layout, network, focus)


def drawn(traces: list[dict]) -> list[dict]:
    """``traces`` less the empty placeholders (a single NaN point) that keep an animation's
    frames trace by trace alike: a one-step figure draws the same picture without them, and
    every trace costs the browser a redraw per step (Hanoi: 13 traces -> 3 to 8)."""
    return [t for t in traces if not (len(t["x"]) == 1 and np.isnan(t["x"][0]))]


def map_figure(traces: list[dict], layout: dict, network: Network, focus: int | None) -> go.Figure:
    """A map from its traces and layout, zoomed onto node ``focus`` and ringing it (None:
    the whole network). Built from one dict in one go: Plotly validates every later
    ``update_layout`` or ``add_trace`` again, which cost each time step tens of ms."""
    if focus is not None:
        traces = [*traces, found_trace(network, focus)]
        zoom = focused_layout(network, focus)
        layout = layout | {axis: layout[axis] | zoom[axis] for axis in zoom}
    return go.Figure(dict(data=traces, layout=layout))


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
    layout = _map_layout(network, height, frame_title(timeline, start, index, order))
    layout["margin"]["b"] = 90
    frames = [
        dict(
            name=str(t),
            data=frame_traces(
                network,
                timeline,
                t,
                frame_data(timeline, t, index, order, top_k),
                scale,
                index,
                layout,
            ),
            layout=dict(title=dict(text=frame_title(timeline, t, index, order))),
        )
        for t in range(len(timeline))
    ]
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


def interval_name(timeline: Timeline) -> str:
    """The legend name of the forecast's interval, e.g. ``90% interval (calibrated)``."""
    confidence = (timeline.meta.get("interval") or {}).get("confidence")
    return f"{confidence:.0%} interval (calibrated)" if confidence else "interval"


BAND = "rgba(214,39,40,0.18)"  # the forecast's interval: the forecast's red, translucent


def _band_traces(x, lower, upper, name: str, fill: str = BAND) -> list[dict]:
    """A shaded band between ``lower`` and ``upper`` over ``x`` (nothing when either is
    None): the upper edge, then the lower edge filled up to it, one legend entry."""
    if lower is None or upper is None:
        return []
    edge = dict(width=0, color=fill)
    return [
        dict(
            type="scatter",
            x=x,
            y=upper,
            mode="lines",
            line=edge,
            hoverinfo="skip",
            showlegend=False,
            legendgroup="band",
            name=f"{name} upper",
        ),
        dict(
            type="scatter",
            x=x,
            y=lower,
            mode="lines",
            line=edge,
            fill="tonexty",
            fillcolor=fill,
            legendgroup="band",
            name=name,
            hoverinfo="skip",
        ),
    ]


CHART_TITLE_PX = 14  # the charts' titles: short lines that fit a narrow column


def chart_title(text: str) -> dict:
    """A chart's title at the top left in :data:`CHART_TITLE_PX` px type (Plotly's 17 px
    default cut e.g. ``share of nodes chlorinated, 20 min ahead`` in L-Town's ~260 px
    columns): keep each line short."""
    return dict(text=text, x=0.01, xanchor="left", font=dict(size=CHART_TITLE_PX))


def forecast_figure(timeline: Timeline, step: int | None = None, height: int = 330) -> go.Figure:
    """Forecast with its calibrated interval (a band, when the timeline holds one),
    simulated truth and reference forecast (share of nodes chlorinated at t + horizon, or a
    node-level model's mg/L at its target node) over the time the forecast is made; a
    marker at ``step``."""
    made = timeline.times_s / 60
    ref = reference_label(timeline.reference)
    traces = [
        *_band_traces(made, timeline.lower, timeline.upper, interval_name(timeline)),
        dict(type="scatter", x=made, y=timeline.truth, name="simulated", line=dict(color="#444")),
        dict(
            type="scatter", x=made, y=timeline.forecast, name="forecast", line=dict(color=POSITIVE)
        ),
        dict(
            type="scatter",
            x=made,
            y=timeline.reference_forecast,
            name=f"reference forecast ({ref})",
            line=dict(color="#999", dash="dash"),
        ),
    ]
    shapes = []
    if step is not None:
        traces.append(
            dict(
                type="scatter",
                x=[made[step]],
                y=[timeline.forecast[step]],
                name="now",
                mode="markers",
                marker=dict(size=13, color=POSITIVE, line=dict(width=2, color="black")),
                showlegend=False,
            )
        )
        shapes.append(vertical_line(float(made[step])))
    layout = dict(
        height=height,
        margin=dict(l=10, r=10, t=50, b=10),
        title=chart_title(
            f"{unit(timeline)}<br><sup>forecast {minutes(horizon_s(timeline))} ahead</sup>"
        ),
        xaxis=dict(title=dict(text="forecast made at (min)")),
        yaxis=dict(rangemode="tozero", title=dict(text=value_unit(timeline)))
        if timeline.node_level
        else dict(range=[-0.05, 1.05], title=dict(text=value_unit(timeline))),
        legend=dict(orientation="h", y=-0.3),
        shapes=shapes,
    )
    return go.Figure(dict(data=traces, layout=layout))


def vertical_line(x: float) -> dict:
    """A dotted grey line across a chart's height at ``x`` (what ``add_vline`` draws,
    written as a layout shape: ``add_vline`` costs ~10 ms per chart and step)."""
    return dict(
        type="line",
        x0=x,
        x1=x,
        xref="x",
        y0=0,
        y1=1,
        yref="y domain",
        line=dict(color="#999", dash="dot"),
    )


def horizontal_line(y: float, colour: str, name: str) -> dict:
    """A dashed line across a chart's width at ``y``, named ``name`` in the legend (the
    shape ``add_hline`` makes, without its cost; a label in the legend never sits on the
    chart's lines, whatever their values)."""
    return dict(
        type="line",
        x0=0,
        x1=1,
        xref="x domain",
        y0=y,
        y1=y,
        yref="y",
        line=dict(color=colour, dash="dash"),
        name=name,
        showlegend=True,
    )


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
    nodes = _node_markers(
        network,
        dict(size=10, color="#444"),
        marker=dict(
            size=12 * marker_scale(network.n_nodes),
            color=timeline.chlorine[step],
            colorscale="Greens",
            cmin=0,
            cmax=max(timeline.scenario.injection_strength_mg_l, 1e-6),
            line=dict(width=marker_scale(network.n_nodes), color="black"),
            colorbar=dict(
                title=dict(text="chlorine<br>(mg/L)", side="top"), thickness=10, **VALUE_BAR
            ),
        ),
        hovertext=np.array(node_hover(network, timeline, step)),
        name="chlorine",
    )
    layout = _small_map_layout(
        network,
        height,
        f"chlorine at {minutes(timeline.times_s[step])}<br>"
        f"<sup>chlorinated: {threshold_text(timeline)}</sup>",  # short lines: clear of the toolbar
        top=50,
    )
    place = _label_place(network, layout, nodes, colorbar=True, widths=_panel_widths(network))
    traces = [
        *_pipe_traces(network, timeline, step),
        *_device_traces(network),
        nodes,
        _source_trace(network, timeline, step, place),
    ]
    return map_figure(traces, layout, network, focus)


def _small_map_layout(network: Network, height: int, title: str, top: int) -> dict:
    """The layout of a side panel's map: :func:`_map_layout` with a smaller title and a
    top margin of ``top`` px."""
    layout = _map_layout(network, height, title)
    layout["title"]["font"] = dict(size=13)
    layout["margin"]["t"] = top
    return layout


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
    bars = dict(
        type="bar",
        x=timeline.times_s / 60,
        y=values,
        marker=dict(
            color=np.where(values >= 0, POSITIVE, NEGATIVE),
            line=dict(width=outline, color="black"),
        ),
    )
    layout = dict(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        title=chart_title(f"{index_name(index)} of {{{label}}} over time"),
        xaxis=dict(title=dict(text="forecast made at (min)")),
        yaxis=dict(title=dict(text=value_unit(timeline))),
    )
    return go.Figure(dict(data=[bars], layout=layout))


MINIMUM_RESIDUAL_MG_L = 0.2  # the free-chlorine residual regulators commonly ask for
BELOW, ABOVE = "#e6550d", "#31a354"  # compliance map: below the minimum, at or above it


def node_chlorine_figure(
    timeline: Timeline,
    network: Network,
    node: int,
    *,
    minimum_mg_l: float = MINIMUM_RESIDUAL_MG_L,
    step: int | None = None,
    forecast: np.ndarray | None = None,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    height: int = 290,
) -> go.Figure:
    """The simulated chlorine (mg/L) at node index ``node`` at every step of the timeline,
    the minimum residual as a line (named in the legend, below the chart) and a marker at
    ``step``. A node-level forecast joins
    with ``forecast`` (and its interval ``lower``/``upper``): mg/L, shape (T,), made at the
    timeline's times for one horizon later, so drawn at times + horizon."""
    made = timeline.times_s / 60
    ahead = made + horizon_s(timeline) / 60
    simulated = timeline.chlorine[:, node]
    traces = [
        *_band_traces(ahead, lower, upper, "forecast interval"),
        dict(type="scatter", x=made, y=simulated, name="simulated", line=dict(color="#444")),
    ]
    if forecast is not None:
        traces.append(
            dict(
                type="scatter",
                x=ahead,
                y=forecast,
                name="forecast",
                line=dict(color=POSITIVE, dash="dot"),
            )
        )
    if step is not None:
        traces.append(
            dict(
                type="scatter",
                x=[made[step]],
                y=[simulated[step]],
                name="now",
                mode="markers",
                marker=dict(size=11, color="#444", line=dict(width=2, color="black")),
                showlegend=False,
            )
        )
    minimum = horizontal_line(minimum_mg_l, BELOW, f"minimum {minimum_mg_l:g} mg/L")
    layout = dict(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        title=chart_title(f"chlorine at node {network.node_ids[node]} (mg/L)"),
        xaxis=dict(title=dict(text="time (min)")),
        yaxis=dict(title=dict(text="mg/L"), rangemode="tozero"),
        legend=dict(orientation="h", y=-0.35),
        showlegend=True,  # the minimum's line is named there
        shapes=[minimum],
    )
    return go.Figure(dict(data=traces, layout=layout))


def compliance_figure(
    timeline: Timeline,
    network: Network,
    step: int,
    minimum_mg_l: float = MINIMUM_RESIDUAL_MG_L,
    *,
    height: int = 320,
    focus: int | None = None,
) -> go.Figure:
    """The compliance map at ``step``: nodes whose simulated chlorine is below
    ``minimum_mg_l`` drawn as orange crosses, the others green, the count in the title;
    pipes, source and ``focus`` as in :func:`chlorine_figure`. A node-level model's timeline
    adds an orange ring at every node its forecast puts below the minimum one horizon later
    (trace ``forecast below``), their count in the title."""
    xy = network.map_coordinates
    below = timeline.chlorine[step] < minimum_mg_l
    size = 12 * marker_scale(network.n_nodes)
    nodes = dict(
        type=trace_type(network),
        x=xy[:, 0],
        y=xy[:, 1],
        mode="markers",
        marker=dict(
            size=np.where(below, 1.3 * size, size),
            color=np.where(below, BELOW, ABOVE),
            symbol=np.where(below, "x", "circle").tolist(),  # a list validates fast
            line=dict(width=marker_scale(network.n_nodes), color="black"),
        ),
        hovertext=np.array(node_hover(network, timeline, step)),
        hoverinfo="text",
        name="compliance",
    )
    traces = [*_pipe_traces(network, timeline, step), *_device_traces(network), nodes]
    title = (  # short lines: clear of the toolbar
        f"chlorine at {minutes(timeline.times_s[step])}<br><sup>below {minimum_mg_l:g} mg/L: "
        f"{int(below.sum())} of {network.n_nodes} nodes (orange ×), simulated</sup>"
    )
    if timeline.node_level:
        ahead = timeline.node_forecast[step] < minimum_mg_l
        traces.append(
            dict(
                type=trace_type(network),
                x=xy[ahead, 0],
                y=xy[ahead, 1],
                mode="markers",
                marker=dict(
                    size=2.2 * size, color="rgba(0,0,0,0)", line=dict(width=2, color=BELOW)
                ),
                hoverinfo="skip",
                name="forecast below",
            )
        )
        title += (
            f"<br><sup>forecast for {minutes(timeline.times_s[step] + horizon_s(timeline))}: "
            f"{int(ahead.sum())} below (orange rings)</sup>"
        )
    layout = _small_map_layout(network, height, title, top=70 if timeline.node_level else 50)
    colorbar = timeline.link_flow_lps is not None  # the flow bar
    place = _label_place(network, layout, nodes, colorbar, widths=_panel_widths(network))
    traces.insert(len(traces) - timeline.node_level, _source_trace(network, timeline, step, place))
    return map_figure(traces, layout, network, focus)
