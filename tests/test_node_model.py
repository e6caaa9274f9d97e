"""The node-level forecaster (chlorine at every node) against oracles built in the test: its
MAE and compliance share recomputed from the raw scenario files, the compliance share from
chlorine arrays, a node explanation against a masked brute-force Shapley value, the
timeline's efficiency and file round trip, and bad inputs refused in one line."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import ConfigError, DataError
from wdn_explain.features import InputSpec, share_below_residual
from wdn_explain.model import ChlorineGNN, ModelConfig, NodeChlorineGNN
from wdn_explain.model_folder import load_model
from wdn_explain.records import ModelCard
from wdn_explain.scenario import ScenarioConfig

from conftest import ROOT, brute_force_shapley, path_graph

FEATURES = ("chlorine_mg_l", "source_mg_l")  # no plan: the test builds inputs from raw files


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def small_node_model(
    out: Path, monitoring_dir, epochs: int, node_features, edge_features=("flow",)
) -> Path:
    """A small node-level model trained into ``out`` on the tiny monitoring design (seconds),
    by default flow its only edge input (the inputs the tests below rebuild by hand)."""
    from wdn_explain.training import TrainConfig, train

    train(
        monitoring_dir,
        out,
        model_config=ModelConfig(hidden_channels=16, num_layers=2),
        train_config=TrainConfig(
            epochs=epochs,
            batch_size=16,
            lr=1e-2,
            node_features=node_features,
            edge_features=edge_features,
            target="node_chlorine_mg_l",
        ),
        device="cpu",
    )
    return out


@pytest.fixture(scope="module")
def node_model(tmp_path_factory, monitoring_dir):
    return small_node_model(tmp_path_factory.mktemp("node_model"), monitoring_dir, 15, FEATURES)


def test_node_mae_and_compliance_recomputed_from_raw_scenario_files(node_model, monitoring_dir):
    from wdn_explain.dataset import WaqDataset
    from wdn_explain.training import evaluate

    model, card = load_model(node_model)
    assert isinstance(model, NodeChlorineGNN) and model.pooling is None
    inputs = card.input_spec
    assert inputs.target == "node_chlorine_mg_l" and inputs.min_residual_mg_l == 0.2
    ds = WaqDataset.for_inputs(monitoring_dir, "test", inputs, split_seed=0)
    res = evaluate(model, ds, conformal=card.conformal)

    manifest = json.loads((monitoring_dir / "manifest.json").read_text())
    links = np.array(manifest["network"]["link_nodes"]).T
    edge_index = torch.tensor(np.concatenate([links, links[::-1]], axis=1))
    h = inputs.horizon
    node_err, share_err, persist_err = [], [], []
    for s in ds.scenarios:
        with np.load(monitoring_dir / f"scenario_{s:05d}.npz", allow_pickle=False) as f:
            chlorine, source = f["node_chlorine_mg_l"], f["node_source_mg_l"]
            flow = f["link_flow_lps"] / inputs.flow_scale_lps
        for t in range(len(chlorine) - h):
            x = torch.tensor(np.stack([chlorine[t], source[t]], axis=1), dtype=torch.float32)
            e = torch.tensor(np.concatenate([flow[t], -flow[t]])[:, None], dtype=torch.float32)
            with torch.no_grad():
                pred = model(x, edge_index, e).numpy()
            truth = chlorine[t + h]
            node_err.append(np.abs(pred - truth))
            share_err.append(abs(np.mean(pred < 0.2) - np.mean(truth < 0.2)))
            persist_err.append(np.abs(chlorine[t] - truth))
    assert res["n_samples"] == len(node_err)
    assert res["mae"] == pytest.approx(np.mean(node_err), rel=1e-5)
    assert res["compliance_mae"] == pytest.approx(np.mean(share_err), rel=1e-6, abs=1e-9)
    assert res["persistence_mae"] == pytest.approx(np.mean(persist_err), rel=1e-5)
    assert 0 <= res["coverage"] <= 1
    # one tree per node, and the compliance share derived from it (recomputed in test_tree)
    assert res["tree_mae"] < res["persistence_mae"] and "flat_tree_mae" not in res
    assert res["compliance_tree_mae"] < res["compliance_persistence_mae"]
    switch = {r["level"]: r for r in res["per_factor"]["switch"]}
    n = sum(r["n_samples"] for r in switch.values())
    pooled = sum(r["model_mae"] * r["n_samples"] for r in switch.values()) / n
    assert pooled == pytest.approx(res["mae"], rel=1e-5)


def test_trees_at_a_sample_of_a_larger_network_s_nodes(node_model, monitoring_dir, monkeypatch):
    """Where 32 trees exceed ``TREE_NODE_INPUTS`` the trees forecast every k-th node only and
    the model is scored beside them there: 256 // 32 = 8 trees at nodes 0, 4, ..., 28 (enumerated here),
    scored from the columns of every node's trees and the model's forecast; no tree
    forecasts the compliance share; the verdict and the text compare the model there."""
    from wdn_explain import tree
    from wdn_explain.dataset import WaqDataset
    from wdn_explain.evaluation import predict
    from wdn_explain.scoring import Scores, beats_tree, metrics_line, score_lines, tree_verdict
    from wdn_explain.training import evaluate

    model, card = load_model(node_model)
    ds = WaqDataset.for_inputs(monitoring_dir, "test", card.input_spec, split_seed=0)
    monkeypatch.setattr(tree, "TREE_NODE_INPUTS", 256)
    res = evaluate(model, ds)
    sample = [i for i in range(32) if i % 4 == 0]
    ids = json.loads((monitoring_dir / "manifest.json").read_text())["network"]["node_ids"]
    assert res["tree_nodes"] == [ids[i] for i in sample]
    pred, truth = predict(model, ds), ds.targets()
    trees = tree.tree_forecast(ds)[:, sample]  # every node's tree (cached fits), 8 columns
    assert res["tree_mae"] == pytest.approx(np.abs(trees - truth[:, sample]).mean(), rel=1e-5)
    model_there = np.abs(pred[:, sample] - truth[:, sample])
    assert res["tree_model_mae"] == pytest.approx(model_there.mean(), rel=1e-5)
    assert res["mae"] == pytest.approx(np.abs(pred - truth).mean(), rel=1e-5)  # every node
    assert "compliance_tree_mae" not in res and "compliance_mae" in res
    injection = ds.factor_levels()["injection"]
    for row in res["per_factor"]["injection"]:
        at = injection == row["level"]
        assert row["tree_model_mae"] == pytest.approx(model_there[at].mean(), rel=1e-5)
    assert beats_tree(res) == (res["tree_model_mae"] < res["tree_mae"])
    worse_there = {"mae": 0.01, "tree_mae": 0.02, "tree_model_mae": 0.03, "tree_nodes": sample}
    assert beats_tree(worse_there) is False
    assert "(MAE 0.0300 against the tree's 0.0200 at the trees' 8 sampled nodes)" in (
        tree_verdict(worse_there)
    )
    line = f"tree {res['tree_mae']:.4f} at the trees' 8 sampled nodes, the model's there "
    assert line + f"{res['tree_model_mae']:.4f}" in metrics_line(res)
    text = score_lines(Scores(res, card.input_spec, "test", 300))
    assert any(row.split()[:2] == ["tree_model", f"{res['tree_model_mae']:.4f}"] for row in text)


def test_the_default_target_is_the_node_chlorine_reaches_and_leaves_most():
    """Built so the answer is known: node 0 doses (left out however often it drops), node 3
    is reached at step 1 and falls back at 4 steps; once node 3 stays, nodes 1 and 2 both
    fall back twice and node 2, reached first, wins; without any fall back the reached node
    with the lowest mean; without any reached node the injection node."""
    from wdn_explain.node_targets import default_target

    on, off = 1.0, 0.0
    forecast = np.array(
        [
            [on, off, off, off],
            [off, off, on, on],
            [off, on, on, off],
            [off, off, off, off],
            [off, on, on, off],
            [off, off, off, off],
        ]
    )
    assert default_target(forecast, 0.2, 0) == 3
    forecast[2:, 3] = on  # node 3 stays: a tie of nodes 1 and 2, node 2 reached first
    assert default_target(forecast, 0.2, 0) == 2
    steady = np.array([[1.0, 0.5, 0.9, 0.0], [1.0, 0.5, 0.9, 0.3], [1.0, 0.5, 0.9, 0.3]])
    assert default_target(steady, 0.2, 0) == 3  # reached, none falls back: lowest mean
    assert default_target(np.zeros((3, 4)), 0.2, 2) == 2


def test_compliance_share_counts_nodes_below_the_minimum_residual():
    chlorine = np.array([[0.0, 0.19, 0.2, 0.5], [0.3, 0.3, 0.3, 0.1]])
    expected = [sum(v < 0.2 for v in row) / len(row) for row in chlorine.tolist()]
    assert share_below_residual(chlorine, 0.2).tolist() == expected == [0.5, 0.25]
    spec = InputSpec(target="node_chlorine_mg_l", min_residual_mg_l=0.35)
    assert spec.compliance(chlorine).tolist() == [0.75, 1.0]
    assert spec.labels(chlorine, np.ones(2)).tolist() == chlorine.astype(np.float32).tolist()


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_min_residual_must_be_finite_and_non_negative(bad):
    with pytest.raises(ConfigError, match=r"^min_residual_mg_l must be a finite .* \(got"):
        InputSpec(target="node_chlorine_mg_l", min_residual_mg_l=bad)


def test_old_card_without_target_is_a_share_model():
    old = json.loads((ROOT / "models/default/card.json").read_text())
    old["inputs"].pop("target", None)  # as cards written before node-level models
    card = ModelCard.parse(old, "old card")
    assert card.input_spec.target == "share" and not card.input_spec.node_level
    model, _ = load_model(ROOT / "models" / "default")
    assert type(model) is ChlorineGNN and model.pooling == "mean"
    data = json.loads((ROOT / "models/default/card.json").read_text())
    data["inputs"]["target"] = "pressure"
    with pytest.raises(
        DataError,
        match=r"^model card 'x' is corrupt: inputs.target: .*'share'.*\(got 'pressure'\)$",
    ):
        ModelCard.parse(data, "x")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            ["--min-residual", "-0.1"],
            "min_residual_mg_l must be a finite chlorine residual >= 0 mg/L (got -0.1)",
        ),
        (["--min-residual", "nan"], "(got nan)"),
        (["--target", "pressure"], "--target must be share or node (got 'pressure')"),
    ],
)
def test_train_refuses_bad_node_options_in_one_line(tmp_path, monitoring_dir, option, message):
    out = tmp_path / "m"
    result = run("train", "--data", monitoring_dir, "--out", out, "--target", "node", *option)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and message in result.output
    assert not out.exists()


def test_node_calibration_refuses_an_empty_split(tmp_path, node_model, monitoring_dir):
    """Four scenarios leave the calibration split empty (10 % rounds to 0): refused in one
    line, the card unchanged."""
    small = tmp_path / "small"
    small.mkdir()
    manifest = json.loads((monitoring_dir / "manifest.json").read_text())
    (small / "manifest.json").write_text(json.dumps({**manifest, "n_scenarios": 4}))
    for i in range(4):
        shutil.copy(monitoring_dir / f"scenario_{i:05d}.npz", small)
    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    before = (model / "card.json").read_bytes()
    result = run("calibrate", "--model", model, "--data", small)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert "calibration split of" in result.output and "is empty (0 of 4" in result.output
    assert (model / "card.json").read_bytes() == before
    result = run("calibrate", "--model", model, "--data", monitoring_dir)
    assert result.exit_code == 0, result.output
    assert json.loads((model / "card.json").read_text())["conformal"]["n_calibration"] == (
        6 * 9 * 32  # 6 calibration scenarios x 9 forecasts x 32 nodes
    )


def test_calibrate_carries_the_trees_scores_and_fits_them_where_the_card_lacks_them(
    tmp_path, node_model, monitoring_dir, monkeypatch
):
    """The tree baselines do not depend on the weights or the intervals: ``calibrate`` keeps
    the card's scores without fitting a tree; a card without them gets them fitted again,
    equal to the trees' errors computed here from their forecasts."""
    from wdn_explain import evaluation
    from wdn_explain.dataset import WaqDataset
    from wdn_explain.tree import tree_forecast

    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    card = json.loads((model / "card.json").read_text())
    test_set = WaqDataset.for_inputs(monitoring_dir, "test", load_model(model)[1].input_spec)
    tree = tree_forecast(test_set)
    error = np.abs(tree - test_set.targets())
    injection = test_set.factor_levels()["injection"]
    want = {
        row["level"]: float(error[injection == row["level"]].mean())
        for row in card["metrics"]["per_factor"]["injection"]
    }
    assert card["metrics"]["tree_mae"] == pytest.approx(error.mean(), rel=1e-5)

    def tree_scores(metrics: dict) -> tuple:
        rows = metrics["per_factor"]["injection"]
        return (
            metrics["tree_mae"],
            metrics["compliance_tree_mae"],
            {r["level"]: r["tree_mae"] for r in rows},
        )

    with monkeypatch.context() as patch:
        patch.setattr(evaluation, "tree_forecast", lambda *a, **k: pytest.fail("tree fitted"))
        assert run("calibrate", "--model", model, "--data", monitoring_dir).exit_code == 0
    carried = json.loads((model / "card.json").read_text())["metrics"]
    assert tree_scores(carried) == tree_scores(card["metrics"])
    for metrics in (card["metrics"], *card["metrics"]["per_factor"]["injection"]):
        for key in [k for k in metrics if "tree_" in k]:
            del metrics[key]
    (model / "card.json").write_text(json.dumps(card))
    assert run("calibrate", "--model", model, "--data", monitoring_dir).exit_code == 0
    fitted = json.loads((model / "card.json").read_text())["metrics"]
    assert fitted["tree_mae"] == pytest.approx(error.mean(), rel=1e-5)
    assert tree_scores(fitted)[2] == pytest.approx(want, rel=1e-5)


