"""The side maps: chlorine at every node, the nodes below the minimum residual and a node
model's risk of non-compliance."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..narrative import (
    horizon_s,
    minutes,
    risk_label,
    threshold_text,
)
from ..network import Network
from ..timeline import Timeline
from .layers import (
    _device_traces,
    _node_markers,
    _pipe_traces,
    _small_map_layout,
    map_figure,
    node_hover,
)
from .source import _label_place, _panel_widths, _source_trace
from .style import (
    ABOVE,
    BELOW,
    MINIMUM_RESIDUAL_MG_L,
    NODE_IDS,
    NOT_COUNTED,
    VALUE_BAR,
    marker_scale,
    trace_type,
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
    colours = dict(
        color=timeline.chlorine[step],
        colorscale="Greens",
        cmin=0,
        cmax=max(timeline.scenario.injection_strength_mg_l, 1e-6),
    )
    title = (  # short lines: clear of the toolbar
        f"chlorine at {minutes(timeline.times_s[step])}<br>"
        f"<sup>chlorinated: {threshold_text(timeline)}</sup>"
    )
    return _coloured_map(
        timeline, network, step, colours, "chlorine<br>(mg/L)", title, height, focus
    )


def risk_figure(
    timeline: Timeline,
    network: Network,
    step: int,
    height: int = 320,
    focus: int | None = None,
) -> go.Figure:
    """A node-level model's risk of non-compliance on the map: each node coloured by the
    probability that its chlorine one horizon after ``step`` lies below the minimum residual
    (:mod:`~wdn_explain.risk`), reservoirs and tanks (no customer tap,
    :attr:`~wdn_explain.network.Network.consumers`) uncoloured (NaN: Plotly's dark grey);
    pipes, source and ``focus`` as in :func:`chlorine_figure`."""
    risk = np.where(network.consumers, timeline.node_risk[step], np.nan)
    colours = dict(color=risk, colorscale="Oranges", cmin=0, cmax=1)
    ahead = minutes(timeline.times_s[step] + horizon_s(timeline))
    title = (
        f"risk of non-compliance for {ahead}<br><sup>{risk_label(timeline)}, forecast at "
        f"{minutes(timeline.times_s[step])}</sup>"
    )
    return _coloured_map(timeline, network, step, colours, "risk", title, height, focus)


def _coloured_map(
    timeline: Timeline,
    network: Network,
    step: int,
    colours: dict,
    bar_title: str,
    title: str,
    height: int,
    focus: int | None,
) -> go.Figure:
    """The map at ``step`` with nodes coloured as ``colours`` says (marker colour fields),
    a colour bar titled ``bar_title``, pipes, devices and the source marked with its state."""
    nodes = _node_markers(
        network,
        NODE_IDS,
        marker=dict(
            size=12 * marker_scale(network.n_nodes),
            **colours,
            line=dict(width=marker_scale(network.n_nodes), color="black"),
            colorbar=dict(title=dict(text=bar_title, side="top"), thickness=10, **VALUE_BAR),
        ),
        hovertext=np.array(node_hover(network, timeline, step)),
        name=bar_title.split("<br>")[0],
    )
    layout = _small_map_layout(network, height, title, top=50)
    place = _label_place(network, layout, nodes, colorbar=True, widths=_panel_widths(network))
    traces = [
        *_pipe_traces(network, timeline, step),
        *_device_traces(network),
        nodes,
        _source_trace(network, timeline, step, place),
    ]
    return map_figure(traces, layout, network, focus)


def compliance_figure(
    timeline: Timeline,
    network: Network,
    step: int,
    minimum_mg_l: float = MINIMUM_RESIDUAL_MG_L,
    *,
    height: int = 320,
    focus: int | None = None,
) -> go.Figure:
    """The compliance map at ``step``: customer nodes whose simulated chlorine is below
    ``minimum_mg_l`` drawn as orange crosses, the others green, reservoirs and tanks grey
    (no customer tap: not counted, :attr:`~wdn_explain.network.Network.consumers`), the
    count in the title, node
    ids on small networks (as on :func:`chlorine_figure`); pipes, source and ``focus`` as
    there. A node-level model's timeline adds an orange ring at every node its forecast puts
    below the minimum one horizon later (trace ``forecast below``, under the markers and
    ids, tight enough to leave its node's id clear: :func:`forecast_rings`), their count in
    the title."""
    consumers = network.consumers
    below = (timeline.chlorine[step] < minimum_mg_l) & consumers
    size = np.where(below, 1.3, 1.0) * 12 * marker_scale(network.n_nodes)
    nodes = _node_markers(
        network,
        NODE_IDS,
        marker=dict(
            size=size,
            color=np.where(below, BELOW, np.where(consumers, ABOVE, NOT_COUNTED)),
            symbol=np.where(below, "x", "circle").tolist(),  # a list validates fast
            line=dict(width=marker_scale(network.n_nodes), color="black"),
        ),
        hovertext=np.array(node_hover(network, timeline, step)),
        name="compliance",
    )
    traces = [*_pipe_traces(network, timeline, step), *_device_traces(network)]
    title = (  # short lines: clear of the toolbar
        f"chlorine at {minutes(timeline.times_s[step])}<br><sup>below {minimum_mg_l:g} mg/L: "
        f"{int(below.sum())} of {int(consumers.sum())} customer nodes (orange ×), "
        "simulated</sup>"
    )
    if timeline.node_level:
        ahead = (timeline.node_forecast[step] < minimum_mg_l) & consumers
        traces.append(forecast_rings(network, ahead, size))
        title += (
            f"<br><sup>forecast for {minutes(timeline.times_s[step] + horizon_s(timeline))}: "
            f"{int(ahead.sum())} below (orange rings)</sup>"
        )
    layout = _small_map_layout(network, height, title, top=70 if timeline.node_level else 50)
    colorbar = timeline.link_flow_lps is not None  # the flow bar
    place = _label_place(network, layout, nodes, colorbar, widths=_panel_widths(network))
    traces += [nodes, _source_trace(network, timeline, step, place)]
    return map_figure(traces, layout, network, focus)


RING_PX = 2.0  # the forecast's rings: their line width; 1 px apart from the node marker


def forecast_rings(network: Network, ahead: np.ndarray, size: np.ndarray) -> dict:
    """An orange ring around every node ``ahead`` marks (markers of ``size`` px), 1 px off
    the marker: its outer edge at marker radius + 1 + :data:`RING_PX` px, inside the
    corner of the node's id, written top right at marker radius / 0.8 + 1 px on each axis
    (plotly.js). (Rings 2.2 markers wide ran through the ids on Hanoi's 316 px map.)"""
    xy = network.map_coordinates
    return dict(
        type=trace_type(network),
        x=xy[ahead, 0],
        y=xy[ahead, 1],
        mode="markers",
        marker=dict(
            size=size[ahead] + 2 + RING_PX,  # the diameter to the line's middle
            color="rgba(0,0,0,0)",
            line=dict(width=RING_PX, color=BELOW),
        ),
        hoverinfo="skip",
        name="forecast below",
    )
