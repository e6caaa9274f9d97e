"""The app and maps for any EPANET network: a tiny Net1 model beside the shipped Hanoi ones,
a model whose network cannot be found, and a network whose .inp has no coordinates."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from wdn_explain.narrative import NO_COORDINATES
from wdn_explain.network import builtin_networks, load_network
from wdn_explain.scenario import load_config, parse_config
from wdn_explain.shipped import (
    DEFAULT_SCENARIO,
    default_scenario,
    default_timeline,
    model_network,
    water_models,
)
from wdn_explain.timeline import Timeline, timeline_is_current

from conftest import ROOT, chart_figures, widget

APP = str(ROOT / "app" / "main.py")

# Six one-hour Net1 scenarios: chlorine at the reservoir or a booster at three junctions.
NET1 = {
    "n_scenarios": 6,
    "seed": 2,
    "scenario": {"network": "net1", "duration_s": 3600, "pattern_step_s": 300},
    "design": {
        "injection_nodes": ["11", "22", "31"],
        "reservoir_share": 0.5,
        "injection_strength_mg_l": [0.5, 2.0],
    },
}


def inp_node_ids(text: str) -> set[str]:
    """Node ids read straight from an .inp file's node sections (the test's own oracle)."""
    ids = set()
    for section in ("JUNCTIONS", "RESERVOIRS", "TANKS"):
        body = re.search(rf"\[{section}\](.*?)\n\[", text, flags=re.S).group(1)
        for line in body.splitlines():
            line = line.split(";")[0].strip()
            if line:
                ids.add(line.split()[0])
    return ids


def without_coordinates(text: str) -> str:
    return re.sub(r"\[COORDINATES\].*?(?=\n\[)", "", text, flags=re.S)


@pytest.fixture(scope="module")
def net1_model(tmp_path_factory):
    """A Net1 model: simulated, trained for one epoch (a few seconds on one core)."""
    from wdn_explain.model import ModelConfig
    from wdn_explain.training import TrainConfig, train
    from wdn_explain.waq import generate_waq

    data = tmp_path_factory.mktemp("net1_waq")
    generate_waq(parse_config(NET1), data, n_workers=1)
    out = tmp_path_factory.mktemp("models") / "net1-tiny"
    train(
        data,
        out,
        model_config=ModelConfig(hidden_channels=8, num_layers=2),
        train_config=TrainConfig(epochs=1, batch_size=16),
        device="cpu",
    )
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def start(cache, monkeypatch):
    """Start the app on a model folder (the cache is shared: each default timeline is
    computed once for the module)."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(cache))

    def run(model_dir):
        monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(model_dir))
        return AppTest.from_file(APP, default_timeout=180).run()

    return run


def nodes_trace(at) -> dict:
    si = next(iter(chart_figures(at).values()))
    return next(tr for tr in si["data"] if tr.get("name") == "nodes")


def copy_model(model_dir, folder, name: str, inp_text: str | None = None):
    """A copy of a model folder whose card names network ``name``; with ``inp_text``, that
    network's .inp is written into the folder and its hash into the card."""
    import hashlib

    shutil.copytree(model_dir, folder)
    card = json.loads((folder / "card.json").read_text())
    card["data"]["network"]["name"] = name
    if inp_text is not None:
        (folder / f"{name}.inp").write_text(inp_text)
        card["data"]["network"]["sha256"] = hashlib.sha256(inp_text.encode()).hexdigest()
    (folder / "card.json").write_text(json.dumps(card))
    return folder


def test_app_shows_a_net1_model_on_net1(start, net1_model):
    at = start(net1_model)
    assert not at.exception and not at.error
    inp = builtin_networks()["net1"].read_text()
    ids = inp_node_ids(inp)
    assert len(ids) == 11
    assert set(widget(at, "multiselect", "follow").options) == ids
    nodes = nodes_trace(at)
    assert nodes["type"] == "scatter"  # SVG: a small network
    assert {h.split("</b>")[0].removeprefix("<b>node ") for h in nodes["hovertext"]} == ids
    # the form offers the Net1 model's training design, not Hanoi's
    offered = [o.split(" (")[0] for o in widget(at, "selectbox", "new_node").options]
    assert offered == ["9", "11", "22", "31"]  # Net1's reservoir, then the boosters
    strength = widget(at, "slider", "new_strength")
    assert [strength.min, strength.max] == [0.5, 2.0]
    # it opens on the middle of the design: the reservoir, 1.25 mg/L
    assert widget(at, "selectbox", "scenario").value.startswith("default: reservoir, 1.25 mg/L")
    assert any("network net1: 11 nodes, 13 links" in c.value for c in at.sidebar.caption)
    assert NO_COORDINATES not in [i.value for i in at.info]  # Net1's .inp has coordinates