def test_node_explanation_matches_masked_brute_force():
    """The Shapley values of one node's forecast against all 2^7 masked graphs, enumerated
    here (features outside a coalition at the graph's mean, the engine's default)."""
    from wdn_explain.explain import GraphSHAPIQ

    n, target = 7, 3
    data = path_graph(n, seed=5, features=2, extra=[(0, 5)])
    torch.manual_seed(2)
    model = NodeChlorineGNN(in_channels=2, hidden_channels=8, num_layers=2).double().eval()
    explanation = GraphSHAPIQ(model).explain_nodes(data, [target])[0]
    mean = data.x.mean(dim=0)

    def nu(coalition: frozenset[int]) -> float:
        x = data.x.clone()
        x[[i for i in range(n) if i not in coalition]] = mean
        with torch.no_grad():
            return float(model(x, data.edge_index, data.edge_attr)[target])

    shapley = brute_force_shapley(nu, n)
    assert np.allclose(explanation.node_values("SV"), shapley, atol=1e-10)
    assert explanation.prediction == pytest.approx(nu(frozenset(range(n))))


def test_node_timeline_efficiency_round_trip_and_cache(tmp_path, node_model):
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.timeline import ExplainSettings, Timeline

    spec = ScenarioConfig(duration_s=2400, injection_node="12", injection_strength_mg_l=1.5)
    out = tmp_path / "t.npz"
    settings = ExplainSettings(target_nodes=("12", "20"))
    timeline, status = explain_scenario(spec, node_model, settings=settings, out=out)
    assert status == "computed" and timeline.node_level
    ids = [str(v) for v in timeline.node_ids]
    assert list(timeline.targets) == ["12", "20"] and timeline.node == "12"
    n_steps = len(timeline)
    assert timeline.node_forecast.shape == (n_steps, len(ids)) == timeline.node_lower.shape
    simulated = np.stack([timeline.chlorine[i + 4] for i in range(n_steps - 4)])
    assert np.allclose(timeline.node_truth[: n_steps - 4], simulated)  # truth: 4 steps later
    assert np.allclose(timeline.compliance_forecast, (timeline.node_forecast < 0.2).mean(axis=1))
    for node in ("12", "20"):
        shown = timeline.for_node(node)
        assert np.array_equal(shown.forecast, timeline.node_forecast[:, ids.index(node)])
        for reference in shown.references:
            for t, e in enumerate(shown.relative_to(reference).explanations):
                assert e.node == ids.index(node)
                efficiency = e.node_values("SV").sum() + e.empty_prediction
                assert efficiency == pytest.approx(e.prediction, abs=1e-5)
                # the served forecast is physical: a small negative output shown as 0 mg/L,
                # one above the source's 1.5 mg/L (nothing starts higher) shown as 1.5
                served = min(max(e.prediction, 0.0), 1.5)
                assert served == pytest.approx(float(shown.forecast[t]), abs=1e-5)
    loaded = Timeline.load(out)
    for name in ("node_forecast", "node_truth", "node_lower", "compliance_truth", "forecast"):
        assert np.array_equal(getattr(loaded, name), getattr(timeline, name)), name
    other = loaded.for_node("20").relative_to("none")
    again = timeline.for_node("20").relative_to("none")
    assert all(
        np.allclose(a.node_values("SV"), b.node_values("SV"), atol=1e-6)
        for a, b in zip(other.explanations, again.explanations)
    )
    with pytest.raises(DataError, match=r"no explanations of node '5' \(target nodes: 12, 20\)"):
        loaded.for_node("5")
    assert explain_scenario(spec, node_model, settings=settings, out=out)[1] == "cached"
    moved = ExplainSettings(target_nodes=("20",))
    _, status = explain_scenario(spec, node_model, settings=moved, out=out)
    assert status == "recomputed: cache made with another target_nodes"


