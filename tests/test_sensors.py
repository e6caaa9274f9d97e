"""Chlorine sensor sets (``quality_node_sensors``): what a model on sensors reads, where the
set is recorded, and the one-line refusal of a sensor at a node the network lacks."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.errors import ConfigError
from wdn_explain.features import InputSpec
from wdn_explain.model_folder import read_card
from wdn_explain.tree import tree_features

SENSORS = ("3", "10", "16", "30")


def test_inputs_read_chlorine_at_the_sensors_only():
    spec = InputSpec(quality_node_sensors=("b", "d"))
    rng = np.random.default_rng(0)
    chlorine, source = rng.random((2, 4)), rng.random((2, 4))
    plan = rng.random((2, 4, spec.horizon))
    x = spec.node_inputs(chlorine, source, np.ones(2), plan, node_ids=["a", "b", "c", "d"])
    measured = np.array([0, 1, 0, 1], dtype=np.float32)
    assert x.shape == (2, 4, spec.in_channels) and spec.in_channels == 1 + 1 + spec.horizon + 1
    assert np.array_equal(x[..., 0], (chlorine * measured).astype(np.float32))
    assert np.array_equal(x[..., 1], source.astype(np.float32))  # the source everywhere
    assert np.array_equal(x[..., 2:-1], plan.astype(np.float32))  # and the plan
    assert np.array_equal(x[..., -1], np.broadcast_to(measured, (2, 4)))
    every = InputSpec().node_inputs(chlorine, source, np.ones(2), plan)
    assert np.array_equal(every[..., 1:], x[..., 1:-1])  # a sensor set only masks and flags


def test_chlorine_history_is_read_at_the_sensors_only():
    """With the recipe's chlorine history an unmeasured node's past chlorine is as unknown as
    its present: its history columns are 0, a sensor's hold its own earlier reports."""
    spec = InputSpec(
        node_features=("chlorine_mg_l", "chlorine_history_mg_l"), quality_node_sensors=("b",)
    )
    chlorine = np.arange(1.0, 13.0).reshape(3, 4)  # 3 consecutive reports, 4 nodes
    x = spec.node_inputs(chlorine, np.zeros((3, 4)), np.ones(3), node_ids=list("abcd"))
    assert x.shape == (3, 4, 1 + spec.horizon + 1)
    history = x[..., 1 : 1 + spec.horizon]
    assert not history[:, [0, 2, 3]].any()
    # at report 2: the horizon's previous reports, t - 1 first, the first report repeated
    want = [chlorine[1, 1], chlorine[0, 1]] + [chlorine[0, 1]] * (spec.horizon - 2)
    assert history[2, 1].tolist() == want


@pytest.mark.parametrize(
    ("sensors", "message"),
    [
        ((), r"quality_node_sensors must name at least one node, each once \(got \[\]\)"),
        (("3", "3"), r"each once \(got \['3', '3'\]\)"),
    ],
)
def test_bad_sensor_sets_are_named(sensors, message):
    with pytest.raises(ConfigError, match=message):
        InputSpec(quality_node_sensors=sensors)


def test_a_sensor_at_a_node_the_network_lacks_is_named(hanoi):
    with pytest.raises(ConfigError, match=r"^chlorine sensor at node '99': the network has no"):
        InputSpec(quality_node_sensors=("3", "99")).measured(hanoi.node_ids)


def test_sensor_set_round_trips_through_the_card_record():
    spec = InputSpec(target="node_chlorine_mg_l", quality_node_sensors=SENSORS)
    assert InputSpec(**spec.to_dict()) == spec
    assert spec.to_dict()["quality_node_sensors"] == list(SENSORS)
    assert InputSpec(**InputSpec().to_dict()).quality_node_sensors is None


def test_unmeasured_chlorine_changes_no_input_of_the_model_or_the_tree(waq_dir):
    """Inputs on sensors are a function of the readings: chlorine changed at every node
    without a sensor leaves the GNN's inputs and the tree's features as they were."""
    arrays = load_waq_arrays(waq_dir)
    ids = arrays.manifest.network.node_ids
    unmeasured = ~np.isin(ids, SENSORS)
    changed = arrays.chlorine_mg_l.copy()
    changed[..., unmeasured] += 0.7
    kwargs = dict(split="all", target="node_chlorine_mg_l", quality_node_sensors=SENSORS)
    ours = WaqDataset(waq_dir, arrays=arrays, **kwargs)
    theirs = WaqDataset(waq_dir, arrays=replace(arrays, chlorine_mg_l=changed), **kwargs)
    assert np.array_equal(ours.stacked().x.numpy(), theirs.stacked().x.numpy())
    assert np.array_equal(tree_features(ours), tree_features(theirs))
    assert not np.array_equal(ours.targets(), theirs.targets())  # the labels still see it


def test_train_refuses_a_sensor_the_network_lacks_in_one_line(waq_dir, tmp_path, monkeypatch):
    """Refused from the design's manifest, before its scenarios are read."""
    import wdn_explain.training as training

    def never(*args, **kwargs):
        raise AssertionError("the design's scenarios were read")

    monkeypatch.setattr(training, "load_waq_arrays", never)
    out = tmp_path / "model"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--data",
            str(waq_dir),
            "--out",
            str(out),
            "--target",
            "node",
            "--sensors",
            "3,99",
            "--epochs",
            "1",
        ],
    )
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0  # one line
    assert "chlorine sensor at node '99'" in result.output
    assert not out.exists() or not any(out.iterdir())