def test_model_chooser_lists_every_water_model_and_switches(start, net1_model, hanoi):
    at = start(net1_model)
    chooser = at.selectbox(key="model")
    assert chooser.options[0] == f"{net1_model} (net1)"
    assert "default (hanoi)" in chooser.options and "waq-paper (hanoi)" in chooser.options
    assert not any("chem" in o or "mutag" in o for o in chooser.options)
    widget(at, "multiselect", "follow").set_value(["22"]).run()
    chooser.select("default (hanoi)").run()
    assert not at.exception and not at.error
    hanoi_ids = inp_node_ids(builtin_networks()["hanoi"].read_text())
    assert set(widget(at, "multiselect", "follow").options) == hanoi_ids
    assert widget(at, "multiselect", "follow").value == [
        "20"
    ]  # where chlorine enters; Net1's "22" forgotten
    assert widget(at, "selectbox", "scenario").value.startswith("default: booster at 20, 1.5 mg/L")
    assert len(nodes_trace(at)["hovertext"]) == 32
    at.selectbox(key="model").select(f"{net1_model} (net1)").run()
    assert not at.exception and not at.error
    assert len(nodes_trace(at)["hovertext"]) == 11


def test_model_of_an_unknown_network_is_one_message(start, net1_model, tmp_path):
    folder = copy_model(net1_model, tmp_path / "atlantis-model", "atlantis")
    at = start(folder)
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"model '{folder}' was trained on network 'atlantis', which does not ship with epyt: "
        f"copy that network's .inp file into the model folder as '{folder / 'atlantis.inp'}'"
    ]
    assert len(at.selectbox(key="model").options) >= 3  # another model can still be chosen


def test_model_of_another_network_version_is_one_message(net1_model, tmp_path):
    from wdn_explain.errors import DataError

    folder = copy_model(net1_model, tmp_path / "m", "net1")
    card = json.loads((folder / "card.json").read_text())
    card["data"]["network"]["sha256"] = "0" * 64
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=r"another version of network 'net1' \(sha256 000000000000"):
        model_network(folder)


def test_unreadable_network_file_in_the_model_folder_names_the_file(net1_model, tmp_path):
    from wdn_explain.errors import ConfigError

    folder = copy_model(net1_model, tmp_path / "m", "broken", "[JUNCTIONS]\nnot a network\n")
    with pytest.raises(ConfigError, match=f"cannot read network file '{folder / 'broken.inp'}'"):
        model_network(folder)


def test_network_without_coordinates_gets_a_layout_and_a_notice(
    start, cache, net1_model, tmp_path, hanoi
):

    from wdn_explain.report import report_html

    text = without_coordinates(builtin_networks()["net1"].read_text())
    assert "[COORDINATES]" not in text
    folder = copy_model(net1_model, tmp_path / "bare-model", "bare", text)
    net = load_network(folder / "bare.inp")
    assert not net.has_coordinates and np.isnan(net.coordinates).all()
    xy = net.map_coordinates
    assert xy.shape == (11, 2) and np.isfinite(xy).all()
    assert len({tuple(p) for p in xy.round(9)}) == 11  # distinct positions
    np.testing.assert_array_equal(load_network(folder / "bare.inp").map_coordinates, xy)
    at = start(folder)
    assert not at.exception and not at.error
    assert NO_COORDINATES in [i.value for i in at.info]
    nodes = nodes_trace(at)
    np.testing.assert_allclose(np.c_[decode(nodes["x"]), decode(nodes["y"])], xy)
    # the model's scenarios run on the folder's .inp; the HTML report carries the notice
    assert default_scenario(folder, net).network == str((folder / "bare.inp").resolve())
    (path,) = [p for p in cache.glob("timeline_*.npz") if timeline_is_current(p, folder)]
    assert NO_COORDINATES in report_html(Timeline.load(path), net).replace("&#x27;", "'")
    hanoi_report = report_html(Timeline.load(ROOT / "models/default/default_timeline.npz"), hanoi)
    assert "no coordinates" not in hanoi_report


