"""CLI messages and exit codes."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wdn_explain.cli import app

from conftest import CHEM, ROOT

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    "command",
    [
        "simulate",
        "data-stats",
        "train",
        "evaluate",
        "calibrate",
        "complexity",
        "explain",
        "report",
        "export",
    ],
)
def test_help_on_every_command(command):
    result = run(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.output


@pytest.mark.parametrize("group", [[], ["network"], ["chem"], ["sensors"]])
def test_command_lists_give_each_summary_as_one_paragraph(group):
    """Each command's summary in the list is its docstring's first paragraph with the
    docstring's line breaks dropped (they broke it mid-sentence), and the Markdown of the
    docstring rendered (no backticks)."""
    import inspect
    import re

    import typer.main

    command = typer.main.get_command(app)
    for name in group:
        command = command.commands[name]
    result = runner.invoke(app, [*group, "--help"], env={"COLUMNS": "2000"})
    assert result.exit_code == 0, result.output
    shown = {
        line.split()[0]: " ".join(line.split()[1:])
        for line in (re.sub(r"[│╭╮╰╯─]", " ", raw).strip() for raw in result.output.splitlines())
        if line and line.split()[0] in command.commands
    }
    assert set(shown) == set(command.commands)
    for name, sub in command.commands.items():
        first = inspect.cleandoc(sub.help).split("\n\n")[0]
        assert shown[name] == " ".join(first.replace("`", "").split()), name


def test_simulate_and_data_stats(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("n_scenarios: 3\nseed: 2\nscenario:\n  duration_s: 1800\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "w", "--workers", 1)
    assert result.exit_code == 0, result.output
    assert "3 scenarios in" in result.output
    stats = run("data-stats", tmp_path / "w")
    assert stats.exit_code == 0, stats.output
    assert "hanoi (32 nodes, 34 links)" in stats.output
    assert "sample shapes  x (32, 6), edge_index (2, 68), edge_attr (68, 1), y (1,)" in stats.output
    assert "arrival of chlorine >= 0.05 mg/L" in stats.output
    assert "  injection  reservoir 3\n" in stats.output  # no design: every scenario alike
    table = stats.output.split("mean s\n")[1].splitlines()
    assert [row.split()[0] for row in table] == [str(i) for i in range(1, 33)]  # 2 before 10


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("scenario:\n  network: atlantis\n", "unknown network 'atlantis'"),
        ("scenario:\n  injection_node: '99'\n", "node '99' is not in network 'hanoi'"),
        ("scenario:\n  duration_s: -60\n", "duration_s: Input should be greater than 0"),
        ("scenario:\n  flavour: mint\n", "unknown key 'scenario.flavour'"),
    ],
)
def test_simulate_bad_config(tmp_path, yaml_text, message):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml_text)
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_simulate_refuses_other_config(tmp_path, waq_dir):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("n_scenarios: 1\nseed: 3\nscenario:\n  duration_s: 1800\n")
    result = run("simulate", "--config", cfg, "--out", waq_dir, "--workers", 1)
    assert result.exit_code == 1 and "use --overwrite" in result.output


def test_complexity_table_and_csv(tmp_path):
    result = run(
        "complexity", "--layers", 1, "--layers", 2, "--layers", 3, "--csv", tmp_path / "c.csv"
    )
    assert result.exit_code == 0, result.output
    for count in ("175", "3023", "101115"):
        assert count in result.output
    rows = (tmp_path / "c.csv").read_text().splitlines()
    assert rows[0] == "graph,n,layers,max_field,interactions,exact,coalitions"
    assert rows[3] == "hanoi,32,3,15,101115,True,4294967296"


def test_complexity_of_a_utility_network_is_bounded_and_readable():
    """L-Town at L = 3: a flagged bound (no memory blow-up) and 2^785 in scientific notation."""
    import epyt

    inp = ROOT.parent / "none"
    for candidate in (Path(epyt.__file__).parent / "networks").rglob("L-TOWN.inp"):
        inp = candidate
    result = run("complexity", "--network", inp, "--layers", 3)
    assert result.exit_code == 0, result.output
    row = result.output.splitlines()[1].split()
    assert row[:4] == ["l-town", "785", "3", "24"]
    assert "(bound)" in result.output and row[-1] == "2.035e+236"


def test_complexity_csv_writes_huge_counts_in_scientific_notation(tmp_path):
    out = tmp_path / "c.csv"
    result = run("complexity", "--network", "l-town", "--layers", 1, "--csv", out)
    assert result.exit_code == 0, result.output
    header, row = out.read_text().splitlines()
    values = dict(zip(header.split(","), row.split(",")))
    assert values["coalitions"] == f"{float(2**785):.3e}" == "2.035e+236"
    assert float(values["coalitions"]) == pytest.approx(2.0**785, rel=1e-3)  # readable back
    assert values["interactions"].isdigit()  # a small count stays an integer


@pytest.mark.parametrize(
    "args",
    [
        ["--scenario", "{injection_node: '99'}"],
        ["--model", "models/hanoi-nodes", "--node", "27", "--node", "99"],
    ],
    ids=["injection node", "explained node"],
)
def test_bad_node_id_is_refused_before_torch_loads(tmp_path, args):
    """`explain` checks the injection node and the explained nodes before importing the
    model stack (seconds, not the ~12 s of torch/PyG imports); run in a fresh process to see
    what it imported."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from wdn_explain.cli import app\n"
        f"r = CliRunner().invoke(app, ['explain', *{args!r}, '--out', r'{tmp_path / 'x.npz'}'])\n"
        "print(r.exit_code, 'torch_geometric' in sys.modules, r.output.strip())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    code, imported, message = out.stdout.strip().split(" ", 2)
    assert (code, imported) == ("1", "False"), out.stderr
    assert message.startswith("error: node '99' is not in network 'hanoi'")


