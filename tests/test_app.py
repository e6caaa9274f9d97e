"""The Streamlit app, driven with AppTest (and once in a real browser, see test_browser.py)."""

import json
import os

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from wdn_explain.narrative import summary
from wdn_explain.plot import opening_step
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.shipped import DEFAULT_TIMELINE
from wdn_explain.timeline import DEFAULT_REFERENCE, Timeline, read_meta, settings_of

from conftest import ROOT, chart_figures, inp_table, markdown_tables, widget

APP = str(ROOT / "app" / "main.py")


@pytest.fixture(scope="module")
def tl():
    return Timeline.load(DEFAULT_TIMELINE).relative_to(DEFAULT_REFERENCE)


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    return AppTest.from_file(APP, default_timeout=180).run()


def specs(at) -> list[dict]:
    return list(chart_figures(at).values())


def as_array(value):
    """Plotly's JSON stores numeric arrays as typed base64 blocks."""
    import base64

    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value, dtype=float)


def trace(spec, name):
    return next(tr for tr in spec["data"] if tr.get("name") == name)


def charts(at) -> dict[str, dict]:
    """Every chart's spec by its widget key."""
    return chart_figures(at)


def panel_minutes(at) -> dict[str, float]:
    """The time each panel shows, read from the panel itself (title, marker, outlined bar)."""
    by_key = charts(at)
    si, forecast, chlorine = by_key["si_graph"], by_key["forecast"], by_key["chlorine"]
    value = [by_key["value"]] if "value" in by_key else []
    out = {
        "map": int(si["layout"]["title"]["text"].split("forecast made at ")[1].split(" min")[0]),
        "forecast": as_array(trace(forecast, "now")["x"])[0],
        "chlorine": int(chlorine["layout"]["title"]["text"].split("chlorine at ")[1].split()[0]),
    }
    if value:
        bar = value[0]["data"][0]
        widths = as_array(bar["marker"]["line"]["width"])
        out["followed"] = as_array(bar["x"])[int(np.argmax(widths))]
    if "node_chlorine" in by_key:
        out["node chlorine"] = as_array(trace(by_key["node_chlorine"], "now")["x"])[0]
    return out


def simulate_new(at) -> None:
    """Press the new-scenario form's button (by its label: the sidebar has other buttons)."""
    next(b for b in at.sidebar.button if b.label == "simulate, forecast, explain").click().run()


def cursor(at) -> int:
    return at.select_slider(key="time_min").value


