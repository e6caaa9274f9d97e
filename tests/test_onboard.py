"""`wdn-explain network onboard`: a utility's .inp to a model folder (issue 20). Net1 (11 nodes)
goes end to end from a temporary folder with 8 scenarios and one epoch (a model no better
than the tree); broken networks are
refused in one line naming the file, with exit code 1 and nothing written.

Oracles independent of the code under test: node ids read from the .inp text, the split
sizes counted by hand, the forecasts recomputed by running the saved model on the saved
default scenario, the label recomputed from the simulated chlorine, the booster ranking
worked out by hand on a four-node line.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_networks_pipeline import inp_node_ids
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.dataset import split_scenarios
from wdn_explain.errors import ConfigError
from wdn_explain.model_folder import load_model, read_card
from wdn_explain.network import Network, builtin_network_path, load_network
from wdn_explain.onboard import booster_candidates, n_layers_for
from wdn_explain.pipeline import scenario_graphs
from wdn_explain.scenario import load_config
from wdn_explain.shipped import default_scenario, default_timeline, water_models
from wdn_explain.simulation import simulate
from wdn_explain.timeline import Timeline
from wdn_explain.waq import scenario_path

runner = CliRunner()
N_SCENARIOS, N_REPORTS, HORIZON, THRESHOLD = 8, 37, 4, 0.05  # 3 h at 5 min: 37 states
# one epoch: a model no better than the tree, whose verdict the last line must give
FAST = ["--scenarios", N_SCENARIOS, "--epochs", 1, "--workers", 1, "--device", "cpu"]


def onboard(*args):
    return runner.invoke(app, ["network", "onboard", *map(str, args)])


@pytest.fixture(scope="module")
def net1_inp(tmp_path_factory):
    """Net1's .inp as a utility's own file (its own name, outside epyt)."""
    path = tmp_path_factory.mktemp("utility") / "Mytown.inp"
    shutil.copyfile(builtin_network_path("net1"), path)
    return path


@pytest.fixture(scope="module")
def onboarded(net1_inp, tmp_path_factory):
    """The command run once from a temporary working folder without --out, the user models
    folder set to ``models`` there (a relative path); returns (the model folder's absolute
    path, the output)."""
    where = tmp_path_factory.mktemp("work")
    with contextlib.chdir(where), pytest.MonkeyPatch.context() as env:
        env.setenv("WDN_EXPLAIN_MODELS", "models")
        result = onboard(net1_inp, *FAST)
    assert result.exit_code == 0, result.output
    return where / "models" / "mytown", result.output


def test_folder_loads_like_a_shipped_one(onboarded, net1_inp, monkeypatch):
    folder, output = onboarded
    ids = inp_node_ids(net1_inp)
    for stage in ("check", "design", "simulate", "train", "evaluate", "explain"):
        assert re.search(rf"\[\d/6\] {stage} \(at \d+ s\): ", output), stage  # no ^: bars
    # the network travels with the model, under the name its card records
    assert (folder / "mytown.inp").read_bytes() == net1_inp.read_bytes()
    card = read_card(folder)
    assert card.data.network.name == "mytown" and card.data.n_scenarios == N_SCENARIOS
    assert card.model["num_layers"] == 3  # Net1 at three layers: 2^11 coalitions at most
    assert card.conformal is not None  # calibrated
    # the design: the monitoring design on this network, boosters among its junctions
    design = load_config(folder / "design.yaml")
    assert design.n_scenarios == N_SCENARIOS
    assert design.scenario.network == str((folder / "mytown.inp").resolve())
    junctions = set(ids) - {"9", "2"}  # Net1's reservoir 9 and tank 2
    assert set(design.design.injection_nodes) <= junctions
    assert design.design.injection_nodes[0] == "10"  # every drop from the pump passes 10
    assert design.design.reservoir_share == pytest.approx(0.3)
    # pressure-driven; Net1 serves its base demand at the diurnal peak (well over 4 x at
    # 20 m): the demand levels top out at 1 x, and the design check says all is delivered
    assert design.scenario.demand_model == "PDA" and design.design.demand_scale[1] == 1.0
    assert "hydraulics     pressure-driven (full demand at 20 m" in output
    assert "design check: 0 of 8 corners" in output and "every demand is delivered" in output
    scenarios = sorted((folder / "data").glob("scenario_*.npz"))
    assert [p.name for p in scenarios] == [
        scenario_path(folder / "data", i).name for i in range(N_SCENARIOS)
    ]
    # evaluation.txt: the test split of 8 scenarios is 8 - round(6.4) - round(0.8) = 1
    text = (folder / "evaluation.txt").read_text().splitlines()
    warnings = [line for line in text if line.startswith("warning:")]  # one epoch: warns
    text = text[len(warnings) :]
    assert text[0].startswith(f"test: {1 * (N_REPORTS - HORIZON)} samples")
    mae = {row[0]: float(row[1]) for row in map(str.split, text[2:7])}  # the table's MAE column
    assert set(mae) == {"model", "persistence", "climatology", "tree", "flat_tree"}
    warned = any("no better than persistence" in line for line in warnings)
    assert warned == (mae["model"] >= mae["persistence"])
    assert "seed" not in re.search(r"\[6/6\] explain[^\n]*", output).group()  # a drawn seed
    # the app finds the folder, its default scenario and its current timeline
    assert output.rstrip().endswith("the app (`streamlit run app/main.py`) lists it")
    # one epoch is no match for the tree: the last line, the card and the evaluation say so,
    # with the remedy (twice the scenarios; twice the epochs, as training ran all of them),
    # and no line calls the folder ready
    assert mae["model"] >= mae["tree"]
    last = output.rstrip().splitlines()[-1]
    assert (
        f"its model is NO BETTER THAN THE TREE on the test scenarios (MAE {mae['model']:.4f} "
        f"against {mae['tree']:.4f}): simulate more scenarios and train more epochs (run again "
        f"with --scenarios {2 * N_SCENARIOS} --epochs 2 --overwrite)" in last
    )
    assert "ready" not in output
    assert any("no better than a gradient-boosted tree" in w for w in warnings)
    assert any("no better than a gradient-boosted tree" in w for w in card.metrics["warnings"])
    monkeypatch.setenv("WDN_EXPLAIN_MODELS", str(folder.parent))
    assert water_models()["mytown"] == folder
    assert default_timeline(folder) == folder / "default_timeline.npz"


def test_timeline_is_the_model_run_on_the_saved_scenario(onboarded, net1_inp):
    folder, _ = onboarded
    spec = load_config(folder / "default_scenario.yaml").scenario_config(0)
    assert spec == default_scenario(folder)
    tl = Timeline.load(folder / "default_timeline.npz")
    assert tl.node_ids.tolist() == inp_node_ids(net1_inp)
    assert tl.steps.tolist() == list(range(N_REPORTS - HORIZON))
    network = load_network(folder / "mytown.inp")
    result = simulate(spec, network)
    labels = (result.node_chlorine_mg_l >= THRESHOLD).mean(axis=1)
    np.testing.assert_allclose(tl.truth, labels[HORIZON:], atol=1e-6)
    # a scenario whose truth changes (Net1 starts chlorinated everywhere: a booster's share
    # stays 1.0 throughout): the test scenario whose truth spreads most, else any scenario's
    assert np.ptp(tl.truth) > 0
    spreads = []
    for i in range(N_SCENARIOS):
        with np.load(scenario_path(folder / "data", i), allow_pickle=False) as saved:
            share = (saved["node_chlorine_mg_l"] >= THRESHOLD).mean(axis=1)
        spreads.append(np.ptp(share[HORIZON:]))
    test = [spreads[i] for i in split_scenarios(N_SCENARIOS, 0)["test"]]
    expected = max(test) if max(test) > 0 else max(spreads)
    assert np.ptp(tl.truth) == pytest.approx(expected)
    model, card = load_model(folder)
    graphs = scenario_graphs(result, network, card.input_spec)[: len(tl)]
    with torch.no_grad():
        forecast = np.array([float(model(g.x, g.edge_index, g.edge_attr)) for g in graphs])
    # the timeline serves the physical forecast: a share at most 0.05 outside [0, 1] reads as
    # the bound it crosses (features.RANGE_TOLERANCE); farther ones are kept
    forecast = np.where((forecast > 1) & (forecast <= 1.05), 1.0, forecast)
    forecast = np.where((forecast < 0) & (forecast >= -0.05), 0.0, forecast)
    np.testing.assert_allclose(tl.forecast, forecast, atol=1e-5)
    assert all(e.exact and e.n_layers == 3 for e in tl.explanations)


def test_run_again_resumes(onboarded, net1_inp):
    folder, _ = onboarded
    weights = (folder / "model.pt").read_bytes()
    stamp = (folder / "default_timeline.npz").stat().st_mtime_ns
    result = onboard(net1_inp, "--out", folder, *FAST)
    assert result.exit_code == 0, result.output
    assert re.search(r"train \(at \d+ s\): kept the model", result.output)
    # Net1's .inp starts its 9 junctions at 0.5 mg/L and reservoir 9 and tank 2 at 1.0
    assert "starts 11 of 11 nodes with chlorine" in result.output
    assert "cached; the model folder" in result.output
    assert (folder / "model.pt").read_bytes() == weights
    assert (folder / "default_timeline.npz").stat().st_mtime_ns == stamp


def test_other_design_in_the_folder_is_refused(onboarded, net1_inp):
    folder, _ = onboarded
    result = onboard(net1_inp, "--out", folder, "--scenarios", 9, "--workers", 1)
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"error: model folder '{folder}' holds another design ({folder / 'design.yaml'}: "
        "other scenarios, seed or network); use --overwrite to start afresh"
    )


def _net1_text() -> str:
    return builtin_network_path("net1").read_text()


def _without(text: str, pattern: str) -> str:
    """The .inp text without the lines matching ``pattern``."""
    return "\n".join(line for line in text.splitlines() if not re.match(pattern, line))


def _without_demands(text: str) -> str:
    """The .inp text with every junction's base demand 0 (Net1 has no [DEMANDS] section)."""
    head, rest = text.split("[RESERVOIRS]", 1)
    return re.sub(r"^(\s*\S+\s+\S+\s+)[\d.]+", r"\g<1>0", head, flags=re.M) + "[RESERVOIRS]" + rest