def test_evaluate_prints_persistence(tiny_model_dir, waq_dir):
    result = run(
        "evaluate",
        "--model",
        tiny_model_dir,
        "--data",
        waq_dir,
        "--split",
        "all",
        "--device",
        "cpu",
    )
    assert result.exit_code == 0, result.output
    assert "persist" in result.output and "per forecast time" in result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines() if line}
    assert "tree" in rows and "switch" in rows  # the tree baseline, forecasts over a switch
    assert "90% intervals: empirical coverage" in result.output

    from wdn_explain.dataset import load_waq_arrays

    step_min = float(np.diff(load_waq_arrays(waq_dir).times_s[:2])[0]) / 60
    table = result.output.split("climat MAE\n")[1].splitlines()
    made = [float(row.split()[0]) for row in table]
    assert made[0] == 0 and np.allclose(np.diff(made), step_min)  # minutes, not step numbers


def test_calibrate_rewrites_the_card_and_refuses_an_empty_split(tmp_path, tiny_model_dir, waq_dir):
    import json
    import shutil

    model = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model)
    result = run("calibrate", "--model", model, "--data", waq_dir)
    assert result.exit_code == 0, result.output
    card = json.loads((model / "card.json").read_text())
    assert card["conformal"]["n_calibration"] == 9  # one scenario of 13 - 4 forecasts
    assert (
        result.output.startswith("calibrated") and "90% intervals from 9 forecasts" in result.output
    )
    small = tmp_path / "small"
    small.mkdir()
    manifest = json.loads((waq_dir / "manifest.json").read_text())
    (small / "manifest.json").write_text(json.dumps({**manifest, "n_scenarios": 3}))
    for i in range(3):
        shutil.copy(waq_dir / f"scenario_{i:05d}.npz", small)
    before = (model / "card.json").read_bytes()
    result = run("calibrate", "--model", model, "--data", small)
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "calibration split of" in result.output
    assert (model / "card.json").read_bytes() == before


