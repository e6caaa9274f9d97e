"""App responsiveness in a real browser (headless Chromium at 1280x900), one figure per line.

What a user waits for, measured from the action to the page showing its result (read from
Plotly's own data in the page): the first view from a server's very first start on a machine
(an empty user cache), from a fresh server started again (the cache kept) and from a warm one
(a server that has served a page and gone idle again) -- in a fresh browser profile (median of
three new profiles: nothing cached, Plotly.js compiled anew) and in a warm one, each until
the map and the explanation show (the first chart painted -- the chart component's light
sketch or the chart shows its title -- and the explanation's sentence in the page) and
until Plotly has drawn, with where that time went (Navigation and Resource Timing, the
websocket's messages from Chromium's performance log, the renderer's main-thread seconds,
the server's CPU seconds) -- a time step (arrow key on the time
slider, mean of three), an index change, a new 2-hour Hanoi scenario (simulated, forecast,
explained, drawn), switching to every shipped model, another node of ``hanoi-nodes``
explained on demand and drawn, play on L-Town from its first step
(seconds per step over five steps, and the CPU seconds the server and the browser spent
per step: counts a busy machine changes less) and the Molecules page's first view; each
line names the issue's goal. The server's own share of these: ``benchmarks/speed/bench_app.py``;
the rest is transfer and drawing in the browser.

With ``--old PATH`` (another checkout, e.g. the main branch before a change) the same
sequence runs on both apps, old then new, ``--repeats`` times, so that both meet the same
machine load; each line gives every run's figure. ``uptime`` is printed at the start and
the end. Run from the repository root:
``OMP_NUM_THREADS=1 python benchmarks/speed/bench_app_browser.py --old ../main``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The first chart of the page: a Plotly element of the page itself (st.plotly_chart) or
# inside a chart component's frame (app/live_chart.py), so that old checkouts compare.
FIRST_PLOT_JS = """
const frames = [...document.querySelectorAll('iframe')].map(f => {
  try { return f.contentDocument; } catch (e) { return null; }
});
const plots = [document, ...frames].filter(Boolean).map(d => d.querySelector('.js-plotly-plot'));
const found = plots.filter(Boolean);
const top = p => p.ownerDocument === document ? p : p.ownerDocument.defaultView.frameElement;
found.sort((a, b) => top(a).compareDocumentPosition(top(b)) & 4 ? -1 : 1);
const p = found[0];
"""
TITLE_JS = (
    FIRST_PLOT_JS
    + "return p && p._fullLayout && p._fullLayout.title ? p._fullLayout.title.text || '' : '';"
)

# The first chart's light sketch (drawn before Plotly.js is ready): its title.
SKETCH_TITLE_JS = """
const f = document.querySelector('iframe[src*="live_chart"]');
const title = f && f.contentDocument && f.contentDocument.querySelector('#sketch .title');
return title ? title.textContent : '';
"""
# Where a first view's time went, read in the page once Plotly has drawn the first chart:
# milliseconds from the navigation's start (Navigation and Resource Timing of the page and of
# the first chart's frame, whose marks app/live_chart.html sets: wdn-sketch, wdn-plotly-ready,
# wdn-drawn).
BREAKDOWN_JS = """
const nav = performance.getEntriesByType('navigation')[0];
const js = performance.getEntriesByType('resource').filter(e => /[.]js$/.test(e.name));
const part = list => [list.length, list.reduce((a, e) => a + e.encodedBodySize, 0) / 1e6,
                      Math.max(0, ...list.map(e => e.responseEnd))];
