"""The chart component's folder (app/live_chart.py): written once, with the installed
Plotly.js (gzipped) and the project's page."""

from __future__ import annotations

import gzip
import sys
import threading
import time
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import plotly
import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))  # the app's folder is not a package
from live_chart import BASIC_TYPES, PLOTLY_JS, asset_dir, basic_script, static_script
from test_browser import CHROMIUM, DRIVER


def test_asset_dir_holds_the_installed_plotly_js_and_the_page(tmp_path):
    folder = asset_dir(tmp_path)
    assert folder.parent == tmp_path and plotly.__version__ in folder.name
    script = gzip.decompress((folder / "plotly.min.js.gz").read_bytes()).decode("utf-8")
    assert script == get_plotlyjs()  # the installed package's bundle, byte for byte
    assert f"plotly.js v{get_plotlyjs_version()}" in script[:200]
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page == (ROOT / "app" / "live_chart.html").read_text(encoding="utf-8")
    assert '"plotly.min.js.gz"' in page and 'DecompressionStream("gzip")' in page
    assert "Plotly.react" in page and "streamlit:componentReady" in page


def test_asset_dir_is_written_once_and_repaired(tmp_path):
    folder = asset_dir(tmp_path)
    script, page = folder / "plotly.min.js.gz", folder / "index.html"
    stamps = script.stat().st_mtime_ns, page.stat().st_mtime_ns
    assert asset_dir(tmp_path) == folder
    assert (script.stat().st_mtime_ns, page.stat().st_mtime_ns) == stamps  # not rewritten
    page.write_text("an older page")
    script.unlink()
    asset_dir(tmp_path)
    assert page.read_text(encoding="utf-8") == (ROOT / "app" / "live_chart.html").read_text()
    assert gzip.decompress(script.read_bytes()).decode("utf-8") == get_plotlyjs()
    assert sorted(p.name for p in folder.iterdir()) == ["index.html", "plotly.min.js.gz"]


def test_static_script_is_the_installed_plotly_js_named_by_version(tmp_path):
    """What the page loads first (app/static/, served by Streamlit): the installed
    plotly.min.js byte for byte under a versioned name, written again when damaged."""
    name = static_script(tmp_path / "static")
    script = tmp_path / "static" / name
    assert name == f"plotly-{plotly.__version__}.min.js"
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    stamp = script.stat().st_mtime_ns
    assert static_script(tmp_path / "static") == name and script.stat().st_mtime_ns == stamp
    script.write_text("cut short")
    static_script(tmp_path / "static")
    assert script.read_text(encoding="utf-8") == get_plotlyjs()


def test_basic_script_serves_a_bundle_of_the_installed_version_only(tmp_path):
    """A basic bundle of the plotly.js version the installed plotly package ships is written
    under a versioned name; a bundle of another version (left behind by an upgrade of plotly)
    or none (scripts/plotly_basic.py not run) gives None: the page loads the full bundle."""
    version = get_plotlyjs_version()
    head = f"/**\n* plotly.js (basic - minified) v{version}\n* Licensed under the MIT license\n*/\n"
    bundle = tmp_path / "plotly-basic.min.js"
    bundle.write_text(head + "var Plotly = {};\n")
    name = basic_script(tmp_path / "static", bundle)
    assert name == f"plotly-basic-{version}.min.js"
    assert (tmp_path / "static" / name).read_bytes() == bundle.read_bytes()
    old = tmp_path / "old.js"
    old.write_text(head.replace(f"v{version}", "v0.0.1"))
    assert basic_script(tmp_path / "other", old) is None
    assert basic_script(tmp_path / "other", tmp_path / "missing.js") is None
    assert not (tmp_path / "other").exists()


def _damaged(data: bytes) -> bytes:
    """``data`` with one byte in its middle changed: the same size, other content."""
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :]


