"""The water page's panels at the time cursor: the SI-Graph, summary, drivers, forecast,
chlorine and compliance maps, the followed node, a second scenario, the notices and the
downloads (what is shown, in :class:`View`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from water.cache import followed, scale_of, shown, timeline_from, version_of
from water.config import (
    CHART,
    DRIVERS_NOTE,
    LARGE_MAP_PX,
    MAP,
    MAP_VIEWS,
    PANELS_ON_PAUSE,
    RISK_NOTE,
    ZOOM_HINT,
    chart,
)
from water.gate import gated
from wdn_explain.narrative import (
    clock_time,
    compliance_text,
    drivers_table,
    index_name,
    markdown_table,
    reference_label,
    risk_table,
    scenario_text,
    summary,
    threshold_text,
    unit,
    warnings_of,
)
from wdn_explain.plot import (
    LABELLED_NODES,
    MINIMUM_RESIDUAL_MG_L,
    chlorine_figure,
    compliance_figure,
    forecast_figure,
    node_chlorine_figure,
    opening_step,
    risk_figure,
    si_graph_figure,
    value_figure,
)
from wdn_explain.report import report_html, shapiq_zip
from wdn_explain.simulation import injection_node
from wdn_explain.timeline import (
    REFERENCES,
    Timeline,
)


def design_notice(tl: Timeline) -> None:
    """Visible notices above the map: the scenario lies outside the model's training design
    (naming what); the simulation has negative pressures or unmet demand, or the forecasts
    leave their range (:func:`~wdn_explain.narrative.warnings_of`). Nothing otherwise (wide intervals are noted under the forecast chart; a model
    without a recorded design is noted under the model picker, :func:`pick_model`)."""
    for heading, text in warnings_of(tl):  # the report shows the same (one home)
        st.warning(f"**{heading}** -- {text}.")


@dataclass(frozen=True)
class View:
    """What the page shows: which timeline file, reference, index, order and top-k."""

    path: str
    mtime: float
    reference: str
    index: str
    order: int
    top_k: int
    focus: int | None = None  # the node found by id (zoomed onto), else None
    other: str | None = None  # a second timeline file drawn side by side, else None
    minimum: float = MINIMUM_RESIDUAL_MG_L  # the minimum chlorine residual, mg/L
    target: str | None = None  # a node-level model's explained node, else None

    @property
    def timeline(self) -> Timeline:
        return shown(self.path, self.mtime, self.reference, self.target)

    @property
    def other_target(self) -> str | None:
        """The second timeline's explained node: the view's target when that timeline
        explains it too, else None (its file's own)."""
        targets = timeline_from(self.other, version_of(self.other)).targets
        return self.target if self.target in targets else None

    @property
    def other_timeline(self) -> Timeline:
        return shown(self.other, version_of(self.other), self.reference, self.other_target)


def time_cursor(tl: Timeline) -> None:
    """One time cursor for the whole page, in minutes (session state ``time_min``): it opens
    on the first step at which chlorine has left its source, on every model
    (:func:`opening_step`), and survives every control change; play/pause move it (see
    :func:`page`)."""
    times = [int(t // 60) for t in tl.times_s]
    if st.session_state.get("time_min") not in times:
        st.session_state["time_min"] = times[opening_step(tl)]
    play, pause, _ = st.columns([1, 1, 6])
    play.button("▶ play", key="play", on_click=_set_playing, args=(True,))
    pause.button("❚❚ pause", key="pause", on_click=_set_playing, args=(False,))


def _set_playing(on: bool) -> None:
    st.session_state["playing"] = on


def _advance(times: list[int]) -> None:
    """While playing, move the cursor one step on; stop at the last step."""
    if not st.session_state.get("playing"):
        return
    i = times.index(st.session_state["time_min"])
    if i + 1 >= len(times):
        st.session_state["playing"] = False
        st.rerun()
    st.session_state["time_min"] = times[i + 1]


@gated  # a fragment: it reruns alone while playing
def page(view: View, net) -> None:
    """The time slider and every panel at the cursor's time: SI-Graph, summary, forecast
    against truth (a marker), chlorine map and the followed node (a fragment: while playing
    it reruns alone every PLAY_S seconds). The SI-Graph comes first, within a 900 px screen,
    in the first column of a row: beside the panels (two columns), or on networks too large
    for node labels spanning the page (one column) with the panels in two columns below
    it and the chlorine map spanning the page under them (a node can be found on it), out of
    the first screen. The one place keeps its frame across a switch of model; a
    second scenario's SI-Graph sits right below it, in its column. On large networks, while
    playing, only the SI-Graph (without its flow arrows) and its sentence move, and the
    arrows and the panels below follow on pause (:data:`PANELS_ON_PAUSE`). Every chart is a
    :func:`~live_chart.live_chart`, redrawn in place."""
    tl = view.timeline
    times = [int(t // 60) for t in tl.times_s]
    _advance(times)
    st.select_slider(
        "forecast made at (min)",
        options=times,
        key="time_min",
        format_func=lambda m: f"{m} min ({clock_time(tl, m * 60)})",
        help="minutes since the simulation started; the time of day in brackets",
    )
    step = times.index(st.session_state["time_min"])
    large = net.n_nodes > LABELLED_NODES
    playing = large and bool(st.session_state.get("playing"))  # a large map plays lighter
    # the SI-Graph in the first of a row of columns on every network: one place in the page
    # (the element path of its frame), so a switch of model keeps its frame (live_chart.py)
    top = st.columns(1) if large else st.columns([3, 2])
    with top[0]:
        scale = scale_of(view.path, view.mtime, view.reference, view.target, view.index, view.order)
        fig = view_si_graph(view, tl, net, step, scale, height=540, arrows=not playing)
        chart(fig, key="si_graph", config=MAP)
        s = tl.scenario
        what = f"forecast: {unit(tl)}" if tl.node_level else f"chlorinated: {threshold_text(tl)}"
        st.caption(
            f"{ZOOM_HINT}. {scenario_text(s)}; a forecast every {s.reporting_step_s // 60} "
            f"min; {what}; values relative to "
            f"{REFERENCES[tl.reference][1]}; model {tl.meta['model_hash']}, {tl.engine_label}"
        )
        if view.other:  # right below the first SI-Graph, before any panel
            second_scenario(view, net, int(tl.times_s[step]), scale)
    if large:  # the chlorine map of a large network spans the page below two columns
        left, right = st.columns(2)
        panels = [left, st.container(), right]
    else:
        panels = [top[1]] * 3
    with panels[0]:
        st.markdown(summary(tl, net, step, view.index, view.order))
    if playing:
        panels[1].caption(PANELS_ON_PAUSE)
        return
    with panels[0]:
        with st.expander("strongest drivers (table)"):
            rows = drivers_table(tl, net, step, view.index, view.order)
            if not rows:  # every value of the step is 0: nothing drives the forecast
                st.caption("no node or interaction moves this forecast at this step")
            else:
                value = next(c for c in rows[0] if c.startswith("value"))
                st.markdown(markdown_table(rows, {value: "{:+.4f}"}))
                st.caption(DRIVERS_NOTE)
        chart(forecast_figure(tl, step), key="forecast", config=CHART)
        if tl.meta.get("uncertainty"):  # beside the band it speaks of, not above the map
            st.info(tl.meta["uncertainty"])
    with panels[1]:
        chlorine_panel(view, net, step, height=LARGE_MAP_PX if large else 320)
    with panels[2]:
        picked = follow_panel(view, net, step)
        if picked:
            node = net.node_index(picked[0])
            forecast = {}  # a node-level model's forecast at the node, with its interval
            if tl.node_level:
                forecast = {
                    key: None if values is None else values[:, node]
                    for key, values in (
                        ("forecast", tl.node_forecast),
                        ("lower", tl.node_lower),
                        ("upper", tl.node_upper),
                        ("risk", tl.node_risk),
                    )
                }
            fig = node_chlorine_figure(
                tl, net, node, minimum_mg_l=view.minimum, step=step, **forecast
            )
            chart(fig, key="node_chlorine", config=CHART)


def chlorine_panel(view: View, net, step: int, height: int = 320) -> None:
    """The chlorine map, the compliance map (nodes below the minimum residual) or a node
    model's risk of non-compliance at the step, ``height`` px tall, the count of nodes below
    the minimum in a sentence and, with a risk, the nodes most at risk in a table."""
    tl = view.timeline
    views = [v for v in MAP_VIEWS if v != "risk" or tl.node_risk is not None]
    if st.session_state.get("map_view") not in views:  # the risk, picked on another model
        st.session_state["map_view"] = views[0]
    shows = st.radio("map", views, format_func=MAP_VIEWS.get, horizontal=True, key="map_view")
    if shows == "compliance":
        fig = compliance_figure(tl, net, step, view.minimum, height=height, focus=view.focus)
    elif shows == "risk":
        fig = risk_figure(tl, net, step, height=height, focus=view.focus)
    else:
        fig = chlorine_figure(tl, net, step, height=height, focus=view.focus)
    chart(fig, key="chlorine", config=MAP)
    st.caption(compliance_text(tl, net, step, view.minimum))
    if tl.node_risk is not None:
        with st.expander("nodes most at risk (table)"):
            st.markdown(markdown_table(risk_table(tl, net, step)))
            st.caption(RISK_NOTE)


def view_si_graph(
    view: View, tl: Timeline, net, step: int, scale: float, height: int, arrows: bool = True
):
    """The SI-Graph of ``tl``'s ``step`` with the view's index, order, top-k and focus
    (``arrows``: the flow arrows, see :func:`si_graph_figure`)."""
    return si_graph_figure(
        tl,
        net,
        step,
        index=view.index,
        order=view.order,
        top_k=view.top_k,
        scale=scale,
        height=height,
        focus=view.focus,
        arrows=arrows,
    )


def second_scenario(view: View, net, time_s: int, scale: float) -> None:
    """The second scenario's SI-Graph and sentence at the cursor's time (its last step before
    it when it has none there), on the first one's colour scale so that colours compare;
    another model's explanation of this scenario on its own scale (its own unit)."""
    other = view.other_timeline
    step = int(np.searchsorted(other.times_s, time_s, side="right")) - 1
    step = min(max(step, 0), len(other) - 1)
    title = scenario_text(other.scenario)
    if other.meta["model_hash"] != view.timeline.meta["model_hash"]:
        title = f"model {Path(other.meta['model_dir']).name} on this scenario"
        target = view.other_target
        scale = scale_of(
            view.other, version_of(view.other), view.reference, target, view.index, view.order
        )
    fig = view_si_graph(view, other, net, step, scale, height=480)
    st.markdown(f"**Side by side: {title}**")
    chart(fig, key="si_graph_other", config=MAP)
    st.markdown(summary(other, net, step, view.index, view.order))


def follow_panel(view: View, net, step: int) -> list[str]:
    """A node's or pair's value over time, or a message saying why there is none; it opens
    on the node where chlorine enters, or for a node-level model on the explained node (the
    source may lie outside its receptive field). Returns the picked node ids."""
    opening = view.target or injection_node(view.timeline.scenario, net)
    picked = st.multiselect(
        "node (or pair) to follow",
        list(net.node_ids),
        default=[opening],
        max_selections=2,
        key=f"follow@{view.path}@{opening}",  # each scenario (and target) opens on its own
    )
    if not picked:
        st.info("Pick a node, or two nodes for their pairwise interaction, to follow over time.")
        return picked
    if len(picked) > view.order:
        st.info(
            f"{index_name(view.index)} of order {view.order} has no pair values: choose an "
            "order of 2 or "
            f"more (or an index other than SV) to follow the pair {' and '.join(picked)}."
        )
        return picked
    members = tuple(sorted(net.node_index(p) for p in picked))
    values = followed(
        view.path, view.mtime, view.reference, view.target, members, view.index, view.order
    )
    if not values.any():
        what = (
            f"nodes {' and '.join(picked)} never interact"
            if len(picked) == 2
            else (f"node {picked[0]} never moves the forecast")
        )
        st.info(
            f"{what} in this scenario ({index_name(view.index)}, relative to "
            f"{reference_label(view.reference)}): the value is 0 at every step. Nodes further "
            "apart than the model's receptive field never interact."
        )
        return picked
    fig = value_figure(
        view.timeline, net, members, view.index, view.order, step=step, values=values
    )
    chart(fig, key="value", config=CHART)
    return picked


def downloads(view: View, net) -> None:
    """Downloads of what is shown (all steps): CSV, shapiq JSON files with node ids, the HTML
    report (share models only); each is made only when its button is pressed."""
    tl = view.timeline
    stem = f"{Path(view.path).stem}_{view.index}_{view.order}_{view.reference}"
    with st.expander("download what is shown (all time steps)"):
        cols = st.columns(3)
        cols[0].download_button(
            "values (CSV, node ids)",
            lambda: tl.to_frame(view.index, view.order).to_csv(index=False),
            file_name=f"{stem}.csv",
            mime="text/csv",
            key="download_csv",
        )
        cols[1].download_button(
            "shapiq JSON (zip)",
            lambda: shapiq_zip(tl, view.index, view.order),
            file_name=f"{stem}_shapiq.zip",
            mime="application/zip",
            key="download_json",
        )
        cols[2].download_button(
            "HTML report",
            lambda: report_html(tl, net, index=view.index, order=view.order, top_k=view.top_k),
            file_name=f"{stem}.html",
            mime="text/html",
            key="download_html",
            disabled=tl.node_level,
            help="reports draw share models' timelines only (as `wdn-explain report`); a "
            "node-level model's values are in the CSV and shapiq downloads"
            if tl.node_level
            else None,
        )