const f = document.querySelector('iframe[src*="live_chart"]');
const w = f && f.contentWindow;
const shift = w ? w.performance.timeOrigin - performance.timeOrigin : 0;
const mark = n => { const m = w && w.performance.getEntriesByName(n)[0]; return m ? shift + m.startTime : null; };
const plotly = w && w.performance.getEntriesByType('resource').find(e => e.name.includes('plotly'));
return {
  dcl: nav.domContentLoadedEventEnd,
  boot_js: part(js.filter(e => e.startTime < nav.domContentLoadedEventEnd)),
  lazy_js: part(js.filter(e => e.startTime >= nav.domContentLoadedEventEnd)),
  frame: w ? shift : null,
  sketch: mark('wdn-sketch'),
  plotly: plotly ? [shift + plotly.startTime, shift + plotly.responseEnd] : null,
  ready: mark('wdn-plotly-ready'),
  drawn: mark('wdn-drawn'),
  frames: document.querySelectorAll('iframe[src*="live_chart"]').length,
};
"""
SUMMARY_JS = "return document.body.innerText.includes('Forecast made at');"


def shipped_models(root: Path) -> list[tuple[str, int]]:
    """Every water model the checkout ``root`` ships (``models/*/card.json`` with a network),
    with its network's node count, in the order the page is switched to them: by name, each
    on another network than the one before where one is left (two models of one network can
    open on the same map colours, and a switch is seen by the map changing), the default
    (the page's first) last."""
    found = []
    for card in sorted((root / "models").glob("*/card.json")):
        text = json.loads(card.read_text(encoding="utf-8"))
        network = ((text.get("data") or {}).get("network") or {}).get("n_nodes")
        if network and card.parent.name != "default":
            found.append((card.parent.name, network))
    order, last = [], None
    while found:
        left = [m[1] for m in found]  # the network with most models left first
        pick = min(found, key=lambda m: (m[1] == last, -left.count(m[1])))
        found.remove(pick)
        order.append(pick)
        last = pick[1]
    return order + [("default", 32)]


OTHER_NODE = "5"  # a hanoi-nodes node its shipped timeline does not explain
REPEATS = 3  # first views measured in a fresh and in a warm browser (their median)

# the node count and colours of the SI-Graph's node trace (what changes with a new view)
NODES_JS = (
    FIRST_PLOT_JS
    + """
const t = p && p._fullData ? p._fullData.find(t => t.name === 'nodes') : null;
return t ? [t.x.length, Array.from(t.marker.color).slice(0, 40).join(',')] : null;
"""
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(root: Path, cache: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "WDN_EXPLAIN_CACHE": cache, "OMP_NUM_THREADS": "1"}
    env.pop("WDN_EXPLAIN_MODEL", None)
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", f"--server.port={port}"]
    proc = subprocess.Popen(
        cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.25)
    raise RuntimeError("the server did not start")


def _cpu_s(pid: int) -> float:
    """CPU seconds a process has used (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and all its descendants (the browser's processes)."""
    total = _cpu_s(pid)
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in children.read_text().split():
            try:
                total += _tree_cpu_s(int(child))
            except OSError:  # ended meanwhile
                pass
    return total


def _settle(proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until the server has used under 0.05 CPU s in each of two seconds (whatever it
    loads in the background after its first page is done)."""
    quiet, last, start = 0, _cpu_s(proc.pid), time.perf_counter()
    while quiet < 2 and time.perf_counter() - start < timeout:
        time.sleep(1)
        now = _cpu_s(proc.pid)
        quiet = quiet + 1 if now - last < 0.05 else 0
        last = now


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--window-size=1280,900",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})  # websocket frames
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
    driver.execute_cdp_cmd("Performance.enable", {})  # the renderer's main-thread time
    return driver


def _until(driver, condition, timeout: float = 120.0) -> float:
    """Seconds until ``condition(driver)`` holds (polled every 20 ms)."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        try:
            if condition(driver):
                return time.perf_counter() - start
        except Exception:  # the page is being redrawn
            pass
        time.sleep(0.02)
    raise TimeoutError("the page never showed the expected result")


def _title(driver) -> str:
    return driver.execute_script(TITLE_JS) or ""


def _painted(driver) -> bool:
    """Whether the first chart shows its title: the light sketch that the chart component
    draws before Plotly.js is ready (app/live_chart.html), or the Plotly chart."""
    return "forecast made at" in (driver.execute_script(SKETCH_TITLE_JS) or _title(driver))


def _first_view(driver, url: str, server: int) -> tuple[float, float, dict[str, float]]:
    """Seconds from opening ``url`` in ``driver`` until the first view (the first chart
    painted, :func:`_painted`, and the explanation's sentence shown) and until Plotly has
    drawn the first chart, and where the time went (:func:`_breakdown`; ``server``: the
    server's process id)."""
    driver.get_log("performance")  # drop what an earlier visit logged
    metrics = _main_thread(driver)
    cpu = _cpu_s(server)
    start = time.perf_counter()
    driver.get(url)
    _until(driver, lambda d: _painted(d) and d.execute_script(SUMMARY_JS))
    seen = time.perf_counter() - start
    _until(driver, lambda d: "forecast made at" in _title(d))
    drawn = time.perf_counter() - start
    parts = _breakdown(driver, metrics)
    parts["server CPU s during the view"] = _cpu_s(server) - cpu
    return seen, drawn, parts


def _main_thread(driver) -> dict[str, float]:
    """The renderer's cumulative main-thread seconds (Chromium's Performance domain: every
    task, script, style and layout, of the page and its same-origin chart frames)."""
    got = driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]
    return {m["name"]: m["value"] for m in got}


def _websocket_s(driver) -> list[float]:
    """Seconds from the navigation's start to each websocket message the page received
    (from Chromium's performance log)."""
    start, frames = None, []
    for entry in driver.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        params = event.get("params", {})
        if event["method"] == "Network.requestWillBeSent" and params.get("type") == "Document":
            start = start if start is not None else params["timestamp"]
        elif event["method"] == "Network.webSocketFrameReceived":
            frames.append(params["timestamp"])
    return [t - start for t in frames] if start is not None else []


def _breakdown(driver, before: dict[str, float]) -> dict[str, float]:
    """Where a first view's time went (seconds from the navigation's start unless named
    otherwise): the page and Streamlit's start-up scripts, the websocket's first and last
    message before the first chart's frame (the server's script run, sent as it goes),
    the scripts Streamlit loads for the elements it meets, the first chart's frame, its
    light sketch, Plotly.js fetched and ready (compiled and run) and its drawing; the
    renderer's main-thread seconds (scripts, style and layout of every frame) until then."""
    b = driver.execute_script(BREAKDOWN_JS)
    messages = _websocket_s(driver)
    frame = (b["frame"] or 0) / 1000
    after = _main_thread(driver)
    parts = {
        "Streamlit's start-up scripts loaded (DOMContentLoaded)": b["dcl"] / 1000,
        "Streamlit's start-up scripts (MB)": b["boot_js"][1],
        "websocket: first message": messages[0] if messages else float("nan"),
        "websocket: last message before the chart frame": max(
            (t for t in messages if t <= frame), default=float("nan")
        ),
        "websocket: messages before the chart frame": sum(t <= frame for t in messages),
        "element scripts loaded on demand (MB)": b["lazy_js"][1],
        "element scripts: last one in": b["lazy_js"][2] / 1000,
        "first chart frame created": frame,
        "first chart sketched": (b["sketch"] or float("nan")) / 1000,
        "Plotly.js fetched": b["plotly"][1] / 1000 if b["plotly"] else float("nan"),
        "Plotly.js ready (fetched, compiled, run)": (b["ready"] or float("nan")) / 1000,
        "first chart drawn by Plotly": (b["drawn"] or float("nan")) / 1000,
        "chart frames on the page": b["frames"],
    }
    for name in ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration"):
        was, now = before.get(name, 0.0), after.get(name, 0.0)
        parts[f"main thread {name} s"] = now - was if now >= was else now  # (a new renderer)
    return parts


def _pick(driver, label: str, option: str) -> None:
    """Choose the first option starting with ``option`` in the selectbox ``label`` once the
    page is idle, as a user does: its start typed into the box (a long list draws only the
    options in view), clicked once listed; again when a busy page dropped the keys."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _until(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'))

    def listed(d):
        items = d.find_elements(By.CSS_SELECTOR, '[role="option"]')
        return next((i for i in items if i.text.strip().startswith(option)), None)

    for _ in range(4):
        box = driver.find_element(By.CSS_SELECTOR, f'input[role="combobox"][aria-label="{label}"]')
        box.click()
        box.send_keys(option.split(" ")[0])
        try:
            _until(driver, listed, timeout=10)
        except TimeoutError:
            box.send_keys(Keys.ESCAPE)
            continue
        listed(driver).click()
        return
    raise LookupError(f"no option {option!r} in {label!r}")


def _step_right(driver, key: str = "\ue014", slider: str = "forecast made at (min)") -> None:
    """Press ``key`` (default: arrow right) on the slider labelled ``slider`` (default: the
    time slider): its ``input`` is a 1-px clipped element that Selenium cannot type into, so
    it gets the focus and the key goes to the focused element, as a keyboard user's would."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    thumb = driver.find_element(By.CSS_SELECTOR, f'input[type="range"][aria-label="{slider}"]')
    driver.execute_script("arguments[0].focus()", thumb)
    ActionChains(driver).send_keys(key).perform()


def _click(driver, text: str) -> None:
    driver.execute_script(
        "[...document.querySelectorAll('button')].find(b => b.innerText.includes(arguments[0]))"
        ".click()",
        text,
    )


def _set_duration(driver, minutes: int) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    field = next(
        e
        for e in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stNumberInput"]')
        if e.text.startswith("duration (min)")
    )
    box = field.find_element(By.CSS_SELECTOR, "input")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(str(minutes), Keys.TAB)
    time.sleep(0.5)


def _nodes(driver):
    return driver.execute_script(NODES_JS)


MODEL_HASH = re.compile(r"; model ([0-9a-f]+), ")


def _model_hash(driver) -> str | None:
    """The hash of the model whose view the page shows (the caption under the map)."""
    found = MODEL_HASH.search(driver.execute_script("return document.body.innerText"))
    return found.group(1) if found else None


# The Replay page's step as drawn: its caption's "step k of n" and the minute of the "now"
# marker in its first chart (Plotly's own data).
REPLAY_JS = """
const caption = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
  .map(e => e.innerText).find(t => t.startsWith('report at')) || '';
const p = document.querySelector('.js-plotly-plot');
const now = p && p._fullData ? p._fullData.find(t => t.name === 'now') : null;
return [caption, now ? Array.from(now.x)[0] : null];
"""


def replay_folder(folder: Path) -> Path:
    """A replay written by the library (``wdn-explain replay``'s function) from a CSV of the
    simulated chlorine at the shipped sensor model's sensors over the default scenario's
    first 90 min (19 reports): the folder the Replay page opens."""
    import yaml

    from wdn_explain.model_folder import load_model
    from wdn_explain.readings import Readings, readings_csv
    from wdn_explain.replay import replay
    from wdn_explain.scenario import load_config
    from wdn_explain.simulation import simulate

    model = ROOT / "models" / "hanoi-sensors"
    config = yaml.safe_load((ROOT / "simulations" / "default_scenario.yaml").read_text())
    config["scenario"]["duration_s"] = 5400
    (folder / "scenario.yaml").write_text(yaml.safe_dump(config))
    scenario = load_config(folder / "scenario.yaml").scenario_config(0)
    result = simulate(scenario)
    sensors = tuple(load_model(model)[1].input_spec.quality_node_sensors)
    index = [list(result.node_ids).index(s) for s in sensors]
    readings = Readings(result.times_s, sensors, result.node_chlorine_mg_l[:, index])
    (folder / "readings.csv").write_text("\n".join(readings_csv(readings)) + "\n")
    replay(folder / "readings.csv", scenario, model, folder / "out")
    return folder / "out"


def _replay_step(driver) -> tuple[int, bool]:
    """The Replay page's step (1-based) and whether its chart has drawn it."""
    caption, now = driver.execute_script(REPLAY_JS)
    found = re.search(r"report at ([\d.]+) min \(step (\d+) of", caption)
    return (int(found.group(2)), now == float(found.group(1))) if found else (0, False)


def replay_views(driver, url: str, folder: Path, out: dict[str, float]) -> None:
    """Add to ``out`` the seconds on the Replay page with ``folder`` opened: a step (arrow key
    on its slider, until the chart's marker stands at the step's report; mean of 3) and
    play's pace (seconds per step until a step at least five on is drawn: a busy browser
    skips a step whose successor arrived before it was drawn)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.get(f"{url}/Replay")
    _until(driver, lambda d: d.find_element(By.CSS_SELECTOR, 'input[aria-label="replay folder"]'))
    box = driver.find_element(By.CSS_SELECTOR, 'input[aria-label="replay folder"]')
    box.send_keys(str(folder), Keys.ENTER)
    _until(driver, lambda d: _replay_step(d) == (1, True))
    steps = []
    for k in (2, 3, 4):
        time.sleep(1)
        _step_right(driver, slider="step")
        steps.append(_until(driver, lambda d, k=k: _replay_step(d) == (k, True)))
    out["Replay: a step (arrow key, drawn; mean of 3)"] = sum(steps) / len(steps)
    time.sleep(1)
    driver.execute_script(
        "[...document.querySelectorAll('label')].find(e => e.innerText.trim() === 'play').click()"
    )
    start, drawn = time.perf_counter(), [0]

    def past_nine(d) -> bool:
        step, shown = _replay_step(d)
        drawn[0] = step if shown else 0
        return drawn[0] >= 9

    _until(driver, past_nine)
    out["Replay: play, per step (drawn)"] = (time.perf_counter() - start) / (drawn[0] - 4)


def sequence(
    root: Path, replayed: Path, first_views_only: bool = False, replay_only: bool = False
) -> dict[str, float]:
    """Seconds of every measured view on the app of checkout ``root`` (a server of its own,
    an empty scenario cache; ``replayed``: the replay folder its Replay page opens); only
    the first views with ``first_views_only``, only the Replay page with ``replay_only``."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as cache:
        if not replay_only:
            # a server's first start on a machine: the user cache (the networks as read, the
            # charts' assets) is empty; every later start, below, finds it filled
            proc, url = _server(root, cache)
            driver = _driver()
            try:
                shown, drawn, _ = _first_view(driver, url, proc.pid)
                out[f"{FIRST_START}: map and explanation shown"] = shown
                out[f"{FIRST_START}: drawn by Plotly"] = drawn
                _settle(proc)
            finally:
                driver.quit()
                _stop(proc)
        proc, url = _server(root, cache)
        driver = _driver()
        try:
            if replay_only:
                replay_views(driver, url, replayed, out)
                return out
            views = {
                "first view, fresh server (restarted), fresh browser": [
                    _first_view(driver, url, proc.pid)
                ]
            }
            _settle(proc)
            # a colleague opening the link: a new browser profile each time (nothing cached,
            # Plotly.js compiled anew); then the same browser again (its caches warm)
            views["first view, warm server, fresh browser"] = []
            for _ in range(REPEATS):
                other = _driver()
                try:
                    views["first view, warm server, fresh browser"].append(
                        _first_view(other, url, proc.pid)
                    )
                finally:
                    other.quit()
                _settle(proc)
            views["first view, warm server, warm browser"] = []
            for _ in range(REPEATS):
                views["first view, warm server, warm browser"].append(
                    _first_view(driver, url, proc.pid)
                )
                _settle(proc)
            for name, runs in views.items():
                several = f" (median of {len(runs)})" if len(runs) > 1 else ""
                out[f"{name}: map and explanation shown{several}"] = statistics.median(
                    r[0] for r in runs
                )
                out[f"{name}: drawn by Plotly{several}"] = statistics.median(r[1] for r in runs)
                for part in runs[0][2]:
                    out[f"  {name}, breakdown: {part}{several}"] = statistics.median(
                        r[2][part] for r in runs
                    )
            if first_views_only:
                return out
            steps = []
            for _ in range(3):
                time.sleep(1)
                before = _title(driver)
                _step_right(driver)
                steps.append(
                    _until(
                        driver, lambda d, b=before: _title(d) != b and "forecast made" in _title(d)
                    )
                )
            out["time step (arrow key, mean of 3)"] = sum(steps) / len(steps)
            _pick(driver, "index", "FSII")
            out["index k-SII -> FSII"] = _until(driver, lambda d: "FSII of order" in _title(d))
            _pick(driver, "index", "k-SII")
            _until(driver, lambda d: "k-SII of order" in _title(d))
            _set_duration(driver, 120)
            before, start = _nodes(driver), time.perf_counter()
            _click(driver, "simulate, forecast, explain")
            _until(driver, lambda d: "done (" in d.page_source and _nodes(d) != before)
            out["new Hanoi scenario, 2 h (simulated, forecast, explained, drawn)"] = (
                time.perf_counter() - start
            )
            for model, n_nodes in shipped_models(root):
                before, shown = _nodes(driver), _model_hash(driver)
                _pick(driver, "model", model)
                out[f"switch to {model}"] = _until(
                    driver,
                    lambda d, n=n_nodes, b=before, h=shown: (
                        (now := _nodes(d)) != b and now and now[0] == n and _model_hash(d) != h
                    ),
                )
            _pick(driver, "model", "hanoi-nodes")
            _until(driver, lambda d: "mg/L chlorine at node" in d.page_source)
            _pick(driver, "explained node", f"{OTHER_NODE} (explained when picked)")
            start = time.perf_counter()
            said = re.compile(rf"mg/L chlorine at node {OTHER_NODE}\b")
            _until(driver, lambda d: said.search(d.page_source))
            out[f"hanoi-nodes: node {OTHER_NODE} explained on demand and drawn"] = (
                time.perf_counter() - start
            )
            _pick(driver, "model", "l-town")
            _until(driver, lambda d: (now := _nodes(d)) and now[0] == 785)
            time.sleep(1)
            _step_right(driver, "\ue011")  # Home: play from the first step, 8 steps to go
            _until(driver, lambda d: "made at 0 min" in _title(d))
            time.sleep(1)
            seen, at = [_title(driver)], []
            browser = driver.service.process.pid
            cpu = _cpu_s(proc.pid), _tree_cpu_s(browser)
            _click(driver, "play")
            t0 = time.perf_counter()
            while len(at) < 5 and time.perf_counter() - t0 < 90:
                if _title(driver) != seen[-1]:
                    seen.append(_title(driver))
                    at.append(round(time.perf_counter() - t0, 1))
                time.sleep(0.1)  # polling the page slows its drawing: not too often
            out["L-Town play, per step"] = at[-1] / len(at) if at else float("nan")
            # CPU seconds per step: what the load does not change much
            out["L-Town play, server CPU s per step"] = (_cpu_s(proc.pid) - cpu[0]) / len(at)
            out["L-Town play, browser CPU s per step"] = (_tree_cpu_s(browser) - cpu[1]) / len(at)
            print(f"  L-Town play: new steps seen at {at} s")
            _click(driver, "pause")
            start = time.perf_counter()
            driver.get(f"{url}/Molecules")
            _until(
                driver,
                lambda d: (
                    "model calls" in d.page_source
                    and d.find_elements(
                        "css selector", '[data-testid="stImage"] img, [data-testid="stPyplot"] img'
                    )
                ),
            )
            out["Molecules page, first view"] = time.perf_counter() - start
            replay_views(driver, url, replayed, out)
        except TimeoutError:  # a busy machine: keep what was measured, say where it stopped
            print(f"  {root}: stopped after {list(out)[-1:]}: a view took over 120 s")
        finally:
            driver.quit()
            _stop(proc)
    return out


FIRST_START = "first view, first server start (empty user cache), fresh browser"


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:  # a server too busy to stop
        proc.kill()
        proc.wait()


# The goals (seconds, quiet machine) by measured view; switching to any model <= 2 s.
SWITCH_GOAL = 2.0
GOALS = {
    "first view, fresh server (restarted), fresh browser: map and explanation shown": 5.0,
    "first view, warm server, fresh browser: map and explanation shown (median of 3)": 2.5,
    "time step (arrow key, mean of 3)": 0.5,
    "index k-SII -> FSII": 0.5,
    "new Hanoi scenario, 2 h (simulated, forecast, explained, drawn)": 6.0,
    f"hanoi-nodes: node {OTHER_NODE} explained on demand and drawn": 2.0,
    "L-Town play, per step": 0.6,
    "Molecules page, first view": 3.0,
    "Replay: a step (arrow key, drawn; mean of 3)": 0.5,
}


def _uptime() -> str:
    done = subprocess.run(["uptime"], capture_output=True, text=True)
    return done.stdout.strip() or f"load {os.getloadavg()[0]:.2f}"


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="another checkout to compare with")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--first-views", action="store_true", help="measure the first views only")
    parser.add_argument("--replay", action="store_true", help="measure the Replay page only")
    args = parser.parse_args()
    apps = [("old", args.old.resolve()), ("new", ROOT)] if args.old else [("new", ROOT)]
    print(f"machine: {os.cpu_count()} cores; uptime: {_uptime()}")
    for label, root in apps:
        print(f"{label}: {root} ({_commit(root)})")
    figures: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    replayed = replay_folder(Path(tempfile.mkdtemp(prefix="bench-replay-")))
    for _ in range(args.repeats):
        for label, root in apps:
            for name, seconds in sequence(root, replayed, args.first_views, args.replay).items():
                figures[name][label].append(seconds)
                print(f"  ({label}) {name}: {seconds:.2f}")  # kept if a later run fails
            print(f"  ({label} run done, load {os.getloadavg()[0]:.2f})")
    for name, runs in figures.items():
        limit = SWITCH_GOAL if name.startswith("switch to ") else GOALS.get(name)
        goal = f" (goal <= {limit:g} s)" if limit else ""
        print(
            f"{name}{goal}: "
            + "; ".join(
                f"{label} " + ", ".join(f"{s:.2f}" for s in v) + " s" for label, v in runs.items()
            )
        )
    print(f"at the end: uptime: {_uptime()}")


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "log", "-1", "--format=%h"], capture_output=True, text=True
    )
    return done.stdout.strip() or "not a git checkout"


if __name__ == "__main__":
    main()
