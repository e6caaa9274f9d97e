"""The upload of a utility's own network in a real browser (headless Chromium, 1280x900, as
tests/test_browser.py): an unusable .inp is refused in one message without a traceback
(default); Net1's .inp is built into a model that the app chooses and draws (slow: about a
minute). Screenshots go to artifacts/."""

# ruff: noqa: F811 (the tests take test_browser's `server` fixture, imported below, by name)

from __future__ import annotations

import time

import pytest
from test_browser import (  # noqa: F401
    CHROMIUM,
    DRIVER,
    SHOTS,
    SIDEBAR_JS,
    chromium,
    click_button,
    read_minutes,
    retried,
    server,
    settled,
    summary_text,
)

from wdn_explain.network import builtin_network_path

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (CHROMIUM and DRIVER), reason="needs Debian chromium and chromium-driver"
    ),
]

OPEN_EXPANDER_JS = """
const s = [...document.querySelectorAll('section[data-testid="stSidebar"] summary')]
  .find(e => e.innerText.includes(arguments[0]));
if (s) { s.click(); } return !!s;
"""


@pytest.fixture
def user_models(tmp_path, monkeypatch):
    """An empty user models folder, set before the server starts (the server's environment)."""
    monkeypatch.setenv("WDN_EXPLAIN_MODELS", str(tmp_path / "mine"))
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    return tmp_path / "mine"


@pytest.fixture
def driver():
    chrome = chromium()
    yield chrome
    chrome.quit()


def upload_and_build(driver, url: str, inp, n_scenarios: int = 8):
    """Open the app, upload ``inp`` in the sidebar's own-network section, ask for
    ``n_scenarios`` and press build; returns the wait."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    wait = WebDriverWait(
        driver, 240, poll_frequency=0.5, ignored_exceptions=[StaleElementReferenceException]
    )
    settled(driver, wait, lambda d: summary_text(d))  # the first view is up
    assert driver.execute_script(OPEN_EXPANDER_JS, "your own network")
    field = wait.until(
        lambda d: d.find_element(
            By.CSS_SELECTOR, 'section[data-testid="stSidebar"] input[type=file]'
        )
    )
    field.send_keys(str(inp))
    wait.until(
        lambda d: (
            inp.name in d.find_element(By.CSS_SELECTOR, 'section[data-testid="stSidebar"]').text
        )
    )

    def type_scenarios():
        box = next(
            e
            for e in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stNumberInput"]')
            if e.text.startswith("scenarios")
        ).find_element(By.CSS_SELECTOR, "input")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(str(n_scenarios), Keys.TAB)

    retried(type_scenarios)
    time.sleep(1.0)
    click_button(driver, "build the model")
    return wait


def test_unusable_upload_refused_in_the_browser(user_models, server, driver, tmp_path):
    bad = tmp_path / "pumps.inp"
    bad.write_text("[TITLE]\nnot a network at all\n")
    wait = upload_and_build(driver, server, bad)
    wait.until(lambda d: "is not an EPANET network" in d.page_source)
    page = driver.page_source
    assert "network file 'pumps.inp' is not an EPANET network" in page
    assert "Traceback" not in page
    assert not user_models.exists()  # nothing written
    driver.save_screenshot(str(SHOTS / "app_upload_refused.png"))


@pytest.mark.slow
def test_uploaded_net1_is_built_chosen_and_drawn(user_models, server, driver, tmp_path):
    inp = tmp_path / "Mytown.inp"
    inp.write_bytes(builtin_network_path("net1").read_bytes())
    wait = upload_and_build(driver, server, inp)
    wait.until(lambda d: d.execute_script(SIDEBAR_JS)[0].get("model") == "mytown (mytown)")
    times = settled(driver, wait, lambda d: "mytown" in d.page_source and summary_text(d))
    assert read_minutes(driver) == times  # the map, chart and chlorine map agree on one time
    assert "network mytown: 11 nodes, 13 links" in driver.page_source
    assert (user_models / "mytown" / "default_timeline.npz").is_file()
    driver.save_screenshot(str(SHOTS / "app_upload_built.png"))
