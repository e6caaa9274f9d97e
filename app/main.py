"""wdn-explain app: animated SI-Graphs of the chlorine forecast over a network's map.

Run with ``streamlit run app/main.py``: two pages, "Water network" (this file) and
"Molecules" (``pages/1_Molecules.py``). The user picks one of the water models (every model
folder under ``models/`` and the user models folder, and ``$WDN_EXPLAIN_MODEL``), or builds
one from an uploaded .inp (``wdn_explain.onboard``); the network is the one its card names.
The app only parses input and shows results; the work is done by the library (simulate ->
forecast -> explain, cached per scenario/model).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, wraps
from pathlib import Path

import numpy as np
import streamlit as st
from live_chart import live_chart
from pydantic import ValidationError

from wdn_explain.design import UNKNOWN_DESIGN, DesignEnvelope
from wdn_explain.errors import WdnExplainError
from wdn_explain.explain.blocks import preload_shapiq
from wdn_explain.model_folder import CARD, model_hash, read_card
from wdn_explain.narrative import (
    HOW_TO_READ,
    NO_COORDINATES,
    clock_time,
    compliance_text,
    drivers_table,
    index_name,
    reference_label,
    scenario_text,
    summary,
    threshold_text,
    timeline_label,
    unit,
)
from wdn_explain.onboard import DEFAULT_SCENARIOS, MIN_SCENARIOS, evaluation_warnings, onboard
from wdn_explain.pipeline import explain_scenario, with_hydraulics
from wdn_explain.plot import (
    LABELLED_NODES,
    MINIMUM_RESIDUAL_MG_L,
    chlorine_figure,
    compliance_figure,
    forecast_figure,
    node_chlorine_figure,
    opening_step,
    si_graph_figure,
    value_figure,
    value_over_time,
    value_scale,
)
from wdn_explain.report import report_html, shapiq_zip
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.shipped import (
    default_scenario,
    default_timeline,
    model_name_for,
    model_network,
    user_model_folder,
    user_models_dir,
    water_models,
)
from wdn_explain.simulation import injection_node
from wdn_explain.timeline import (
    DEFAULT_REFERENCE,
    REFERENCES,
    ExplainSettings,
    Timeline,
    cache_path,
    read_meta,
    settings_of,
    timeline_is_current,
)

logger = logging.getLogger("wdn_explain.app")
CACHE_DIR = Path(os.environ.get("WDN_EXPLAIN_CACHE", Path.home() / ".cache" / "wdn-explain"))
INDICES = ["SV", "k-SII", "STII", "FSII", "Moebius"]
chart = partial(live_chart, cache_dir=CACHE_DIR)  # every chart, updated in place on a rerun
MAX_DURATION_S = 12 * 3600
DURATION_HELP = (
    "simulated time; the first forecast is made at 0 min, the last one horizon before the end"
)
PLAY_S = 0.5  # seconds per frame while playing (a frame waits for the previous one)
CHART = {"displayModeBar": False}  # no Plotly toolbar over the titles
# maps: wheel zoom, drag a box, double-click resets; the toolbar (zoom, pan, reset, PNG)
# shows while the pointer is over the map
MAP = {
    "scrollZoom": True,
    "displaylogo": False,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"],
    "toImageButtonOptions": {"scale": 2},
}
ZOOM_HINT = "scroll to zoom, drag a box, double-click to reset; the toolbar saves a PNG"
# Less empty space above the page, so that the map starts high on a 900 px screen.
COMPACT = "<style>[data-testid='stMainBlockContainer']{padding-top:2.5rem}</style>"


def keyed(name: str) -> str:
    """A widget key of the chosen model: every model gets its own widgets, so the sidebar
    never shows another model's scenario, injection node or followed node."""
    return f"{name}@{st.session_state.get('model', '')}"


def version_of(path: str | Path) -> float | None:
    """The version of a file that the app's caches are keyed by: its modification time (None
    while it is missing). A file rewritten by another run or session is a new version, so
    what was computed from it is computed again."""
    try:
        return Path(path).stat().st_mtime
    except OSError:
        return None


def once_per_version(file: Callable[[Path], Path] = Path):
    """Decorator: ``fn(path, *args)`` computed once per version (:func:`version_of`) of the
    file ``file(path)`` and kept for the server's life: every full rerun lists the cached
    scenarios and names every model, which would read each file again (~20 ms a file)."""

    def decorate(fn):
        @wraps(fn)
        def once(path: str | Path, *args):
            return _per_version(fn, fn.__qualname__, str(path), version_of(file(Path(path))), *args)

        return once

    return decorate


