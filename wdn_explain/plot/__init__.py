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


The package holds one module per kind of picture: :mod:`.style` (colours and sizes),
:mod:`.layers` (pipes, devices, nodes, the map layout), :mod:`.source` (the source label),
:mod:`.si_graph` (one step's SI-Graph), :mod:`.animation` (a whole timeline),
:mod:`.maps` (chlorine and compliance) and :mod:`.charts` (forecast and value charts); every
public name is importable from ``wdn_explain.plot`` as before.
"""

from __future__ import annotations

from .animation import timeline_figure
from .charts import (
    forecast_figure,
    interval_name,
    node_chlorine_figure,
    value_figure,
    value_over_time,
)
from .layers import drawn, flow_scale, focused_layout, found_trace, map_figure, node_hover
from .maps import chlorine_figure, compliance_figure, risk_figure
from .si_graph import (
    FrameData,
    frame_data,
    frame_title,
    frame_traces,
    opening_step,
    si_graph_figure,
    value_scale,
)
from .source import LABEL_BREAKS, source_label, source_state
from .style import (
    ABOVE,
    BAND,
    BELOW,
    BEND,
    CHART_TITLE_PX,
    COLORSCALE,
    DEVICES,
    FLOW_SCALE,
    FLOW_WIDTHS,
    LABELLED_NODES,
    MINIMUM_RESIDUAL_MG_L,
    NEGATIVE,
    PIPE,
    POSITIVE,
    SOURCE_FONT_PX,
    SOURCE_ON,
    SOURCE_PX,
    STILL_LPS,
    VALUE_BAR,
    WEBGL_NODES,
    WIDTHS,
    chart_title,
    horizontal_line,
    marker_scale,
    trace_type,
    vertical_line,
)

__all__ = [
    "ABOVE",
    "BAND",
    "BELOW",
    "BEND",
    "CHART_TITLE_PX",
    "COLORSCALE",
    "DEVICES",
    "FLOW_SCALE",
    "FLOW_WIDTHS",
    "FrameData",
    "LABELLED_NODES",
    "LABEL_BREAKS",
    "MINIMUM_RESIDUAL_MG_L",
    "NEGATIVE",
    "PIPE",
    "POSITIVE",
    "SOURCE_FONT_PX",
    "SOURCE_ON",
    "SOURCE_PX",
    "STILL_LPS",
    "VALUE_BAR",
    "WEBGL_NODES",
    "WIDTHS",
    "chart_title",
    "chlorine_figure",
    "compliance_figure",
    "drawn",
    "flow_scale",
    "focused_layout",
    "forecast_figure",
    "found_trace",
    "frame_data",
    "frame_title",
    "frame_traces",
    "horizontal_line",
    "interval_name",
    "map_figure",
    "marker_scale",
    "node_chlorine_figure",
    "node_hover",
    "opening_step",
    "risk_figure",
    "si_graph_figure",
    "source_label",
    "source_state",
    "timeline_figure",
    "trace_type",
    "value_figure",
    "value_over_time",
    "value_scale",
    "vertical_line",
]
