"""wdn-explain app: animated SI-Graphs of the chlorine forecast over the Hanoi map.

Run with ``streamlit run app/main.py``. The app only parses input and shows results; the
work is done by the library (simulate -> forecast -> explain, cached per scenario/model).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import streamlit as st

from wdn_explain.design import UNKNOWN_DESIGN, DesignEnvelope, card_envelope
from wdn_explain.errors import WdnExplainError
from wdn_explain.model_folder import model_hash, read_card
from wdn_explain.network import load_network
from wdn_explain.plot import chlorine_figure, forecast_figure, timeline_figure, value_figure
from wdn_explain.scenario import ScenarioConfig, load_config
from wdn_explain.timeline import (
    DEFAULT_MODEL,
    DEFAULT_SCENARIO,
    DEFAULT_TIMELINE,
    Timeline,
    cache_path,
    explain_scenario,
    timeline_is_current,
    timeline_label,
)

logger = logging.getLogger("wdn_explain.app")
MODEL_DIR = Path(os.environ.get("WDN_EXPLAIN_MODEL", DEFAULT_MODEL))
CACHE_DIR = Path(os.environ.get("WDN_EXPLAIN_CACHE", Path.home() / ".cache" / "wdn-explain"))
INDICES = ["SV", "k-SII", "STII", "FSII", "Moebius"]
HOW_TO_READ = """
**What you see.** The model forecasts which fraction of the network will carry chlorine a
few time steps ahead. The map explains that forecast: each node's **colour and size** is
its contribution (red raises the forecast, blue lowers it) relative to a network where
every node's chlorine is replaced by the network average. **Lines** between two nodes are
pairwise interactions: their joint effect beyond their separate ones (red: reinforce,
blue: compete), also between nodes that are not directly connected. **Shaded shapes**
are interactions of three or more nodes.

**Why exact.** The values are computed exactly (GraphSHAP-IQ): the model only looks a few
pipes away from each node, so only interactions inside such neighbourhoods can be non-zero.
The square marks the reservoir; a thick outline marks the injection node.
"""


@st.cache_resource
def network(name: str):
    return load_network(name)


@st.cache_resource(max_entries=8)
def timeline_from(path: str, mtime: float) -> Timeline:
    return Timeline.load(path)


@st.cache_resource(max_entries=32, show_spinner=False)
def si_graph(path: str, mtime: float, index: str, order: int, top_k: int):
    tl = timeline_from(path, mtime)
    return timeline_figure(tl, network(tl.scenario.network), index=index, order=order, top_k=top_k)


def scenario_name(path: Path) -> str:
    """How the scenario picker names a cached timeline: what the scenario is, plus a short
    hash that keeps two scenarios differing only in other factors apart."""
    return f"{timeline_label(path)} [{path.stem.split('_')[1][:6]}]"


def available_timelines(default: Path) -> dict[str, Path]:
    found = {"default scenario": default}
    if CACHE_DIR.is_dir():
        for path in sorted(CACHE_DIR.glob(f"timeline_*_{model_hash(MODEL_DIR)}.npz")):
            if path != default:
                found[scenario_name(path)] = path
    return found


def default_timeline() -> Path:
    """The default scenario's timeline: the shipped one while it is readable and made by
    this model and engine version, else one computed into the user cache (the installed
    package is never written)."""
    if MODEL_DIR == DEFAULT_MODEL and usable(DEFAULT_TIMELINE):
        return DEFAULT_TIMELINE
    scenario = load_config(DEFAULT_SCENARIO).scenario_config(0)
    path = cache_path(scenario, MODEL_DIR, CACHE_DIR)
    if not usable(path):
        with st.spinner("explaining the default scenario (first start with this model)..."):
            explain_scenario(scenario, MODEL_DIR, out=path)
    return path


def usable(path: Path) -> bool:
    """Whether a timeline file is current for this model and loads without error."""
    if not timeline_is_current(path, MODEL_DIR):
        return False
    try:
        timeline_from(str(path), path.stat().st_mtime)
    except WdnExplainError:
        return False
    return True


def _bounds(envelope: DesignEnvelope | None, name: str, default: tuple[float, float]):
    """(low, high) the form offers for a factor: the model's trained range, else ``default``."""
    if envelope is None:
        return default
    return envelope.ranges[name]


def _factor_input(
    label: str, bounds: tuple[float, float], step: float, *, low: bool = False
) -> float:
    """A slider over a factor's trained range (starting mid-range, or at its low end); a
    fixed value the model saw only one of is shown, not asked."""
    lo, hi = float(bounds[0]), float(bounds[1])
    key = "new_" + label.split(" (")[0].replace(" ", "_")
    if hi - lo < 1e-9:
        st.caption(f"{label}: {lo:g} (the only value this model saw)")
        return lo
    value = lo if low else round((lo + hi) / 2 / step) * step
    return st.slider(label, lo, hi, min(max(value, lo), hi), step, key=key)


