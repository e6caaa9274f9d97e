"""The maps' and charts' shared look: colours, widths, sizes, and the small helpers that set them."""

from __future__ import annotations

import numpy as np

from ..network import Network

POSITIVE, NEGATIVE = "#d62728", "#1f77b4"
COLORSCALE = "RdBu_r"
LABELLED_NODES = 60  # node ids are written on maps of at most this many nodes
# The side maps' node ids: grey, with a halo of the page's colour (readable across the pipes
# and the compliance map's rings).
NODE_IDS = dict(size=10, color="#444", shadow="auto")
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


PIPE = "#d4d4d4"
# Pipes by flow: |flow| in four classes of the timeline's largest |flow|, drawn on a grey
# scale (the SI-Graph's reds and blues stay the values') and wider as the flow grows.
FLOW_SCALE = [[0.0, "#d9d9d9"], [1.0, "#252525"]]
FLOW_WIDTHS = (1.0, 2.0, 3.5, 5.0)
STILL_LPS = 1e-3  # a link carrying less than this (L/s) gets no arrow
VALUE_BAR = dict(y=1.0, yanchor="top", len=0.5)
"""A map's values' colour bar: the upper half of the right margin, the flow bar below it
(the map itself stays free of both)."""


DEVICES = {"pump": "triangle-right", "valve": "bowtie"}  # link types drawn as a marker


WIDTHS = (1.5, 4.0, 8.0)  # pair lines are drawn in three width classes by magnitude
BEND = 0.2  # a pair's arc bulges sideways by this share of the distance between its nodes


SOURCE_PX, SOURCE_FONT_PX = 30, 12  # the source's star and its label
SOURCE_ON = "#e67300"  # the source's star while it doses (the report's GIF too)


BAND = "rgba(214,39,40,0.18)"  # the forecast's interval: the forecast's red, translucent


CHART_TITLE_PX = 14  # the charts' titles: short lines that fit a narrow column


def chart_title(text: str) -> dict:
    """A chart's title at the top left in :data:`CHART_TITLE_PX` px type (Plotly's 17 px
    default cut e.g. ``share of nodes chlorinated, 20 min ahead`` in L-Town's ~260 px
    columns): keep each line short."""
    return dict(text=text, x=0.01, xanchor="left", font=dict(size=CHART_TITLE_PX))


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


MINIMUM_RESIDUAL_MG_L = 0.2  # the free-chlorine residual regulators commonly ask for
BELOW, ABOVE = "#e6550d", "#31a354"  # compliance map: below the minimum, at or above it
NOT_COUNTED = "#bdbdbd"  # compliance map: a reservoir or tank (no customer tap, not counted)
