"""Replay: a sensor model's forecasts, risks and explanations from replayed readings.

A page of the multipage app (``streamlit run app/main.py``, then "Replay" in the sidebar). It
opens a folder written by ``wdn-explain replay ... --out FOLDER`` (:mod:`wdn_explain.replay`)
and shows it step by step: browse with the slider, play at the page's own pace, or follow a
folder the command is still writing (read again every second, the newest step shown). The
readings are drawn beside the forecasts by the water page's own charts
(:func:`~wdn_explain.plot.charts.node_chlorine_figure`, :func:`~wdn_explain.plot.maps.risk_figure`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from wdn_explain.errors import WdnExplainError
from wdn_explain.files import private_cache_dir
from wdn_explain.plot.charts import node_chlorine_figure
from wdn_explain.plot.maps import risk_figure
from wdn_explain.plot.style import NEGATIVE, POSITIVE, chart_title
from wdn_explain.readings import FLAGS, left_out
from wdn_explain.replay import (
    META,
    Replay,
    load_replay,
    replay,
    replay_network,
    replay_timeline,
)
from wdn_explain.shipped import SAMPLE_READINGS, default_scenario

PLAY_S = 0.5  # seconds per step while playing
FOLLOW_S = 1.0  # seconds between reads of a folder being written
MODES = ("browse", "play", "follow the folder as it grows")
SV_AXIS_MG_L = 0.005
"""The Shapley values' axis spans at least +-this: values far below the table's 0.001 mg/L
(a node chlorine has not reached) show as the near-zero bars they are, not stretched to the
chart's height."""


def version_of(folder: str) -> tuple:
    """What the cached replay of ``folder`` is keyed by: its record's and its steps' names
    and write times (a step added or rewritten is a new version)."""
    files = [Path(folder) / META, *sorted(Path(folder).glob("step_*.npz"))]
    return tuple((f.name, f.stat().st_mtime_ns) for f in files if f.exists())


@st.cache_resource(max_entries=4, show_spinner=False)
def replay_of(folder: str, version: tuple) -> Replay:
    """The replay in ``folder`` as of ``version``, read once: every step of play or follow
    reruns the page, which would read every step file again."""
    return load_replay(folder)


@st.cache_resource(max_entries=4, show_spinner=False)
def network_of(folder: str, record: tuple):
    """The replay's network checked against its nodes, read once per version of its record
    (EPANET opens the file)."""
    return replay_network(replay_of(folder, version_of(folder)))


@st.cache_resource(max_entries=16, show_spinner=False)
def timeline_of(folder: str, version: tuple, node: str):
    """The replay as a timeline following ``node``, built once per version."""
    return replay_timeline(replay_of(folder, version), node)


def replay_sample() -> Path:
    """The shipped sample readings replayed through their sensor model into the user cache
    (kept there: a second click reads the steps back), with a progress bar."""
    model = SAMPLE_READINGS.parent
    out = private_cache_dir("replay-sample")
    bar = st.progress(0.0, text="replaying the sample readings")
    n_steps = sum(1 for _ in SAMPLE_READINGS.open()) - 1  # one report a row, after the header

    def advance(step) -> None:
        bar.progress(min((step.step + 1) / n_steps, 1.0), text=f"{step.time_s / 60:g} min")

    replay(SAMPLE_READINGS, default_scenario(model), model, out, overwrite=True, on_step=advance)
    return out


st.subheader("Replay: forecasts from the readings")
if "replay_folder" not in st.session_state:  # the sidebar's box, set before it is drawn
    st.session_state["replay_folder"] = os.environ.get("WDN_EXPLAIN_REPLAY", "")
if "replay_folder_next" in st.session_state:
    st.session_state["replay_folder"] = st.session_state.pop("replay_folder_next")
folder = st.sidebar.text_input(
    "replay folder",
    key="replay_folder",
    help="the --out folder of `wdn-explain replay READINGS --out FOLDER`",
)
if not folder:
    st.info(
        "Write a replay with `wdn-explain replay readings.csv --scenario scenario.yaml "
        "--out replay-out` (see the docs' replay page), then give its folder in the sidebar; "
        f"or replay the sample readings of `{SAMPLE_READINGS.parent.name}` here: its four "
        "sensors in the default scenario, with sensor 9 missing at 25 min, sensor 19 reading "
        "7.5 mg/L at 30 min and sensor 23 stuck at 0.7 mg/L from 40 to 90 min."
    )
    if st.button("Replay the sample readings", key="replay_sample"):
        try:
            st.session_state["replay_folder_next"] = str(replay_sample())
        except WdnExplainError as exc:
            st.error(str(exc))
            st.stop()
        st.rerun()
    st.stop()
