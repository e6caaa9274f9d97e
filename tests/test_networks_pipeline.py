"""The whole pipeline on networks other than Hanoi, through the CLI (issue 12): Net1 (11 nodes)
and ky3 (275 nodes, the cheapest ky network: about 0.6 s per simulated hour on one core, and
chlorine from its reservoir reaches a tenth of the nodes within the hour) go through
simulate, train (one epoch), evaluate, explain (a 2-layer model, exact), report and export.

The oracles are independent of the code under test: node ids read from the .inp text, the
label recomputed from the simulated chlorine, the efficiency axiom per step.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.network import load_network
from wdn_explain.simulation import SimulationResult
from wdn_explain.timeline import Timeline
from wdn_explain.waq import scenario_path

runner = CliRunner()

HORIZON, THRESHOLD = 4, 0.05  # the CLI defaults, restated: the label is recomputed below


def run(*args) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def inp_node_ids(path: Path) -> list[str]:
    """Node ids of an EPANET file, read from its [JUNCTIONS], [RESERVOIRS] and [TANKS]."""
    ids, section = [], None
    for line in path.read_text(errors="replace").splitlines():
        text = line.split(";", 1)[0].strip()
        if re.fullmatch(r"\[\w+\]", text):
            section = text.upper()
        elif text and section in ("[JUNCTIONS]", "[RESERVOIRS]", "[TANKS]"):
            ids.append(text.split()[0])
    return ids


def design(network: str, n_scenarios: int, duration_s: int) -> dict:
    """Scenarios of ``network`` with chlorine at the first reservoir and drawn demands."""
    return {
        "n_scenarios": n_scenarios,
        "seed": 12,
        "scenario": {
            "network": network,
            "duration_s": duration_s,
            "reporting_step_s": 300,
            "pattern_step_s": 300,
        },
        "design": {
            "injection_strength_mg_l": [0.5, 2.0],
            "demand_scale": [0.8, 1.2],
            "injection_start_s": [0, 900],
        },
    }


def pipeline(folder: Path, network: str, n_scenarios: int, duration_s: int) -> dict:
    """Run every pipeline command on ``network``; return the paths and CLI outputs."""
    config = folder / "design.yaml"
    config.write_text(yaml.safe_dump(design(network, n_scenarios, duration_s)))
    data, model = folder / "data", folder / "model"
    tl_path, report, csv = folder / "timeline.npz", folder / "report.html", folder / "sv.csv"
    out = {"data": data, "timeline": tl_path, "report": report, "csv": csv}
    run("simulate", "--config", config, "--out", data, "--workers", 1)
    train = ["--epochs", 1, "--layers", 2, "--hidden", 8, "--batch-size", 8, "--device", "cpu"]
    run("train", "--data", data, "--out", model, "--network", network, *train)
    out["evaluate"] = run("evaluate", "--model", model, "--data", data, "--split", "all")
    out["n_scenarios"] = n_scenarios
    run("explain", "--scenario", config, "--index", 0, "--model", model, "--out", tl_path)
    run("report", "--timeline", tl_path, "--out", report)
    run("export", "--timeline", tl_path, "--index", "SV", "--csv", csv)
    return out


def assert_pipeline_right(out: dict, network: str, duration_s: int) -> None:
    """Every command's output on ``network`` against oracles computed here (raises
    AssertionError on the first that does not hold)."""
    ids = inp_node_ids(load_network(network).inp_path)
    n_reports = duration_s // 300 + 1
    scenarios = [
        SimulationResult.load(scenario_path(out["data"], i)) for i in range(out["n_scenarios"])
    ]
    scenario = scenarios[0]
    assert scenario.node_ids.tolist() == ids
    assert scenario.node_chlorine_mg_l.shape == (n_reports, len(ids))

    labels = np.array([(s.node_chlorine_mg_l >= THRESHOLD).mean(axis=1) for s in scenarios])
    # a one-epoch model's forecasts may leave [0, 1]: flagged on a warning line of its own
    lines = [line for line in out["evaluate"].splitlines() if not line.startswith("warning:")]
    assert lines[0].startswith(f"all: {labels[:, HORIZON:].size} samples")
    persistence = next(line.split() for line in lines if line.split()[:1] == ["persistence"])
    mae = np.abs(labels[:, HORIZON:] - labels[:, :-HORIZON]).mean()
    assert float(persistence[1]) == pytest.approx(mae, abs=6e-5)  # printed to 4 decimals

    tl = Timeline.load(out["timeline"])
    assert tl.node_ids.tolist() == ids
    assert tl.steps.tolist() == list(range(n_reports - HORIZON))
    assert tl.chlorine.shape == (n_reports - HORIZON, len(ids))
    np.testing.assert_allclose(tl.truth, labels[0, HORIZON:], atol=1e-6)  # simulated again
    assert labels[0, -1] > 0  # chlorine reached nodes: the forecast has something to explain
    assert all(e.exact and e.n_layers == 2 for e in tl.explanations)
    assert np.abs(tl.forecast - tl.reference_forecast).max() > 1e-6  # something to share
    sv = tl.node_values("SV")
    assert sv.shape == (len(tl), len(ids))
    np.testing.assert_allclose(sv.sum(axis=1), tl.forecast - tl.reference_forecast, atol=1e-5)

    html = out["report"].read_text()
    assert f"Network <b>{network}</b>: {len(ids)} nodes" in html
    table = pd.read_csv(out["csv"], dtype={"nodes": str})
    assert set(table["step"]) == set(tl.steps.tolist())
    assert set(table.loc[table["size"] == 1, "nodes"]) == set(ids)


@pytest.mark.parametrize(
    ("network", "n_scenarios", "duration_s"), [("net1", 6, 3600), ("ky3", 6, 2400)]
)
def test_pipeline_small(tmp_path, network, n_scenarios, duration_s):
    """Six short scenarios (the fewest that split into train and validation), one epoch:
    every command runs and its output is right."""
    assert_pipeline_right(pipeline(tmp_path, network, n_scenarios, duration_s), network, duration_s)


@pytest.mark.slow
@pytest.mark.parametrize("network", ["net1", "ky3"])
def test_pipeline_longer_scenarios(tmp_path, network):
    """Ten 2-hour scenarios: a dataset with train, validation and test scenarios."""
    assert_pipeline_right(pipeline(tmp_path, network, 10, 7200), network, 7200)
