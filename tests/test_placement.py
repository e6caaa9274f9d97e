"""Sensor placement from exact global importance (issue 32): a star whose centre's reading
carries every leaf's forecast (values computed by hand), the redundancy rule on a matrix
built in the test, the Dask run's bytes against one process and a resumed run, the drop
metrics against plain loops, and the command's bad input refused in one line with nothing
written."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import ConfigError, DataError
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.model import ModelConfig
from wdn_explain.placement import (
    Importance,
    global_importance,
    propose,
    reading_columns,
    step_importance,
)
from wdn_explain.placement_scores import detection, first_drops

N_LEAVES = 5


class FromNeighbours(nn.Module):
    """One layer, no self loop: a node's forecast is the sum over its neighbours u of
    reading(u) + 2 * source(u) -- additive, so each reading's Shapley value for a target is
    its own term there."""

    num_layers = 1

    def forward(self, x, edge_index):
        src, dst = edge_index
        terms = x[src, 0] + 2 * x[src, 1]
        return torch.zeros(len(x), dtype=x.dtype).index_add(0, dst, terms)[:, None]


def star(readings: list[float], source_at: int) -> Data:
    """Centre 0 and leaves 1..5, both directions; columns reading and source (mg/L)."""
    leaves = range(1, N_LEAVES + 1)
    src = [0] * N_LEAVES + list(leaves)
    dst = list(leaves) + [0] * N_LEAVES
    x = torch.zeros(N_LEAVES + 1, 2, dtype=torch.float64)
    x[:, 0] = torch.tensor(readings, dtype=torch.float64)
    x[source_at, 1] = 0.7
    return Data(x=x, edge_index=torch.tensor([src, dst]))


def test_the_centre_of_a_star_carries_every_leafs_forecast():
    readings = [1.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    data = star(readings, source_at=5)  # leaf 5 doses: held, never masked
    explainer = GraphSHAPIQ(FromNeighbours(), baseline="zeros")
    found = step_importance(explainer, data, known=np.array([False, True]))
    expected = np.zeros((6, 6))
    expected[1:, 0] = readings[0]  # every leaf's forecast is the centre's reading ...
    expected[0, 1:5] = readings[1:5]  # ... the centre's the leaves', the dosing leaf held
    assert np.allclose(found, expected, atol=1e-12)
    importance = Importance(tuple("abcdef"), found, 1)
    assert np.allclose(importance.values, [5.0, 0.1, 0.2, 0.3, 0.4, 0.0])  # shares summed
    assert propose(importance, 1) == ("a",) and propose(importance, 1, "top") == ("a",)
    assert propose(importance, 2, "top") == ("a", "e")


def test_a_star_without_readings_has_no_importance():
    data = star([0.0] * 6, source_at=2)  # chlorine has not arrived: every player a dummy
    explainer = GraphSHAPIQ(FromNeighbours(), baseline="zeros")
    assert not step_importance(explainer, data, known=np.array([False, True])).any()


class TwoHops(FromNeighbours):
    """Declares one layer, reads two hops: its values cannot add back up to its output."""

    def forward(self, x, edge_index):
        once = super().forward(x, edge_index)
        return super().forward(torch.cat([once, x[:, 1:]], dim=1), edge_index)


@pytest.mark.parametrize("model", [FromNeighbours(), TwoHops()])
def test_a_chunk_checks_the_readout_once_and_refuses_a_model_that_fails_it(model):
    """The workers' explainer skips the readout check; each chunk runs it on its first step
    with importance, so a model whose values do not add up is refused, not summed."""
    from types import SimpleNamespace

    from wdn_explain import placement
    from wdn_explain.errors import ExplainError

    readings = [1.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    steps = [star([0.0] * 6, source_at=5), star(readings, source_at=5), star(readings, 5)]
    dataset = SimpleNamespace(
        arrays=SimpleNamespace(chlorine_mg_l=np.zeros((1, 3, 6))),
        scenarios=np.array([0]),
        n_times=3,
        graph=lambda s, t: steps[t],
    )
    explainer = GraphSHAPIQ(model, baseline="zeros", readout_check="off")
    known = np.array([False, True])
    if isinstance(model, TwoHops):
        with pytest.raises(ExplainError, match="not a function of its 1-hop receptive field"):
            placement.summed_importance(explainer, dataset, known)
        return
    total = placement.summed_importance(explainer, dataset, known)
    assert np.allclose(total.sum(axis=0), 2 * np.array([5.0, 0.1, 0.2, 0.3, 0.4, 0.0]))
    assert explainer.readout_check == "off"  # after the checked step


def test_coverage_passes_over_a_reading_that_serves_the_same_targets():
    # n0 and n1 carry targets 0-3 (n0 more of each); n2 alone carries target 4
    per_target = np.array([[0.6, 0.4, 0.0]] * 4 + [[0.0, 0.0, 1.0]])
    per_target = 3 * np.pad(per_target, ((0, 0), (0, 2)))  # two nodes that matter nowhere
    importance = Importance(("n0", "n1", "n2", "n3", "n4"), per_target, 10)
    assert np.allclose(importance.values, [2.4, 1.6, 1.0, 0.0, 0.0])  # shares of each target
    assert propose(importance, 2, "top") == ("n0", "n1")
    assert propose(importance, 2) == ("n0", "n2")  # n1 adds nothing once n0 is read
    assert propose(importance, 3)[:2] == ("n0", "n2")


@pytest.mark.parametrize("k", [0, 6, True, 1.5])
def test_bad_k_is_named(k):
    importance = Importance(tuple("abcde"), np.ones((5, 5)), 1)
    with pytest.raises(ConfigError, match=r"k must be an integer between 1 and 5"):
        propose(importance, k)


def test_drops_and_detection_against_plain_loops():
    gen = np.random.default_rng(3)
    chlorine = gen.uniform(0, 0.4, size=(8, 12, 5))
    drops = first_drops(chlorine, 0.2)
    for s in range(8):
        for j in range(5):
            times = [t for t in range(1, 12) if chlorine[s, t - 1, j] >= 0.2 > chlorine[s, t, j]]
            assert drops[s, j] == (times[0] if times else -1)
    drops[2] = -1  # a scenario without any drop counts in neither figure
    sensors = np.array([1, 3])
    drops[5, sensors] = -1  # a drop no sensor sees
    assert (drops[5] >= 0).any()
    share, delay, impact = detection(drops, sensors, step_s=300, n_reports=13)
    seen, delays, impacts = 0, [], []
    for s in range(8):
        if (drops[s] < 0).all():
            continue
        first = drops[s][drops[s] >= 0].min()
        at = [drops[s, j] for j in sensors if drops[s, j] >= 0]
        if at:
            seen += 1
            delays.append((min(at) - first) * 5.0)
        impacts.append(((min(at) if at else 13) - first) * 5.0)
    assert share == pytest.approx(seen / 7) and delay == pytest.approx(np.mean(delays))
    assert impact == pytest.approx(np.mean(impacts)) and len(delays) < len(impacts)


def test_reading_columns_follow_the_recipe_layout():
    from wdn_explain.features import InputSpec

    spec = InputSpec(
        node_features=("chlorine_mg_l", "source_mg_l", "source_plan_mg_l", "chlorine_history_mg_l"),
        horizon=2,
        target="node_chlorine_mg_l",
    )
    assert reading_columns(spec).tolist() == [True, False, False, False, True, True]


@pytest.fixture(scope="module")
def placement_model(tmp_path_factory, monitoring_dir):
    """A node-level model on the recipe's inputs (plan and history: known and reading
    columns) trained briefly on the tiny monitoring design."""
    from wdn_explain import recipe
    from wdn_explain.training import TrainConfig, train

    out = tmp_path_factory.mktemp("placement_model")
    config = TrainConfig(
        epochs=2, batch_size=16, node_features=recipe.NODE_FEATURES, target="node_chlorine_mg_l"
    )
    model = ModelConfig(hidden_channels=8, num_layers=2)
    train(monitoring_dir, out, model_config=model, train_config=config, device="cpu")
    return out


def _folder_bytes(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


def test_two_dask_workers_give_the_bytes_of_one_process_and_resume(
    placement_model, monitoring_dir, tmp_path
):
    pytest.importorskip("distributed")
    options = dict(n_scenarios=6, chunk_scenarios=2)
    one = global_importance(placement_model, monitoring_dir, tmp_path / "one", **options)
    two = global_importance(placement_model, monitoring_dir, tmp_path / "two", workers=2, **options)
    expected = _folder_bytes(tmp_path / "one")
    assert sorted(expected) == [
        "chunks/chunk_00000.npy",
        "chunks/chunk_00001.npy",
        "chunks/chunk_00002.npy",
        "importance.csv",
        "run.json",
    ]
    assert _folder_bytes(tmp_path / "two") == expected
    assert one.values.tobytes() == two.values.tobytes() and one.values.max() > 0
    assert one.n_forecasts == 6 * 9  # 13 reports, horizon 4
    (tmp_path / "one" / "chunks" / "chunk_00001.npy").unlink()  # as if Ctrl-C hit it
    global_importance(placement_model, monitoring_dir, tmp_path / "one", **options)
    assert _folder_bytes(tmp_path / "one") == expected


def test_a_folder_of_another_run_is_refused(placement_model, monitoring_dir, tmp_path):
    global_importance(placement_model, monitoring_dir, tmp_path, n_scenarios=2, chunk_scenarios=2)
    with pytest.raises(DataError, match=r"holds another run \(differs in n_scenarios\)"):
        global_importance(
            placement_model, monitoring_dir, tmp_path, n_scenarios=4, chunk_scenarios=2
        )


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_command_proposes_and_records_the_sensors(placement_model, monitoring_dir, tmp_path):
    out = tmp_path / "place"
    result = run(
        "sensors", "place", "--model", placement_model, "--data", monitoring_dir, "--k", 2,
        "--out", out,
        "--scenarios", 4, "--chunk", 2,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads((out / "placement.json").read_text())
    table = (out / "importance.csv").read_text().splitlines()
    assert record["k"] == 2 and record["rule"] == "coverage"
    assert f"proposed sensors (k=2): {', '.join(record['quality_node_sensors'])}" in result.output
    assert table[0] == "rank,node,importance" and len(table) == 33


@pytest.fixture(scope="module")
def share_model(tmp_path_factory, monitoring_dir):
    from wdn_explain.training import TrainConfig, train

    out = tmp_path_factory.mktemp("share_model")
    model, config = ModelConfig(hidden_channels=8, num_layers=2), TrainConfig(epochs=1)
    train(monitoring_dir, out, model_config=model, train_config=config, device="cpu")
    return out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "0"], r"k must be an integer between 1 and 32, the network's nodes \(got 0\)"),
        (["--k", "33"], r"k must be an integer between 1 and 32, the network's nodes \(got 33\)"),
        (["--k", "2", "--rule", "best"], r"rule must be one of coverage, top \(got 'best'\)"),
        (["--k", "2", "--scenarios", "61"], r"scenarios must be between 1 and 60"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    placement_model, monitoring_dir, tmp_path, args, message
):
    out = tmp_path / "place"
    result = run(
        "sensors",
        "place",
        "--model",
        placement_model,
        "--data",
        monitoring_dir,
        "--out",
        out,
        *args,
    )
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert re.search(message, result.output), result.output
    assert not out.exists()


def test_models_that_cannot_place_are_refused(share_model, monitoring_dir, tmp_path):
    out = tmp_path / "place"
    for model, message in [
        (tmp_path / "nothing", "is not a model folder"),
        (share_model, "forecasts the share, not chlorine at every node"),
    ]:
        result = run(
            "sensors", "place", "--model", model, "--data", monitoring_dir, "--k", 2, "--out", out
        )
        assert result.exit_code == 1 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not out.exists()


def _plain_detection(chlorine, sensors):
    """Share of drop scenarios seen at ``sensors`` and mean minutes to see them (loops)."""
    n_seen, delays, n_events = 0, [], 0
    for s in range(len(chlorine)):
        drops = {
            j: [
                t
                for t in range(1, chlorine.shape[1])
                if chlorine[s, t - 1, j] >= 0.2 > chlorine[s, t, j]
            ]
            for j in range(chlorine.shape[2])
        }
        firsts = [d[0] for d in drops.values() if d]
        if not firsts:
            continue
        n_events += 1
        at = [drops[j][0] for j in sensors if drops[j]]
        if at:
            n_seen += 1
            delays.append((min(at) - min(firsts)) * 5.0)
    return n_seen / n_events, np.mean(delays)


def test_the_comparison_scores_placements_on_another_folder(
    placement_model, monitoring_dir, tmp_path
):
    from wdn_explain.dataset import load_waq_arrays

    # chama solves its MILP with GLPK (a system package): compared only where both are here
    chama = importlib.util.find_spec("chama") is not None and shutil.which("glpsol") is not None
    out = tmp_path / "place"
    result = run(
        "sensors", "place", "--model", placement_model, "--data", monitoring_dir, "--k", 3,
        "--out", out, "--scenarios", 4, "--chunk", 2, "--compare", monitoring_dir,
        "--random", 3, *([] if chama else ["--no-chama"]),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = (out / "comparison.md").read_text().splitlines()
    assert rows[2].startswith("| global importance |") and rows[-1].startswith("| mean of 3 random")
    assert len(rows) == 5 if chama else 4
    sensors = json.loads((out / "placement.json").read_text())["quality_node_sensors"]
    arrays = load_waq_arrays(monitoring_dir)
    ids = arrays.manifest.network.node_ids
    share, delay = _plain_detection(arrays.chlorine_mg_l, [ids.index(s) for s in sensors])
    cells = [c.strip() for c in rows[2].split("|")[1:-1]]
    assert cells[1] == ", ".join(sensors)
    assert float(cells[3]) == pytest.approx(share, abs=5e-4)
    assert cells[4] == "nan" or float(cells[4]) == pytest.approx(delay, abs=0.051)


def test_data_of_another_network_is_refused_before_any_chunk(
    placement_model, monitoring_dir, tmp_path
):
    """The model's network is checked against the design's manifest first (a Net1 design
    gave a numpy broadcast error after the chunks started)."""
    other = tmp_path / "other"
    other.mkdir()
    manifest = json.loads((monitoring_dir / "manifest.json").read_text())
    manifest["network"]["sha256"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest))
    for path in monitoring_dir.glob("scenario_*.npz"):
        (other / path.name).symlink_to(path)
    with pytest.raises(DataError, match=r"data folder '.*other' was simulated on network"):
        global_importance(placement_model, other, tmp_path / "out", n_scenarios=2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--compare", "nowhere"], "data folder 'nowhere' does not exist"),
        (["--random", -1], r"random placements must be >= 0 \(got -1\)"),
    ],
)
def test_a_bad_comparison_is_refused_before_the_placement(
    placement_model, monitoring_dir, tmp_path, options, message
):
    out = tmp_path / "place"
    if "--compare" not in options:
        options = [*options, "--compare", monitoring_dir]
    result = run(
        "sensors", "place", "--model", placement_model, "--data", monitoring_dir, "--k", 2,
        "--out", out, "--scenarios", 2, *options,
    )  # fmt: skip
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and re.match(f"error: {message}", lines[0]), lines
    assert not out.exists()
