"""What the water page reads and computes once per file version: networks, timelines,
their colour scales and followed values, cards, the catalog of cached scenarios, and the
warm-up thread that loads all of it for the shipped models."""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import threading
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path

import streamlit as st

from water.config import INDICES, cache_dir, logger
from water.gate import GATE, PROBED
from wdn_explain.errors import WdnExplainError
from wdn_explain.explain.blocks import preload_shapiq
from wdn_explain.model_folder import CARD, model_hash, read_card
from wdn_explain.narrative import (
    timeline_label,
)
from wdn_explain.on_demand import timeline_graphs, with_node
from wdn_explain.pipeline import explain_scenario, with_hydraulics
from wdn_explain.plot import (
    value_over_time,
    value_scale,
)
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.shipped import (
    SHIPPED_ROOT,
    default_scenario,
    default_timeline,
    model_network,
    water_models,
)
from wdn_explain.timeline import (
    DEFAULT_REFERENCE,
    Timeline,
    cache_path,
    read_meta,
    settings_of,
    timeline_is_current,
)


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
    _ = net.properties  # the hover's .inp properties (kept with the network snapshot), once here
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
    the forecast and explanations of its target node ``target`` (None: the file's own;
    a node the file does not explain is explained on demand, :func:`with_target`)."""
    tl = timeline_from(path, mtime)
    if target is not None and target not in tl.targets:
        tl = with_target(path, mtime, target)
    tl = tl.relative_to(reference)
    return tl if target is None or target == tl.node else tl.for_node(target)


@st.cache_resource(max_entries=64, show_spinner="explaining the forecast at this node...")
def with_target(path: str, mtime: float, target: str) -> Timeline:
    """The timeline file's timeline with node ``target`` explained too (every step and
    reference, the nodes it holds kept as they are; :func:`~wdn_explain.on_demand.with_node`),
    by the model that made it; the file stays as written (a shipped model's folder too)."""
    tl = timeline_from(path, mtime)
    model_dir = _model_dir_of(tl)
    net = network(str(model_dir), model_hash(model_dir))
    return with_node(tl, target, model_dir, net, graphs=_graphs(path, mtime))


@st.cache_resource(max_entries=8, show_spinner=False)
def _graphs(path: str, mtime: float) -> list:
    """The model inputs at every report of the timeline file's scenario (simulated again
    once; later nodes reuse them)."""
    tl = timeline_from(path, mtime)
    model_dir = _model_dir_of(tl)
    return timeline_graphs(tl, model_dir, network(str(model_dir), model_hash(model_dir)))


def _model_dir_of(tl: Timeline) -> Path:
    """The folder of the model that made ``tl`` (its recorded path, from the repository
    root for a shipped model's, which records ``models/<name>``)."""
    recorded = Path(tl.meta["model_dir"])
    return recorded if recorded.is_dir() else SHIPPED_ROOT / recorded


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
WARM_UP_DELAY_S = 3.0
"""Seconds the warm-up waits after the first page: meanwhile the browser fetches the page's
element scripts and Plotly.js from this same process, whose event loop an import in another
thread holds up (an import holds the GIL), and compiles them on the same 2 cores."""
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Thread:
    """Start, once per server process, a daemon thread that loads, :data:`WARM_UP_DELAY_S`
    after the first page, what a later request would otherwise wait for: what Plotly probes
    (pandas, imported while no page runs: :mod:`water.gate`), shapiq, every
    shipped water model's network, current timeline and
    colour scale (a model switch then only draws), a node-level one's model inputs (a node
    explained on demand, :func:`with_target`, then skips the simulation) and the libraries of a new scenario and
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
    time.sleep(WARM_UP_DELAY_S)
    with GATE.importing():  # no page builds a figure meanwhile (water.gate)
        for module in PROBED:
            importlib.import_module(module)
    preload_shapiq()  # exports and new explanations need shapiq
    try:
        for model_dir in water_models().values():
            network(str(model_dir), model_hash(model_dir))
            shipped = default_timeline(model_dir)
            if shipped is not None and usable(shipped, model_dir):
                version = version_of(shipped)
                scale_of(str(shipped), version, DEFAULT_REFERENCE, None, INDICES[1], 2)
                if timeline_from(str(shipped), version).node_level:
                    # a node picked then is only explained; a failure (a simulation that no
                    # longer gives the file's chlorine) is shown by the request meeting it
                    with contextlib.suppress(WdnExplainError):
                        _graphs(str(shipped), version)
        for module in WARM_MODULES:
            importlib.import_module(module)
    except Exception as exc:  # a later request meets the same failure and shows it
        logger.warning(
            "warming up failed (%s: %s); a page that needs it says why", type(exc).__name__, exc
        )
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
    if cache_dir().is_dir():
        digest = model_hash(model_dir)
        for path in sorted(cache_dir().glob("timeline_*.npz")):
            meta = meta_of(path)
            if path != default and meta is not None and meta.get("model_hash") == digest:
                if current_cache(path, model_dir, meta):  # else simulated or explained before a fix
                    found[scenario_name(path)] = path
    return found


def current_cache(path: Path, model_dir: Path, meta: dict) -> bool:
    """Whether a cached timeline may be shown as current with the settings it was made with
    (the cache rule, :func:`timeline_is_current`)."""
    try:
        return timeline_is_current(path, model_dir, settings=settings_of(meta), meta=meta)
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
    path = cache_path(scenario, model_dir, cache_dir())
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