try:
    version = version_of(folder)
    run = replay_of(folder, version)
    network = network_of(folder, version[:1]) if run.steps else None
except WdnExplainError as exc:
    st.error(str(exc))
    st.stop()
mode = st.sidebar.radio("mode", MODES, key="replay_mode")
if not run.steps:
    st.info("No step replayed yet.")
    if mode == MODES[2]:
        time.sleep(FOLLOW_S)
        st.rerun()
    st.stop()

node = st.sidebar.selectbox(
    "node", run.node_ids, index=run.node_ids.index(run.sensors[0]), key="replay_node"
)
timeline = timeline_of(folder, version, node)
count = len(run.steps)
# the slider counts steps from 1, as the caption does, and keeps its key (and a keyboard
# user's focus) from step to step; its value is set here, before it is drawn: the newest
# step when following, the next one when playing
wanted = st.session_state.pop("replay_next", st.session_state.get("replay_step", 1))
st.session_state["replay_step"] = count if mode == MODES[2] else min(max(wanted, 1), count)
number = st.slider("step", 1, max(count, 2), key="replay_step", disabled=count == 1)
step, last = number - 1, count - 1
shown = run.steps[step]
sensors = run.sensors
at = run.node_ids.index(node)

st.caption(
    f"report at {shown.time_s / 60:g} min (step {step + 1} of {len(run.steps)}): the forecast "
    f"used {int(shown.used.sum())} of {len(sensors)} readings; forecasts are for "
    f"{run.meta['horizon']} reports ahead"
)
st.table(
    {
        "sensor": list(sensors),
        "reading (mg/L)": [f"{v:.3f}" if np.isfinite(v) else "–" for v in shown.readings],
        "mark": [FLAGS[f] for f in shown.flags],
        "used": ["yes" if u else "no" for u in shown.used],
    }
)
left, right = st.columns(2)
chart = node_chlorine_figure(
    timeline,
    network,
    at,
    minimum_mg_l=run.meta["min_residual_mg_l"],
    step=step,
    forecast=timeline.node_forecast[:, at],
    lower=None if timeline.node_lower is None else timeline.node_lower[:, at],
    upper=None if timeline.node_upper is None else timeline.node_upper[:, at],
    risk=None if timeline.node_risk is None else timeline.node_risk[:, at],
)
reading = "reading" if node in sensors else "reading (no sensor here)"
chart.update_traces(selector=dict(name="simulated"), name=reading)
left.plotly_chart(chart, width="stretch")
if timeline.node_risk is not None:
    right.plotly_chart(risk_figure(timeline, network, step), width="stretch")

if shown.explanations:
    e = shown.explanations[at]
    players = [network.node_ids[v] for v in e.player_nodes()]
    values = e.node_values("SV")
    bars = go.Figure(
        dict(
            data=[
                dict(
                    type="bar",
                    x=[f"sensor {p}" for p in players],
                    y=values,
                    marker=dict(color=np.where(values >= 0, POSITIVE, NEGATIVE)),
                )
            ],
            layout=dict(
                height=260,
                margin=dict(l=10, r=10, t=50, b=10),
                title=chart_title(
                    f"why {shown.forecast[at]:.3f} mg/L at node {node}<br><sup>exact Shapley "
                    f"values of the readings used; without them: {e.empty_prediction:.3f}</sup>"
                ),
                yaxis=dict(
                    title=dict(text="mg/L"),
                    range=None
                    if np.abs(values).max(initial=0.0) >= SV_AXIS_MG_L
                    else [-SV_AXIS_MG_L, SV_AXIS_MG_L],
                ),
            ),
        )
    )
    st.plotly_chart(bars, width="stretch")
else:
    st.warning("No reading was usable at this report: the forecast rests on the plan alone.")
bad = left_out(sensors, shown.flags, shown.used)
if bad:
    st.caption(f"left out: {'; '.join(bad)} -- by the rules of the docs' replay page")

if mode == MODES[1] and step < last:
    time.sleep(PLAY_S)
    st.session_state["replay_next"] = number + 1
    st.rerun()
if mode == MODES[2]:
    time.sleep(FOLLOW_S)
    st.rerun()
