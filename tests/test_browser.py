"""One real-browser check of the app as a water engineer uses it: `streamlit run app/main.py`
(from the repository root, so `.streamlit/config.toml` applies) in headless Chromium with a
1280x900 viewport. It opens the first view (chlorine on the map, the SI-Graph inside the
first 900 px; flow arrows, a node's hover, the forecast's band, the followed node's chlorine
chart and the compliance map checked against values computed in the test), plays the
animation (the map stays there), switches every index, runs a new
scenario (the followed node moves to its injection node) and an error case, switches to
L-Town (its chlorine map >= 900 px wide, a node found by id on it) and to hanoi-nodes (the
sidebar read; the SI-Graph's frame kept, its new map painted; another node explained on
demand from the dropdown), and asserts on what the page shows: the summary sentence and
every panel's time equal to the map's; the charts load plotly.js's basic bundle.
Screenshots go to artifacts/ (git-ignored)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import plotly
import pytest

from conftest import ROOT, inp_table

BASIC_JS = ROOT / "app" / "vendor" / "plotly-basic.min.js"  # scripts/plotly_basic.py

pytestmark = pytest.mark.browser

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
SHOTS = ROOT / "artifacts"

# The page's charts, in page order: each is a Plotly plot inside its own frame, the chart
# component of app/live_chart.py (the frame has the page's origin, so its document is open).
FRAMES_JS = "const frames = [...document.querySelectorAll('iframe[src*=\"live_chart\"]')];"
PLOTS_JS = (
    FRAMES_JS
    + """
const plots = frames.map(f => f.contentDocument && f.contentDocument.querySelector('.js-plotly-plot'))
  .filter(Boolean);
"""
)
PANELS_JS = (
    PLOTS_JS
    + """
return plots.map(p => {
  const data = p._fullData || [];
  return {
    title: p._fullLayout && p._fullLayout.title ? (p._fullLayout.title.text || '') : '',
    now: data.filter(t => t.name === 'now').map(t => Array.from(t.x)[0]),
    bars: data.filter(t => t.type === 'bar').map(t => {
      const w = Array.from(t.marker.line.width); const x = Array.from(t.x);
      return x[w.indexOf(Math.max(...w))]; }),
  };
});
"""
)


# Where the SI-Graph (the first chart) lies on the screen, and what the sidebar shows.
RECT_JS = (
    FRAMES_JS
    + """
const r = frames[0].getBoundingClientRect();
return [r.top, r.bottom, window.innerHeight];
"""
)
# The same, with the page scrolled back to its top first (later checks scroll it).
RECT_AT_TOP_JS = (
    """
let e = document.querySelector('iframe[src*="live_chart"]');
for (let p = e; p; p = p.parentElement) p.scrollTop = 0;
window.scrollTo(0, 0);
"""
    + RECT_JS
)
SIDEBAR_JS = """
const boxes = [...document.querySelectorAll('section[data-testid="stSidebar"] input[role=combobox]')];
const follow = [...document.querySelectorAll('[data-testid="stMultiSelect"]')].map(e => e.innerText);
return [Object.fromEntries(boxes.map(e => [e.getAttribute('aria-label'), e.value])), follow];
"""
# The chlorine map's title ("chlorine at 15 min"; the followed node's chart says "at node").
CHLORINE_MAP = re.compile(r"chlorine at \d+ min")
CHLORINE_JS = (
    PLOTS_JS
    + """
const t = plots[2]._fullData.find(t => t.name === 'chlorine');
return Math.max(...Array.from(t.marker.color));
"""
)


# A chart's traces by name (index into the page's charts): the fields the checks read.
TRACES_JS = (
    PLOTS_JS
    + """
const p = plots[arguments[0]];
return Object.fromEntries((p._fullData || []).map(t => [t.name, {
  x: Array.from(t.x || []), y: Array.from(t.y || []), fill: t.fill || null,
  color: t.marker && t.marker.color !== undefined ? [].concat(Array.from(t.marker.color)) : null,
  angle: t.marker && t.marker.angle !== undefined ? [].concat(Array.from(t.marker.angle)) : null,
  symbol: t.marker && t.marker.symbol !== undefined ? [].concat(t.marker.symbol) : null,
  colorbar: t.marker && t.marker.colorbar ? t.marker.colorbar.title.text : null,
}]).concat([['title', p._fullLayout.title.text || '']]));
"""
)
# Where point ``k`` of trace ``name`` of chart ``i`` lies, from the chart's centre (pixels).
POINT_JS = (
    PLOTS_JS
    + """