def test_same_size_damaged_copies_are_repaired(tmp_path):
    """A copy damaged without changing its size (a flipped byte) is written again: the
    static script and the component's gzipped one."""
    script = tmp_path / "static" / static_script(tmp_path / "static")
    script.write_bytes(_damaged(script.read_bytes()))
    assert script.read_text(encoding="utf-8") != get_plotlyjs()
    static_script(tmp_path / "static")
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    packed = asset_dir(tmp_path) / "plotly.min.js.gz"
    for damaged in (
        _damaged(packed.read_bytes()),  # a flipped byte in the compressed stream
        gzip.compress(_damaged(get_plotlyjs().encode("utf-8")), mtime=0),  # valid gzip
    ):
        packed.write_bytes(damaged)
        asset_dir(tmp_path)
        assert gzip.decompress(packed.read_bytes()).decode("utf-8") == get_plotlyjs()


def test_the_app_serves_its_static_folder():
    """The page's first URL for Plotly.js works only with Streamlit's static serving on
    (read by `streamlit run app/main.py` from the repository root)."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["enableStaticServing"] is True
    page = (ROOT / "app" / "live_chart.html").read_text(encoding="utf-8")
    assert "../../app/static/${name}" in page


def test_the_server_watches_no_source_files():
    """Each new session's source watcher walked every loaded module on the server's event
    loop (~0.7 s of a fresh visit to a warm server, before any message went out)."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["fileWatcherType"] == "none"


def test_a_fresh_clone_has_the_static_folder():
    """Streamlit warns "no static folder found" on the first `streamlit run` when app/static/
    is missing: the repository keeps it (its README tracked, the scripts written there not)."""
    import subprocess

    def tracked(path: str) -> list[str]:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", path], capture_output=True, text=True
        )
        if done.returncode:
            pytest.skip("not a git checkout")
        return done.stdout.split()

    assert tracked("app/static") == ["app/static/README.md"]
    ignored = subprocess.run(
        [
            "git",
            "-C",
            str(ROOT),
            "check-ignore",
            "-q",
            f"app/static/plotly-{plotly.__version__}.min.js",
        ]
    )
    assert ignored.returncode == 0  # what the app writes there stays out of git


QUEUE_STUB_JS = """
// Plotly stubbed: each drawing waits until the test releases it, then records its figure
// (a figure named "bad" is refused, as Plotly.react rejects a figure it cannot draw)
plotly = Promise.resolve(); fonts = Promise.resolve(); chart.on = () => {};
window.drawn = []; window.pending = []; window.refused = 0;
window.Plotly = { react: (el, data, layout) => new Promise((done, fail) => window.pending.push(
  () => {
    if (data[0].name === "bad") { window.refused += 1; return fail(new Error("refused")); }
    el._fullLayout = { width: layout.width };
    window.drawn.push([data[0].name, layout.width]);
    done();
  })) };
window.figure = name => ({ spec: JSON.stringify({ data: [{ name }], layout: {} }), config: "{}" });
"""


class StubbedChart:
    """live_chart.html in a 400 px frame of a page in headless Chromium, Plotly stubbed so
    the test decides when each drawing ends (:data:`QUEUE_STUB_JS`)."""

    def __init__(self, driver, frame):
        self.driver, self.frame = driver, frame

    def js(self, script: str):
        return self.driver.execute_script(script)

    def release_all(self) -> None:
        """End every drawing, one after the other, until the queue is idle."""
        for _ in range(20):
            if not self.js("return busy"):
                return
            self.js("const next = window.pending.shift(); if (next) next();")
            time.sleep(0.05)
        raise AssertionError("the queue never ended")

    def resize(self, width_px: int) -> None:
        self.driver.switch_to.default_content()
        self.driver.execute_script(f"arguments[0].style.width = '{width_px}px'", self.frame)
        self.driver.switch_to.frame(self.frame)
        self.js("window.dispatchEvent(new Event('resize'))")


@contextmanager
def framed_chart(root: Path, folder: str, width: int, height: int):
    """app/live_chart.html as ``root/folder/index.html`` in a ``width`` x ``height`` frame of
    a page served from ``root``, open in headless Chromium: (driver switched into the frame,
    the frame element); the browser and the server end with the block."""
    from test_browser import chromium

    (root / folder).mkdir(parents=True)
    (root / folder / "index.html").write_bytes((ROOT / "app" / "live_chart.html").read_bytes())
    (root / "page.html").write_text(
        f'<iframe src="{folder}/index.html" style="width:{width}px;height:{height}px"></iframe>'
    )
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=root)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = chromium()
    try:
        driver.get(f"http://127.0.0.1:{server.server_port}/page.html")
        frame = driver.find_element("tag name", "iframe")
        driver.switch_to.frame(frame)
        yield driver, frame
    finally:
        driver.quit()
        server.shutdown()


