"""One real-browser check of the app as a water engineer uses it: `streamlit run app/main.py`
(from the repository root, so `.streamlit/config.toml` applies) in headless Chromium with a
1280x900 viewport. It opens the first view (chlorine on the map, the SI-Graph inside the
first 900 px), plays the animation (the map stays there), switches every index, runs a new
scenario (the followed node moves to its injection node) and an error case, switches to
L-Town and reads the sidebar, and asserts on what the page shows: the summary sentence and
every panel's time equal to the map's. Screenshots go to artifacts/ (git-ignored)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import ROOT

pytestmark = pytest.mark.browser

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
SHOTS = ROOT / "artifacts"

PANELS_JS = """
const plots = [...document.querySelectorAll('.js-plotly-plot')];
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


# Where the SI-Graph (the first chart) lies on the screen, and what the sidebar shows.
RECT_JS = """
const r = document.querySelector('.js-plotly-plot').getBoundingClientRect();
return [r.top, r.bottom, window.innerHeight];
"""
SIDEBAR_JS = """
const boxes = [...document.querySelectorAll('section[data-testid="stSidebar"] input[role=combobox]')];
const follow = [...document.querySelectorAll('[data-testid="stMultiSelect"]')].map(e => e.innerText);
return [Object.fromEntries(boxes.map(e => [e.getAttribute('aria-label'), e.value])), follow];
"""
CHLORINE_JS = """
const p = [...document.querySelectorAll('.js-plotly-plot')][2];
const t = p._fullData.find(t => t.name === 'chlorine');
return Math.max(...Array.from(t.marker.color));
"""


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


def pick(driver, label: str, option: str) -> None:
    """Choose ``option`` in the selectbox labelled ``label`` (a combobox with a listbox)."""
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.CSS_SELECTOR, f'input[role="combobox"][aria-label="{label}"]')
    box.find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, "button").click()
    time.sleep(0.5)
    for item in driver.find_elements(By.CSS_SELECTOR, '[role="option"]'):
        if item.text.strip() == option:
            item.click()
            return
    raise AssertionError(f"no option {option!r} in {label!r}")


def click_button(driver, text: str) -> None:
    """Click the button labelled ``text`` (in one script: the page may redraw meanwhile)."""
    clicked = driver.execute_script(
        "const b = [...document.querySelectorAll('button')]"
        ".find(b => b.innerText.trim() === arguments[0]); if (b) { b.click(); } return !!b;",
        text,
    )
    assert clicked, f"no button {text!r}"


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


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian chromium and chromium-driver")
def test_app_in_headless_chromium(server):
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

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
    try:
        driver.get(server)
        wait = WebDriverWait(
            driver, 180, poll_frequency=0.5, ignored_exceptions=[StaleElementReferenceException]
        )
        first = settled(driver, wait, lambda d: summary_text(d))
        # the first view: an informative frame, its sentence naming drivers, no toolbars
        minute = first["map"]
        from wdn_explain.shipped import DEFAULT_TIMELINE
        from wdn_explain.timeline import Timeline

        shipped = Timeline.load(DEFAULT_TIMELINE)  # with the dosing plan: from step 0 on
        shipped = shipped.relative_to(shipped.default_reference)
        # the first informative step at which some node carries chlorine (no blank map)
        step = next(
            t
            for t in range(shipped.first_informative_step(), len(shipped))
            if (shipped.chlorine[t] > 0).any()
        )
        assert minute == shipped.times_s[step] // 60
        text = summary_text(driver)
        assert text.startswith(f"Forecast made at {minute:.0f} min for {minute + 20:.0f} min: ")
        assert "raise" in text and "share of nodes chlorinated" in text
        charts = driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        assert charts[0].find_elements(By.CSS_SELECTOR, ".modebar")  # maps: zoom, PNG
        assert not charts[1].find_elements(By.CSS_SELECTOR, ".modebar")  # not over titles
        assert "Deploy" not in driver.find_element(By.TAG_NAME, "header").text
        top, bottom, height = driver.execute_script(RECT_JS)
        assert height == 900 and 0 < top and bottom <= 900  # the SI-Graph in the first screen
        assert driver.execute_script(CHLORINE_JS) > 0  # chlorine on the first map
        assert "source on" in driver.page_source
        driver.save_screenshot(str(SHOTS / "app_first_view.png"))

        # play: every panel moves with the map; pause keeps the time
        click_button(driver, "▶ play")
        wait.until(lambda d: (read_minutes(d) or {"map": 0})["map"] >= minute + 10)
        assert driver.execute_script(RECT_JS)[1] <= 900  # still in the first screen
        click_button(driver, "❚❚ pause")
        still(driver, wait)
        click_button(driver, "❚❚ pause")  # a click landing during a frame's rerun may be lost
        played = still(driver, wait)
        assert played["map"] >= minute + 10
        assert summary_text(driver).startswith(f"Forecast made at {played['map']:.0f} min")
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
        assert "default:" not in scenario and scenario.startswith("reservoir, ")
        assert ", 0.75 h [" in scenario  # no derived seed, the short hash instead
        # the followed node is the new scenario's injection node (the reservoir, 1)
        wait.until(lambda d: d.execute_script(SIDEBAR_JS)[1] == ["node (or pair) to follow\n\n1"])
        driver.save_screenshot(str(SHOTS / "app_new_scenario.png"))

        # another model: the sidebar, the followed node and the map are all L-Town's
        retried(lambda: pick(driver, "model", "l-town (l-town)"))
        wait.until(lambda d: "n303" in summary_text(d))
        boxes, follow = driver.execute_script(SIDEBAR_JS)
        assert boxes["scenario"].startswith("default: booster at n303")
        from wdn_explain.shipped import model_network

        ltown = model_network(ROOT / "models" / "l-town").node_ids
        assert boxes["injection node"].split(" (")[0] in ltown  # not Hanoi's "1 (reservoir)"
        assert follow == ["node (or pair) to follow\n\nn303"]
        assert driver.execute_script(RECT_JS)[1] <= 900
        driver.save_screenshot(str(SHOTS / "app_l_town.png"))
    finally:
        driver.quit()
