"""The SI-Graph of one time step: node values, pairwise arcs and higher-order hulls over the map."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from ..explain.indices import check_index
from ..map_labels import (
    MAP_WIDTHS_PX,
)
from ..narrative import (
    forecast_time,
    index_label,
    index_name,
    reference_label,
    resolved_order,
    two_decimals,
    unit,
    value_unit,
)
from ..network import Network
from ..simulation import injection_node
from ..timeline import Timeline
from .layers import (
    _device_traces,
    _map_layout,
    _node_markers,
    _pipe_traces,
    drawn,
    map_figure,
    node_hover,
)
from .source import _label_place, _source_trace
from .style import BEND, COLORSCALE, NEGATIVE, POSITIVE, VALUE_BAR, WIDTHS, marker_scale, trace_type


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


def opening_step(timeline: Timeline) -> int:
    """The step a view opens on: the first step at which chlorine has left its source (at
    least two nodes carry it), so that the chlorine map shows it moving rather than one
    marker under the source's; the same step for every model of a scenario (a node model
    whose node chlorine reaches late opened on its last step). The first informative step
    (:meth:`Timeline.first_informative_step`) when chlorine never leaves its source."""
    wet = np.flatnonzero((timeline.chlorine > 0).sum(axis=1) >= 2)
    return int(wet[0]) if len(wet) else timeline.first_informative_step()


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