const p = plots[arguments[0]];
const t = p._fullData.find(t => t.name === arguments[1]); const k = arguments[2];
const fl = p._fullLayout; const r = p.getBoundingClientRect();
return [fl.xaxis.l2p(t.x[k]) + fl._size.l - r.width / 2,
        fl.yaxis.l2p(t.y[k]) + fl._size.t - r.height / 2];
"""
)
HOVER_JS = (
    PLOTS_JS
    + """
return [...plots[arguments[0]].querySelectorAll('.hoverlayer .hovertext text tspan.line')]
  .map(t => t.textContent);
"""
)
# Chart ``i``'s found node (the "found" trace's text) and its x axis range.
FOUND_JS = (
    PLOTS_JS
    + """
const p = plots[arguments[0]]; const t = p._fullData.find(t => t.name === 'found');
return [t ? Array.from(t.text) : null, Array.from(p._fullLayout.xaxis.range)];
"""
)
# The width of every chart's frame, in page order.
FRAME_WIDTHS_JS = FRAMES_JS + "return frames.map(f => f.getBoundingClientRect().width);"
# The drivers table's cells (a Markdown table in its expander): text, right edge, and the
# right edge of the table's box.
TABLE_JS = """
const table = document.querySelector('[data-testid="stExpander"] [data-testid="stMarkdownContainer"] table');
if (!table) return null;
const box = table.getBoundingClientRect().right;
return [...table.querySelectorAll('td')].map(td => ({
  text: td.innerText.trim(), right: td.getBoundingClientRect().right, box: box }));
"""
# Whether chart ``i`` has Plotly's toolbar; the text of every chart (SVG text included).
MODEBAR_JS = PLOTS_JS + "return !!plots[arguments[0]].querySelector('.modebar');"
CHARTS_TEXT_JS = PLOTS_JS + "return plots.map(p => p.textContent).join('\\n');"
# Where the SI-Graph's frame loaded Plotly.js from (resource URLs naming plotly).
PLOTLY_SOURCE_JS = (
    FRAMES_JS
    + "return frames[0].contentWindow.performance.getEntriesByType('resource')"
    + ".map(e => e.name).filter(n => n.includes('plotly'));"
)
# Marks the SI-Graph's DOM node (and its frame) with a property, then says whether the
# node now in place still carries it: a chart updated in place keeps its node.
MARK_JS = PLOTS_JS + "plots[0].wdnMark = arguments[0]; frames[0].wdnMark = arguments[0];"
MARKED_JS = PLOTS_JS + "return [plots[0].wdnMark || null, frames[0].wdnMark || null];"
# The SI-Graph as painted: its plot's box height, its node count, its width and each colour
# bar's text and left edge (a frame kept across a switch of model must show the new map).
PAINTED_JS = (
    PLOTS_JS
    + """
const p = plots[0]; const nodes = p._fullData.find(t => t.name === 'nodes');
const bars = [...p.querySelectorAll('g.colorbar')]
  .map(g => [g.textContent, g.getBoundingClientRect().left, g.getBoundingClientRect().top]);
return [p.querySelector('.svg-container').offsetHeight, nodes.x.length,
        p.getBoundingClientRect().width, bars];
"""
)
# The SI-Graph's axis ranges (x then y): what a zoom changes.
RANGES_JS = (
    PLOTS_JS + "const l = plots[0]._fullLayout; return [...l.xaxis.range, ...l.yaxis.range];"
)


def hover_lines(driver, chart: int, name: str, point: int) -> list[str]:
    """Move the pointer onto a point of a chart and read the hover label Plotly draws."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    frame = driver.find_elements(By.CSS_SELECTOR, 'iframe[src*="live_chart"]')[chart]
    dx, dy = driver.execute_script(POINT_JS, chart, name, point)  # the frame fits the chart
    ActionChains(driver).move_to_element_with_offset(frame, int(dx), int(dy)).perform()
    time.sleep(0.5)
    return driver.execute_script(HOVER_JS, chart)