def test_a_cache_made_under_another_default_node_rule_is_made_again(tmp_path, node_model):
    """A node timeline explaining its default node records the rule that chose it; a file made
    under another rule (or before rules were recorded) is recomputed, one whose nodes were
    asked for is not concerned."""
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.timeline import ExplainSettings, Timeline

    spec = ScenarioConfig(duration_s=1800, reporting_step_s=300, seed=4)
    out = tmp_path / "t.npz"
    timeline, status = explain_scenario(spec, node_model, out=out)
    assert status == "computed" and timeline.meta["default_target_rule"] == 2
    assert explain_scenario(spec, node_model, out=out)[1] == "cached"
    for rule in (1, None):  # another rule, a file from before rules were recorded
        old = Timeline.load(out)
        old.meta["default_target_rule"] = rule
        if rule is None:
            del old.meta["default_target_rule"]
        old.save(out)
        _, status = explain_scenario(spec, node_model, out=out)
        assert status == "recomputed: cache made with another default_target_rule"
    asked = ExplainSettings(target_nodes=("12",))
    timeline, _ = explain_scenario(spec, node_model, settings=asked, out=tmp_path / "a.npz")
    assert "default_target_rule" not in timeline.meta
    assert explain_scenario(spec, node_model, settings=asked, out=tmp_path / "a.npz")[1] == "cached"


