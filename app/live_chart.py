"""Plotly charts that stay in the page: each rerun updates them in place.

``st.plotly_chart`` hashes the figure into its element's identity (Streamlit 1.67), so a
chart whose figure changed is a new element, drawn anew (``Plotly.newPlot``) on every time
step. :func:`live_chart` shows the figure in a small component instead
(:mod:`streamlit.components.v1`; its identity is its key): the page keeps the chart and
hands it each new figure, which Plotly.js draws with ``Plotly.react`` (only what changed;
zoom kept while the layout's ``uirevision`` stays). Plotly.js comes from the installed
``plotly`` package, written gzipped with the component's page (``live_chart.html``) once
into a folder of the cache (:func:`asset_dir`) and into the app's static files
(:func:`static_script`); a chart whose traces are all of plotly.js's basic bundle's types
loads that bundle instead (:func:`basic_script`, a fifth of the size).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from functools import cache
from importlib import resources
from pathlib import Path

import plotly
import plotly.graph_objects as go
import streamlit.components.v1 as components
from plotly.offline import get_plotlyjs_version

PAGE = Path(__file__).with_name("live_chart.html")
STATIC_DIR = Path(__file__).with_name("static")
"""What ``server.enableStaticServing`` serves at ``app/static/`` (.streamlit/config.toml)."""
PLOTLY_JS = resources.files("plotly") / "package_data" / "plotly.min.js"
"""The installed ``plotly`` package's Plotly.js, the one both copies are made from."""
BASIC_JS = Path(__file__).with_name("vendor") / "plotly-basic.min.js"
"""plotly.js's basic partial bundle where ``scripts/plotly_basic.py`` wrote it (optional, not in
the repository)."""
BASIC_TYPES = ("scatter", "bar", "pie")
"""The trace types the basic bundle draws (every chart of the app up to WEBGL_NODES nodes)."""


def asset_dir(cache_dir: Path) -> Path:
    """The component's folder under ``cache_dir``: its page (``index.html``) and the installed
    ``plotly.min.js`` gzipped (``plotly.min.js.gz``), written once per plotly version, again
    when a copy's content differs from the installed files (a damaged copy, even at the same
    size; checked once per server process, :func:`_assets`, ~40 ms).

    Gzipped here, once: Streamlit's server gzips every other file of a component on every
    request (level 9, ~0.5 s of CPU for Plotly.js's 4.8 MB), once per chart on a page; a
    ``.gz`` file goes out as it is and the page unpacks it (``DecompressionStream``)."""
    folder = cache_dir / f"live-chart-plotly-{plotly.__version__}"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "plotly.min.js.gz"
    installed = PLOTLY_JS.read_bytes()
    if _unpacked(script) != installed:
        _write_atomic(script, gzip.compress(installed, mtime=0))
    index = folder / "index.html"
    if not index.is_file() or index.read_bytes() != PAGE.read_bytes():
        _write_atomic(index, PAGE.read_bytes())
    return folder


def static_script(static_dir: Path) -> str:
    """The installed ``plotly.min.js`` as ``plotly-<version>.min.js`` in ``static_dir`` (written
    once, again when its bytes differ, even at the same size: compared once per server
    process, :func:`_static`), returned by name: the page loads it from there first. A file
    the app serves carries a validator (Last-Modified, ETag), so the browser keeps it in its
    cache and keeps Plotly.js compiled (V8's code cache) from one visit to the next: ~2 s on
    this machine's cores that each first view spent compiling 4.8 MB of script unpacked in
    the page."""
    name = f"plotly-{plotly.__version__}.min.js"
    _copied(PLOTLY_JS.read_bytes(), static_dir / name)
    return name


def basic_script(static_dir: Path, source: Path = BASIC_JS) -> str | None:
    """The basic bundle ``source`` (written by ``scripts/plotly_basic.py``) as ``plotly-basic-<plotly.js version>.min.js`` in
    ``static_dir`` (as :func:`static_script`), returned by name, when it is of the installed
    plotly.js's version; None otherwise (missing, or left behind by an upgrade of ``plotly``:
    the page loads the full bundle). A new browser compiles its 1.2 MB in a fifth of the
    full bundle's time (0.23-0.29 s against 1.3-1.9 s, headless Chromium, 2 busy cores)."""
    version = get_plotlyjs_version()
    try:
        data = source.read_bytes()
    except OSError:
        return None
    if f" v{version}\n".encode() not in data[:200]:
        return None
    name = f"plotly-basic-{version}.min.js"
    _copied(data, static_dir / name)
    return name


def _copied(data: bytes, target: Path) -> None:
    """Write ``data`` to ``target`` unless it holds them already."""
    if not target.is_file() or target.read_bytes() != data:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(target, data)


def _unpacked(script: Path) -> bytes | None:
    """The content of the gzipped ``script``; None when it is missing or damaged."""
    try:
        return gzip.decompress(script.read_bytes())
    except (OSError, EOFError, zlib.error):  # missing, not gzip, or cut short
        return None


def _write_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file (another session may read it)."""
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, target)


def live_chart(fig: go.Figure, *, key: str, config: dict, cache_dir: Path) -> None:
    """Show ``fig`` as the chart ``key`` (full width, Plotly ``config``), updated in place on
    later reruns. The figure's template is dropped: Streamlit's sets placeholder colours
    that only its own chart element replaces; the component gives the page's look."""
    fig.layout.template = None
    component = components.declare_component("live_chart", path=str(_assets(cache_dir)))
    component(
        spec=fig.to_json(),
        config=json.dumps(config),  # text: Streamlit imports pandas to inspect a dict argument
        script=_static(STATIC_DIR),
        basic=_basic(STATIC_DIR),
        basic_types=BASIC_TYPES,
        key=key,
    )


@cache
def _static(static_dir: Path) -> str:
    """:func:`static_script`, checked once per server process."""
    return static_script(static_dir)


@cache
def _basic(static_dir: Path) -> str | None:
    """:func:`basic_script`, checked once per server process."""
    return basic_script(static_dir)


@cache
def _assets(cache_dir: Path) -> Path:
    """:func:`asset_dir`, checked once per server process."""
    return asset_dir(cache_dir)