@st.cache_resource(max_entries=1024, show_spinner=False)
def _per_version(_fn, name: str, path: str, version: float | None, *args):
    return _fn(Path(path), *args)  # keyed by the function's name, not the function (``_fn``)


@st.cache_resource(max_entries=8, show_spinner="reading the network...")
def network(model_dir: str, model: str):
    """The network of the model folder ``model_dir`` (hash ``model``), its map layout
    computed once (:attr:`~wdn_explain.network.Network.map_coordinates`)."""
    net = model_network(model_dir)
    _ = net.map_coordinates  # a layout for a network without coordinates, computed once here
    _ = net.properties  # the hover's .inp properties (WNTR reads L-Town in ~1 s), once here
    return net


# The timeline the scenario form has just computed and written, by path: read by
# timeline_from in the same script run instead of the file (equal to it, see
# Timeline.as_saved; reading a 2-hour Hanoi timeline back takes ~0.7 s).
JUST_MADE: dict[str, Timeline] = {}


@st.cache_resource(max_entries=8)
def timeline_from(path: str, mtime: float) -> Timeline:
    """The timeline file with its flows and pressures (simulated again for a file written
    before they were stored, see :func:`with_hydraulics`)."""
    made = JUST_MADE.pop(path, None)
    return made if made is not None else with_hydraulics(Timeline.load(path))


def shown(path: str, mtime: float, reference: str, target: str | None = None) -> Timeline:
    """The timeline with its values relative to ``reference``; a node-level model's with
    the forecast and explanations of its target node ``target`` (None: the file's own)."""
    tl = timeline_from(path, mtime).relative_to(reference)
    return tl if target is None or target == tl.node else tl.for_node(target)


@st.cache_resource(max_entries=64, show_spinner=False)
def scale_of(path: str, mtime: float, reference: str, target, index: str, order: int) -> float:
    return value_scale(shown(path, mtime, reference, target), index, order)


@st.cache_resource(max_entries=64, show_spinner=False)
def followed(path: str, mtime: float, reference: str, target, members, index: str, order: int):
    return value_over_time(shown(path, mtime, reference, target), members, index, order)


# What a new scenario (EPyT-Flow, the model: torch and PyG, the engine) and the molecule
# page (RDKit, its model loader with scikit-learn, its drawing with shapiq's plot and
# Matplotlib) import on first use: 10-20 s on 2 busy cores, paid by the warm-up instead.
WARM_MODULES = (
    "epyt_flow.simulation",
    "wdn_explain.model",
    "wdn_explain.explain.graphshapiq",
    "wdn_explain.chem.datasets",
    "wdn_explain.chem.explain",
    "wdn_explain.chem.training",
    "rdkit.Chem.rdDepictor",
    "shapiq.plot",
    "matplotlib.pyplot",
)
WARM_UP = "wdn-explain-warm-up"  # the thread's name
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Thread:
    """Start, once per server process, a daemon thread that loads what a later request
    would otherwise wait for: every shipped water model's network, current timeline and
    colour scale (a model switch then only draws) and the libraries of a new scenario and
    of the molecule page (:data:`WARM_MODULES`); then it freezes what is loaded
    (:func:`gc.freeze`). Streamlit collects all garbage after every script run
    (``runner.postScriptGC``): over the ~570 000 objects of those libraries, networks and
    timelines, which live as long as the server, that took 0.2-0.5 s per run, paid by every
    time step and play tick; frozen objects are left out of every later collection."""
    thread = threading.Thread(target=_warm, name=WARM_UP, daemon=True)
    # its cache spinners have no page to draw on: Streamlit's warning about that is noise
    logging.getLogger(CONTEXT_LOGGER).addFilter(lambda r: r.threadName != WARM_UP)
    thread.start()
    return thread


def _warm() -> None:
    try:
        for model_dir in water_models().values():
            network(str(model_dir), model_hash(model_dir))
            shipped = default_timeline(model_dir)
            if shipped is not None and usable(shipped, model_dir):
                version = version_of(shipped)
                scale_of(str(shipped), version, DEFAULT_REFERENCE, None, INDICES[1], 2)
        for module in WARM_MODULES:
            importlib.import_module(module)
    except Exception:  # a later request meets the same failure and shows it
        logger.warning("warming up failed", exc_info=True)
    gc.collect()  # the garbage first: a frozen object is never collected
    gc.freeze()