def test_another_node_is_explained_on_demand_without_recomputing_the_others(node_model, hanoi):
    """with_node adds node 20 to a timeline that explained 12: its explanations (every step,
    both references) equal those of a run asked for both nodes; node 12's are the very
    objects it held; a node held already, a share timeline, an unknown id and another
    model are answered as such."""
    from dataclasses import replace

    from wdn_explain.on_demand import with_node
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.shipped import DEFAULT_MODEL, DEFAULT_TIMELINE
    from wdn_explain.timeline import ExplainSettings, Timeline

    spec = ScenarioConfig(duration_s=2400, injection_node="12", injection_strength_mg_l=1.5)
    one, _ = explain_scenario(spec, node_model, settings=ExplainSettings(target_nodes=("12",)))
    both, _ = explain_scenario(
        spec, node_model, settings=ExplainSettings(target_nodes=("12", "20"))
    )
    grown = with_node(one, "20", node_model, hanoi)
    assert grown.meta["target_nodes"] == ["12", "20"] and list(grown.targets) == ["12", "20"]
    assert grown.targets["12"] is one.targets["12"]
    for reference in both.references:
        new, oracle = grown.targets["20"][reference], both.targets["20"][reference]
        assert len(new) == len(oracle) == len(one)
        for a, b in zip(new, oracle):
            assert a.node == b.node == hanoi.node_index("20")
            np.testing.assert_allclose(a.node_values("SV"), b.node_values("SV"), atol=1e-6)
            assert a.prediction == pytest.approx(b.prediction, abs=1e-6)
    shown = grown.for_node("20")
    assert np.array_equal(shown.forecast, one.node_forecast[:, hanoi.node_index("20")])
    assert with_node(grown, "20", node_model, hanoi) is grown
    with pytest.raises(ConfigError, match="node '99' is not in network 'hanoi'"):
        with_node(one, "99", node_model, hanoi)
    with pytest.raises(DataError, match="forecasts the share of chlorinated nodes"):
        with_node(Timeline.load(DEFAULT_TIMELINE), "20", DEFAULT_MODEL, hanoi)
    with pytest.raises(DataError, match="is not the one that made this timeline"):
        with_node(replace(one, meta={**one.meta, "model_hash": "0" * 12}), "20", node_model, hanoi)


