"""One real-browser check: `streamlit run app/main.py` in headless Chromium shows the map
and the time slider. A screenshot is kept in artifacts/ for a person to look at."""

from __future__ import annotations

import os
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    port = free_port()
    env = {**os.environ, "WDN_EXPLAIN_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app" / "main.py"),
            "--server.headless=true",
            f"--server.port={port}",
            "--server.address=127.0.0.1",
            "--browser.gatherUsageStats=false",
        ],
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


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian chromium and chromium-driver")
def test_app_in_headless_chromium(server):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
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
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        driver.get(server)
        wait = WebDriverWait(driver, 120)
        wait.until(
            ec.presence_of_element_located((By.CSS_SELECTOR, ".js-plotly-plot .scatterlayer"))
        )
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")) >= 3)
        time.sleep(1.0)
        maps = driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
        # the SI-Graph: node markers over the pipes, and Plotly's animation slider
        assert maps[0].find_elements(By.CSS_SELECTOR, ".scatterlayer .trace .points path")
        assert maps[0].find_elements(By.CSS_SELECTOR, ".slider-container")
        assert "Why does the model expect chlorine there?" in driver.page_source
        (ROOT / "artifacts").mkdir(exist_ok=True)
        driver.save_screenshot(str(ROOT / "artifacts" / "app.png"))
    finally:
        driver.quit()