@pytest.fixture
def stubbed_chart(tmp_path):
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian chromium and chromium-driver")
    with framed_chart(tmp_path, "live_chart", 400, 300) as (driver, frame):
        driver.execute_script(QUEUE_STUB_JS)
        yield StubbedChart(driver, frame)


@pytest.mark.browser
def test_a_resize_while_a_newer_figure_waits_draws_the_newer_one(stubbed_chart):
    """live_chart.html's one-drawing-at-a-time queue: figure B is drawing, C arrives and
    waits, then the frame is resized. The queue ends on C at the new width; B drawn again
    (the resize's redraw of the last figure replacing the waiting one) would drop C."""
    chart = stubbed_chart
    chart.js("show(figure('A'), {})")
    chart.release_all()
    chart.js("show(figure('B'), {}); show(figure('C'), {})")
    chart.resize(300)
    chart.release_all()
    drawn = chart.js("return window.drawn")
    assert drawn[0] == ["A", 400] and drawn[-1] == ["C", 300], drawn


@pytest.mark.browser
def test_a_refused_figure_stops_neither_the_queue_nor_its_own_next_try(stubbed_chart):
    """A figure Plotly refuses: the figure waiting behind it is drawn, and the same figure
    sent again is tried again (not skipped as the one shown)."""
    chart = stubbed_chart
    chart.js("show(figure('A'), {})")
    chart.release_all()
    for _ in range(2):
        chart.js("show(figure('bad'), {})")
        chart.release_all()
    assert chart.js("return window.refused") == 2
    chart.js("show(figure('bad'), {}); show(figure('C'), {})")
    chart.release_all()
    assert chart.js("return [window.refused, window.drawn]") == [3, [["A", 400], ["C", 400]]]


@pytest.fixture
def unloaded_chart(tmp_path):
    """live_chart.html in a 700 px frame of a page in headless Chromium, Plotly.js never
    ready until the test says so (``plotlyReady()``; a new browser compiles it for ~2 s):
    what the frame shows meanwhile."""
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian chromium and chromium-driver")
    with framed_chart(tmp_path, "live_chart", 700, 600) as (driver, _):
        driver.execute_script(
            "plotly = new Promise(ready => { window.plotlyReady = ready; });"
            "fonts = Promise.resolve();"
        )
        yield driver


SKETCHED_NODES_JS = """
const g = document.querySelector('#sketch g[data-name="nodes"]');
return [...g.querySelectorAll('circle')].map(c =>
  [+c.getAttribute('cx'), +c.getAttribute('cy'), c.getAttribute('fill')]);
"""


