"""The Streamlit app, driven with AppTest (and once in a real browser, see test_browser.py)."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT

APP = str(ROOT / "app" / "main.py")


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    return AppTest.from_file(APP, default_timeout=180).run()


def si_graph(at):
    import json

    charts = [c for c in at.get("plotly_chart")]
    return json.loads(charts[0].proto.spec)


def as_array(value):
    """Plotly's JSON stores numeric arrays as typed base64 blocks."""
    import base64

    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value, dtype=float)


def node_colours(spec, frame=None):
    data = spec["frames"][frame]["data"] if frame is not None else spec["data"]
    return as_array(data[-1]["marker"]["color"])


def test_renders_on_defaults(app):
    assert not app.exception
    assert app.title[0].value.startswith("Why does the model expect chlorine")
    spec = si_graph(app)
    assert len(spec["frames"]) == 33
    assert spec["layout"]["sliders"] and spec["layout"]["updatemenus"]
    assert app.selectbox(key="scenario").value == "default scenario"
    assert len(app.get("plotly_chart")) == 4  # SI-Graph, forecast, chlorine map, node value


def test_controls_change_the_chart(app):
    before = si_graph(app)
    app.selectbox(key="index").set_value("SV").run()
    sv = si_graph(app)
    assert "SV" in sv["layout"]["title"]["text"]
    assert not np.allclose(node_colours(before, 10), node_colours(sv, 10))
    app.selectbox(key="index").set_value("k-SII").run()
    app.slider(key="order").set_value(3).run()
    third = si_graph(app)
    assert "order 3" in third["layout"]["title"]["text"]
    hulls = [tr for tr in third["frames"][10]["data"] if tr["name"].startswith("hyperedges")]
    assert any(np.isfinite(as_array(tr["x"])).any() for tr in hulls)
    app.slider(key="top_k").set_value(0).run()
    none = si_graph(app)
    pairs = [tr for tr in none["frames"][10]["data"] if tr["name"].startswith("pairs")]
    assert not any(np.isfinite(as_array(tr["x"])).any() for tr in pairs)


def test_step_slider_moves_the_panels(app):
    app.slider(key="step").set_value(12).run()
    forecast = [c for c in app.get("plotly_chart")][1]
    import json

    shapes = json.loads(forecast.proto.spec)["layout"]["shapes"]
    assert shapes[0]["x0"] == pytest.approx(12 * 5)


def test_new_scenario_form_runs_a_tiny_scenario(app, tmp_path):
    form = app.sidebar.text_input[0]
    form.set_value("12")
    app.sidebar.number_input[1].set_value(45)  # duration (min): 10 reports, 6 explained
    app.sidebar.button[0].click().run()
    assert not app.exception
    assert app.selectbox(key="scenario").value.startswith("scenario ")
    spec = si_graph(app)
    assert len(spec["frames"]) == 45 // 5 + 1 - 4
    assert list((tmp_path / "cache").glob("timeline_*.npz"))


def test_form_refuses_unknown_node(app):
    app.sidebar.text_input[0].set_value("99")
    app.sidebar.button[0].click().run()
    assert any(
        "injection node '99' is not in network 'hanoi'" in e.value for e in app.sidebar.error
    )