def drag_zoom(driver) -> list[float]:
    """Drag a box on the SI-Graph as a user zooms; returns its axis ranges after."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    frame = driver.find_element(By.CSS_SELECTOR, 'iframe[src*="live_chart"]')
    before = driver.execute_script(RANGES_JS)
    drag = ActionChains(driver).move_to_element_with_offset(frame, -80, 0).click_and_hold()
    drag.move_by_offset(60, 40).move_by_offset(60, 40).release().perform()
    time.sleep(0.5)
    after = driver.execute_script(RANGES_JS)
    assert after[1] - after[0] < 0.5 * (before[1] - before[0])  # zoomed in
    return after


def check_painted(driver, wait, n_nodes: int) -> None:
    """The SI-Graph is the frame drawn first (marked "kept") and shows a map of ``n_nodes``
    nodes, painted: a plot box of its figure's height (a kept frame once folded to 0 px) and
    two colour bars in the map's right margin, the values' one above the flows' (it was
    once drawn where the other network's flow bar had stood)."""
    wait.until(lambda d: d.execute_script(PAINTED_JS)[1] == n_nodes)
    time.sleep(1)  # a width change of the frame redraws once more
    assert driver.execute_script(MARKED_JS) == ["kept", "kept"]
    height, nodes, width, bars = driver.execute_script(PAINTED_JS)
    assert nodes == n_nodes and height == 540, (nodes, height)
    assert sorted("(L/s)" in text for text, _, _ in bars) == [False, True], bars
    (values_left, values_top), (_, flows_top) = (
        next((left, top) for text, left, top in bars if ("(L/s)" in text) == flows)
        for flows in (False, True)
    )
    assert values_left > width / 2 and values_top < flows_top, bars


def chart_rect(driver, wait, script: str = RECT_JS) -> list[float]:
    """Top and bottom of the first chart's frame and the window's height, once the frame is
    shown (a new frame has no size until its chart is drawn)."""
    return wait.until(lambda d: (r := d.execute_script(script)) and r[1] > r[0] and r)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    env = {**os.environ, "WDN_EXPLAIN_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app/main.py",
            f"--server.port={port}",
            "--server.address=127.0.0.1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def panel_minutes(driver) -> dict[str, float]:
    """The time each panel shows, read from Plotly's own data in the page."""
    si, forecast, chlorine, *value = driver.execute_script(PANELS_JS)
    out = {
        "map": float(re.search(r"forecast made at (\d+) min", si["title"]).group(1)),
        "forecast": float(forecast["now"][0]),
        "chlorine": float(re.search(r"chlorine at (\d+) min", chlorine["title"]).group(1)),
    }
    if value:
        out["followed"] = float(value[0]["bars"][0])
    return out


def read_minutes(driver) -> dict[str, float] | None:
    """:func:`panel_minutes`, or None while a panel is being redrawn."""
    from selenium.common.exceptions import WebDriverException

    try:
        return panel_minutes(driver)
    except (TypeError, AttributeError, IndexError, KeyError, ValueError, WebDriverException):
        return None


def summary_text(driver) -> str:
    """The per-step summary sentence (read in one script: the page may redraw meanwhile)."""
    return driver.execute_script(
        "const e = [...document.querySelectorAll('[data-testid=\"stMarkdownContainer\"]')]"
        ".map(e => e.innerText).find(t => t.startsWith('Forecast made at')); return e || '';"
    )


def settled(driver, wait, condition=lambda d: True) -> dict[str, float]:
    """Wait until all four panels are drawn, agree on one time and ``condition`` holds."""

    def agree(d):
        times = read_minutes(d)
        return times is not None and len(set(times.values())) == 1 and condition(d) and times

    return wait.until(agree)


def still(driver, wait, pause_s: float = 5.0) -> dict[str, float]:
    """The panels' times once they stop moving (a tick already on its way may land after
    pause is pressed); fails by timeout when they never stop."""
    end = time.monotonic() + wait._timeout
    before = settled(driver, wait)
    while time.monotonic() < end:
        time.sleep(pause_s)
        after = settled(driver, wait)
        if after == before:
            return after
        before = after
    raise AssertionError(f"the time cursor keeps moving after pause ({before})")


def pick(driver, label: str, option: str, attempts: int = 4) -> None:
    """Choose ``option`` in the selectbox labelled ``label`` as a user does: type its start
    into the box (the list shows the options that match; a long list draws only the ones in
    view) and click it once the list shows it; again from the start when the list does not
    show it within 10 s (a busy page redrew the box and dropped the keys)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    def listed(d):
        items = d.find_elements(By.CSS_SELECTOR, '[role="option"]')
        return next((item for item in items if item.text.strip() == option), None)

    for attempt in range(attempts):
        box = driver.find_element(By.CSS_SELECTOR, f'input[role="combobox"][aria-label="{label}"]')
        box.click()
        box.send_keys(option.split(" ")[0])
        try:
            WebDriverWait(driver, 10, poll_frequency=0.25).until(listed).click()
            return
        except TimeoutException:
            if attempt == attempts - 1:
                raise AssertionError(f"no option {option!r} in {label!r}") from None
            box.send_keys(Keys.ESCAPE)


def click_text(driver, tag: str, text: str, timeout_s: float = 60) -> None:
    """Click the ``tag`` element whose text is ``text`` once the page shows it (find and click
    in one script: the page may redraw meanwhile; a rerun may not have drawn it yet)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    script = (
        "const e = [...document.querySelectorAll(arguments[0])]"
        ".find(e => e.innerText.trim() === arguments[1]); if (e) { e.click(); } return !!e;"
    )
    try:
        WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(
            lambda d: d.execute_script(script, tag, text)
        )
    except TimeoutException:
        raise AssertionError(f"no {tag} {text!r} within {timeout_s:g} s") from None


def click_button(driver, text: str) -> None:
    """Click the button labelled ``text``."""
    click_text(driver, "button", text)


def retried(action, attempts: int = 5):
    """Run a Selenium ``action`` again when the page redrew the element under it."""
    from selenium.common.exceptions import StaleElementReferenceException

    for attempt in range(attempts):
        try:
            return action()
        except StaleElementReferenceException:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)