@pytest.mark.browser
def test_the_first_frame_is_a_sketch_of_the_map_drawn_before_plotly_js_is_ready(
    unloaded_chart, hanoi
):
    """The SI-Graph sketched while Plotly.js loads: every node where the map puts it (one
    scale on both axes, y up), in its colour on the figure's colour scale (sampled here with
    plotly.py), its id beside it, the title's first line in bold; no flow arrows drawn as
    dots. Plotly's drawing then replaces it."""
    import numpy as np
    from plotly.colors import sample_colorscale, unlabel_rgb

    from wdn_explain.plot import si_graph_figure
    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    driver = unloaded_chart
    fig = si_graph_figure(Timeline.load(DEFAULT_TIMELINE), hanoi, 12)
    fig.layout.template = None
    driver.execute_script("show({spec: arguments[0], config: '{}'}, {})", fig.to_json())
    sketched = driver.execute_script(SKETCHED_NODES_JS)
    nodes = next(t for t in fig.data if t.name == "nodes")
    assert len(sketched) == hanoi.n_nodes
    xy = hanoi.map_coordinates
    cx, cy = np.array([c[0] for c in sketched]), np.array([c[1] for c in sketched])
    (sx, ox), (sy, oy) = np.polyfit(xy[:, 0], cx, 1), np.polyfit(xy[:, 1], cy, 1)
    assert sx > 0 and sy == pytest.approx(-sx, rel=1e-3)  # equal aspect, y up
    np.testing.assert_allclose(cx, ox + sx * xy[:, 0], atol=0.2)
    np.testing.assert_allclose(cy, oy + sy * xy[:, 1], atol=0.2)
    assert 0 < cx.min() and cx.max() < 700
    m = nodes.marker
    share = np.clip((np.asarray(m.color) - m.cmin) / (m.cmax - m.cmin), 0, 1)
    expected = [
        unlabel_rgb(c) for c in sample_colorscale([list(s) for s in m.colorscale], list(share))
    ]
    got = [unlabel_rgb(c[2]) for c in sketched]
    np.testing.assert_allclose(got, expected, atol=1.01)
    title = driver.execute_script("return document.querySelector('#sketch .title').textContent")
    assert title == fig.layout.title.text.split("<br>")[0]
    names = driver.execute_script(
        "return [...document.querySelectorAll('#sketch g')].filter(g => g.querySelector("
        "'circle')).map(g => g.dataset.name)"
    )
    assert "flow markers" not in names and "nodes" in names
    # every node's id, up and right of its node (a first frame where a node can be found)
    labels = driver.execute_script(
        "return [...document.querySelectorAll('#sketch g[data-name=\"nodes\"] text.label')]"
        ".map(t => [t.textContent, +t.getAttribute('x'), +t.getAttribute('y')])"
    )
    assert [t for t, _, _ in labels] == list(hanoi.node_ids)
    assert all(x > a and y < b for (_, x, y), a, b in zip(labels, cx, cy))
    # Plotly ready (stubbed): its drawing replaces the sketch
    driver.execute_script(
        "window.Plotly = {react: () => Promise.resolve()}; chart.on = () => {};"
        "window.plotlyReady();"
    )
    time.sleep(0.3)
    assert driver.execute_script("return document.querySelector('#sketch').children.length") == 0


LOADED_JS = (
    "return [chart._fullData ? chart._fullData.map(t => t.type) : null,"
    " performance.getEntriesByType('resource').map(e => e.name.split('/').pop())"
    ".filter(n => n.startsWith('plotly'))];"
)


@pytest.mark.browser
def test_a_frame_loads_the_basic_bundle_and_the_full_one_when_a_figure_needs_it(tmp_path):
    """The page's frame with the real scripts (written by static_script and basic_script):
    a map of scatter and bar traces is drawn with the basic bundle alone; a later figure of
    a type the basic bundle lacks (scattergl, a network of thousands of nodes) loads the
    full bundle and is drawn."""
    if not (CHROMIUM and DRIVER):
        pytest.skip("needs Debian chromium and chromium-driver")
    import plotly.graph_objects as go

    static = tmp_path / "app" / "static"
    # the full bundle stands in for the basic one (scripts/plotly_basic.py writes the real one
    # only where npm is): what is checked is which file the frame loads for which figure
    full, basic = static_script(static), basic_script(static, PLOTLY_JS)
    args = dict(config="{}", script=full, basic=basic, basic_types=list(BASIC_TYPES))
    with framed_chart(tmp_path, "component/live_chart", 500, 400) as (driver, _):
        driver.execute_script("fonts = Promise.resolve();")
        for traces, types, scripts in (
            ([go.Scatter(x=[0, 1], y=[1, 0]), go.Bar(x=[0], y=[1])], ["scatter", "bar"], [basic]),
            ([go.Scattergl(x=[0, 1], y=[0, 1])], ["scattergl"], [basic, full]),
        ):
            spec = go.Figure(traces, layout=dict(template=None)).to_json()
            driver.execute_script("show({...arguments[1], spec: arguments[0]}, {})", spec, args)
            deadline = time.monotonic() + 60
            while driver.execute_script(LOADED_JS)[0] != types and time.monotonic() < deadline:
                time.sleep(0.2)
            assert driver.execute_script(LOADED_JS) == [types, scripts]
