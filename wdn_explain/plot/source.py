"""The label that names where chlorine enters, placed clear of the network on the map."""

from __future__ import annotations

from ..map_labels import (
    COLUMN_WIDTHS_PX,
    PANEL_WIDTHS_PX,
    free_position,
    map_views,
)
from ..network import Network
from ..simulation import injection_node
from ..timeline import Timeline
from .style import LABELLED_NODES, SOURCE_FONT_PX, SOURCE_ON, SOURCE_PX, trace_type


def source_state(timeline: Timeline, step: int) -> str:
    """``source on (1.5 mg/L)`` or ``source off``: the planned setpoint of the injection at
    the time of ``step``."""
    setpoint = float(timeline.scenario.injection_setpoint_mg_l(timeline.times_s[step]))
    return f"source on ({setpoint:g} mg/L)" if setpoint > 0 else "source off"


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
