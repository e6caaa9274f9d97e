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
    app.selectbox(key="new_node").set_value("12")
    app.number_input(key="new_duration").set_value(45)  # 10 reports, 6 explained
    app.sidebar.button[0].click().run()
    assert not app.exception
    assert app.selectbox(key="scenario").value.startswith("booster at 12, ")
    spec = si_graph(app)
    assert len(spec["frames"]) == 45 // 5 + 1 - 4
    assert list((tmp_path / "cache").glob("timeline_*.npz"))
    assert not app.warning  # inside the design: no notice


def test_form_offers_what_the_design_covers(app):
    import json

    card = json.loads((ROOT / "models" / "default" / "card.json").read_text())
    design = card["design"]
    shown = [o.split(" (")[0] for o in app.selectbox(key="new_node").options]
    assert shown == design["injection_nodes"]
    assert app.selectbox(key="new_mode").options == design["injection_modes"]
    strength = app.slider(key="new_strength")
    assert [strength.min, strength.max] == design["ranges"]["injection_strength_mg_l"]
    assert not app.warning and not app.info  # the default scenario lies inside the design


def test_notice_names_what_is_outside_the_design(tmp_path, monkeypatch, tiny_model_dir):
    """A model trained on reservoir injection only, shown the default booster scenario."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(tiny_model_dir))
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    assert len(at.warning) == 1
    assert "injection at node 20: this model never saw chlorine enter there" in at.warning[0].value
    assert "strength 1.5 mg/L: outside the trained range 1 mg/L" in at.warning[0].value


def test_notice_for_a_card_without_design(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(ROOT / "models" / "waq-paper"))
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    assert any("does not record the scenarios it was trained on" in i.value for i in at.info)