def scenario_name(path: Path) -> str:
    """How the scenario picker names a cached timeline: what the scenario is, plus a short
    hash that keeps two scenarios differing only in other factors apart."""
    meta = meta_of(path) or {}
    lam = settings_of(meta).approximation_lambda if meta else None
    approx = f" (approximation, lambda = {lam})" if lam else ""
    return f"{label_of(path)}{approx} [{meta.get('scenario_hash', '?')[:6]}]"


@once_per_version()
def meta_of(path: Path) -> dict | None:
    """A timeline file's metadata (:func:`read_meta`, None when unreadable)."""
    return read_meta(path)


@once_per_version()
def label_of(path: Path) -> str:
    """:func:`timeline_label` of a timeline file."""
    return timeline_label(path)


@once_per_version(file=lambda model_dir: model_dir / CARD)
def card_of(model_dir: Path):
    """The model's card (:func:`read_card`): the model picker names every model's network
    on every rerun."""
    return read_card(model_dir)


def available_timelines(default: Path, model_dir: Path) -> dict[str, Path]:
    found = {f"default: {label_of(default)}": default}
    if CACHE_DIR.is_dir():
        digest = model_hash(model_dir)
        for path in sorted(CACHE_DIR.glob("timeline_*.npz")):
            meta = meta_of(path)
            if path != default and meta is not None and meta.get("model_hash") == digest:
                if current_cache(path, model_dir, meta):  # else simulated or explained before a fix
                    found[scenario_name(path)] = path
    return found


def current_cache(path: Path, model_dir: Path, meta: dict) -> bool:
    """Whether a cached timeline may be shown as current with the settings it was made with
    (the cache rule, :func:`timeline_is_current`)."""
    try:
        return timeline_is_current(path, model_dir, settings=settings_of(meta))
    except (ValueError, TypeError):  # settings or scenario a later version no longer reads
        return False


def opening_timeline(model_dir: Path, net) -> Path:
    """The model's default scenario's timeline (see :func:`default_scenario` and
    :func:`timeline_of`): the one in its folder while it is readable and made by this model
    and engine version, else one computed into the user cache (the installed package is
    never written)."""
    return timeline_of(default_scenario(model_dir, net), model_dir, net)


def models_beside(model_dir: Path) -> list[tuple[str, Path]]:
    """The other water models trained on the same network (the card's network hash): their
    explanation of the same scenario can be drawn beside this model's."""
    digest = card_of(model_dir).data.network.sha256
    return [
        (name, folder)
        for name, folder in water_models().items()
        if folder != model_dir and card_of(folder).data.network.sha256 == digest
    ]


def timeline_of(scenario: ScenarioConfig, model_dir: Path, net) -> Path:
    """The timeline of ``scenario`` explained by the model in ``model_dir``: its shipped
    default timeline when that is the scenario and current, else one in the user cache,
    computed once (a spinner)."""
    shipped = default_timeline(model_dir)
    is_default = shipped is not None and default_scenario(model_dir, net) == scenario
    if is_default and usable(shipped, model_dir):
        return shipped
    path = cache_path(scenario, model_dir, CACHE_DIR)
    if not usable(path, model_dir):
        with st.spinner(f"explaining the scenario with model {model_dir.name} (once)..."):
            explain_scenario(scenario, model_dir, out=path)
    return path


def usable(path: Path, model_dir: Path) -> bool:
    """Whether a timeline file is current for the model and loads without error (decided
    once per version of the file and of the model)."""
    return _usable(path, str(model_dir), model_hash(model_dir))


@once_per_version()
def _usable(path: Path, model_dir: str, model: str) -> bool:
    if not timeline_is_current(path, model_dir):
        return False
    try:
        timeline_from(str(path), version_of(path))
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
    key = keyed("new_" + label.split(" (")[0].replace(" ", "_"))
    if hi - lo < 1e-9:
        st.caption(f"{label}: {lo:g} (the only value this model saw)")
        return lo
    value = lo if low else round((lo + hi) / 2 / step) * step
    return st.slider(label, lo, hi, min(max(value, lo), hi), step, key=key)