def set_duration(driver, minutes: int) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def type_it():
        field = next(
            e
            for e in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stNumberInput"]')
            if e.text.startswith("duration (min)")
        )
        box = field.find_element(By.CSS_SELECTOR, "input")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(minutes), Keys.TAB)

    retried(type_it)
    time.sleep(0.5)


def chromium():
    """Headless Chromium with a 1280x900 viewport (the screen the issues speak of)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    SHOTS.mkdir(exist_ok=True)
    return driver


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian chromium and chromium-driver")
def test_app_in_headless_chromium(server):
    from selenium.common.exceptions import JavascriptException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium()
    try:
        driver.get(server)
        wait = WebDriverWait(  # (a chart being redrawn is missing from its frame for a while)
            driver,
            180,
            poll_frequency=0.5,
            ignored_exceptions=[StaleElementReferenceException, JavascriptException],
        )
        first = settled(driver, wait, lambda d: summary_text(d))
        # the first view: an informative frame, its sentence naming drivers, no toolbars
        minute = first["map"]
        from wdn_explain.shipped import DEFAULT_TIMELINE
        from wdn_explain.timeline import Timeline

        shipped = Timeline.load(DEFAULT_TIMELINE)  # with the dosing plan: from step 0 on
        shipped = shipped.relative_to(shipped.default_reference)
        # the first informative step at which chlorine has left its source (two nodes)
        step = next(
            t
            for t in range(shipped.first_informative_step(), len(shipped))
            if (shipped.chlorine[t] > 0).sum() >= 2
        )
        assert minute == shipped.times_s[step] // 60
        text = summary_text(driver)
        assert text.startswith(f"Forecast made at {minute:.0f} min for {minute + 20:.0f} min: ")
        assert "raise" in text and "share of nodes chlorinated" in text
        # Plotly.js from the app's static files: a URL the browser caches, compiled code too;
        # the basic bundle where scripts/plotly_basic.py wrote it (Hanoi's charts are all
        # scatter and bar traces), else the full one: one bundle either way
        sources = [u.split("/app/static/")[1] for u in driver.execute_script(PLOTLY_SOURCE_JS)]
        bundle = "plotly-basic-" if BASIC_JS.is_file() else f"plotly-{plotly.__version__}."
        assert len(sources) == 1 and sources[0].startswith(bundle), sources
        assert driver.execute_script(MODEBAR_JS, 0)  # maps: zoom, PNG
        assert not driver.execute_script(MODEBAR_JS, 1)  # not over titles
        assert "Deploy" not in driver.find_element(By.TAG_NAME, "header").text
        top, bottom, height = chart_rect(driver, wait)
        assert height == 900 and 0 < top and bottom <= 900  # the SI-Graph in the first screen
        assert driver.execute_script(CHLORINE_JS) > 0  # chlorine on the first map
        assert "source on" in driver.execute_script(CHARTS_TEXT_JS)
        driver.save_screenshot(str(SHOTS / "app_first_view.png"))
        check_drivers_table_shows_its_numbers(driver, wait)
        check_flows_hover_band_and_compliance(driver, wait, shipped, step)

        # play: every panel moves with the map, each chart updated in place (the SI-Graph's
        # DOM node is the one drawn first, the user's zoom stays); pause keeps the time
        driver.execute_script(MARK_JS, "first view")
        zoomed = drag_zoom(driver)
        click_button(driver, "▶ play")
        wait.until(lambda d: (read_minutes(d) or {"map": 0})["map"] >= minute + 10)
        assert chart_rect(driver, wait)[1] <= 900  # still in the first screen
        click_button(driver, "❚❚ pause")
        still(driver, wait)
        click_button(driver, "❚❚ pause")  # a click landing during a frame's rerun may be lost
        played = still(driver, wait)
        assert played["map"] >= minute + 10
        assert summary_text(driver).startswith(f"Forecast made at {played['map']:.0f} min")
        assert driver.execute_script(MARKED_JS) == ["first view", "first view"]
        assert driver.execute_script(RANGES_JS) == pytest.approx(zoomed)
        driver.save_screenshot(str(SHOTS / "app_after_play.png"))

        # every index keeps the time
        for index, label in (
            ("SV", "SV, "),
            ("STII", "STII of order 2"),
            ("FSII", "FSII of order 2"),
            ("Möbius", "Möbius of order 2"),
            ("k-SII", "k-SII of order 2"),
        ):
            retried(lambda index=index: pick(driver, "index", index))
            times = settled(
                driver,
                wait,
                lambda d, label=label: label in d.execute_script(PANELS_JS)[0]["title"],
            )
            assert times["map"] == played["map"], index
            assert summary_text(driver).startswith(f"Forecast made at {played['map']:.0f} min")

        # an error case: a zero duration names the field, nothing is simulated
        set_duration(driver, 0)
        click_button(driver, "simulate, forecast, explain")
        wait.until(lambda d: "duration must be between" in d.page_source)
        driver.save_screenshot(str(SHOTS / "app_error.png"))

        # a new scenario: simulated, explained, selected, shown with one time for all panels
        set_duration(driver, 45)
        click_button(driver, "simulate, forecast, explain")
        wait.until(lambda d: "done (computed)" in d.page_source)
        settled(driver, wait, lambda d: summary_text(d))
        scenario = retried(
            lambda: driver.find_element(
                By.CSS_SELECTOR, 'input[role="combobox"][aria-label="scenario"]'
            ).get_attribute("value")
        )
        # the form proposes the default scenario's injection node (the booster at 2)
        assert "default:" not in scenario and scenario.startswith("booster at 2, ")
        assert ", 0.75 h [" in scenario  # no derived seed, the short hash instead
        # the followed node is the new scenario's injection node
        wait.until(lambda d: d.execute_script(SIDEBAR_JS)[1] == ["node (or pair) to follow\n\n2"])
        driver.save_screenshot(str(SHOTS / "app_new_scenario.png"))

        # another model: the sidebar, the followed node and the map are all L-Town's; the
        # SI-Graph's frame is kept (Plotly.js not started again) and shows L-Town painted
        driver.execute_script(MARK_JS, "kept")
        retried(lambda: pick(driver, "model", "l-town (l-town)"))
        # (until the run ends: an element of the previous model may stand while the first
        # L-Town run still draws, e.g. while it simulates the shipped timeline's flows)
        wait.until(
            lambda d: (
                "n303" in summary_text(d)
                and d.execute_script(SIDEBAR_JS)[0]["scenario"].startswith(
                    "default: booster at n303"
                )
            )
        )
        boxes, follow = driver.execute_script(SIDEBAR_JS)
        from wdn_explain.shipped import model_network

        ltown = model_network(ROOT / "models" / "l-town").node_ids
        assert boxes["injection node"].split(" (")[0] in ltown  # not Hanoi's "1 (reservoir)"
        assert follow == ["node (or pair) to follow\n\nn303"]
        assert chart_rect(driver, wait)[1] <= 900
        check_painted(driver, wait, len(ltown))
        driver.save_screenshot(str(SHOTS / "app_l_town.png"))

        # its chlorine map spans the page (a node can be found on it): >= 900 px at 1280
        # (found by its title, "chlorine at <t> min": the followed node's chart, "chlorine at
        # node n303", stands before it in a half-width column)
        def chlorine_map(d):  # its place among the page's charts, 1-based (0: not drawn yet)
            titles = [p["title"] for p in d.execute_script(PANELS_JS)]
            return next((i + 1 for i, t in enumerate(titles) if CHLORINE_MAP.search(t)), 0)

        place = wait.until(chlorine_map)
        assert driver.execute_script(FRAME_WIDTHS_JS)[place - 1] >= 900
        # a node found by id: the full-width map zooms onto it and rings it
        retried(lambda: pick(driver, "find a node", "n303"))
        xs = model_network(ROOT / "models" / "l-town").map_coordinates[:, 0]
        x, extent = xs[list(ltown).index("n303")], xs.max() - xs.min()

        def zoomed_onto_it(d):
            found, (x0, x1) = d.execute_script(FOUND_JS, place - 1)
            return found == ["n303"] and x0 < x < x1 and x1 - x0 < 0.2 * extent

        wait.until(zoomed_onto_it)
        driver.save_screenshot(str(SHOTS / "app_l_town_found.png"))

        # a node-level model: the sentence speaks mg/L at its explained node
        retried(lambda: pick(driver, "model", "hanoi-nodes (hanoi)"))
        from wdn_explain.timeline import read_meta

        explained = read_meta(ROOT / "models" / "hanoi-nodes" / "default_timeline.npz")["node"]
        wait.until(lambda d: f"mg/L chlorine at node {explained}" in summary_text(d))
        boxes, _ = driver.execute_script(SIDEBAR_JS)
        assert boxes["explained node"] == explained
        check_painted(driver, wait, len(model_network(ROOT / "models" / "hanoi-nodes").node_ids))
        top, bottom, _ = chart_rect(driver, wait, RECT_AT_TOP_JS)
        assert 0 < top and bottom <= 900  # under its notices, still in the first screen
        driver.save_screenshot(str(SHOTS / "app_hanoi_nodes.png"))
        # another node, not explained in the shipped timeline: explained on demand, drawn
        other = next(n for n in ("5", "6") if n != explained)
        retried(lambda: pick(driver, "explained node", f"{other} (explained when picked)"))
        said = re.compile(rf"mg/L chlorine at node {other}\b")
        wait.until(lambda d: said.search(summary_text(d)))
        wait.until(lambda d: f"node {other}" in d.execute_script(CHARTS_TEXT_JS))
        assert driver.execute_script(SIDEBAR_JS)[0]["explained node"].startswith(other)
    finally:
        driver.quit()


def check_flows_hover_band_and_compliance(driver, wait, shipped, step: int) -> None:
    """On the first view: the maps' arrows are the scenario's flows (simulated here), a
    node's hover holds its .inp values, the forecast chart has the calibrated band, the
    followed node's chlorine chart and the compliance map count what the timeline says."""
    import numpy as np

    from wdn_explain.shipped import DEFAULT_MODEL, model_network
    from wdn_explain.simulation import simulate

    hanoi = model_network(DEFAULT_MODEL)
    flow = simulate(shipped.scenario, hanoi).link_flow_lps[shipped.steps[step]]
    si = driver.execute_script(TRACES_JS, 0)
    arrows = si["flow"]
    np.testing.assert_allclose(arrows["color"], np.abs(flow), rtol=1e-5)
    assert arrows["colorbar"].replace("<br>", " ") == "flow (L/s)"
    xy = hanoi.map_coordinates
    theta = np.radians(arrows["angle"])  # clockwise from up: each arrow points downstream
    for k, (a, b) in enumerate(hanoi.link_nodes):
        if abs(flow[k]) > 1e-3:
            down = (xy[b] - xy[a]) * np.sign(flow[k])
            assert np.sin(theta[k]) * down[0] + np.cos(theta[k]) * down[1] > 0
    # hover a node: its kind, elevation and base demand as Hanoi.inp writes them (L/s, m)
    node = "2"
    elevation, demand = map(float, inp_table(hanoi.inp_path, "JUNCTIONS")[node][:2])
    lines = hover_lines(driver, 0, "nodes", hanoi.node_index(node))
    assert lines[:3] == [
        f"node {node} (junction)",
        f"elevation {elevation:.1f} m",
        f"base demand {demand:.2f} L/s",
    ], lines
    assert f"chlorine {shipped.chlorine[step, hanoi.node_index(node)]:.3f} mg/L" in lines
    assert any(line.startswith("pressure ") and line.endswith(" m") for line in lines)
    driver.save_screenshot(str(SHOTS / "app_node_hover.png"))
    # the forecast's band: the timeline's calibrated interval, its coverage in the legend
    forecast = driver.execute_script(TRACES_JS, 1)
    band = forecast["90% interval (calibrated)"]
    assert band["fill"] == "tonexty"
    np.testing.assert_allclose(band["y"], shipped.lower, atol=1e-6)
    np.testing.assert_allclose(
        forecast["90% interval (calibrated) upper"]["y"], shipped.upper, atol=1e-6
    )
    assert "90% interval" in summary_text(driver)
    # the followed node (the booster): its simulated chlorine at every step, and the line
    from wdn_explain.simulation import injection_node

    booster = injection_node(shipped.scenario, hanoi)
    chart = driver.execute_script(TRACES_JS, 4)
    np.testing.assert_allclose(
        chart["simulated"]["y"], shipped.chlorine[:, hanoi.node_index(booster)], atol=1e-6
    )
    assert f"chlorine at node {booster} (mg/L)" in chart["title"]
    assert "minimum 0.2 mg/L" in driver.execute_script(CHARTS_TEXT_JS)
    # the compliance map: the nodes below 0.2 mg/L now, counted from the timeline here
    taps = ~np.isin(hanoi.node_ids, list(inp_table(hanoi.inp_path, "RESERVOIRS")))
    below = int((shipped.chlorine[step][taps] < 0.2).sum())  # customer nodes only
    click_label(driver, "below the minimum")
    wait.until(lambda d: "below 0.2 mg/L" in d.execute_script(TRACES_JS, 2)["title"])
    compliance = driver.execute_script(TRACES_JS, 2)
    assert f"{below} of 31 customer nodes" in compliance["title"]
    assert compliance["compliance"]["symbol"].count("x") == below
    assert f"{below} of 31 customer nodes have less than the minimum residual of 0.2" in (
        driver.page_source
    )
    driver.execute_script(  # the map's switch, the map, the count and the node chart
        "[...document.querySelectorAll('[data-testid=\"stRadio\"]')]"
        ".find(e => e.innerText.startsWith('map')).scrollIntoView()"
    )
    time.sleep(1)
    driver.save_screenshot(str(SHOTS / "app_compliance_and_node_chart.png"))
    driver.execute_script("document.querySelector('iframe[src*=\"live_chart\"]').scrollIntoView()")
    click_label(driver, "chlorine (mg/L)")
    wait.until(lambda d: "below" not in d.execute_script(TRACES_JS, 2)["title"])


