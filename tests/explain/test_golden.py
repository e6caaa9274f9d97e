"""Step 12 of the shipped default timeline, by value (regenerate: golden/make_golden.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.explain import GraphSHAPIQ

from conftest import ROOT

GOLDEN = json.loads((Path(__file__).parent / "golden" / "default_step12.json").read_text())


@pytest.fixture(scope="module")
def explained():
    from wdn_explain.model_folder import load_model

    model, _ = load_model(ROOT / GOLDEN["model"])
    data = Data(
        x=torch.tensor(GOLDEN["x"], dtype=torch.float32),
        edge_index=torch.tensor(GOLDEN["edge_index"]),
        edge_attr=torch.tensor(GOLDEN["edge_attr"], dtype=torch.float32),
    )
    return GraphSHAPIQ(model).explain(data)


def test_shipped_step_reproduces_the_golden_values(explained):
    assert explained.method == GOLDEN["method"]
    assert explained.n_interactions == GOLDEN["n_interactions"]
    assert explained.prediction == pytest.approx(GOLDEN["prediction"], abs=1e-6)
    assert explained.empty_prediction == pytest.approx(GOLDEN["empty_prediction"], abs=1e-6)
    np.testing.assert_allclose(explained.node_values("SV"), GOLDEN["sv"], atol=1e-6)
    ksii = explained.interaction_values("k-SII", 2)
    expected = {tuple(k): v for k, v in GOLDEN["k_sii_2"]}
    assert set(ksii.dict_values) == set(expected)
    assert max(abs(ksii[k] - v) for k, v in expected.items()) < 1e-6


def test_shipped_timeline_file_holds_the_same_step():
    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    timeline = Timeline.load(DEFAULT_TIMELINE)
    t = int(np.flatnonzero(timeline.steps == GOLDEN["step"])[0])
    np.testing.assert_allclose(timeline.node_values("SV")[t], GOLDEN["sv"], atol=1e-5)
    assert timeline.forecast[t] == pytest.approx(GOLDEN["prediction"], abs=1e-5)
