"""The charts beside the map: forecast against truth, a node's or pair's value over time, and a node's chlorine."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..features import within_range
from ..narrative import (
    horizon_s,
    index_name,
    minutes,
    reference_label,
    risk_label,
    unit,
    value_unit,
    without_round_off,
)
from ..network import Network
from ..timeline import Timeline
from .style import (
    BAND,
    BELOW,
    MINIMUM_RESIDUAL_MG_L,
    NEGATIVE,
    POSITIVE,
    chart_title,
    horizontal_line,
    vertical_line,
)

NODE_TIME_AXIS = dict(ticksuffix=" min")
"""The time axis of a node's chlorine, simulated and forecast (the node chart and a node
model's forecast chart: one axis for one quantity): its unit on the ticks and no title, which
the node chart's legend below ran into."""


def interval_name(timeline: Timeline) -> str:
    """The legend name of the forecast's interval, e.g. ``90% interval (calibrated)``."""
    confidence = (timeline.meta.get("interval") or {}).get("confidence")
    return f"{confidence:.0%} interval (calibrated)" if confidence else "interval"


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


def forecast_figure(timeline: Timeline, step: int | None = None, height: int = 330) -> go.Figure:
    """Forecast with its calibrated interval (a band, when the timeline holds one),
    simulated truth and reference forecast (share of nodes chlorinated at t + horizon, or a
    node-level model's mg/L at its target node) over the time the forecast is made; a
    marker at ``step``. A node-level model's forecast is chlorine at a node, the quantity of
    the followed node's chart (:func:`node_chlorine_figure`): drawn, as there, at the time it
    is about (made + horizon), on the same time axis (:data:`NODE_TIME_AXIS`)."""
    made = timeline.times_s / 60
    if timeline.node_level:  # one time axis per quantity
        made = made + horizon_s(timeline) / 60
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
        xaxis=dict(NODE_TIME_AXIS)
        if timeline.node_level
        else dict(title=dict(text="forecast made at (min)")),
        yaxis=dict(rangemode="tozero", title=dict(text=value_unit(timeline)))
        if timeline.node_level
        else dict(range=[-0.05, 1.05], title=dict(text=value_unit(timeline))),
        legend=dict(orientation="h", y=-0.3),
        shapes=shapes,
    )
    return go.Figure(dict(data=traces, layout=layout))


def value_over_time(
    timeline: Timeline, members: tuple[int, ...], index: str, order: int
) -> np.ndarray:
    """The value of one node (or node set) of ``index`` at every explained step (round-off
    read as 0: :func:`~wdn_explain.narrative.without_round_off`)."""
    out = np.zeros(len(timeline))
    for t, e in enumerate(timeline.explanations):
        sets, values = e.index_values(index, order, len(members))
        hit = np.flatnonzero((sets == np.array(members)[None, :]).all(axis=1))
        out[t] = values[hit[0]] if len(hit) else 0.0
    return without_round_off(out)


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
    risk: np.ndarray | None = None,
    height: int = 290,
) -> go.Figure:
    """The simulated chlorine (mg/L) at node index ``node`` at every step of the timeline,
    the minimum residual as a line (named in the legend, below the chart) and a marker at
    ``step``. A node-level forecast joins
    with ``forecast`` (and its interval ``lower``/``upper``): mg/L, shape (T,), made at the
    timeline's times for one horizon later, so drawn at times + horizon (at 0 mg/L where it
    lies below, as its interval: :func:`~wdn_explain.features.within_range`); so is its
    ``risk`` of non-compliance (a probability, shape (T,), on a right-hand axis ticked every
    25 %). The legend lies below the time axis, which carries its unit on its ticks."""
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
                y=within_range("node_chlorine_mg_l", forecast),  # as its interval
                name="forecast",
                line=dict(color=POSITIVE, dash="dot"),
            )
        )
    if risk is not None:
        traces.append(
            dict(
                type="scatter",
                x=ahead,
                y=risk,
                yaxis="y2",
                name=risk_label(timeline),
                line=dict(color=BELOW, width=1.5),
                hovertemplate="%{y:.0%}",
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
        xaxis=dict(NODE_TIME_AXIS),
        yaxis=dict(title=dict(text="mg/L"), rangemode="tozero"),
        legend=dict(orientation="h", yanchor="top", y=-0.2),
        showlegend=True,  # the minimum's line is named there
        shapes=[minimum],
    )
    if risk is not None:
        layout["yaxis2"] = dict(
            title=dict(text="risk"),
            overlaying="y",
            side="right",
            range=[0, 1],
            tick0=0,
            dtick=0.25,  # 0 %, 25 %, ... 100 %: round ticks of a probability
            tickformat=".0%",
            showgrid=False,
        )
    return go.Figure(dict(data=traces, layout=layout))