def test_target_nodes_are_refused_for_share_models_and_unknown_ids(tmp_path, node_model):
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.timeline import ExplainSettings

    spec = ScenarioConfig(duration_s=2400, injection_node="12")
    out = tmp_path / "t.npz"
    with pytest.raises(ConfigError, match=r"^target nodes \(12\) apply to node-level models"):
        explain_scenario(
            spec, ROOT / "models" / "default", settings=ExplainSettings(target_nodes=("12",))
        )
    result = run(
        "explain",
        "--model",
        node_model,
        "--scenario",
        "{duration_s: 2400}",
        "--out",
        out,
        "--node",
        "99",
    )
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "node '99' is not in network 'hanoi'" in result.output and not out.exists()


def test_the_app_is_offered_node_models_and_targets_filter_them(node_model, monkeypatch):
    from wdn_explain.shipped import model_target, water_models

    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(node_model))
    assert model_target(node_model) == "node_chlorine_mg_l"
    offered = water_models()  # what the app lists: the override first, node models too
    assert list(offered)[0] == str(node_model) and "hanoi-nodes" in offered
    share = water_models(targets=("share",))
    assert str(node_model) not in share and "hanoi-nodes" not in share and "default" in share
    assert all(model_target(path) == "share" for path in share.values())
    assert set(share) < set(offered)


def test_shipped_node_timeline_is_current_and_reports_refuse_it(tmp_path):
    from wdn_explain.shipped import default_timeline
    from wdn_explain.timeline import Timeline

    folder = ROOT / "models" / "hanoi-nodes"
    path = default_timeline(folder)
    assert path is not None
    timeline = Timeline.load(path)
    assert timeline.node_level and timeline.meta["target_nodes"] == [timeline.node]
    # the scenario's highest concentration: its setpoint or any node's initial quality
    high = max(timeline.scenario.injection_strength_mg_l, float(timeline.chlorine[0].max()))
    for e, f in zip(timeline.explanations, timeline.forecast):
        # efficiency; the timeline serves the physical forecast: down to 0.05 below 0 mg/L
        # reads as 0 (features.RANGE_TOLERANCE), farther is kept, and none above ``high``
        total = e.node_values("SV").sum() + e.empty_prediction
        served = min(0.0 if -0.05 <= total < 0 else total, high)
        assert served == pytest.approx(float(f), abs=1e-5)
    out = tmp_path / "r.html"
    result = run("report", "--timeline", path, "--out", out)
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert "reports draw share timelines only" in result.output and not out.exists()


@pytest.mark.parametrize(
    "spec",
    [
        dict(injection_node="20", injection_strength_mg_l=1.5),
        dict(injection_strength_mg_l=0.8, injection_mode="intermittent"),
        dict(injection_node="12", injection_strength_mg_l=2.0, injection_mode="failure"),
    ],
    ids=["booster", "reservoir intermittent", "booster failure"],
)
def test_no_node_exceeds_the_scenario_range(spec):
    """The bound the node intervals are clipped to holds in EPANET and is reached at the
    source: no chlorine above the setpoint (nothing here starts chlorinated)."""
    from wdn_explain.features import scenario_range
    from wdn_explain.simulation import simulate

    result = simulate(ScenarioConfig(duration_s=3600, reporting_step_s=300, **spec))
    low, high = scenario_range("node_chlorine_mg_l", spec["injection_strength_mg_l"], [0.0])
    assert (low, high) == (0.0, spec["injection_strength_mg_l"])
    assert result.node_chlorine_mg_l.max() <= high + 1e-6
    assert result.node_chlorine_mg_l.max() >= 0.95 * high  # the bound is reached


def test_shipped_node_intervals_stay_below_the_source_strength():
    from wdn_explain.shipped import default_timeline
    from wdn_explain.timeline import Timeline

    timeline = Timeline.load(default_timeline(ROOT / "models" / "hanoi-nodes"))
    assert timeline.chlorine[0].max() == 0.0  # nothing chlorinated at the start
    strength = timeline.scenario.injection_strength_mg_l  # the only source
    assert timeline.node_upper.max() <= strength + 1e-6
    assert timeline.node_lower.min() >= 0.0
    # the served forecast keeps to the same range, so it lies inside its interval
    assert timeline.node_forecast.max() <= strength + 1e-6
    assert (timeline.node_forecast <= timeline.node_upper + 1e-6).all()


