"""The animated SI-Graph of a whole timeline (one frame per time step), as reports embed it."""

from __future__ import annotations

import plotly.graph_objects as go

from ..narrative import (
    minutes,
)
from ..network import Network
from ..timeline import Timeline
from .layers import _map_layout
from .si_graph import frame_data, frame_title, frame_traces, opening_step, value_scale


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