def test_calibrate_refuses_another_design_and_reports_only_what_it_measured(
    tmp_path, tiny_model_dir, waq_dir
):
    import json
    import shutil

    model = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model)
    manifest = json.loads((waq_dir / "manifest.json").read_text())
    other = tmp_path / "other"  # the same network and files, drawn from another design
    shutil.copytree(waq_dir, other)
    (other / "manifest.json").write_text(json.dumps({**manifest, "config_hash": "0" * 16}))
    before = (model / "card.json").read_bytes()
    result = run("calibrate", "--model", model, "--data", other)
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert f"data folder '{other}' holds another design (config hash {'0' * 16})" in result.output
    assert (model / "card.json").read_bytes() == before
    # a coverage measured on earlier intervals; the tiny folder (6 scenarios) has no test split
    card = json.loads(before)
    card["metrics"]["coverage"] = 0.5
    (model / "card.json").write_text(json.dumps(card))
    result = run("calibrate", "--model", model, "--data", waq_dir)
    assert result.exit_code == 0, result.output
    assert "coverage" not in result.output
    assert "coverage" not in json.loads((model / "card.json").read_text())["metrics"]


def test_old_waq_paper_model_loads_and_evaluates(waq_dir):
    """The published WAQ model (card without inputs or design) on WAQ-design data."""
    result = run(
        "evaluate", "--model", ROOT / "models" / "waq-paper", "--data", waq_dir, "--split", "all"
    )
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines() if line}
    assert float(rows["model"][0]) < float(rows["persistence"][0])
    assert "climatology" in rows and "MAE per scenario factor:" in result.output
    assert "chlorine >= 0.05 x injection strength" in result.output


def test_explain_warns_outside_the_design(tmp_path, tiny_model_dir):
    inside = run(
        "explain",
        "--scenario",
        "{duration_s: 2400, seed: 4}",
        "--model",
        tiny_model_dir,
        "--out",
        tmp_path / "in.npz",
    )
    assert inside.exit_code == 0 and "training design" not in inside.output
    assert "90% interval:" in inside.output
    steps = [
        line.split()
        for line in inside.output.splitlines()
        if line.endswith(tuple("0123456789")) and " min " in line
    ]
    assert len(steps) == 2400 // 300 + 1 - 4
    for _, _, forecast, low, high, _, _ in steps:
        share = min(max(float(forecast), 0.0), 1.0)  # the interval lies within [0, 1]
        assert float(low.strip("[,")) <= share <= float(high.strip("]"))
    outside = run(
        "explain",
        "--scenario",
        "{duration_s: 2400, injection_node: '12'}",
        "--model",
        tiny_model_dir,
        "--out",
        tmp_path / "out.npz",
    )
    assert outside.exit_code == 0, outside.output
    warning = [line for line in outside.output.splitlines() if "training design" in line]
    assert warning == [
        "warning: outside the model's training design: injection at node 12: this model "
        "never saw chlorine enter there"
    ]
    old = run(
        "explain",
        "--scenario",
        "{duration_s: 2400}",
        "--model",
        ROOT / "models" / "waq-paper",
        "--out",
        tmp_path / "old.npz",
    )
    assert old.exit_code == 0, old.output
    assert "warning: this model's card does not record the scenarios" in old.output


def test_evaluate_unknown_device(tiny_model_dir, waq_dir):
    result = run("evaluate", "--model", tiny_model_dir, "--data", waq_dir, "--device", "tpu")
    assert result.exit_code == 1 and "unknown device 'tpu'" in result.output