def check_drivers_table_shows_its_numbers(driver, wait) -> None:
    """The drivers table opened at 1280 px: every column's numbers inside the table's box
    and the window (no hidden scrolling grid), as text a user can select and copy."""
    expander = (  # (its summary's text holds the arrow icon's name too)
        "[...document.querySelectorAll('summary')]"
        ".find(e => e.innerText.includes('strongest drivers (table)')).click()"
    )
    driver.execute_script(expander)
    cells = wait.until(lambda d: d.execute_script(TABLE_JS))
    right = driver.execute_script("return window.innerWidth")
    values = [c for c in cells if re.fullmatch(r"[+-]\d\.\d{4}", c["text"])]
    shares = [c for c in cells if re.fullmatch(r"[+-]\d+%", c["text"])]
    assert values and shares, cells
    for cell in values + shares:
        assert cell["right"] <= min(cell["box"], right), cell
    driver.save_screenshot(str(SHOTS / "app_drivers_table.png"))
    driver.execute_script(expander)


def click_label(driver, text: str) -> None:
    """Click the radio option labelled ``text``."""
    click_text(driver, "label", text)


# The Replay page's step, read from the page: its caption ("report at M min (step k of n)")
# and the minute of the "now" marker in its first chart (Plotly's own data).
REPLAY_JS = """
const caption = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
  .map(e => e.innerText).find(t => t.startsWith('report at')) || '';
const p = document.querySelector('.js-plotly-plot');
const now = p && p._fullData ? p._fullData.find(t => t.name === 'now') : null;
return [caption, now ? Array.from(now.x)[0] : null];
"""