def new_scenario_form(net, envelope: DesignEnvelope | None) -> None:
    """A sidebar form offering what the model's training design covers (its injection nodes,
    modes and ranges); a model without a recorded design gets the whole network."""
    nodes = list(envelope.injection_nodes) if envelope else list(net.node_ids)
    modes = list(envelope.injection_modes) if envelope else ["constant"]
    roles = dict(zip(net.node_ids, net.node_roles))
    with st.sidebar.form("new_scenario"):
        st.markdown("**New scenario** (within what the model learned)")
        node = st.selectbox(
            "injection node",
            nodes,
            key="new_node",
            format_func=lambda n: f"{n} ({roles.get(n, 'node')})",
            help="where chlorine enters: the reservoir or a booster at a junction",
        )
        strength = _factor_input(
            "strength (mg/L)", _bounds(envelope, "injection_strength_mg_l", (0.1, 10.0)), 0.1
        )
        mode = st.selectbox("booster schedule", modes, key="new_mode")
        lo, hi = _bounds(envelope, "injection_start_s", (0.0, 0.0))
        start_min = _factor_input("booster starts at (min)", (lo / 60, hi / 60), 5.0, low=True)
        demand = _factor_input(
            "demand level (x base demand)", _bounds(envelope, "demand_scale", (1.0, 1.0)), 0.05
        )
        decay = _factor_input(
            "bulk decay (/day)", _bounds(envelope, "bulk_decay_per_day", (0.0, 0.0)), 0.1, low=True
        )
        duration_min = st.number_input(
            "duration (min)", min_value=30, max_value=720, value=180, step=30, key="new_duration"
        )
        seed = st.number_input("seed", min_value=0, value=1, step=1, key="new_seed")
        submitted = st.form_submit_button("simulate, forecast, explain")
    if not submitted:
        return
    template = load_config(DEFAULT_SCENARIO).scenario
    try:
        spec = ScenarioConfig.model_validate(
            template.model_dump()
            | dict(
                network=net.name,
                injection_node=None if roles.get(node) == "reservoir" else node,
                injection_strength_mg_l=float(strength),
                injection_mode=mode,
                injection_start_s=int(round(start_min * 60)),
                demand_scale=float(demand),
                bulk_decay_per_day=float(decay),
                duration_s=int(duration_min) * 60,
                seed=int(seed),
            )
        )
    except ValueError as exc:
        st.sidebar.error(f"invalid scenario: {exc}")
        return
    bar = st.sidebar.progress(0.0, text="simulating and explaining...")
    try:
        out = cache_path(spec, MODEL_DIR, CACHE_DIR)
        _, status = explain_scenario(
            spec,
            MODEL_DIR,
            out=out,
            progress=lambda d, t: bar.progress(d / t, text=f"explained {d}/{t} steps"),
        )
    except WdnExplainError as exc:
        st.sidebar.error(str(exc))
        return
    bar.progress(1.0, text=f"done ({status})")
    st.session_state["scenario"] = scenario_name(out)


def design_notice(tl: Timeline) -> None:
    """A visible notice above the map when the scenario lies outside the model's training
    design (naming what), or when the model records no design; nothing inside it."""
    ood = tl.meta.get("out_of_design")
    if ood is None:
        st.info(f"Note: {UNKNOWN_DESIGN}.")
    elif ood:
        st.warning(
            "**Outside what this model learned** -- the forecast is an extrapolation and its "
            "explanation describes that extrapolation: " + "; ".join(ood) + "."
        )


def main() -> None:
    st.set_page_config(page_title="wdn-explain", layout="wide")
    st.title("Why does the model expect chlorine there?")
    default = default_timeline()
    net = network("hanoi")
    controls = st.sidebar.container()  # drawn above the form, filled after it ran
    new_scenario_form(net, card_envelope(read_card(MODEL_DIR)))
    timelines = available_timelines(default)
    choice = controls.selectbox("scenario", list(timelines), key="scenario")
    index = controls.selectbox("index", INDICES, index=1, key="index")
    order = 1 if index == "SV" else controls.slider("order", 1, 3, 2, key="order")
    top_k = controls.slider("strongest interactions shown", 0, 30, 8, key="top_k")
    with controls.expander("how to read this", expanded=False):
        st.markdown(HOW_TO_READ)
    path = timelines[choice]
    mtime = path.stat().st_mtime
    tl = timeline_from(str(path), mtime)
    fig = si_graph(str(path), mtime, index, order, top_k)
    design_notice(tl)
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(fig, width="stretch", key="si_graph")
        s = tl.scenario
        st.caption(
            f"{len(tl)} forecasts, every {s.reporting_step_s // 60} min; injection at node "
            f"{s.injection_node or net.reservoirs[0]} ({s.injection_strength_mg_l} mg/L); "
            f"model {tl.meta['model_hash']}, exact GraphSHAP-IQ"
        )
    with right:
        step = st.slider(
            "time step for the panels", 0, len(tl) - 1, tl.first_informative_step(), key="step"
        )
        st.plotly_chart(forecast_figure(tl, step), width="stretch", key="forecast")
        st.plotly_chart(chlorine_figure(tl, net, step), width="stretch", key="chlorine")
        picked = st.multiselect(
            "node (or pair) to follow",
            list(net.node_ids),
            default=[net.node_ids[0]],
            max_selections=2,
            key="follow",
        )
        if picked:
            members = tuple(sorted(net.node_index(p) for p in picked))
            st.plotly_chart(
                value_figure(tl, net, members, index, max(order, len(members))),
                width="stretch",
                key="value",
            )


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


show_errors(main)
