"""The app on a node-level model (``models/hanoi-nodes``: chlorine at every node), driven
with AppTest; every expected number is read from the timeline files with ``np.load``."""

import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from test_app import as_array, charts, cursor, simulate_new, trace

from conftest import ROOT, inp_table, markdown_tables, widget

APP = str(ROOT / "app" / "main.py")
NODES = ROOT / "models" / "hanoi-nodes"


def raw(path) -> dict:
    """The timeline file's node arrays and meta, read without the code under test."""
    with np.load(path, allow_pickle=False) as data:
        out = {k: data[k] for k in data.files if k.startswith(("node_", "times_s"))}
        out["meta"] = json.loads(str(data["meta"]))
    return out


def column(arrays: dict, name: str, node: str) -> np.ndarray:
    """``arrays[name]`` at node id ``node``, shape (T,)."""
    return arrays[name][:, [str(v) for v in arrays["node_ids"]].index(node)]


def served(arrays: dict, node: str) -> np.ndarray:
    """The node's forecast as the page serves it: at most the scenario's highest
    concentration (its source's strength here: Hanoi starts without chlorine), as its
    interval is."""
    strength = arrays["meta"]["scenario"]["injection_strength_mg_l"]
    return np.minimum(column(arrays, "node_forecast", node), strength)


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(NODES))
    return AppTest.from_file(APP, default_timeout=240).run()


def shown_forecast(at) -> float:
    """The forecast the summary paragraph states, in mg/L at the explained node."""
    text = next(m.value for m in at.markdown if m.value.startswith("Forecast made at"))
    return float(re.search(r": (-?[\d.]+) mg/L chlorine at node", text).group(1))


