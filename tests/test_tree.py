"""The strong tree baseline (issue 31) recomputed from the raw scenario files: its features
built here by hand from the stored arrays (the plan read from the source recorded ahead, the
injection node from the stored config), scikit-learn fitted here with the same settings and
its iterations chosen on the validation scenarios by MAE; and a model forced to be worse than
the tree is told so by ``evaluate``, on its card and where the app reads its warnings."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.ensemble import HistGradientBoostingRegressor
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.dataset import WaqDataset, split_scenarios
from wdn_explain.model_folder import load_model, read_card, save_model
from wdn_explain.onboard import evaluation_warnings, onboard_verdict, remedy
from wdn_explain.scoring import metric_warnings, tree_verdict
from wdn_explain.training import calibrate_model
from wdn_explain.tree import tree_forecast

H, THRESHOLD = 4, 0.05


def raw_rows(folder, scenarios, flow_scale, node_level):
    """Features and labels of every forecast of ``scenarios``, from the scenario files."""
    manifest = json.loads((folder / "manifest.json").read_text())
    ids, reservoir = manifest["network"]["node_ids"], manifest["network"]["reservoirs"][0]
    rows, labels = [], []
    for s in scenarios:
        with np.load(folder / f"scenario_{s:05d}.npz", allow_pickle=False) as f:
            chlorine, source = f["node_chlorine_mg_l"], f["node_source_mg_l"]
            flow = f["link_flow_lps"] / flow_scale
            config = json.loads(str(f["config_json"]))
        at = ids.index(config.get("injection_node") or reservoir)
        for t in range(len(chlorine) - H):
            ahead = source[t + 1 : t + H + 1]  # the plan: what the schedule held next
            nodes = np.column_stack([chlorine[t], source[t], ahead.T]).ravel()
            c = chlorine[t]
            rows.append(
                np.concatenate(
                    [
                        nodes,
                        flow[t],
                        -flow[t],
                        ahead[:, at],
                        [c.mean(), c.max(), (c >= THRESHOLD).sum(), c[at], source[t].max()],
                    ]
                )
            )
            truth = chlorine[t + H]
            labels.append(truth if node_level else (truth >= THRESHOLD).mean())
    return np.array(rows, dtype=np.float32), np.array(labels, dtype=np.float32)


def tuned_tree(x, y, x_val, y_val, x_test):
    tree = HistGradientBoostingRegressor(
        max_iter=200, learning_rate=0.1, early_stopping=False, random_state=0
    ).fit(x, y)
    val_mae = [np.abs(p - y_val).mean() for p in tree.staged_predict(x_val)]
    return list(tree.staged_predict(x_test))[int(np.argmin(val_mae))]


SAMPLED_NODES = [1, 11, 20, 27]
"""Near the reservoir, on the trunk and two far nodes: every node's tree is fitted the same way,
so the default run checks these and the slow run every node (``None``)."""


@pytest.mark.parametrize(
    ("target", "nodes"),
    [
        ("share", None),
        ("node_chlorine_mg_l", SAMPLED_NODES),
        pytest.param("node_chlorine_mg_l", None, marks=pytest.mark.slow),
    ],
)
def test_tree_recomputed_from_raw_scenario_files(monitoring_dir, target, nodes):
    node_level = target != "share"
    ds = WaqDataset(monitoring_dir, "test", target=target)
    splits = split_scenarios(ds.arrays.n_scenarios, 0)
    scale = ds.inputs.flow_scale_lps
    x, y = raw_rows(monitoring_dir, splits["train"], scale, node_level)
    x_val, y_val = raw_rows(monitoring_dir, splits["val"], scale, node_level)
    x_test, truth = raw_rows(monitoring_dir, splits["test"], scale, node_level)
    targets, persistence = ds.targets(), ds.persistence()
    if node_level:
        columns = list(range(y.shape[1])) if nodes is None else nodes
        want = np.stack([tuned_tree(x, y[:, i], x_val, y_val[:, i], x_test) for i in columns], 1)
        want = np.clip(want, 0, None)
        reported = []  # the progress after each node's tree: (done, total)
        sampled = None if nodes is None else np.array(nodes)
        got = tree_forecast(ds, nodes=sampled, progress=lambda *p: reported.append(p))
        assert reported == [(k, len(columns)) for k in range(1, len(columns) + 1)]
        truth, targets, persistence = (a[:, columns] for a in (truth, targets, persistence))
    else:
        want = np.clip(tuned_tree(x, y, x_val, y_val, x_test), 0, 1)
        got = tree_forecast(ds)
    np.testing.assert_allclose(targets, truth, atol=1e-7)
    np.testing.assert_allclose(got, want, atol=1e-5)
    # the tree is a real forecast: well ahead of carrying the present forward
    assert np.abs(got - truth).mean() < 0.6 * np.abs(persistence - truth).mean()


def test_the_verdict_names_both_maes_and_the_remedy():
    better = {"mae": 0.011, "persistence_mae": 0.05, "tree_mae": 0.012}
    worse = better | {"mae": 0.0349, "tree_mae": 0.0137}
    assert tree_verdict(better) is None and tree_verdict({"mae": 0.1}) is None
    line = tree_verdict(worse, "all")
    assert "no better than a gradient-boosted tree" in line
    assert "0.0349 against the tree's 0.0137" in line and "all split" in line
    assert "more scenarios" in line and "more epochs" in line
    assert metric_warnings(worse) == [tree_verdict(worse)]


def _card(metrics: dict, epochs_run: int) -> SimpleNamespace:
    """What the verdict reads of a card: 40 scenarios, up to 30 epochs, ``epochs_run`` run."""
    return SimpleNamespace(
        metrics=metrics,
        train={"epochs": 30},
        history=[{}] * epochs_run,
        data=SimpleNamespace(n_scenarios=40),
    )


def test_the_onboarding_verdict_gives_the_remedy():
    """Twice the scenarios; twice the epochs only where training ran them all."""
    better = {"mae": 0.011, "tree_mae": 0.012}
    worse = {"mae": 0.0349, "tree_mae": 0.0137}
    assert onboard_verdict(_card(better, 30)) == (
        "its model beats the tree on the test scenarios (MAE 0.0110 against 0.0120)"
    )
    assert onboard_verdict(_card(worse, 30)) == (
        "its model is NO BETTER THAN THE TREE on the test scenarios (MAE 0.0349 against "
        "0.0137): simulate more scenarios and train more epochs (run again with --scenarios "
        "80 --epochs 60 --overwrite)"
    )
    assert onboard_verdict(_card(worse, 12)) == (
        "its model is NO BETTER THAN THE TREE on the test scenarios (MAE 0.0349 against "
        "0.0137): simulate more scenarios (run again with --scenarios 80 --epochs 30 "
        "--overwrite)"
    )
    assert remedy(_card(better, 30)) is None and remedy(_card({"mae": 0.1}, 30)) is None


def test_a_model_worse_than_the_tree_says_so(tmp_path, monitoring_model, monitoring_dir):
    """The trained model's head zeroed: it forecasts one constant share, which the tree
    beats; evaluate prints the warning, and recalibrating writes it on the card, where the
    app reads it."""
    trained, _ = monitoring_model
    folder = tmp_path / "weak"
    shutil.copytree(trained, folder)
    model, card = load_model(folder)
    with torch.no_grad():
        model.readout.weight.zero_()
        model.readout.bias.fill_(0.5)
    save_model(model, card.to_json(), folder)
    result = CliRunner().invoke(
        app, ["evaluate", "--model", str(folder), "--data", str(monitoring_dir)]
    )
    assert result.exit_code == 0, result.output
    assert "warning: the model is no better than a gradient-boosted tree" in result.output
    metrics = calibrate_model(folder, monitoring_dir)["metrics"]
    assert metrics["mae"] > metrics["tree_mae"]
    assert tree_verdict(metrics) in read_card(folder).metrics["warnings"]
    assert tree_verdict(metrics) in evaluation_warnings(folder)