def test_nodes_all_at_one_point_get_a_layout(tmp_path):
    text = builtin_networks()["net1"].read_text()
    coordinates = re.search(r"\[COORDINATES\](.*?)\n\[", text, flags=re.S).group(1)
    lines = [
        f"{line.split()[0]} 5 5" if line.strip() and not line.startswith(";") else line
        for line in coordinates.splitlines()
    ]
    (tmp_path / "point.inp").write_text(text.replace(coordinates, "\n".join(lines)))
    net = load_network(tmp_path / "point.inp")
    assert (net.coordinates == 5).all() and not net.has_coordinates
    assert len({tuple(p) for p in net.map_coordinates.round(9)}) == net.n_nodes
    assert load_network("net1").has_coordinates


def test_default_scenario_and_timeline_of_a_model_folder(net1_model, tmp_path):
    # a folder's own default_scenario.yaml wins
    folder = copy_model(net1_model, tmp_path / "own", "net1")
    yaml = "scenario: {network: net1, injection_node: '22', injection_strength_mg_l: 0.7}\n"
    (folder / "default_scenario.yaml").write_text(yaml)
    own = default_scenario(folder)
    assert (own.injection_node, own.injection_strength_mg_l) == ("22", 0.7)
    assert own == load_config(folder / "default_scenario.yaml").scenario_config(0)
    # a Hanoi model without one: simulations/default_scenario.yaml
    hanoi_default = load_config(DEFAULT_SCENARIO).scenario_config(0)
    assert default_scenario(ROOT / "models" / "default") == hanoi_default
    # the WAQ-paper model's own: its published design, demand-driven as the paper ran it
    paper = default_scenario(ROOT / "models" / "waq-paper")
    assert paper.demand_model == "DDA" and paper.injection_node is None
    # another network without one: the middle of the model's training design
    middle = default_scenario(net1_model)
    assert middle.network == "net1" and middle.injection_node is None
    assert middle.injection_strength_mg_l == pytest.approx((0.5 + 2.0) / 2)
    # the folder's timeline only while it is current for the model
    shipped = ROOT / "models" / "default"
    assert default_timeline(shipped) == shipped / "default_timeline.npz"
    assert default_timeline(net1_model) is None
    stale = tmp_path / "stale"
    shutil.copytree(shipped, stale)
    (stale / "card.json").write_text((stale / "card.json").read_text() + " ")
    assert default_timeline(stale) is None


def test_water_models_skip_chemistry_and_put_the_override_first(net1_model, monkeypatch):
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    shipped = water_models()
    assert list(shipped)[0] == "default"
    assert shipped["waq-paper"] == ROOT / "models" / "waq-paper"
    assert all((path / "card.json").is_file() for path in shipped.values())
    water = {p.parent.name for p in (ROOT / "models").glob("*/card.json")}  # not models/chem/*
    share = {
        name
        for name in water
        if '"node_chlorine_mg_l"' not in (ROOT / "models" / name / "card.json").read_text()
    }  # models/hanoi-nodes is node-level: the app lists it, a share filter leaves it out
    assert set(shipped) == water and {p.parent for p in shipped.values()} == {ROOT / "models"}
    assert set(water_models(targets=("share",))) == share < water
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(net1_model))
    assert list(water_models()) == [str(net1_model), *shipped]


def test_cli_explain_defaults_to_the_models_default_scenario(net1_model, tmp_path, monkeypatch):
    from wdn_explain.cli import app

    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(net1_model))
    out = tmp_path / "tl.npz"
    result = CliRunner().invoke(app, ["explain", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert Timeline.load(out).scenario == default_scenario(net1_model)
    assert Timeline.load(out).node_ids.tolist() == list(load_network("net1").node_ids)


def decode(value) -> np.ndarray:
    """Plotly's JSON stores numeric arrays as typed base64 blocks."""
    import base64

    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
    return np.asarray(value, dtype=float)
