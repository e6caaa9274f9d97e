"""The layers of every network map: pipes by flow with their arrows, pumps and valves, node markers and hovers, the found node, and the map layout."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ..narrative import risk_label
from ..network import Network
from ..simulation import SHORTFALL
from ..timeline import Timeline
from .style import (
    DEVICES,
    FLOW_SCALE,
    FLOW_WIDTHS,
    LABELLED_NODES,
    PIPE,
    STILL_LPS,
    marker_scale,
    trace_type,
)


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


def node_hover(network: Network, timeline: Timeline, step: int) -> list[str]:
    """Every node's hover text at ``step``: id, kind, elevation (a reservoir's head), base
    demand, chlorine now and, when the timeline holds them, pressure, the share of its
    demand a node gets where that is below 99 % (pressure-driven hydraulics) and the risk of
    non-compliance one horizon later (a node-level model's, :mod:`~wdn_explain.risk`) at a
    customer node (:attr:`~wdn_explain.network.Network.consumers`)."""
    props = network.properties
    pressure = None if timeline.node_pressure_m is None else timeline.node_pressure_m[step]
    delivered = timeline.node_delivered_fraction
    delivered = None if delivered is None else delivered[step]
    out = []
    for i, (node, role) in enumerate(zip(network.node_ids, network.node_roles)):
        height = "head" if role == "reservoir" else "elevation"
        lines = [f"<b>node {node}</b> ({role})", f"{height} {props.node_elevation_m[i]:.1f} m"]
        if np.isfinite(props.node_base_demand_lps[i]):
            lines.append(f"base demand {props.node_base_demand_lps[i]:.2f} L/s")
        lines.append(f"chlorine {timeline.chlorine[step, i]:.3f} mg/L")
        if pressure is not None:
            lines.append(f"pressure {pressure[i]:.1f} m")
        if delivered is not None and delivered[i] < 1 - SHORTFALL:
            lines.append(f"<b>gets {delivered[i]:.0%} of its demand</b> (pressure below required)")
        if timeline.node_risk is not None and role == "junction":
            lines.append(f"{risk_label(timeline)}: {timeline.node_risk[step, i]:.0%}")
        elif timeline.node_risk is not None:  # (Network.consumers)
            lines.append(f"a {role}, not a customer tap: no minimum residual")
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


def _small_map_layout(network: Network, height: int, title: str, top: int) -> dict:
    """The layout of a side panel's map: :func:`_map_layout` with a smaller title and a
    top margin of ``top`` px."""
    layout = _map_layout(network, height, title)
    layout["title"]["font"] = dict(size=13)
    layout["margin"]["t"] = top
    return layout
