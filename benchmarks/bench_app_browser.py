"""App responsiveness in a real browser (headless Chromium at 1280x900), one figure per line.

What a user waits for, measured from the action to the page showing its result (read from
Plotly's own data in the page): the first view from a fresh server and from a warm one, a
time step (arrow key on the time slider), an index change, switching to every shipped
model, the Molecules page's first view, and play on L-Town (seconds per step over a few
steps). Compared in the same run with the server's own time for the same views (AppTest,
``benchmarks/bench_app.py``): the rest is transfer and drawing in the browser.

Run from the repository root on an otherwise idle machine:
``OMP_NUM_THREADS=1 python benchmarks/bench_app_browser.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TITLE_JS = """
const p = document.querySelector('.js-plotly-plot');
return p && p._fullLayout && p._fullLayout.title ? p._fullLayout.title.text || '' : '';
"""


# the node count and colours of the SI-Graph's node trace (what changes with a new view)
NODES_JS = """
const p = document.querySelector('.js-plotly-plot');
const t = p && p._fullData ? p._fullData.find(t => t.name === 'nodes') : null;
return t ? [t.x.length, Array.from(t.marker.color).slice(0, 40).join(',')] : null;
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(cache: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "WDN_EXPLAIN_CACHE": cache, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", f"--server.port={port}"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.25)
    raise RuntimeError("the server did not start")


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
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )
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


def _pick(driver, label: str, option: str) -> None:
    """Choose ``option`` in the selectbox ``label`` once the page is idle."""
    from selenium.webdriver.common.by import By

    _until(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'))
    time.sleep(0.5)
    box = driver.find_element(By.CSS_SELECTOR, f'input[role="combobox"][aria-label="{label}"]')
    box.find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, "button").click()
    time.sleep(0.3)
    for item in driver.find_elements(By.CSS_SELECTOR, '[role="option"]'):
        if item.text.strip().startswith(option):
            item.click()
            return
    raise LookupError(f"no option {option!r} in {label!r}")


def _step_right(driver) -> None:
    from selenium.webdriver.common.by import By

    thumb = driver.find_element(
        By.CSS_SELECTOR, 'input[type="range"][aria-label="forecast made at (min)"]'
    )
    thumb.send_keys("\ue014")  # arrow right


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as cache:
        proc, url = _server(cache)
        driver = _driver()
        try:
            start = time.perf_counter()
            driver.get(url)
            _until(driver, lambda d: "forecast made at" in _title(d))
            print(f"first view, fresh server: {time.perf_counter() - start:.2f} s")
            start = time.perf_counter()
            driver.get(url)
            _until(driver, lambda d: "forecast made at" in _title(d))
            print(f"first view, warm server: {time.perf_counter() - start:.2f} s")
            before = _title(driver)
            _step_right(driver)
            seconds = _until(driver, lambda d: _title(d) != before and "forecast made" in _title(d))
            print(f"time step (arrow key): {seconds:.2f} s")
            _pick(driver, "index", "FSII")
            seconds = _until(driver, lambda d: "FSII of order" in _title(d))
            print(f"index k-SII -> FSII: {seconds:.2f} s")
            for model, n_nodes in (("waq-paper", 32), ("l-town", 785), ("default", 32)):
                before = driver.execute_script(NODES_JS)
                _pick(driver, "model", model)
                seconds = _until(
                    driver,
                    lambda d, n=n_nodes, b=before: (
                        (now := d.execute_script(NODES_JS)) != b and now and now[0] == n
                    ),
                )
                print(f"switch to {model}: {seconds:.2f} s")
            _pick(driver, "model", "l-town")
            _until(driver, lambda d: "785 nodes" in d.page_source and "forecast made" in _title(d))
            time.sleep(1)
            first = _title(driver)
            driver.execute_script(
                "[...document.querySelectorAll('button')].find(b => b.innerText.includes('play')).click()"
            )
            _until(driver, lambda d: _title(d) != first)
            seen, t0 = [_title(driver)], time.perf_counter()
            while len(seen) < 5 and time.perf_counter() - t0 < 90:
                if _title(driver) != seen[-1]:
                    seen.append(_title(driver))
                time.sleep(0.1)  # polling the page slows its drawing: not too often
            per_step = (time.perf_counter() - t0) / (len(seen) - 1)
            print(f"L-Town play: {per_step:.2f} s per step over {len(seen) - 1} steps")
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
            print(f"Molecules page, first view: {time.perf_counter() - start:.2f} s")
        finally:
            driver.quit()
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