def test_a_model_on_sensors_records_them_in_its_card(waq_dir, tmp_path):
    from wdn_explain.model import ModelConfig
    from wdn_explain.training import TrainConfig, train

    card = train(
        waq_dir,
        tmp_path / "m",
        model_config=ModelConfig(hidden_channels=4, num_layers=2),
        train_config=TrainConfig(
            epochs=1, batch_size=32, target="node_chlorine_mg_l", quality_node_sensors=SENSORS
        ),
        device="cpu",
    )
    record = read_card(tmp_path / "m")
    assert record.input_spec.quality_node_sensors == SENSORS
    # chlorine, source, the plan and the history (4 each), the measured flag
    assert card["model"]["in_channels"] == record.input_spec.in_channels == 1 + 1 + 4 + 4 + 1
    assert card["train"]["quality_node_sensors"] == list(SENSORS)


def _design_with_sensors(tiny_config, sensors):
    from wdn_explain.scenario import SimulationConfig

    return SimulationConfig.model_validate(
        tiny_config.model_dump() | {"sensors": {"quality_node_sensors": sensors}}
    )


@pytest.fixture(scope="module")
def sensor_design_dir(tmp_path_factory, tiny_config):
    """The tiny design with chlorine sensors, simulated."""
    from wdn_explain.waq import generate_waq

    folder = tmp_path_factory.mktemp("sensor_design")
    generate_waq(_design_with_sensors(tiny_config, list(SENSORS)), folder, n_workers=1)
    return folder


def test_a_design_sensor_set_reaches_the_manifest_and_the_card(
    sensor_design_dir, tiny_config, tmp_path
):
    """design -> manifest -> card: ``train`` without a sensor set takes the design's; the
    design's hash (its data's identity) is the one without sensors (they change no simulated
    byte), ``all`` reads every node."""
    from wdn_explain.model import ModelConfig
    from wdn_explain.scenario import SimulationConfig
    from wdn_explain.training import TrainConfig, train
    from wdn_explain.waq import read_manifest

    manifest = read_manifest(sensor_design_dir)
    design = SimulationConfig.from_record(manifest.config)
    assert design.sensors.quality_node_sensors == SENSORS
    assert manifest.config_hash == tiny_config.config_hash()
    arrays = load_waq_arrays(sensor_design_dir)
    assert arrays.chlorine_mg_l[..., ~np.isin(arrays.manifest.network.node_ids, SENSORS)].any()
    stats = CliRunner().invoke(app, ["data-stats", str(sensor_design_dir)])
    assert f"sensors        chlorine read at 4 sensors: nodes {', '.join(SENSORS)}" in stats.output
    small = dict(model_config=ModelConfig(hidden_channels=4, num_layers=2), device="cpu")
    node = dict(epochs=1, batch_size=32, target="node_chlorine_mg_l")
    train(sensor_design_dir, tmp_path / "design", train_config=TrainConfig(**node), **small)
    assert read_card(tmp_path / "design").input_spec.quality_node_sensors == SENSORS
    every = TrainConfig(**node, quality_node_sensors="all")
    train(sensor_design_dir, tmp_path / "all", train_config=every, **small)
    assert read_card(tmp_path / "all").input_spec.quality_node_sensors is None


@pytest.mark.parametrize(
    ("sensors", "message"),
    [
        (
            ["3", "99"],
            r"^sensors\.quality_node_sensors: node '99' is not in network 'hanoi'",
        ),
        (["3", "3"], r"sensors\.quality_node_sensors: .*each once \(got \['3', '3'\]\)"),
    ],
)
def test_a_bad_design_sensor_set_is_refused_in_one_line_before_simulating(
    tiny_config, tmp_path, sensors, message
):
    import yaml

    design = tiny_config.model_dump(mode="json") | {"sensors": {"quality_node_sensors": sensors}}
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(design))
    out = tmp_path / "data"
    result = CliRunner().invoke(app, ["simulate", "--config", str(path), "--out", str(out)])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0
    assert re.search(message, result.output.strip().removeprefix("error: "))
    assert not out.exists()


def test_a_timeline_made_for_another_sensor_set_is_not_reused(tiny_model_dir, tmp_path):
    """The sensor set is part of the card, so of the model's identity: the same weights with
    another sensor set in the card make any cached timeline stale (named as the model)."""
    import json
    import shutil

    from wdn_explain.explain_settings import ExplainSettings, cache_identity, cache_mismatch
    from wdn_explain.scenario import ScenarioConfig

    folders = {}
    for name, sensors in (("a", ["3", "10"]), ("b", ["3", "16"])):
        folders[name] = shutil.copytree(tiny_model_dir, tmp_path / name)
        card = json.loads((folders[name] / "card.json").read_text())
        card["inputs"]["quality_node_sensors"] = sensors
        (folders[name] / "card.json").write_text(json.dumps(card))
    scenario, settings = ScenarioConfig(), ExplainSettings()
    made_for_a = cache_identity(scenario, folders["a"], settings)
    assert cache_mismatch(made_for_a, cache_identity(scenario, folders["a"], settings)) == []
    assert cache_mismatch(made_for_a, cache_identity(scenario, folders["b"], settings)) == [
        "model_hash"
    ]


@pytest.mark.parametrize("name", ["hanoi-sensors", "l-town-sensors"])
def test_the_app_says_where_a_sensor_model_reads_chlorine(tmp_path, monkeypatch, name):
    """The sidebar names a shipped sensor model's sensors, read here from its card file."""
    import json

    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    model = ROOT / "models" / name
    sensors = json.loads((model / "card.json").read_text())["inputs"]["quality_node_sensors"]
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(model))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=240).run()
    assert not at.exception
    shown = f"chlorine read at {len(sensors)} sensors: nodes {', '.join(sensors)}"
    assert any(c.value.startswith(shown) for c in at.sidebar.caption)