def test_first_view_is_informative_with_plain_words(app, tl, hanoi):
    assert not app.exception
    assert app.subheader[0].value.startswith("Why does the model expect chlorine")
    assert not app.dataframe and not app.json  # nothing stray on the page
    assert not app.table  # no data frame element: its scripts would load into a new browser
    assert len(markdown_tables(app)) == 1  # the drivers (test_drivers_table_ranks_the_values)
    m = json.loads((ROOT / "models" / "default" / "card.json").read_text())["metrics"]
    scores = [c.value for c in app.sidebar.caption if c.value.startswith("test MAE")]
    assert scores[0].startswith(f"test MAE {m['mae']:.4f} (persistence")  # the card's
    assert f"tree {m['tree_mae']:.4f}" in scores[0]  # ... beside the tree's
    assert widget(app, "selectbox", "scenario").value.startswith("default: booster at 2, 1.5 mg/L")
    # SI-Graph, forecast, chlorine map, node value, node chlorine
    assert list(charts(app)) == ["si_graph", "forecast", "chlorine", "value", "node_chlorine"]
    # it opens on the first informative step at which chlorine has left its source (two
    # nodes carry it; with the dosing plan as input even step 0 can be informative)
    step = next(
        t for t in range(tl.first_informative_step(), len(tl)) if (tl.chlorine[t] > 0).sum() >= 2
    )
    assert cursor(app) == tl.times_s[step] // 60
    assert set(panel_minutes(app).values()) == {tl.times_s[step] // 60}
    text = summary(tl, hanoi, step, "k-SII", 2)
    assert any(m.value == text for m in app.markdown)
    si = specs(app)[0]
    colours = as_array(trace(si, "nodes")["marker"]["color"])
    np.testing.assert_allclose(colours, tl.node_values("k-SII", 2)[step])
    assert np.abs(colours).max() > 0  # not the blank first frame
    caption = app.caption[0].value
    assert "chlorinated: at least 0.05 mg/L" in caption and "relative to no chlorine" in caption
    assert "seed" not in caption and "scroll to zoom" in caption


def test_first_chlorine_map_shows_chlorine_labels_and_the_source(app, tl):
    si, _, chlorine, *_ = specs(app)
    step = opening_step(tl)
    colours = as_array(trace(chlorine, "chlorine")["marker"]["color"])
    np.testing.assert_allclose(colours, tl.chlorine[step])
    assert colours.max() > 0  # not an all-white map
    labels = trace(chlorine, "chlorine")["text"]
    assert sorted(labels, key=int) == [str(i) for i in range(1, 33)]  # Hanoi's node ids
    # the source: node 2, on at the opening step (a booster from 10 min, 60 min on, 30 min off)
    for spec in (si, chlorine):  # on one line or more (where the map has room)
        (text,) = trace(spec, "source")["text"]
        assert text.replace("<br>", " ") == "2: source on (1.5 mg/L)"
    app.select_slider(key="time_min").set_value(75).run()  # 70..100 min: off
    (text,) = trace(specs(app)[0], "source")["text"]
    assert text.replace("<br>", " ") == "2: source off"
    assert trace(specs(app)[2], "source")["marker"]["color"] == "#888"


def test_find_a_node_zooms_both_maps_onto_it(app, hanoi):
    widget(app, "selectbox", "find").set_value("12").run()
    x, y = hanoi.map_coordinates[hanoi.node_index("12")]
    for spec in (specs(app)[0], specs(app)[2]):
        assert trace(spec, "found")["text"] == ["12"]
        lo, hi = spec["layout"]["xaxis"]["range"]
        assert lo < x < hi and hi - lo < np.ptp(hanoi.map_coordinates[:, 0]) / 2
        lo, hi = spec["layout"]["yaxis"]["range"]
        assert lo < y < hi


def test_moebius_is_spelt_for_people(app):
    assert "Möbius" in app.selectbox(key="index").options
    app.selectbox(key="index").set_value("Moebius").run()
    assert specs(app)[0]["layout"]["title"]["text"].startswith("Möbius of order 2, ")
    assert "Moebius" not in json.dumps(specs(app)[0], ensure_ascii=False)


def test_controls_keep_the_time_and_every_panel_follows(app, tl):
    app.select_slider(key="time_min").set_value(45).run()
    for change in (
        lambda: app.selectbox(key="index").set_value("SV"),
        lambda: app.selectbox(key="index").set_value("FSII"),
        lambda: app.slider(key="order").set_value(3),
        lambda: app.slider(key="top_k").set_value(0),
        lambda: app.radio(key="reference").set_value("mean"),
    ):
        change().run()
        assert not app.exception
        assert cursor(app) == 45
        assert set(panel_minutes(app).values()) == {45}
    si = specs(app)[0]
    assert si["layout"]["title"]["text"].startswith("FSII of order 3, forecast made at 45 min")
    assert "the network average" in si["layout"]["title"]["text"]
    step = 45 // 5
    np.testing.assert_allclose(
        as_array(trace(si, "nodes")["marker"]["color"]),
        tl.relative_to("mean").node_values("FSII", 3)[step],
    )


def test_play_moves_every_panel_together_and_stops_at_the_end(app, tl):
    start = cursor(app)
    app.button(key="play").click().run()
    assert cursor(app) == start + 5
    app.run()  # one more tick
    assert cursor(app) == start + 10
    assert set(panel_minutes(app).values()) == {start + 10}
    app.selectbox(key="index").set_value("STII").run()  # a change while playing keeps going
    assert set(panel_minutes(app).values()) == {cursor(app)}
    app.button(key="pause").click().run()
    paused = cursor(app)
    app.run()
    assert cursor(app) == paused
    last = int(tl.times_s[-1] // 60)
    app.select_slider(key="time_min").set_value(last - 5).run()
    app.button(key="play").click().run()
    assert cursor(app) == last
    app.run()  # at the end: stops there
    assert cursor(app) == last
    app.run()
    assert cursor(app) == last


def _notes(app) -> list[str]:
    """The page's info boxes, less the forecast's uncertainty notice (the default scenario,
    a trunk booster switched on and off, is one the model is expected to get wrong more often
    than usual: it fires there)."""
    return [i.value for i in app.info if not i.value.startswith("uncertain forecast")]


def test_follow_messages(app):
    widget(app, "multiselect", "follow").set_value([]).run()
    assert "Pick a node" in _notes(app)[0]
    widget(app, "multiselect", "follow").set_value(["2", "13"]).run()
    assert "nodes 2 and 13 never interact" in _notes(app)[0]
    assert "0 at every step" in _notes(app)[0]
    assert list(charts(app)) == ["si_graph", "forecast", "chlorine", "node_chlorine"]
    app.selectbox(key="index").set_value("SV").run()
    assert "SV of order 1 has no pair values" in _notes(app)[0]
    app.selectbox(key="index").set_value("k-SII").run()
    widget(app, "multiselect", "follow").set_value(["20", "21"]).run()
    assert not _notes(app) and len(charts(app)) == 5
    assert charts(app)["value"]["layout"]["title"]["text"] == "k-SII of {20, 21} over time"
    assert "node 20" in charts(app)["node_chlorine"]["layout"]["title"]["text"]  # the first


def test_download_buttons(app):
    labels = [b.proto.label for b in app.get("download_button")]
    assert labels == ["values (CSV, node ids)", "shapiq JSON (zip)", "HTML report"]


def test_new_scenario_form_runs_a_tiny_scenario(app, tmp_path):
    widget(app, "selectbox", "new_node").set_value("12")
    widget(app, "number_input", "new_duration").set_value(45)  # 10 reports, 6 explained
    simulate_new(app)
    assert not app.exception
    assert widget(app, "selectbox", "scenario").value.startswith("booster at 12, ")
    assert widget(app, "multiselect", "follow").value == ["12"]  # its own injection node
    assert len(specs(app)) >= 3  # SI-Graph, forecast, chlorine (and 20's value if it moves)
    assert list((tmp_path / "cache").glob("timeline_*.npz"))
    assert not [w for w in app.warning if "Outside what" in w.value]  # inside the design
    assert set(panel_minutes(app).values()) == {cursor(app)}


def test_a_new_scenario_is_drawn_as_its_file_holds_it_without_reading_it(
    app, tmp_path, monkeypatch, hanoi
):
    """The form's timeline is shown from memory (not read back from the file just written),
    and what is drawn equals the file's values bit for bit."""
    from pathlib import Path

    read = []
    load = Timeline.load.__func__
    monkeypatch.setattr(
        Timeline, "load", classmethod(lambda cls, p: read.append(Path(p).name) or load(cls, p))
    )
    widget(app, "selectbox", "new_node").set_value("12")
    widget(app, "number_input", "new_duration").set_value(45)
    simulate_new(app)
    assert not app.exception
    (made,) = (tmp_path / "cache").glob("timeline_*.npz")
    assert made.name not in read
    tl = load(Timeline, made).relative_to(DEFAULT_REFERENCE)
    step = [int(t // 60) for t in tl.times_s].index(cursor(app))
    colours = as_array(trace(charts(app)["si_graph"], "nodes")["marker"]["color"])
    np.testing.assert_array_equal(colours, tl.node_values("k-SII", 2)[step])
    assert any(m.value == summary(tl, hanoi, step, "k-SII", 2) for m in app.markdown)


def test_reruns_read_cached_files_once_per_version(app, tmp_path, monkeypatch):
    """The scenario picker's names and the checks that a timeline is current are read once
    per version of a file: a control change opens no cached file; a rewritten one is read
    again and named anew."""
    widget(app, "selectbox", "new_node").set_value("12")
    widget(app, "number_input", "new_duration").set_value(45)
    simulate_new(app)
    (made,) = (tmp_path / "cache").glob("timeline_*.npz")
    opened = []
    load = np.load
    monkeypatch.setattr(np, "load", lambda f, *a, **k: opened.append(str(f)) or load(f, *a, **k))
    app.selectbox(key="index").set_value("FSII").run()
    assert not app.exception
    assert [f for f in opened if f.startswith(str(tmp_path))] == []
    tl = Timeline.load(made)
    tl.meta["scenario"]["injection_node"] = "13"  # as if another run had replaced the file
    tl.meta["scenario_hash"] = ScenarioConfig.from_record(tl.meta["scenario"]).config_hash()
    tl.save(made)
    app.selectbox(key="index").set_value("STII").run()
    assert not app.exception
    assert str(made) in opened
    options = widget(app, "selectbox", "scenario").options
    assert any(o.startswith("booster at 13, ") for o in options)
    assert not any(o.startswith("booster at 12, ") for o in options)


def test_an_approximation_from_the_form_is_labelled_as_one(app, tmp_path):
    """lambda >= 1 in the form: its own cache file, named as an approximation in the scenario
    picker and the caption; the exact default stays listed beside it."""
    widget(app, "selectbox", "new_node").set_value("12")
    widget(app, "number_input", "new_duration").set_value(45)
    widget(app, "number_input", "new_budget").set_value(1)
    simulate_new(app)
    assert not app.exception
    chosen = widget(app, "selectbox", "scenario").value
    assert chosen.startswith("booster at 12, ") and "(approximation, lambda = 1)" in chosen
    cached = [read_meta(p) for p in (tmp_path / "cache").glob("*.npz")]
    assert [settings_of(meta).approximation_lambda for meta in cached] == [1]
    assert "lambda-approximation (lambda = 1), not exact" in " ".join(c.value for c in app.caption)
    assert any(o.startswith("default: ") for o in widget(app, "selectbox", "scenario").options)


@pytest.mark.parametrize("minutes", [0, 20, 100000])
def test_new_scenario_form_names_a_bad_duration(app, tmp_path, minutes):
    widget(app, "number_input", "new_duration").set_value(minutes)
    simulate_new(app)
    assert not app.exception
    (error,) = app.sidebar.error
    assert error.value.startswith("duration must be between 30 and 720 min")
    assert f"(got {minutes} min)" in error.value
    assert not list((tmp_path / "cache").glob("timeline_*.npz"))


def test_form_offers_what_the_design_covers(app):
    card = json.loads((ROOT / "models" / "default" / "card.json").read_text())
    design = card["design"]
    shown = [o.split(" (")[0] for o in widget(app, "selectbox", "new_node").options]
    assert shown == design["injection_nodes"]
    assert widget(app, "selectbox", "new_mode").options == design["injection_modes"]
    strength = widget(app, "slider", "new_strength")
    assert [strength.min, strength.max] == design["ranges"]["injection_strength_mg_l"]
    # the default scenario lies inside the design and is physical (pressure-driven, every
    # demand delivered): no notice at all, as the shipped timeline's metadata records
    meta = read_meta(ROOT / "models" / "default" / "default_timeline.npz")
    assert meta["scenario"]["demand_model"] == "PDA"
    assert meta.get("pressure_warning") is None and meta.get("delivery_warning") is None
    assert not app.warning and not _notes(app)  # (the uncertainty notice is the timeline's)


def test_runs_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception and not at.error
    assert len(charts(at)) == 5


def test_notice_names_what_is_outside_the_design(tmp_path, monkeypatch, tiny_model_dir):
    """A model trained on reservoir injection only, shown the default booster scenario."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(tiny_model_dir))
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    (outside,) = [w.value for w in at.warning if "Outside what" in w.value]
    assert "injection at node 2: this model never saw chlorine enter there" in outside
    assert "strength 1.5 mg/L: outside the trained range 1 mg/L" in outside


def test_notice_for_a_card_without_design(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(ROOT / "models" / "waq-paper"))
    at = AppTest.from_file(APP, default_timeout=180).run()
    assert not at.exception
    # under the model picker, not above the map (where it pushed the SI-Graph down)
    note = "does not record the scenarios it was trained on"
    assert any(note in i.value for i in at.sidebar.info)
    assert not any(note in i.value for i in at.main.info)
    # the form follows the card: what the model was trained on (read from the card here),
    # its default scenario proposed (reservoir 1 at 1 mg/L), never "the only value it saw"
    from wdn_explain.model_folder import read_card
    from wdn_explain.shipped import default_scenario, model_network

    model = ROOT / "models" / "waq-paper"
    card, paper = read_card(model), default_scenario(model, model_network(model))
    heading = next(m.value for m in at.sidebar.markdown if "New scenario" in m.value)
    assert "records no training design" in heading and "within what" not in heading
    assert f"{card.data.n_scenarios} scenarios of {card.data.folder}" in heading
    assert widget(at, "selectbox", "new_node").value == "1"  # the reservoir
    assert widget(at, "slider", "new_strength").value == paper.injection_strength_mg_l
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "only value this model saw" not in captions
    assert f"demand level (x base demand): {paper.demand_scale:g} (its default" in captions


def test_a_new_scenario_is_pressure_driven_for_a_demand_driven_model(tmp_path, monkeypatch):
    """The WAQ-paper model learned demand-driven runs; the form still simulates a new
    scenario pressure-driven (the physics), so no pressure goes negative."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(ROOT / "models" / "waq-paper"))
    at = AppTest.from_file(APP, default_timeout=180).run()
    widget(at, "number_input", "new_duration").set_value(45)
    simulate_new(at)
    assert not at.exception
    (made,) = (tmp_path / "cache").glob("timeline_*.npz")
    tl = Timeline.load(made)
    assert tl.scenario.demand_model == "PDA" and tl.scenario.pressure_required_m == 20
    assert tl.node_pressure_m.min() > -1


def test_switching_models_shows_the_new_models_sidebar(app):
    """Hanoi -> L-Town: every per-model widget is L-Town's (not Hanoi's values kept)."""
    from wdn_explain.shipped import model_network

    ltown = set(model_network(ROOT / "models" / "l-town").node_ids)
    app.selectbox(key="model").select("l-town").run()
    assert not app.exception and not app.error
    assert widget(app, "selectbox", "scenario").value.startswith("default: booster at n303")
    assert widget(app, "multiselect", "follow").value == ["n303"]
    assert widget(app, "selectbox", "new_node").value in ltown
    assert set(widget(app, "selectbox", "new_node").options) <= {
        f"{n} ({r})" for n, r in zip(*_roles(ROOT / "models" / "l-town"))
    }
    assert all(w.key.endswith("@l-town") for w in app.sidebar.selectbox if "@" in w.key)
    assert trace(specs(app)[0], "source")["text"][0].replace("<br>", " ").startswith("n303: ")


def test_l_town_plays_its_si_graph_and_draws_the_panels_on_pause(app):
    """On a network too large for labels the panels lie below the SI-Graph: while playing
    only the SI-Graph (and its sentence) moves, step by step, and a caption says that the
    panels follow on pause; pause draws every panel at the paused step."""
    from wdn_explain.shipped import model_network

    def on_pause(at) -> bool:  # the caption that says the panels follow on pause
        return any(c.value.startswith("Playing: the SI-Graph") for c in at.caption)

    app.selectbox(key="model").select("l-town").run()
    start = cursor(app)
    assert list(charts(app)) == ["si_graph", "forecast", "value", "node_chlorine", "chlorine"]
    app.button(key="play").click().run()
    assert not app.exception
    assert cursor(app) == start + 5 and list(charts(app)) == ["si_graph"]
    assert on_pause(app)
    si = charts(app)["si_graph"]
    assert f"forecast made at {start + 5} min" in si["layout"]["title"]["text"]
    assert len(as_array(trace(si, "nodes")["x"])) == model_network(ROOT / "models/l-town").n_nodes
    names = {t.get("name") for t in si["data"]}  # pipes by flow, without the arrows
    assert "flow" not in names and "flow class 1" in names
    app.run()  # one more tick
    assert cursor(app) == start + 10 and list(charts(app)) == ["si_graph"]
    app.button(key="pause").click().run()
    assert not on_pause(app)
    assert set(panel_minutes(app).values()) == {start + 10}
    assert "flow" in {t.get("name") for t in charts(app)["si_graph"]["data"]}


def _roles(model_dir):
    from wdn_explain.shipped import model_network

    net = model_network(model_dir)
    return net.node_ids, net.node_roles


def test_drivers_table_ranks_the_values_and_the_slider_tells_the_clock(app, tl, hanoi):
    step = opening_step(tl)
    e = tl.explanations[step]
    items = []  # every non-zero k-SII value of order 1 and 2 at the step, by plain enumeration
    for size in (1, 2):
        members, values = e.index_values("k-SII", 2, size)
        items += [(tuple(m), v) for m, v in zip(members, values) if v]
    items.sort(key=lambda kv: -abs(kv[1]))
    table = markdown_tables(app)[0]  # a plain table: every number shows and copies
    assert list(table[0]) == ["driver", "value (share of nodes)", "of the difference"]
    shown = [row["value (share of nodes)"] for row in table]
    assert shown == [f"{v:+.4f}" for _, v in items[:10]]
    (first,), value = items[0]
    assert table[0]["driver"] == f"{hanoi.node_roles[first]} {hanoi.node_ids[first]}"
    gap = e.prediction - e.empty_prediction
    assert table[0]["of the difference"] == f"{value / gap:+.0%}"
    # minutes since the start and the time of day (the scenario starts at 7:00)
    assert tl.scenario.start_hour == 7.0
    assert "15 min (07:15)" in app.select_slider(key="time_min").options
    assert "160 min (09:40)" in app.select_slider(key="time_min").options


def test_two_scenarios_side_by_side_at_the_same_time(app, tl):
    """A new scenario beside the default one: the second SI-Graph shows the default's values
    at the cursor's minute, on the first map's colour scale."""
    hanoi_models = sorted(  # the other shipped models on Hanoi, from their cards
        f"this scenario, model {card.parent.name}"
        for card in (ROOT / "models").glob("*/card.json")
        if card.parent.name != "default" and _network_sha(card) == _network_sha(DEFAULT_CARD)
    )
    assert sorted(widget(app, "selectbox", "compare").options[1:]) == hanoi_models
    widget(app, "selectbox", "new_node").set_value("12")
    widget(app, "number_input", "new_duration").set_value(45)
    simulate_new(app)
    compare = widget(app, "selectbox", "compare")
    (default,) = [o for o in compare.options if o.startswith("default: ")]
    compare.set_value(default).run()
    assert not app.exception and not app.error
    minute = cursor(app)
    assert len(charts(app)) == 6  # the five panels and the second SI-Graph
    # right below the first SI-Graph, in its column (not after the panels beside it)
    (column,) = [c for c in app.columns if "si_graph" in chart_keys(c)]
    assert chart_keys(column) == ["si_graph", "si_graph_other"]
    other = next(spec for spec in specs(app) if spec["layout"].get("height") == 480)
    first = specs(app)[0]
    assert f"forecast made at {minute} min" in other["layout"]["title"]["text"]
    step = list(tl.times_s // 60).index(minute)
    nodes = trace(other, "nodes")
    np.testing.assert_allclose(as_array(nodes["marker"]["color"]), tl.node_values("k-SII", 2)[step])
    assert nodes["marker"]["cmax"] == trace(first, "nodes")["marker"]["cmax"]
    assert any(m.value.startswith("**Side by side: booster at 2, 1.5 mg/L") for m in app.markdown)


def chart_keys(block) -> list[str]:
    """The keys of the charts inside ``block`` (an AppTest column), in page order."""
    return [json.loads(e.proto.json_args)["key"] for e in block.get("component_instance")]


def _network_sha(card) -> str:
    return json.loads(card.read_text())["data"]["network"]["sha256"]


DEFAULT_CARD = ROOT / "models" / "default" / "card.json"


def test_the_node_model_explains_this_scenario_beside(app, tmp_path):
    """The share model's first view beside the node-level model's explanation of the same
    scenario: mg/L at the node model's explained node, on its own colour scale."""
    nodes_file = ROOT / "models" / "hanoi-nodes" / "default_timeline.npz"
    widget(app, "selectbox", "compare").set_value("this scenario, model hanoi-nodes").run()
    assert not app.exception and not app.error
    minute = cursor(app)
    node_tl = Timeline.load(nodes_file).relative_to(DEFAULT_REFERENCE)
    step = list(node_tl.times_s // 60).index(minute)
    other = next(spec for spec in specs(app) if spec["layout"].get("height") == 480)
    nodes = trace(other, "nodes")
    np.testing.assert_allclose(
        as_array(nodes["marker"]["color"]), node_tl.node_values("k-SII", 2)[step], atol=1e-6
    )
    assert nodes["marker"]["colorbar"]["title"]["text"].endswith("(mg/L)")
    assert nodes["marker"]["cmax"] != trace(specs(app)[0], "nodes")["marker"]["cmax"]
    assert any(
        m.value == "**Side by side: model hanoi-nodes on this scenario**" for m in app.markdown
    )
    assert any(f"mg/L chlorine at node {node_tl.node}" in m.value for m in app.markdown)
    assert not list((tmp_path / "cache").glob("timeline_*.npz"))  # its shipped timeline


def test_maps_draw_the_scenario_s_flows(app, tl, hanoi):
    """The shipped timeline holds no flows: the app simulates its scenario again, and the
    arrows' colours are the |flow| of a simulation run here at the cursor's step."""
    from wdn_explain.simulation import simulate

    step = list(tl.times_s // 60).index(cursor(app))
    flow = np.abs(simulate(tl.scenario, hanoi).link_flow_lps[tl.steps[step]])
    for key in ("si_graph", "chlorine"):
        arrows = trace(charts(app)[key], "flow")
        np.testing.assert_allclose(as_array(arrows["marker"]["color"]), flow, rtol=1e-5)
        assert "L/s" in arrows["marker"]["colorbar"]["title"]["text"]


def test_minimum_residual_drives_the_node_chart_and_the_compliance_map(app, tl, hanoi):
    step = list(tl.times_s // 60).index(cursor(app))
    # customer nodes: not the reservoir (a source, read from the .inp)
    taps = ~np.isin(hanoi.node_ids, list(inp_table(hanoi.inp_path, "RESERVOIRS")))
    below = int((tl.chlorine[step][taps] < 0.2).sum())
    said = f"{below} of 31 customer nodes have less than"
    assert any(c.value.startswith(said) for c in app.caption)
    node = charts(app)["node_chlorine"]
    assert node["layout"]["shapes"][0]["y0"] == 0.2
    field = app.number_input(key="minimum")
    assert (field.min, field.max, field.value) == (0.0, 5.0, 0.2)  # the browser keeps it there
    app.number_input(key="minimum").set_value(0.5).run()
    app.radio(key="map_view").set_value("compliance").run()
    assert not app.exception
    below = int((tl.chlorine[step][taps] < 0.5).sum())
    compliance = charts(app)["chlorine"]
    assert f"{below} of 31 customer nodes" in compliance["layout"]["title"]["text"]
    symbols = trace(compliance, "compliance")["marker"]["symbol"]
    assert symbols.count("x") == below
    assert charts(app)["node_chlorine"]["layout"]["shapes"][0]["y0"] == 0.5
    said = f"{below} of 31 customer nodes have less than"
    assert any(c.value.startswith(said) for c in app.caption)
    assert len(set(panel_minutes(app).values())) == 1  # the compliance map at the same time


def test_the_warm_up_loads_every_shipped_model_without_failing(tmp_path, monkeypatch, caplog):
    """The server's background warm-up (a model switch then only draws) runs to its end:
    it logs nothing when every shipped model's network, properties, timeline and scale load,
    and it leaves what it loaded out of the garbage collections after every script run."""
    import gc
    import logging
    import threading

    import streamlit as st

    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path))
    st.cache_resource.clear()  # so that this server process starts its warm-up again
    gc.unfreeze()
    with caplog.at_level(logging.WARNING):
        AppTest.from_file(APP, default_timeout=180).run()
        warm = [t for t in threading.enumerate() if t.name == "wdn-explain-warm-up"]
        assert warm, "the first page starts the warm-up"
        for thread in warm:
            thread.join(timeout=300)
            assert not thread.is_alive()
    assert not [r.getMessage() for r in caplog.records if "warming up" in r.getMessage()]
    # hanoi-nodes' model inputs are kept: a node picked for explaining is not simulated
    import sys

    cache = sys.modules["water.cache"]
    monkeypatch.setattr(cache, "timeline_graphs", lambda *a: pytest.fail("simulated again"))
    shipped = ROOT / "models" / "hanoi-nodes" / "default_timeline.npz"
    graphs = cache._graphs(str(shipped), cache.version_of(shipped))
    assert len(graphs) > int(Timeline.load(shipped).steps[-1])  # every step's inputs
    frozen = gc.get_freeze_count()  # the libraries, networks and timelines it loaded
    gc.unfreeze()
    assert frozen > 100_000


def test_every_shipped_model_opens_where_chlorine_has_left_its_source_as_its_card_says(app):
    """A visit of every shipped water model: no error; the sidebar's test MAE and each warning
    its card records are the card's (read from card.json here); a card without a design says
    so; the time cursor opens where at least two nodes carry chlorine (read from the
    timeline file here: hanoi-sensors opened on its last step), on every model alike."""
    for folder in sorted(p.parent for p in (ROOT / "models").glob("*/card.json")):
        app.selectbox(key="model").set_value(folder.name).run()
        assert not app.exception and not app.error, folder.name
        card = json.loads((folder / "card.json").read_text())
        captions = [c.value for c in app.sidebar.caption]
        assert any(c.startswith(f"test MAE {card['metrics']['mae']:.4f}") for c in captions)
        warnings = [w.value for w in app.sidebar.warning]
        for said in card["metrics"].get("warnings", []):
            assert any(said in w for w in warnings), (folder.name, said)
        notes = [i.value for i in app.sidebar.info]
        assert any("does not record the scenarios" in n for n in notes) == (not card.get("design"))
        with np.load(folder / "default_timeline.npz", allow_pickle=False) as data:
            wet = (data["chlorine"] > 0).sum(axis=1) >= 2
            opening = data["times_s"][int(np.argmax(wet))] // 60
        assert cursor(app) == opening, folder.name


FIRST_PAGE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from water import cache
cache.WARM_UP_DELAY_S = 3600  # what the first page itself imports, not the warm-up
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[2], default_timeout=180).run()
heavy = ("epyt", "epyt_flow", "wntr", "pandas", "torch")
print(json.dumps({"errors": [str(e.value) for e in at.exception],
                  "imported": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_a_servers_first_page_imports_no_network_reader_pandas_or_torch(tmp_path):
    """The first page of a server, on its very first start on a machine (an empty user
    cache) and started again (the cache kept), draws the shipped model from the network's
    snapshot (shipped with the package, then kept) and the timeline file: neither EPyT-Flow,
    WNTR (the network), pandas (Streamlit inspects a chart argument that is not text) nor
    torch is imported for it."""
    import subprocess
    import sys

    env = {**os.environ, "WDN_EXPLAIN_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    env.pop("WDN_EXPLAIN_MODEL", None)
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FIRST_PAGE, str(ROOT / "app"), APP],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=True,
            timeout=600,
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["errors"] == runs[1]["errors"] == []
    assert runs[0]["imported"] == runs[1]["imported"] == []
