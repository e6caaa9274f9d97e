"""One validated path from (index, order) to values; copies; approximation labels everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from shapiq import InteractionValues
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import ExplainError
from wdn_explain.explain import Explanation, GraphSHAPIQ
from wdn_explain.shipped import DEFAULT_TIMELINE
from wdn_explain.timeline import Timeline


@pytest.fixture
def explained(wdn_model, small_graph):
    return GraphSHAPIQ(wdn_model).explain(small_graph)


def test_sv_and_bv_need_no_order(explained):
    sv = explained.interaction_values("SV")
    assert sv.index == "SV" and sv.max_order == 1
    assert sv.dict_values == explained.interaction_values("SV", 1).dict_values
    assert explained.interaction_values("BV").index == "BV"
    assert explained.interaction_values("k-SII").max_order == 2  # the default order
    nodes = explained.node_values("SV")
    assert nodes.tolist() == [sv[(i,)] for i in range(explained.n_players)]
    members, values = explained.index_values("k-SII", 2, 2)
    ksii = explained.interaction_values("k-SII", 2)
    assert values.tolist() == [ksii[tuple(m)] for m in members.tolist()]


def test_moebius_order_keeps_smaller_sets(explained):
    every = explained.interaction_values("Moebius")
    pairs = explained.interaction_values("Moebius", 2)
    assert max(len(k) for k in every.dict_values) > 2
    assert pairs.dict_values == {k: v for k, v in every.dict_values.items() if len(k) <= 2}


def test_returned_values_are_the_callers_copy(explained):
    first = explained.interaction_values("k-SII", 2)
    reference = dict(first.dict_values)
    first.sparsify(threshold=1.0)  # shapiq changes values and lookup in place
    first.values[:] = 0.0
    assert explained.interaction_values("k-SII", 2).dict_values == reference
    nodes = explained.node_values("SV")
    nodes[:] = 0
    assert explained.node_values("SV").any()
    members, values = explained.index_values("k-SII", 2, 2)  # kept for the next call
    members[:], values[:] = -1, 0.0
    members, values = explained.index_values("k-SII", 2, 2)
    assert (members >= 0).all() and values.any()


def test_approximation_is_labelled_estimated_everywhere(wdn_model, small_graph, tmp_path):
    approx = GraphSHAPIQ(wdn_model).explain(small_graph, budget=1)
    assert not approx.exact and approx.budget == 1
    iv = approx.interaction_values("SV")
    assert iv.estimated and iv.estimation_budget == approx.n_graph_evaluations > 0
    back = Explanation.load(approx.save(tmp_path / "a.npz"))
    assert back.budget == 1 and back.interaction_values("k-SII").estimated
    exact = GraphSHAPIQ(wdn_model).explain(small_graph)
    assert not exact.interaction_values("SV").estimated
    # a timeline of approximate steps keeps the labels through save, load, CSV and JSON export
    timeline = Timeline(
        steps=np.arange(2),
        times_s=np.array([0, 300]),
        node_ids=np.array([str(i) for i in range(10)]),
        chlorine=np.zeros((2, 10), dtype=np.float32),
        forecast=np.array([approx.prediction, exact.prediction]),
        truth=np.zeros(2),
        explanations=[approx, exact],
        meta={
            "scenario": {},
            "scenario_hash": "0" * 16,
            "model_hash": "0" * 16,
            "engine_version": "test",
            "horizon": 4,
            "threshold": 0.05,
        },
    )
    loaded = Timeline.load(timeline.save(tmp_path / "t.npz"))
    frame = loaded.to_frame("k-SII")
    assert frame.groupby("step")["estimated"].all().tolist() == [True, False]
    result = CliRunner().invoke(
        app,
        [
            "export",
            "--timeline",
            str(tmp_path / "t.npz"),
            "--index",
            "SV",
            "--json-dir",
            str(tmp_path / "iv"),
        ],
    )
    assert result.exit_code == 0, result.output
    saved = InteractionValues.from_json_file(tmp_path / "iv" / "step_0000.json")
    assert saved.estimated and saved.estimation_budget == approx.n_graph_evaluations
    assert not InteractionValues.from_json_file(tmp_path / "iv" / "step_0001.json").estimated


def test_timeline_and_cli_refuse_bad_orders_in_one_line(tmp_path):
    timeline = Timeline.load(DEFAULT_TIMELINE)
    with pytest.raises(ExplainError, match="order must be a positive integer \\(got 0\\)"):
        timeline.node_values("k-SII", 0)
    assert timeline.node_values("SV").shape == (len(timeline), len(timeline.node_ids))
    for command in ("report", "export"):
        extra = (
            ["--out", str(tmp_path / "r.html")]
            if command == "report"
            else ["--csv", str(tmp_path / "x.csv")]
        )
        result = CliRunner().invoke(
            app, [command, "--timeline", str(DEFAULT_TIMELINE), "--order", "0", *extra]
        )
        assert result.exit_code == 1
        assert result.output.strip() == "error: order must be a positive integer (got 0)"


def test_plot_frames_use_the_same_path():
    from wdn_explain.plot import frame_data

    timeline = Timeline.load(DEFAULT_TIMELINE)
    sv = frame_data(timeline, 3, "SV", None, 5)
    assert sv.node_values.tolist() == timeline.node_values("SV")[3].tolist() and not sv.pairs
    ksii = frame_data(timeline, 3, "k-SII", None, 5)  # default order 2: pairs, no hulls
    members, values = timeline.explanations[3].index_values("k-SII", 2, 2)
    strongest = max(abs(v) for v in values)
    assert len(ksii.pairs) == 5 and abs(ksii.pairs[0][1]) == pytest.approx(strongest)
    with pytest.raises(ExplainError, match="index 'SV' has order 1 \\(got order 2\\)"):
        frame_data(timeline, 3, "SV", 2, 5)


def test_empty_set_carries_the_reference_output(wdn_model, small_graph):
    """shapiq's convention: k-SII puts nu(empty) on the empty set. Here nu(empty) is the model
    run in the test on the graph with every node at the mean feature."""
    import torch

    explained = GraphSHAPIQ(wdn_model).explain(small_graph)
    masked = small_graph.x.mean(dim=0, keepdim=True).expand_as(small_graph.x)
    with torch.no_grad():
        empty = float(wdn_model(masked, small_graph.edge_index, small_graph.edge_attr))
    for order in (1, 2, 3):
        ksii = explained.interaction_values("k-SII", order)
        assert ksii[()] == pytest.approx(empty, abs=1e-9)
        assert ksii.baseline_value == pytest.approx(empty, abs=1e-9)
        members, values = explained.index_values("k-SII", order, 0)
        assert members.shape == (1, 0) and values[0] == pytest.approx(empty, abs=1e-9)