def test_explain_inline_spec_and_report(tmp_path, tiny_model_dir):
    out = tmp_path / "t.npz"
    spec = "{duration_s: 2400, seed: 3}"
    result = run("explain", "--scenario", spec, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 0, result.output
    assert "computed: 5 steps explained (exact GraphSHAP-IQ, local" in result.output
    again = run("explain", "--scenario", spec, "--model", tiny_model_dir, "--out", out)
    assert "cached: 5 steps" in again.output
    report = run(
        "report",
        "--timeline",
        out,
        "--out",
        tmp_path / "r.html",
        "--gif",
        tmp_path / "r.gif",
        "--index",
        "FSII",
    )
    assert report.exit_code == 0, report.output
    html = (tmp_path / "r.html").read_text()
    assert "plotly" in html and "FSII" in html
    assert (tmp_path / "r.gif").read_bytes()[:6] == b"GIF89a"
    import imageio.v2 as imageio

    assert len(imageio.mimread(tmp_path / "r.gif")) == 5  # one frame per explained step


def test_explain_budget_is_labelled_an_approximation_everywhere(tmp_path, tiny_model_dir):
    """--budget 1 on a 2-layer Hanoi model (fields of up to 10 nodes): the lambda-approximation,
    recorded in the timeline and named in the CLI line, the report and both exports; an exact
    run on the same file recomputes instead of reusing it."""
    import json

    import pandas as pd

    from wdn_explain.timeline import Timeline

    out, spec = tmp_path / "a.npz", "{duration_s: 2400, seed: 3}"
    args = ("explain", "--scenario", spec, "--model", tiny_model_dir, "--out", out)
    result = run(*args, "--budget", 1)
    assert result.exit_code == 0, result.output
    label = "GraphSHAP-IQ lambda-approximation (lambda = 1), not exact"
    assert f"computed: 5 steps explained ({label}, approximate" in result.output
    tl = Timeline.load(out)
    assert tl.settings.approximation_lambda == 1 and tl.meta["exact"] is False and not tl.exact
    assert all(e.method == "approximate" and e.budget == 1 for e in tl.explanations)
    assert run("report", "--timeline", out, "--out", tmp_path / "r.html").exit_code == 0
    assert label in (tmp_path / "r.html").read_text()
    export = run(
        "export", "--timeline", out, "--csv", tmp_path / "a.csv", "--json-dir", tmp_path / "j"
    )
    assert export.exit_code == 0, export.output
    assert pd.read_csv(tmp_path / "a.csv")["estimated"].all()
    saved = json.loads((tmp_path / "j" / "step_0000.json").read_text())
    assert saved["metadata"]["estimated"] is True and saved["parameters"]["method"] == label
    exact = run(*args)
    assert exact.exit_code == 0, exact.output
    assert "recomputed: cache made with another approximation_lambda" in exact.output
    assert Timeline.load(out).exact and Timeline.load(out).settings.approximation_lambda is None


def test_explain_refusal_names_the_budget_option(tmp_path, tiny_model_dir):
    spec = "{duration_s: 2400, seed: 3}"
    args = ("explain", "--scenario", spec, "--model", tiny_model_dir, "--out", tmp_path / "x.npz")
    result = run(*args, "--memory-gb", 1e-7)
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "over half the memory budget" in result.output
    assert "try the lambda-approximation with --budget" in result.output
    bad = run(*args, "--budget", 0)
    assert bad.exit_code == 1 and len(bad.output.strip().splitlines()) == 1
    assert "approximation_lambda: Input should be greater than or equal to 1 (got 0)" in bad.output


def test_complexity_plot(tmp_path):
    result = run(
        "complexity",
        "--network",
        "net1",
        "--layers",
        1,
        "--layers",
        2,
        "--plot",
        tmp_path / "c.png",
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run("complexity", "--plot", tmp_path / "c.png")  # an existing PNG is replaced
    assert bad.exit_code == 0
    (tmp_path / "notes.txt").write_text("keep")
    refused = run("complexity", "--plot", tmp_path / "notes.txt")
    assert refused.exit_code == 1 and (tmp_path / "notes.txt").read_text() == "keep"


def test_explain_bad_scenarios(tmp_path, tiny_model_dir):
    result = run(
        "explain",
        "--scenario",
        "{injection_node: '77'}",
        "--model",
        tiny_model_dir,
        "--out",
        tmp_path / "x.npz",
    )
    assert result.exit_code == 1 and "node '77' is not in network 'hanoi'" in result.output
    result = run(
        "explain",
        "--scenario",
        "nothing here",
        "--model",
        tiny_model_dir,
        "--out",
        tmp_path / "x.npz",
    )
    assert result.exit_code == 1 and "neither a YAML file nor an inline mapping" in result.output
    result = run(
        "explain",
        "--scenario",
        ROOT / "simulations" / "default_scenario.yaml",
        "--model",
        tmp_path,
        "--out",
        tmp_path / "x.npz",
    )
    assert result.exit_code == 1 and "is not a model folder" in result.output


def test_export_csv_and_interaction_values(tmp_path):
    import pandas as pd
    from shapiq import InteractionValues

    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    result = run(
        "export",
        "--timeline",
        DEFAULT_TIMELINE,
        "--index",
        "SV",
        "--order",
        1,
        "--csv",
        tmp_path / "sv.csv",
        "--json-dir",
        tmp_path / "iv",
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "sv.csv", dtype={"nodes": str})
    tl = Timeline.load(DEFAULT_TIMELINE).relative_to("none")  # the default reference
    row = table[(table["step"] == 10) & (table["nodes"] == "2")]
    assert row["value"].item() == pytest.approx(
        tl.interaction_values(10, "SV", 1)[(tl.node_ids.tolist().index("2"),)]
    )
    back = InteractionValues.from_json_file(tmp_path / "iv" / "step_0010.json")
    assert back.index == "SV" and back[(0,)] == pytest.approx(
        tl.interaction_values(10, "SV", 1)[(0,)]
    )
    assert run("export", "--timeline", DEFAULT_TIMELINE).exit_code == 1


def test_data_stats_shows_each_drawn_factor(monitoring_dir):
    from wdn_explain.simulation import SimulationResult
    from wdn_explain.waq import scenario_path

    result = run("data-stats", monitoring_dir)
    assert result.exit_code == 0, result.output
    configs = [SimulationResult.load(scenario_path(monitoring_dir, i)).config for i in range(60)]
    at_reservoir = sum(c.injection_node is None for c in configs)
    assert f"  injection  booster {60 - at_reservoir}, reservoir {at_reservoir}\n" in result.output
    intermittent = sum(c.injection_mode == "intermittent" for c in configs)
    assert f"  pattern    constant {60 - intermittent}, intermittent {intermittent}\n" in (
        result.output
    )
    strengths = [c.injection_strength_mg_l for c in configs]
    line = next(x for x in result.output.splitlines() if "injection_strength_mg_l" in x)
    assert [float(v) for v in line.split()[1:]] == pytest.approx(
        [min(strengths), np.mean(strengths), max(strengths)], abs=5e-4
    )


def test_shipped_files_are_found_from_another_directory(tmp_path, monkeypatch):
    """Relative names of shipped files (`models/default`, `simulations/...`) and the default
    model work outside the repository root; a config error stays one line."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    spec = "{injection_node: 20, duration_s: 2400}"  # an unquoted numeric node id
    result = run("explain", "--scenario", spec, "--out", "t.npz")
    assert result.exit_code == 0, result.output
    assert "computed: 5 steps explained" in result.output
    again = run("explain", "--scenario", spec, "--model", "models/default", "--out", "t.npz")
    assert again.exit_code == 0 and "cached: 5 steps" in again.output  # the same model
    from wdn_explain.cli import _scenario_from

    assert _scenario_from("simulations/injection_node12.yaml", 0).injection_node == "12"
    missing = run("simulate", "--config", "simulations/nothing.yaml", "--out", "w")
    assert missing.exit_code == 1 and "simulations/nothing.yaml" in missing.output
    bad = run("explain", "--scenario", "{reporting_step_s: 60}", "--out", "x.npz")
    assert bad.exit_code == 1
    assert bad.output.strip() == (
        "error: --scenario: scenario: reporting_step_s must be a multiple of "
        "hydraulic_step_s (got 60 and 300)"
    )
    assert not (tmp_path / "x.npz").exists()


def test_report_reads_as_a_report(tmp_path):
    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    tl = Timeline.load(DEFAULT_TIMELINE)
    out = tmp_path / "r.html"
    result = run("report", "--timeline", DEFAULT_TIMELINE, "--out", out, "--reference", "none")
    assert result.exit_code == 0, result.output
    page = out.read_text()
    # the scenario in words; no derived seed (simulations/default_scenario.yaml says 424242)
    assert tl.scenario.seed != 424242
    title = "Why the model expects chlorine there: booster at 2, 1.5 mg/L, intermittent, 3 h"
    assert f"<title>{title}</title>" in page
    assert "How to read this" in page and "no chlorine" in page
    assert "at least 0.05 mg/L" in page and "share of nodes chlorinated" in page
    assert "forecast made at 10 min for 30 min" in page  # the first informative step
    bad = run(
        "report", "--timeline", DEFAULT_TIMELINE, "--out", out, "--reference", "zero", "--overwrite"
    )
    assert bad.exit_code == 1
    assert "no explanations relative to 'zero' (it holds: mean, none)" in bad.output


def test_report_and_export_keep_an_existing_file_without_overwrite(tmp_path):
    from wdn_explain.shipped import DEFAULT_TIMELINE

    for command, option, name in (("report", "--out", "mine.html"), ("export", "--csv", "a.csv")):
        mine = tmp_path / name
        mine.write_text("the user's own file")
        result = run(command, "--timeline", DEFAULT_TIMELINE, option, mine)
        assert result.exit_code == 1 and result.output.count("\n") == 1
        assert f"'{mine}' exists; use --overwrite to replace it" in result.output
        assert mine.read_text() == "the user's own file"
        again = run(command, "--timeline", DEFAULT_TIMELINE, option, mine, "--overwrite")
        assert again.exit_code == 0 and mine.read_text() != "the user's own file"


def test_exported_json_maps_players_to_node_ids(tmp_path):
    import json

    from shapiq import InteractionValues

    from wdn_explain.shipped import DEFAULT_TIMELINE
    from wdn_explain.timeline import Timeline

    result = run("export", "--timeline", DEFAULT_TIMELINE, "--json-dir", tmp_path)  # default
    assert result.exit_code == 0, result.output
    tl = Timeline.load(DEFAULT_TIMELINE).relative_to("none")
    path = tmp_path / "step_0012.json"
    params = json.loads(path.read_text())["parameters"]
    assert params["node_ids"] == [str(n) for n in tl.node_ids]
    assert params["reference"] == "none" and params["time_s"] == 12 * 300
    back = InteractionValues.from_json_file(path)
    k = params["node_ids"].index("20")
    assert back[(k,)] == pytest.approx(tl.interaction_values(12, "k-SII", 2)[(k,)], abs=1e-9)


@pytest.mark.skipif(not (CHEM / "MUTAG").is_dir(), reason="offline chemistry datasets not found")
def test_complexity_of_a_molecule_dataset(tmp_path):
    """`wdn-explain complexity --dataset` (the issue's command) writes one CSV per L."""
    import csv

    result = run(
        "complexity", "--dataset", "MUTAG", "--layers", 1, "--root", CHEM, "--out", tmp_path
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(open(tmp_path / "MUTAG_L1.csv")))
    assert len(rows) == 188
    mean = sum(int(r["interactions"]) for r in rows) / len(rows)
    assert f"MUTAG L=1: 188 graphs, max |N_i| 5, mean |I| {mean:.0f}" in result.output


def test_index_with_an_inline_scenario_is_refused(tmp_path):
    """--index picks a scenario of a YAML file; with an inline mapping it was ignored without
    a word (found by the outside cases of issue 33)."""
    out = tmp_path / "t.npz"
    result = run("explain", "--scenario", "{duration_s: 1800}", "--index", -1, "--out", out)
    assert result.exit_code == 1
    assert result.output.strip() == (
        "error: --index picks a scenario of a YAML file; an inline mapping is one scenario "
        "(got --index -1)"
    )
    assert not out.exists()