def new_scenario_form(net, envelope: DesignEnvelope | None, model_dir: Path) -> None:
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
            key=keyed("new_node"),
            format_func=lambda n: f"{n} ({roles.get(n, 'node')})",
            help="where chlorine enters: the reservoir or a booster at a junction",
        )
        strength = _factor_input(
            "strength (mg/L)", _bounds(envelope, "injection_strength_mg_l", (0.1, 10.0)), 0.1
        )
        mode = st.selectbox("booster schedule", modes, key=keyed("new_mode"))
        lo, hi = _bounds(envelope, "injection_start_s", (0.0, 0.0))
        start_min = _factor_input("booster starts at (min)", (lo / 60, hi / 60), 5.0, low=True)
        demand = _factor_input(
            "demand level (x base demand)", _bounds(envelope, "demand_scale", (1.0, 1.0)), 0.05
        )
        decay = _factor_input(
            "bulk decay (/day)", _bounds(envelope, "bulk_decay_per_day", (0.0, 0.0)), 0.1, low=True
        )
        duration_min = st.number_input(
            "duration (min)", value=180, step=30, key=keyed("new_duration"), help=DURATION_HELP
        )
        seed = st.number_input("seed", min_value=0, value=1, step=1, key=keyed("new_seed"))
        budget = st.number_input(
            "approximation lambda (0: exact)",
            min_value=0,
            value=0,
            step=1,
            key=keyed("new_budget"),
            help="0 explains exactly; lambda >= 1 runs the lambda-approximation (interactions up "
            "to lambda nodes evaluated), for networks too large for exact values",
        )
        targets = []
        if card_of(model_dir).input_spec.node_level:
            targets = st.multiselect(
                "nodes to explain",
                list(net.node_ids),
                key=keyed("new_targets"),
                placeholder="the node most at risk",
                help="this model forecasts chlorine at every node; its forecasts at these "
                "nodes are explained (none picked: the node that reaches the minimum residual "
                "with the lowest mean forecast)",
            )
        submitted = st.form_submit_button("simulate, forecast, explain")
    if not submitted:
        return
    template = default_scenario(model_dir, net)
    horizon = card_of(model_dir).input_spec.horizon
    shortest = (horizon + 2) * template.reporting_step_s
    if not shortest <= duration_min * 60 <= MAX_DURATION_S:
        st.sidebar.error(
            f"duration must be between {shortest // 60} and {MAX_DURATION_S // 60} min "
            f"(got {duration_min:g} min): the model forecasts {horizon} reports "
            f"({horizon * template.reporting_step_s // 60} min) ahead"
        )
        return
    try:
        spec = ScenarioConfig.model_validate(
            template.model_dump()
            | dict(
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
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "scenario"
        st.sidebar.error(f"invalid scenario: {field}: {err['msg']} (got {err.get('input')!r})")
        return
    bar = st.sidebar.progress(0.0, text="simulating and explaining...")
    try:
        settings = ExplainSettings.of(
            approximation_lambda=int(budget) or None, target_nodes=tuple(targets) or None
        )
        out = cache_path(spec, model_dir, CACHE_DIR, settings)
        made, status = explain_scenario(
            spec,
            model_dir,
            settings=settings,
            out=out,
            progress=lambda d, t: bar.progress(d / t, text=f"explained {d}/{t} steps"),
        )
    except WdnExplainError as exc:
        st.sidebar.error(str(exc))
        return
    JUST_MADE[str(out)] = made
    bar.progress(1.0, text=f"done ({status})")
    st.session_state[keyed("scenario")] = scenario_name(out)


# The timeline's warnings about the simulation and the forecasts, with their headings.
CHECKS = {
    "pressure_warning": "Check the hydraulics",
    "forecast_warning": "Check the model",
}


def design_notice(tl: Timeline) -> None:
    """Visible notices above the map: the scenario lies outside the model's training design
    (naming what); the simulation has negative pressures or the forecasts leave their
    range. Nothing otherwise (wide intervals are noted under the forecast chart; a model
    without a recorded design is noted under the model picker, :func:`pick_model`)."""
    ood = tl.meta.get("out_of_design")
    if ood:
        st.warning(
            "**Outside what this model learned** -- the forecast is an extrapolation and its "
            "explanation describes that extrapolation: " + "; ".join(ood) + "."
        )
    for key, heading in CHECKS.items():
        if tl.meta.get(key):
            st.warning(f"**{heading}** -- {tl.meta[key]}.")


# The time and play state, forgotten when another model is chosen (the model's widgets
# have keys of their own, see keyed()).
PER_MODEL_KEYS = ("time_min", "playing")


def _forget_model_state() -> None:
    for key in PER_MODEL_KEYS:
        st.session_state.pop(key, None)


def _model_label(name: str, model_dir: Path) -> str:
    """``name (network)`` from the card, or the bare name when the card is unreadable."""
    try:
        return f"{name} ({card_of(model_dir).data.network.name})"
    except WdnExplainError:
        return name


def pick_model():
    """The model chooser (top of the sidebar): returns the model folder and its network,
    with a caption naming the network, the warnings its evaluation recorded and a note when
    its card records no training design (here, not above the map: the SI-Graph keeps its
    place in the first screen); below it, the upload that builds a model of the user's own
    network."""
    models = water_models()
    built = st.session_state.pop(BUILT, None)  # a model the upload just made: chosen
    if built in models:
        st.session_state["model"] = built
        _forget_model_state()
    name = st.sidebar.selectbox(
        "model",
        list(models),
        format_func=lambda m: _model_label(m, models[m]),
        key="model",
        on_change=_forget_model_state,
        help="the trained models in models/, your own (built below, or by `wdn-explain "
        "network onboard`) and $WDN_EXPLAIN_MODEL; each is shown on the network it was "
        "trained on",
    )
    model_dir = models[name]
    net = network(str(model_dir), model_hash(model_dir))
    st.sidebar.caption(f"network {net.name}: {net.n_nodes} nodes, {net.n_links} links")
    for warning in evaluation_warnings(model_dir):  # recorded when the model was built
        st.sidebar.warning(f"**Check the model** -- {warning}.")
    if card_of(model_dir).design is None:
        st.sidebar.info(f"Note: {UNKNOWN_DESIGN}.")
    own_network_form()
    return model_dir, net


BUILT = "built_model"  # the session key through which a new model is chosen after a rerun


def own_network_form() -> None:
    """The sidebar's upload: a utility's .inp becomes a model of its own, as `wdn-explain
    network onboard` makes it, in the user models folder."""
    with st.sidebar.expander("your own network (.inp)"):
        upload = st.file_uploader("EPANET network file", type=["inp"], key="own_inp")
        stem = model_name_for(upload.name) if upload is not None else ""
        name = st.text_input("model name", value=stem, key=f"own_name@{stem}")
        n_scenarios = st.number_input(
            "scenarios",
            min_value=MIN_SCENARIOS,
            max_value=2000,
            value=DEFAULT_SCENARIOS,
            key="own_scenarios",
            help="simulated, then split into training, calibration, validation and test; "
            f"{DEFAULT_SCENARIOS} train in minutes on 2 cores",
        )
        st.caption(f"models are kept in {user_models_dir()}")
        if st.button("build the model", disabled=upload is None, key="own_build"):
            build_model(upload, name.strip(), int(n_scenarios))  # shown under the button


def build_model(upload, name: str, n_scenarios: int) -> None:
    """Onboard the uploaded network into ``user_models_dir() / name`` with a line and a
    bar per stage; choose the new model (rerun), or show one message naming the file and
    why it was refused."""
    try:
        folder = user_model_folder(name)
    except WdnExplainError as exc:
        st.error(str(exc))
        return
    status = st.status(f"building {name}...", expanded=True)
    bar = status.progress(0.0)

    def say(line: str) -> None:
        status.write(line)
        if line.startswith("["):  # a new stage
            status.update(label=line)
            bar.progress(0.0)

    with tempfile.TemporaryDirectory(prefix="wdn-explain-upload-") as tmp:
        inp = Path(tmp, Path(upload.name).name)
        inp.write_bytes(upload.getvalue())
        try:
            onboard(
                inp,
                folder,
                n_scenarios=n_scenarios,
                n_workers=1,  # no worker processes forked from the server
                say=say,
                progress=lambda done, total: bar.progress(min(1.0, done / max(total, 1))),
            )
        except WdnExplainError as exc:
            status.update(label=f"{name}: refused", state="error", expanded=False)
            st.error(str(exc).replace(f"{tmp}/", ""))  # the file as uploaded
            return
    status.update(label=f"{name}: built", state="complete", expanded=False)
    st.session_state[BUILT] = next(
        key for key, path in water_models().items() if path.resolve() == folder.resolve()
    )
    st.rerun()


def main() -> None:
    st.markdown(COMPACT, unsafe_allow_html=True)
    st.subheader("Why does the model expect chlorine there?")
    model_dir, net = pick_model()
    default = opening_timeline(model_dir, net)
    controls = st.sidebar.container()  # drawn above the form, filled after it ran
    new_scenario_form(net, card_of(model_dir).design, model_dir)
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
    preload_shapiq()  # exports and new explanations need shapiq: load it after the first page
    warm_up()
    downloads(view, net)


def target_picker(controls, tl: Timeline) -> str | None:
    """For a node-level model's timeline, the picker of the explained node (the timeline's
    target nodes; it opens on the file's own); None for a share model's."""
    if not tl.node_level:
        return None
    return controls.selectbox(
        "explained node",
        list(tl.targets),
        index=list(tl.targets).index(tl.node),
        key=keyed(f"target@{tl.meta.get('scenario_hash', '')}"),
        help="this model forecasts chlorine (mg/L) at every node; the map explains the "
        "forecast at this node (the nodes explained for this scenario; a new scenario "
        "explains the ones picked in its form)",
    )


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
    on the first step whose explanation says something and whose chlorine map is not blank
    (:func:`opening_step`) and survives every control change; play/pause move it (see
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


def page(view: View, net) -> None:
    """The time slider and every panel at the cursor's time: SI-Graph, summary, forecast
    against truth (a marker), chlorine map and the followed node (a fragment: while playing
    it reruns alone every PLAY_S seconds). The SI-Graph comes first, within a 900 px screen,
    in the first column of a row: beside the panels (two columns), or on networks too large
    for node labels spanning the page (one column) with the panels in three columns below
    it, out of the first screen. The one place keeps its frame across a switch of model; a
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
    panels = st.columns(3) if large else [top[1]] * 3
    with panels[0]:
        st.markdown(summary(tl, net, step, view.index, view.order))
    if playing:
        panels[1].caption(PANELS_ON_PAUSE)
        return
    with panels[0]:
        with st.expander("strongest drivers (table)"):
            table = drivers_table(tl, net, step, view.index, view.order)
            st.dataframe(table, hide_index=True, width="stretch", column_config=DRIVER_COLUMNS)
        chart(forecast_figure(tl, step), key="forecast", config=CHART)
        if tl.meta.get("uncertainty"):  # beside the band it speaks of, not above the map
            st.info(tl.meta["uncertainty"])
    with panels[1]:
        chlorine_panel(view, net, step)
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
                    )
                }
            fig = node_chlorine_figure(
                tl, net, node, minimum_mg_l=view.minimum, step=step, **forecast
            )
            chart(fig, key="node_chlorine", config=CHART)


DRIVER_COLUMNS = {  # the table sits in a 2/5 column: short headers, the rest as help
    "driver": st.column_config.TextColumn(width="medium"),
    "of the difference": st.column_config.TextColumn(
        "of diff.",
        width="small",
        help="share of the explained difference: forecast minus the reference's forecast",
    ),
}

MAP_VIEWS = {"chlorine": "chlorine (mg/L)", "compliance": "below the minimum"}
PANELS_ON_PAUSE = (
    "Playing: the SI-Graph and its sentence move, the pipes by flow without their arrows; "
    "the flow arrows, drivers table, forecast chart, chlorine map and followed node show "
    "the step you pause at."
)


def chlorine_panel(view: View, net, step: int) -> None:
    """The chlorine map or the compliance map (nodes below the minimum residual) at the
    step, and the count of nodes below the minimum in a sentence."""
    tl = view.timeline
    shows = st.radio(
        "map", list(MAP_VIEWS), format_func=MAP_VIEWS.get, horizontal=True, key="map_view"
    )
    if shows == "compliance":
        fig = compliance_figure(tl, net, step, view.minimum, focus=view.focus)
    else:
        fig = chlorine_figure(tl, net, step, focus=view.focus)
    chart(fig, key="chlorine", config=MAP)
    st.caption(compliance_text(tl, step, view.minimum))


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
st.navigation(
    [
        st.Page(water, title="Water network", url_path="water", default=True),
        st.Page("pages/1_Molecules.py", title="Molecules"),
    ]
).run()
