"""wdn-explain app: animated SI-Graphs of the chlorine forecast over a network's map.

Run with ``streamlit run app/main.py``: three pages, "Water network" (this file),
"Molecules" (``pages/1_Molecules.py``) and "Replay" (``pages/2_Replay.py``: sensor readings
replayed through a sensor model). The user picks one of the water models (every model
folder under ``models/`` and the user models folder, and ``$WDN_EXPLAIN_MODEL``), or builds
one from an uploaded .inp (``wdn_explain.onboard``); the network is the one its card names.
The app only parses input and shows results; the work is done by the library (simulate ->
forecast -> explain, cached per scenario/model). This file lays out the sidebar's controls and
routes the pages; the water page's pieces live in ``water/``: ``config`` (settings, widget
keys, charts), ``cache`` (what is read once per file version, the warm-up), ``sidebar`` (model
picker, own network, new-scenario form) and ``panels`` (everything at the time cursor).
"""

from __future__ import annotations

import streamlit as st
from water.cache import (
    available_timelines,
    card_of,
    models_beside,
    opening_timeline,
    shown,
    timeline_from,
    timeline_of,
    version_of,
    warm_up,
)
from water.config import COMPACT, INDICES, PLAY_S, keyed, logger
from water.gate import GATE
from water.panels import View, design_notice, downloads, page, time_cursor
from water.sidebar import new_scenario_form, pick_model, pick_new_scenario, target_picker

from wdn_explain.errors import WdnExplainError
from wdn_explain.narrative import HOW_TO_READ, NO_COORDINATES, index_name, reference_label
from wdn_explain.plot import MINIMUM_RESIDUAL_MG_L
from wdn_explain.timeline import DEFAULT_REFERENCE, REFERENCES


def main() -> None:
    st.html(COMPACT)  # style only: no space taken, none of the scripts of HTML in Markdown
    st.subheader("Why does the model expect chlorine there?")
    model_dir, net = pick_model()
    default = opening_timeline(model_dir, net)
    controls = st.sidebar.container()  # above the new-scenario form, which runs last
    pick_new_scenario()
    timelines = available_timelines(default, model_dir)
    choice = controls.selectbox("scenario", list(timelines), key=keyed("scenario"))
    controls.caption(choice)  # the whole name, which the box may cut
    path = timelines[choice]
    mtime = version_of(path)
    target = target_picker(controls, timeline_from(str(path), mtime))
    reference = controls.radio(
        "values relative to",
        list(REFERENCES),
        index=list(REFERENCES).index(DEFAULT_REFERENCE),
        format_func=reference_label,
        key="reference",
        help="the forecast every value is compared with: the model's forecast when every node "
        "is at the network average (the paper's choice) or when no node has chlorine",
    )
    index = controls.selectbox("index", INDICES, index=1, key="index", format_func=index_name)
    order = 1 if index == "SV" else controls.slider("order", 1, 3, 2, key="order")
    top_k = controls.slider("strongest interactions shown", 0, 30, 8, key="top_k")
    minimum = controls.number_input(
        "minimum residual (mg/L)",
        min_value=0.0,
        max_value=5.0,
        value=MINIMUM_RESIDUAL_MG_L,
        step=0.05,
        key="minimum",
        help="the free-chlorine residual every node should keep (regulators commonly ask for "
        "0.2 mg/L): the followed node's chart draws it, the compliance map marks the nodes "
        "below it",
    )
    found = controls.selectbox(
        "find a node",
        list(net.node_ids),
        index=None,
        key=keyed("find"),
        placeholder="type a node id",
        help="zooms both maps onto the node and rings it",
    )
    with controls.expander("how to read this", expanded=False):
        st.markdown(HOW_TO_READ)
    tl = shown(str(path), mtime, reference)
    # the notices in one place of their own: however many a model has, the charts below
    # keep their place in the page, and the browser keeps them (see live_chart.py)
    with st.container():
        if not net.has_coordinates:
            st.info(NO_COORDINATES)
        design_notice(tl)
    time_cursor(tl)
    focus = None if found is None else net.node_index(found)
    others = [k for k in timelines if k != choice]
    beside = {f"this scenario, model {m}": folder for m, folder in models_beside(model_dir)}
    compare = controls.selectbox(
        "side by side with",
        [None, *others, *beside],
        format_func=lambda k: "(no second scenario)" if k is None else k,
        key=keyed("compare"),
        help="a second scenario of this model, or this scenario explained by another model "
        "of the network (a node-level model's why beside the share's), drawn beside the "
        "first at the same time",
        disabled=not (others or beside),
    )
    other = None
    if compare in beside:
        other = str(timeline_of(tl.scenario, beside[compare], net))
    elif compare is not None:
        other = str(timelines[compare])
    view = View(
        str(path), mtime, reference, index, order, top_k, focus, other, float(minimum), target
    )
    st.fragment(run_every=PLAY_S if st.session_state.get("playing") else None)(page)(view, net)
    # the form's widgets after the page: a fresh browser gets the first chart before them
    new_scenario_form(net, card_of(model_dir).design, model_dir)
    warm_up()  # after the first page: the libraries and models a later request needs
    downloads(view, net)


def show_errors(page) -> None:
    """Run the page; any failure reaches the user as one message, never a traceback (the
    details of an unexpected one go to the server log)."""
    try:
        page()
    except WdnExplainError as exc:
        st.error(str(exc))
    except Exception as exc:
        logger.exception("app failed")
        st.error(f"unexpected error: {type(exc).__name__}: {exc} (details in the server log)")


def water() -> None:
    """The water page (the app's first page)."""
    show_errors(main)


st.set_page_config(page_title="wdn-explain", layout="wide")
with GATE.run():  # the warm-up's import of what Plotly probes waits (water.gate)
    st.navigation(
        [
            st.Page(water, title="Water network", url_path="water", default=True),
            st.Page("pages/1_Molecules.py", title="Molecules"),
            st.Page("pages/2_Replay.py", title="Replay"),
        ]
    ).run()