def sensor_rows(tmp_path):
    """The simulated chlorine at the shipped sensor model's sensors over the default
    scenario's first 90 min (19 reports), as CSV rows under their header; the scenario and
    the model folder."""
    import yaml

    from wdn_explain.model_folder import load_model
    from wdn_explain.readings import Readings, readings_csv
    from wdn_explain.scenario import load_config
    from wdn_explain.simulation import simulate

    model = ROOT / "models" / "hanoi-sensors"
    config = yaml.safe_load((ROOT / "simulations" / "default_scenario.yaml").read_text())
    config["scenario"]["duration_s"] = 5400
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(config))
    scenario = load_config(tmp_path / "scenario.yaml").scenario_config(0)
    result = simulate(scenario)
    sensors = tuple(load_model(model)[1].input_spec.quality_node_sensors)
    index = [list(result.node_ids).index(s) for s in sensors]
    readings = Readings(result.times_s, sensors, result.node_chlorine_mg_l[:, index])
    return readings_csv(readings), scenario, model


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian chromium and chromium-driver")
def test_replay_page_plays_and_follows_a_growing_folder(server, tmp_path):
    """The Replay page plays a replay step after step (each step's marker at its report's
    minute) and, following the folder, shows the steps a resumed replay adds."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    from wdn_explain.replay import replay

    lines, scenario, model = sensor_rows(tmp_path)
    readings, out = tmp_path / "readings.csv", tmp_path / "out"
    readings.write_text("\n".join(lines[:7]) + "\n")  # the first 6 reports
    replay(readings, scenario, model, out)
    driver = chromium()
    try:
        driver.get(f"{server}/Replay")
        wait = WebDriverWait(driver, 120, poll_frequency=0.2)
        box = wait.until(
            lambda d: d.find_element(By.CSS_SELECTOR, 'input[aria-label="replay folder"]')
        )
        box.send_keys(str(out), Keys.ENTER)
        wait.until(lambda d: "(step 1 of 6)" in d.execute_script(REPLAY_JS)[0])
        click_label(driver, "play")
        seen, start = {}, time.perf_counter()
        while 6 not in seen and time.perf_counter() - start < 120:  # the steps drawn
            caption, now = wait.until(
                lambda d: (
                    (r := d.execute_script(REPLAY_JS))[1] is not None
                    and re.search(r"step (\d+) of 6", r[0])
                    and r
                )
            )
            minute = float(re.match(r"report at ([\d.]+) min", caption).group(1))
            step = int(re.search(r"step (\d+) of 6", caption).group(1))
            if now == minute:
                seen[step] = minute
        # drawn in order up to the last, at their reports' minutes (a busy browser may
        # draw a step after the next has arrived: that one is skipped, not drawn late)
        assert list(seen) == sorted(seen) and len(seen) >= 3 and 6 in seen, seen
        assert all(minute == 5.0 * (k - 1) for k, minute in seen.items()), seen
        click_label(driver, "follow the folder as it grows")
        readings.write_text("\n".join(lines) + "\n")
        assert replay(readings, scenario, model, out)[1] == 6  # resumed: 6 steps kept
        wait.until(lambda d: "(step 19 of 19)" in d.execute_script(REPLAY_JS)[0])
        wait.until(lambda d: d.execute_script(REPLAY_JS)[1] == 90.0)
        driver.save_screenshot(str(SHOTS / "app_replay_follow.png"))
    finally:
        driver.quit()