def test_risk_calibrated_into_the_card_served_in_the_timeline_and_exported(tmp_path, node_model):
    """The card's risk is sigmoid(a_ik + b_ik f_i) of the raw forecast at every node: the
    timeline holds it per node and step (the explained node's raw forecast is its
    explanation's prediction), its file keeps it, and `export --risk-csv` writes it."""
    import pandas as pd
    from scipy.special import expit

    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.risk import risk_head
    from wdn_explain.timeline import ExplainSettings, Timeline

    _, card = load_model(node_model)
    risk = card.risk
    assert risk["min_residual_mg_l"] == 0.2 and len(risk["heads"]["any"]["slope"]) == 32
    assert 0 < risk["non_compliant_share"] < 1 and risk["n_calibration"] == 6 * 9 * 32
    assert card.compliance is None  # heads on the forecast: its share, thresholded
    spec = ScenarioConfig(duration_s=2400, injection_node="12", injection_strength_mg_l=1.5)
    out = tmp_path / "t.npz"
    settings = ExplainSettings(target_nodes=("12", "20"))
    timeline, _ = explain_scenario(spec, node_model, settings=settings, out=out)
    assert timeline.node_risk.shape == timeline.node_forecast.shape
    assert timeline.meta["risk"]["min_residual_mg_l"] == 0.2
    ids = [str(v) for v in timeline.node_ids]
    for node in ("12", "20"):
        i = ids.index(node)
        raw = np.array([e.prediction for e in timeline.for_node(node).explanations])
        intercept, slope = risk_head(risk, "booster")  # node 12 is a junction: a booster
        want = expit(intercept[i] + slope[i] * raw)
        assert np.allclose(timeline.node_risk[:, i], want, atol=1e-6)
    assert np.array_equal(Timeline.load(out).node_risk, timeline.node_risk)
    csv = tmp_path / "risk.csv"
    result = run("export", "--timeline", out, "--risk-csv", csv)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(csv, dtype={"node": str})
    assert len(table) == timeline.node_risk.size
    row = table[(table.node == "20") & (table.step == timeline.steps[3])].iloc[0]
    assert row.risk == pytest.approx(timeline.node_risk[3, ids.index("20")], abs=1e-6)


def test_risk_bad_input_is_refused_in_one_line_with_nothing_written(
    tmp_path, node_model, monitoring_dir
):
    """A negative or infinite minimum residual, one below every truth (no non-compliant
    case: chlorine is never below 0 mg/L), and a risk asked of a share model's timeline."""
    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    _refuses_minimums("calibrate", model, monitoring_dir, "inf")
    csv = tmp_path / "risk.csv"
    share = ROOT / "models" / "default" / "default_timeline.npz"
    result = run("export", "--timeline", share, "--risk-csv", csv, "--csv", tmp_path / "v.csv")
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "holds no risk of non-compliance: a share model has none" in result.output
    assert not csv.exists() and not (tmp_path / "v.csv").exists()