BROKEN = {
    # not a network at all
    "garbage": (lambda: "this is not a network\n", "is not an EPANET network"),
    # reservoir 9, tank 2 and the pump and pipe that join them removed: only junctions
    "no_source": (
        lambda: _without(_net1_text(), r"^ (9|2|110) |^ LINK 9"),
        "has no reservoir or tank",
    ),
    # pipes 111, 112 and 113 removed: junctions 21, 22, 23, 31 and 32 hang free
    "disconnected": (
        lambda: _without(_net1_text(), r"^ (111|112|113) "),
        "has 5 of 11 nodes connected to no reservoir or tank: 21, 22, 23, 31, 32",
    ),
    # every base demand 0 (as epyt's C-Town, "Battle of the Calibration Networks System.inp")
    "no_demand": (
        lambda: _without_demands(_net1_text()),
        "has no junction with a base demand: nothing draws water through it",
    ),
    # valid for EPANET (epyt's BWSN_Network_1.inp has it), refused by WNTR
    "wntr_refuses": (
        lambda: _net1_text().replace("Chlorine mg/L", "Chemical TIME"),
        "cannot be read by WNTR, which reads its properties and map: (Error 213) invalid "
        "option value 'for chemical units', at line 145: Quality Chemical TIME",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_broken_network_refused_with_nothing_written(tmp_path, case):
    text, reason = BROKEN[case]
    inp = tmp_path / f"{case}.inp"
    inp.write_text(text())
    folder = tmp_path / "models" / case
    result = onboard(inp, "--out", folder, "--workers", 1)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert str(inp) in errors[0] and reason in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [inp.name]  # nothing written


def test_booster_candidates_rank_junctions_by_flow_through_them():
    """A line reservoir 0 - 1 - 2 - 3 and a dead end 4 on 2: flows 5, 3, 1 and 0 L/s. The
    flow through a junction is half its links' summed flow: 4 at 1, 2 at 2 ((3 + 1 + 0) /
    2), 0.5 at 3; the dead end carries none and is no candidate."""
    network = Network(
        name="line",
        inp_path=builtin_network_path("net1"),  # unused here
        node_ids=("0", "1", "2", "3", "4"),
        node_roles=("reservoir", "junction", "junction", "junction", "junction"),
        link_ids=("a", "b", "c", "d"),
        link_nodes=np.array([[0, 1], [1, 2], [2, 3], [2, 4]]),
        link_types=("pipe",) * 4,
        coordinates=np.zeros((5, 2)),
    )
    flows = np.array([[5.0, 3.0, 1.0, 0.0], [-5.0, -3.0, -1.0, 0.0]])  # direction is no matter
    assert booster_candidates(network, flows) == ("1", "2", "3")


def test_layers_follow_the_cost_of_exact_explanations():
    assert n_layers_for(load_network("net1")) == 3  # |I| = 2 048 at three layers
    assert n_layers_for(load_network("net3")) == 2  # |I| about 3e7 at three layers


def test_too_few_scenarios_refused(tmp_path, net1_inp):
    result = onboard(net1_inp, "--out", tmp_path / "m", "--scenarios", 5)
    assert result.exit_code == 1
    assert "scenarios must be at least 8 (got 5)" in result.output
    assert not (tmp_path / "m").exists()


def test_help_shows_the_defaults_the_function_uses():
    """The command's defaults are the library function's: read from its signature here
    and from the help text the user sees."""
    import inspect
    import re

    from wdn_explain.onboard import onboard as run_onboarding

    defaults = {name: p.default for name, p in inspect.signature(run_onboarding).parameters.items()}
    help_text = runner.invoke(app, ["network", "onboard", "--help"]).output
    text = " ".join(help_text.replace("│", " ").split())  # one line, without the box
    shown = {}  # option -> the default its help shows
    for block in re.split(r" --(?=[a-z])", text)[1:]:
        default = re.search(r"\[default: ([^\]]+)\]", block)
        shown[block.split()[0]] = default and default[1]
    assert shown["scenarios"] == str(defaults["n_scenarios"])
    assert shown["epochs"] == str(defaults["epochs"])
    assert shown["seed"] == str(defaults["seed"])
    assert shown["device"] == defaults["device"]
    assert shown["no-overwrite"] == ("overwrite" if defaults["overwrite"] else "no-overwrite")
    assert shown["layers"] is None and defaults["layers"] is None  # chosen from the network
    assert f"at least {inspect.getmodule(run_onboarding).MIN_SCENARIOS})" in text


def test_missing_file_refused(tmp_path):
    result = onboard(tmp_path / "nowhere.inp", "--out", tmp_path / "m")
    assert result.exit_code == 1
    assert f"network file '{tmp_path / 'nowhere.inp'}' does not exist" in result.output
    with pytest.raises(ConfigError, match="is not an EPANET .inp file"):
        from wdn_explain.onboard import check_network

        check_network(tmp_path / "net.txt")


def test_user_models_are_listed_after_the_shipped_ones(tmp_path, monkeypatch):
    """Two cards in the user models folder: one under its own name, one named like the
    shipped default (listed by its path, the shipped one keeps its name)."""
    from wdn_explain.shipped import DEFAULT_MODEL

    for name in ("mine", "default"):
        (tmp_path / name).mkdir()
        shutil.copyfile(DEFAULT_MODEL / "card.json", tmp_path / name / "card.json")
    monkeypatch.setenv("WDN_EXPLAIN_MODELS", str(tmp_path))
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    models = water_models()
    assert models["default"] == DEFAULT_MODEL
    assert list(models)[-2:] == [str(tmp_path / "default"), "mine"]  # by folder name
    assert models["mine"] == tmp_path / "mine"


@pytest.mark.parametrize(("mae", "persistence", "warned"), [(0.12, 0.2, False), (0.2, 0.2, True)])
def test_a_model_no_better_than_persistence_is_warned(mae, persistence, warned):
    from wdn_explain.scoring import Scores, score_warnings

    results = {"mae": mae, "persistence_mae": persistence, "forecast_warning": None}
    found = score_warnings(Scores(results, inputs=None, split="test", step_s=300))
    assert found == (
        [
            f"the model is no better than persistence on the test split (MAE {mae:.4f} against "
            f"{persistence:.4f}): its forecasts add nothing to the present reading; a design whose "
            "target barely changes (every node chlorinated from the start, say) teaches a model "
            "little"
        ]
        if warned
        else []
    )


def crashing_inp(folder) -> Path:
    """Net1 with a 5 000-character line after ``[JUNCTIONS]``: EPANET's reader segfaults."""
    path = folder / "crash.inp"
    path.write_text(_net1_text().replace("[JUNCTIONS]", "[JUNCTIONS]\n" + "A" * 5000, 1))
    return path


def test_a_file_that_crashes_epanet_is_refused_and_the_cli_lives(tmp_path):
    inp = crashing_inp(tmp_path)
    for command in (["network", "onboard", str(inp), "--out", str(tmp_path / "m")], None):
        if command is None:  # simulate: the same check, reached through the scenario
            config = tmp_path / "crash.yaml"
            config.write_text(f"n_scenarios: 1\nscenario:\n  network: {inp}\n")
            command = ["simulate", "--config", str(config), "--out", str(tmp_path / "data")]
        run = subprocess.run(
            [sys.executable, "-m", "wdn_explain", *command], capture_output=True, text=True
        )
        assert run.returncode == 1, run.stderr[-2000:]  # not -11: the process survived
        errors = [line for line in (run.stdout + run.stderr).splitlines() if "error" in line]
        assert errors == [
            f"error: cannot read network file '{inp}': it crashes EPANET's reader (SIGSEGV); "
            "look for an over-long line or binary content in it"
        ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crash.inp", "crash.yaml"]


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        (["--scenarios", 10**9], "this would take"),
        (["--epochs", 0], "epochs must be >= 1 (got 0)"),
        (["--layers", 0], "num_layers must be an integer >= 1 (got 0)"),
        (["--device", "xyz"], "unknown device 'xyz'"),  # was found after the simulations
        (["--workers", -1], "workers must be >= 0"),
    ],
)
def test_bad_settings_refused_before_anything_is_written(tmp_path, net1_inp, option, reason):
    workers = [] if "--workers" in option else ["--workers", 1]
    result = onboard(net1_inp, "--out", tmp_path / "m", *workers, *option)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and reason in errors[0] and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []  # nothing written: the corrected command runs


@pytest.mark.parametrize(
    ("file_name", "model"), [("My Town (2024).inp", "my-town-2024"), ("...inp", None)]
)
def test_the_default_model_name_is_one_the_app_accepts(tmp_path, monkeypatch, file_name, model):
    from wdn_explain.shipped import model_name_for, user_model_folder

    monkeypatch.setenv("WDN_EXPLAIN_MODELS", str(tmp_path / "models"))
    inp = tmp_path / "in" / file_name
    inp.parent.mkdir()
    shutil.copyfile(builtin_network_path("net1"), inp)
    if model is None:  # nothing usable in the name: never the parent of the models folder
        result = onboard(inp, "--scenarios", 10**9)
        assert result.exit_code == 1
        assert "name the model folder with --out" in result.output
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    else:
        assert model_name_for(file_name) == model
        assert user_model_folder(model) == tmp_path / "models" / model


def test_interrupted_training_is_not_called_ready(tmp_path, net1_inp, monkeypatch):
    """Ctrl-C in training: train keeps the best epoch (``interrupted`` in the card);
    onboarding stops there instead of evaluating and explaining a half-trained model."""
    from wdn_explain import onboard as onboarding
    from wdn_explain import training

    real = training.train
    monkeypatch.setattr(training, "train", lambda *a, **k: {**real(*a, **k), "interrupted": True})
    folder = tmp_path / "m"
    with pytest.raises(KeyboardInterrupt):
        onboarding.onboard(net1_inp, folder, n_scenarios=N_SCENARIOS, epochs=1, n_workers=1)
    assert (folder / "model.pt").is_file()
    assert (
        not (folder / "evaluation.txt").exists() and not (folder / "default_timeline.npz").exists()
    )


def test_an_unscored_model_is_completed_on_the_rerun(tmp_path, net1_inp, monkeypatch):
    """Ctrl-C after training, while the model's held-out work ran: train saved it
    (``unscored``); the rerun keeps those weights and adds the intervals and scores instead
    of calling a model without them ready."""
    from wdn_explain import onboard as onboarding
    from wdn_explain import training
    from wdn_explain.model_folder import read_card

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "conformal_record", interrupt)
    folder = tmp_path / "m"
    with pytest.raises(KeyboardInterrupt):
        onboarding.onboard(net1_inp, folder, n_scenarios=N_SCENARIOS, epochs=1, n_workers=1)
    saved = read_card(folder)
    assert saved.unscored and saved.conformal is None
    monkeypatch.undo()
    done = onboarding.onboard(net1_inp, folder, n_scenarios=N_SCENARIOS, epochs=1, n_workers=1)
    card = read_card(folder)
    assert not card.unscored and card.conformal is not None and "tree_mae" in card.metrics
    assert card.weights_sha256 == saved.weights_sha256  # the same weights, not trained again
    assert done.metrics == card.metrics