def test_a_node_model_is_offered_and_shown_in_mg_l_at_its_target(app):
    """The model chooser offers it; summary, forecast chart and drivers speak mg/L at the
    explained node; the followed node's chart draws its forecast and interval."""
    assert not app.exception and not app.error
    assert app.selectbox(key="model").value == "hanoi-nodes"
    arrays = raw(NODES / "default_timeline.npz")
    target = arrays["meta"]["node"]
    picker = widget(app, "selectbox", "target")
    held = arrays["meta"]["target_nodes"]  # first, then every other node, on demand
    assert [o.split(" (")[0] for o in picker.options] == held + [
        str(v) for v in arrays["node_ids"] if str(v) not in held
    ]
    assert picker.value == target
    step = list(arrays["times_s"] // 60).index(cursor(app))
    expected = served(arrays, target)
    assert shown_forecast(app) == pytest.approx(expected[step], abs=0.005)
    text = next(m.value for m in app.markdown if m.value.startswith("Forecast made at"))
    assert f"mg/L chlorine at node {target}" in text and "share of nodes" not in text
    nodes = trace(charts(app)["si_graph"], "nodes")
    assert nodes["marker"]["colorbar"]["title"]["text"].endswith("(mg/L)")
    assert all(text.endswith("(mg/L)") for text in nodes["hovertext"])
    forecast = charts(app)["forecast"]
    assert np.allclose(as_array(trace(forecast, "forecast")["y"]), expected, atol=1e-6)
    assert forecast["layout"]["yaxis"]["title"]["text"] == "mg/L"
    html = next(b for b in app.get("download_button") if b.proto.label == "HTML report")
    assert html.proto.disabled  # reports draw share timelines only (as the CLI)
    followed = widget(app, "multiselect", "follow").value[0]
    assert followed == target  # not the injection node, which may not move its forecast
    node = charts(app)["node_chlorine"]
    for name, key in (
        ("forecast", "node_forecast"),
        ("forecast interval", "node_lower"),
        ("forecast interval upper", "node_upper"),
    ):
        drawn = as_array(trace(node, name)["y"])
        assert np.allclose(drawn, column(arrays, key, followed), atol=1e-6)
    # one time axis for the node's chlorine: the forecast chart draws it where (and on the
    # axis on which) the followed node's chart does, at the time the forecast is about
    axes = [c["layout"]["xaxis"] for c in (forecast, node)]
    assert axes == [{"ticksuffix": " min"}] * 2  # minutes on the ticks, no title on either
    np.testing.assert_allclose(
        as_array(trace(forecast, "forecast")["x"]), as_array(trace(node, "forecast")["x"])
    )


def test_the_forecast_counts_and_rings_nodes_below_the_minimum(app, hanoi):
    arrays = raw(NODES / "default_timeline.npz")
    step = list(arrays["times_s"] // 60).index(cursor(app))
    app.radio(key="map_view").set_value("compliance").run()
    taps = ~np.isin(hanoi.node_ids, list(inp_table(hanoi.inp_path, "RESERVOIRS")))
    for minimum in (0.2, 0.6):
        app.number_input(key="minimum").set_value(minimum).run()
        below = (arrays["node_forecast"][step] < minimum) & taps  # customer nodes only
        truth = int((arrays["node_truth"][step][taps] < minimum).sum())
        sentence = f"below it (simulated: {truth})."
        caption = next(c.value for c in app.caption if c.value.endswith(sentence))
        assert f": {int(below.sum())} of 31 below it" in caption
        rings = trace(charts(app)["chlorine"], "forecast below")
        xy = hanoi.map_coordinates[below]
        assert np.allclose(as_array(rings["x"]), xy[:, 0]) and len(as_array(rings["x"])) > 0
        assert np.allclose(as_array(rings["y"]), xy[:, 1])


def test_a_new_scenario_explains_the_nodes_picked_and_the_picker_switches(app, tmp_path, hanoi):
    """The form's nodes are the new timeline's targets; picking another one shows that
    node's forecast (read from the cached file) and keeps the time."""
    widget(app, "multiselect", "new_targets").set_value(["12", "27"])
    widget(app, "number_input", "new_duration").set_value(45)
    simulate_new(app)
    assert not app.exception and not app.error
    picker = widget(app, "selectbox", "target")
    assert picker.options[:2] == ["12", "27"] and len(picker.options) == hanoi.n_nodes
    (path,) = (tmp_path / "cache").glob("timeline_*.npz")
    arrays = raw(path)
    for node in ("27", "12"):
        widget(app, "selectbox", "target").set_value(node).run()
        assert not app.exception
        step = list(arrays["times_s"] // 60).index(cursor(app))
        forecast = served(arrays, node)[step]
        assert shown_forecast(app) == pytest.approx(forecast, abs=0.005)
        title = charts(app)["forecast"]["layout"]["title"]["text"]
        assert title.startswith(f"mg/L chlorine at node {node}")
        square = trace(charts(app)["si_graph"], "explained node")
        xy = hanoi.map_coordinates[hanoi.node_index(node)]
        assert np.allclose([as_array(square["x"])[0], as_array(square["y"])[0]], xy)


def test_any_node_is_explained_on_demand_from_the_current_scenario(app, hanoi):
    """Picking a node the shipped timeline does not explain: the page explains it (every
    step) and shows its forecast, values and square; the values add up to its forecast
    minus the reference forecast (efficiency, from the explanation itself) and the file
    is left as shipped."""
    from wdn_explain.timeline import Timeline

    arrays = raw(NODES / "default_timeline.npz")
    node = next(str(v) for v in arrays["node_ids"] if str(v) not in arrays["meta"]["target_nodes"])
    before = (NODES / "default_timeline.npz").stat().st_mtime_ns
    widget(app, "selectbox", "target").set_value(node).run()
    assert not app.exception and not app.error
    step = list(arrays["times_s"] // 60).index(cursor(app))
    assert shown_forecast(app) == pytest.approx(served(arrays, node)[step], abs=0.005)
    text = next(m.value for m in app.markdown if m.value.startswith("Forecast made at"))
    assert f"mg/L chlorine at node {node}" in text
    square = trace(charts(app)["si_graph"], "explained node")
    xy = hanoi.map_coordinates[hanoi.node_index(node)]
    assert np.allclose([as_array(square["x"])[0], as_array(square["y"])[0]], xy)
    values = trace(charts(app)["si_graph"], "nodes")
    assert len(as_array(values["marker"]["color"])) == hanoi.n_nodes
    assert (NODES / "default_timeline.npz").stat().st_mtime_ns == before
    assert node not in Timeline.load(NODES / "default_timeline.npz").targets


def test_the_risk_of_non_compliance_is_mapped_tabled_and_charted(app, hanoi):
    """The shipped node model's risk, read from its timeline file: the risk map colours
    every node by it (and its hover states it), the table lists the nodes most at risk, the
    followed node's chart draws it on its own axis."""
    arrays = raw(NODES / "default_timeline.npz")
    step = list(arrays["times_s"] // 60).index(cursor(app))
    risk = arrays["node_risk"][step]
    app.radio(key="map_view").set_value("risk").run()
    assert not app.exception
    ids = [str(v) for v in arrays["node_ids"]]
    # the reservoir is a source, not a customer tap: no colour, no row, its hover says so
    tap = ~np.isin(ids, list(inp_table(hanoi.inp_path, "RESERVOIRS")))
    assert (~tap).sum() == 1
    nodes = trace(charts(app)["chlorine"], "risk")
    colours = as_array(nodes["marker"]["color"])
    assert np.allclose(colours[tap], risk[tap], atol=1e-6) and np.isnan(colours[~tap]).all()
    assert nodes["hovertext"][int(np.flatnonzero(~tap)[0])].endswith("no minimum residual")
    riskiest = int(np.argmax(np.where(tap, risk, -1)))
    assert nodes["hovertext"][riskiest].endswith(f"in 20 min: {risk[riskiest]:.0%}")
    table = next(t for t in markdown_tables(app) if "node" in t[0])
    # riskiest first as the table shows it (whole percent), then the lowest forecast
    forecast = arrays["node_forecast"][step]
    rank = sorted(np.flatnonzero(tap), key=lambda i: (-round(100 * risk[i]), forecast[i], i))
    expected = [ids[i] for i in rank[:10]]
    assert [row["node"] for row in table] == expected
    for row in table:  # a forecast below 0 mg/L reads as 0, as its interval: never outside
        low, high = map(float, row["interval (mg/L)"].split("–"))
        assert low <= float(row["forecast (mg/L)"]) <= high, row
    node = charts(app)["node_chlorine"]
    followed = widget(app, "multiselect", "follow").value[0]
    drawn = trace(node, "risk < 0.2 mg/L in 20 min")
    assert np.allclose(as_array(drawn["y"]), column(arrays, "node_risk", followed), atol=1e-6)
    assert drawn["yaxis"] == "y2" and node["layout"]["yaxis2"]["range"] == [0, 1]