def test_risk_model_trained_beside_the_forecaster_serves_the_timelines_risk(
    tmp_path, node_model, monitoring_dir
):
    """`train-risk` writes risk.pt (its SHA-256 in the card) and heads fitted on its output;
    the timeline's risk is sigmoid(a_ik + b_ik g_i) of the risk model's own output g_i on
    the scenario's inputs, computed here from the weights file; a damaged risk.pt is refused."""
    from scipy.special import expit

    from wdn_explain.model_folder import file_sha256
    from wdn_explain.network import load_network
    from wdn_explain.pipeline import explain_scenario, scenario_graphs
    from wdn_explain.risk import risk_head
    from wdn_explain.simulation import simulate

    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--epochs", 3)
    assert result.exit_code == 0, result.output
    assert f"saved {model / 'risk.pt'} (3 + 3 epochs): risk of non-compliance (chlorine < 0.2" in (
        result.output
    )
    forecaster, card = load_model(model)
    trained = card.risk["model"]
    assert trained["weights_sha256"] == file_sha256(model / "risk.pt")
    assert trained["min_residual_mg_l"] == 0.2 and len(trained["history"]) == 6
    assert [row["member"] for row in trained["history"]] == [0, 0, 0, 1, 1, 1]
    assert {"val_logistic", "val_brier"} <= trained["history"][0].keys()
    # the defaults: one layer more than the forecaster, two models side by side
    assert trained["config"]["num_layers"] == forecaster.config.num_layers + 1
    assert trained["config"]["hidden_channels"] == 2 * forecaster.config.hidden_channels
    assert trained["train"]["members"] == 2
    assert ", 1 layer(s) added near the identity; 2 such model(s)" in trained["initial"]
    assert card.risk["method"].startswith("logistic regression on the risk model's output")
    risk_net = NodeChlorineGNN(ModelConfig(**trained["config"]))
    risk_net.load_state_dict(torch.load(model / "risk.pt", weights_only=True))
    risk_net.eval()
    assert not torch.equal(risk_net.readout.weight, forecaster.readout.weight)
    spec = ScenarioConfig(duration_s=2400, injection_node="12", injection_strength_mg_l=1.5)
    timeline, _ = explain_scenario(spec, model, out=tmp_path / "t.npz")
    network = load_network("hanoi")
    graphs = scenario_graphs(simulate(spec, network), network, card.input_spec)
    with torch.no_grad():
        g = np.stack([risk_net(d.x, d.edge_index, d.edge_attr).numpy() for d in graphs])
    intercept, slope = risk_head(card.risk, "booster")
    want = expit(intercept + slope * g[timeline.steps])
    assert np.allclose(timeline.node_risk, want, atol=1e-5)
    # the compliance share: the estimator the card chose for a booster scenario, computed
    # here from the timeline's node forecasts and risks; the other one once the card says so
    served = {
        "forecast": (timeline.node_forecast < 0.2).mean(axis=1),
        "risk": timeline.node_risk.mean(axis=1),
    }
    assert not np.allclose(served["forecast"], served["risk"])
    chosen = card.compliance["estimator"]["booster"]
    assert np.allclose(timeline.compliance_forecast, served[chosen])
    other = "risk" if chosen == "forecast" else "forecast"
    record = json.loads((model / "card.json").read_text())
    record["risk"]["compliance"]["estimator"]["booster"] = other
    (model / "card.json").write_text(json.dumps(record))
    again, _ = explain_scenario(spec, model, out=tmp_path / "t2.npz")
    assert np.allclose(again.compliance_forecast, served[other], atol=1e-6)
    said = {"forecast": "from the node forecasts", "risk": "the mean risk of non-compliance"}
    inline = "{duration_s: 2400, injection_node: '12', injection_strength_mg_l: 1.5}"
    shown = run("explain", "--model", model, "--scenario", inline, "--out", tmp_path / "t2.npz")
    assert shown.exit_code == 0, shown.output
    assert f"compliance share (nodes below 0.2 mg/L), {said[other]}" in shown.output
    first = f"{again.times_s[0] / 60:>6g} min  {again.compliance_forecast[0]:.3f}  simulated"
    assert first in shown.output
    assert card.conformal["risk_bands"] == [0.1, 0.9]  # the intervals grouped by the risk
    reaches = (timeline.node_risk >= 0.05) & (timeline.node_forecast >= 0.05)
    assert reaches.any() and (timeline.node_lower[reaches] == 0).all()
    again = run("train-risk", "--model", model, "--data", monitoring_dir, "--epochs", 1)
    assert again.exit_code == 1 and again.output.count("\n") == 1, again.output
    assert "has a risk model; use --overwrite to replace it" in again.output
    (model / "risk.pt").write_bytes((model / "risk.pt").read_bytes()[:-1] + b"x")
    with pytest.raises(DataError, match="risk.pt' do not match the SHA-256 recorded"):
        explain_scenario(spec, model)


@pytest.fixture(scope="module")
def plan_node_model(tmp_path_factory, monitoring_dir):
    """A small node model that reads the dosing plan and the pipes' flushes (so its card
    holds the links' volumes)."""
    out = tmp_path_factory.mktemp("plan_node_model")
    features = (*FEATURES, "source_plan_mg_l")
    return small_node_model(out, monitoring_dir, 5, features, ("flow", "pipe_flushes"))


def travel_horizons(network, flow_lps: np.ndarray, source: int, horizon_s: float) -> np.ndarray:
    """Plug-flow travel time from ``source`` to every node over links oriented by their flow
    (volume / |flow| seconds each), by networkx's Dijkstra, in horizons, capped at 2."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(network.n_nodes))
    for (a, b), q, volume in zip(network.link_nodes, flow_lps, network.link_volume_l):
        if q != 0:
            graph.add_edge(*((a, b) if q > 0 else (b, a)), seconds=volume / abs(q))
    reached = nx.single_source_dijkstra_path_length(graph, source, weight="seconds")
    return np.array([min(reached.get(i, np.inf) / horizon_s, 2.0) for i in range(len(graph))])


def test_risk_model_reads_the_sources_setpoint_and_travel_time_at_every_node(
    tmp_path, plan_node_model, monitoring_dir
):
    """A forecaster that reads the plan and the flushes gets a risk model that also reads the
    source's setpoint now and over the horizon at every node and the travel time from the
    source along the flows now, and the setpoint that reaches it by the horizon: the timeline's risk is sigmoid(a + b g) of risk.pt's GNN on
    the scenario's inputs with those columns written here from the simulation's recorded
    source (its largest value at each report t .. t + horizon) and flows (networkx)."""
    from scipy.special import expit

    from wdn_explain.network import load_network
    from wdn_explain.pipeline import explain_scenario, scenario_graphs
    from wdn_explain.risk import risk_head
    from wdn_explain.simulation import simulate

    model = tmp_path / "m"
    shutil.copytree(plan_node_model, model)
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--epochs", 2)
    assert result.exit_code == 0, result.output
    _, card = load_model(model)
    trained = card.risk["model"]
    assert trained["added_inputs"] == [
        "network_setpoint_mg_l",
        "source_travel_horizons",
        "horizon_arrival_mg_l",
    ]
    gnn = NodeChlorineGNN(ModelConfig(**trained["config"]))
    gnn.load_state_dict(torch.load(model / "risk.pt", weights_only=True))
    gnn.eval()
    spec = ScenarioConfig(
        duration_s=2400,
        injection_node="12",
        injection_strength_mg_l=1.5,
        injection_mode="intermittent",
        injection_start_s=300,
        intermittent_on_s=600,
        intermittent_off_s=600,
    )
    timeline, _ = explain_scenario(spec, model, out=tmp_path / "t.npz")
    network = load_network("hanoi")
    simulated = simulate(spec, network)
    graphs = scenario_graphs(simulated, network, card.input_spec)
    source = simulated.node_source_mg_l.max(axis=1)  # the setpoint at each report
    horizon, n = card.input_spec.horizon, network.n_nodes
    last = len(source) - 1
    g = []
    at, horizon_s = network.node_ids.index("12"), horizon * spec.reporting_step_s
    for t, d in enumerate(graphs):
        setpoint = [source[min(t + k, last)] for k in range(horizon + 1)]
        travel = travel_horizons(network, simulated.link_flow_lps[t], at, horizon_s)
        travel = travel if max(setpoint) > 0 else np.full(n, 2.0)
        # the setpoint leaving the source ceil(travel) reports before the horizon, now at most
        arrival = [setpoint[max(horizon - int(np.ceil(h * horizon - 1e-6)), 0)] for h in travel]
        added = torch.tensor([[*setpoint, h, a] for h, a in zip(travel, arrival)], dtype=d.x.dtype)
        with torch.no_grad():
            g.append(gnn(torch.cat([d.x, added], 1), d.edge_index, d.edge_attr).numpy())
    assert len(set(source)) > 1  # the source switches within the scenario
    intercept, slope = risk_head(card.risk, "booster")
    want = expit(intercept + slope * np.stack(g)[timeline.steps])
    assert np.allclose(timeline.node_risk, want, atol=1e-5)


def test_train_risk_bad_input_is_refused_in_one_line_with_nothing_written(
    tmp_path, node_model, monitoring_dir
):
    """A share model, a minimum residual negative, not finite or below every truth, and a
    recalibration at a minimum the risk model did not learn."""
    share = tmp_path / "share"
    shutil.copytree(ROOT / "models" / "default", share)
    result = run("train-risk", "--model", share, "--data", monitoring_dir)
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "forecasts the share of chlorinated nodes: the risk of non-compliance needs a node" in (
        result.output
    )
    assert not (share / "risk.pt").exists()
    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    _refuses_minimums("train-risk", model, monitoring_dir, "nan")
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--layers", 1)
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    refusal = "num_layers must be at least the model's 2: a deeper copy adds layers after them"
    assert f"{refusal} (got 1)" in result.output
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--members", 0)
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "members must be >= 1 (got 0)" in result.output
    assert not (model / "risk.pt").exists()
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--epochs", 1)
    assert result.exit_code == 0, result.output
    trained = (model / "card.json").read_bytes()
    result = run("calibrate", "--model", model, "--data", monitoring_dir, "--min-residual", 0.3)
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert "the risk model of" in result.output and "learnt chlorine below 0.2 mg/L" in (
        result.output
    )
    assert (model / "card.json").read_bytes() == trained
    result = run("calibrate", "--model", model, "--data", monitoring_dir)
    assert result.exit_code == 0, result.output
    card = json.loads((model / "card.json").read_text())
    assert card["risk"]["model"] == json.loads(trained)["risk"]["model"]  # kept


def _refuses_minimums(command: str, model, data, not_finite: str) -> None:
    """``command`` refuses a negative minimum residual, a non-finite one and one below every
    truth (no non-compliant case: chlorine is never below 0 mg/L) in one line each, the
    card left as it was."""
    before = (model / "card.json").read_bytes()
    for minimum, message in (
        ("-0.1", "min_residual_mg_l must be a finite chlorine residual >= 0 mg/L (got -0.1)"),
        (
            not_finite,
            f"min_residual_mg_l must be a finite chlorine residual >= 0 mg/L (got {not_finite})",
        ),
        ("0", "holds no non-compliant node forecasts (chlorine below 0 mg/L)"),
    ):
        result = run(command, "--model", model, "--data", data, "--min-residual", minimum)
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert message in result.output
        assert (model / "card.json").read_bytes() == before


def test_train_risk_interrupted_says_what_it_kept(
    tmp_path, node_model, monitoring_dir, monkeypatch
):
    """Ctrl-C before the first epoch ends: nothing saved, exit 130 (was click's "Aborted!",
    exit 1); during the calibration after the save: the risk model kept, and how to finish."""
    import wdn_explain.training as training

    model = tmp_path / "m"
    shutil.copytree(node_model, model)
    before = {p.name: p.read_bytes() for p in model.iterdir()}

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "fit", interrupt)
    result = run("train-risk", "--model", model, "--data", monitoring_dir)
    assert result.exit_code == 130, result.output
    assert result.output == "interrupted: nothing is saved (the first epoch had not ended)\n"
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before
    monkeypatch.undo()
    monkeypatch.setattr(training, "calibrate_model", interrupt)
    result = run("train-risk", "--model", model, "--data", monitoring_dir, "--epochs", 1)
    assert result.exit_code == 130, result.output
    assert result.output.rstrip().endswith(
        f"interrupted after training: the risk model is saved in {model}, its intervals not yet "
        f"grouped by it; `wdn-explain calibrate --model {model} --data {monitoring_dir}` does it"
    )  # after the progress bar
    assert load_model(model)[1].risk["model"]["weights_sha256"]
