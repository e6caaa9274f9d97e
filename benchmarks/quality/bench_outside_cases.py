"""Outside cases against the CLI and the fourth-wave modules: bad values, missing and odd
files, interrupts, reruns and concurrent runs. One line per case (PASS/FAIL, the case, the
last line of its output), then the counts.

Usage: python benchmarks/quality/bench_outside_cases.py [OUT_FOLDER [WAVE ...]]
(waves: 5, 6; default both)

A case passes when the command ends as expected -- ``refused``: exit 1, one ``error:`` line
last, no traceback, its output path not created; ``ok``: exit 0, no traceback -- or, for the
library cases, raises the project's own error (``WdnExplainError``) or none.
Runs in one process with typer's CliRunner (``OMP_NUM_THREADS=1``), the interrupt, rerun and
concurrency cases in child processes. Uses models/default, models/hanoi-nodes and the
monitoring data under data/.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import WdnExplainError

ROOT = Path(__file__).resolve().parents[2]
MODEL, NODES = ROOT / "models" / "default", ROOT / "models" / "hanoi-nodes"
SENSORS = ROOT / "models" / "hanoi-sensors"
DATA = ROOT / "data" / "monitoring"
SHORT = "{duration_s: 1800, reporting_step_s: 300}"
RESULTS: list[tuple[bool, str, str]] = []


def _last(text: str) -> str:
    lines = [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def cli(name: str, args: list, expect: str, out: Path | None = None) -> None:
    """Run ``wdn-explain ARGS`` and judge it (see the module docstring)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    text = result.output
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    ok = not crashed and "Traceback" not in text
    if expect == "refused":
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        ok = ok and result.exit_code == 1 and len(errors) == 1 and _last(text).startswith("error:")
        ok = ok and (out is None or not out.exists())
    elif expect == "usage":  # the option parser's own refusal
        ok = ok and result.exit_code == 2
    else:
        ok = ok and result.exit_code == 0
    shown = f"{type(result.exception).__name__}: {result.exception}" if crashed else _last(text)
    RESULTS.append((ok, name, shown))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {shown}", flush=True)


def record(ok: bool, name: str, shown: str = "") -> None:
    """A case judged by its caller."""
    RESULTS.append((ok, name, shown))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {shown}", flush=True)


def lib(name: str, call: Callable[[], object]) -> None:
    """A library call that must end in nothing or the project's own error."""
    try:
        call()
        ok, shown = True, "returned"
    except WdnExplainError as exc:
        ok, shown = "\n" not in str(exc), f"{type(exc).__name__}: {str(exc)[:140]}"
    except Exception as exc:  # counted, not raised
        ok, shown = False, f"{type(exc).__name__}: {str(exc)[:140]}"
    RESULTS.append((ok, name, shown))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {shown}", flush=True)


def scenario_cases(tmp: Path) -> None:
    bad = {
        "duration_s": ["0", "-1", "1e9", "x", ".nan"],
        "reporting_step_s": ["0", "7", "99999"],
        "injection_strength_mg_l": ["-1", ".nan", ".inf", "1e39", "abc"],
        "injection_node": ["'99'", "''", "'1 OR 1'"],
        "demand_variation": ["-1", "5", ".nan"],
        "demand_model": ["XYZ", "1"],
        "pressure_required_m": ["-5", ".nan", "0"],
        "hydraulic_step_s": ["0", "7"],
        "quality_step_s": ["0", "100000"],
        "pattern_step_s": ["7", "-300"],
        "bulk_decay_per_day": ["-1", ".inf"],
        "no_such_key": ["1"],
        "network": ["nowhere", "/etc/passwd"],
    }
    for key, values in bad.items():
        for value in values:
            out = tmp / f"s-{key}-{len(RESULTS)}.npz"
            spec = f"{{duration_s: 1800, reporting_step_s: 300, {key}: {value}}}"
            cli(f"explain --scenario {key}={value}", ["explain", "--scenario", spec, "--model",
                MODEL, "--out", out], "refused", out)  # fmt: skip
    for spec in ["[1, 2]", "'{{'", "!!python/object:os.system {}", "{a: {b: {c: [[[[[]]]]]}}}"]:
        out = tmp / f"s-odd-{len(RESULTS)}.npz"
        cli(f"explain --scenario {spec!r}", ["explain", "--scenario", spec, "--model", MODEL,
            "--out", out], "refused", out)  # fmt: skip


def config_cases(tmp: Path) -> None:
    smoke = (ROOT / "simulations" / "smoke.yaml").read_text()
    texts = {
        "empty file": "",
        "a list": "- 1\n- 2\n",
        "python tag": "!!python/object/apply:os.system ['true']\n",
        "nested 10 000 deep": "a: " + "[" * 10000 + "]" * 10000 + "\n",
        "binary": "\x00\xff\xfe garbage",
        "n_scenarios 0": smoke.replace("n_scenarios: 6", "n_scenarios: 0"),
        "n_scenarios -1": smoke.replace("n_scenarios: 6", "n_scenarios: -1"),
        "n_scenarios 1e12": smoke.replace("n_scenarios: 6", "n_scenarios: 1000000000000"),
        "unknown key": smoke + "\nbogus: 1\n",
        "reversed range": "n_scenarios: 2\ndesign:\n  demand_scale: [2.0, 0.5]\n",
        "amplitude above 1": "n_scenarios: 2\ndesign:\n  diurnal_amplitude: [0.0, 1.5]\n",
        "unknown design key": "n_scenarios: 2\ndesign:\n  nonsense: [0, 1]\n",
        "network missing": "n_scenarios: 2\nscenario:\n  network: /nowhere/x.inp\n",
        "duration 1e9": "n_scenarios: 1\nscenario:\n  duration_s: 1000000000\n",
        "injection 1e39": "n_scenarios: 1\nscenario:\n  injection_strength_mg_l: 1e39\n",
    }
    for name, text in texts.items():
        cfg, out = tmp / f"c{len(RESULTS)}.yaml", tmp / f"sim{len(RESULTS)}"
        cfg.write_text(text, errors="surrogateescape")
        expect = "ok" if name == "empty file" else "refused"  # every default: one scenario
        cli(f"simulate config: {name}", ["simulate", "--config", cfg, "--out", out], expect,
            None if expect == "ok" else out)  # fmt: skip
    for name, path in [("missing", tmp / "none.yaml"), ("a folder", tmp)]:
        out = tmp / f"sim{len(RESULTS)}"
        cli(f"simulate config {name}", ["simulate", "--config", path, "--out", out],
            "refused", out)  # fmt: skip
    cfg = tmp / "ok.yaml"
    cfg.write_text(smoke)
    for workers in ["-1", "x"]:
        out = tmp / f"sim{len(RESULTS)}"
        cli(f"simulate --workers {workers}", ["simulate", "--config", cfg, "--out", out,
            "--workers", workers], "refused" if workers == "-1" else "usage", out)  # fmt: skip


def onboard_cases(tmp: Path) -> None:
    import epyt

    net1 = Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net1.inp"
    crash = tmp / "crash.inp"
    crash.write_text("[JUNCTIONS]\n" + "x" * 5000 + "\n")
    binary = tmp / "binary.inp"
    binary.write_bytes(os.urandom(20000))
    empty = tmp / "empty.inp"
    empty.write_text("")
    files = {"missing": tmp / "no.inp", "a folder": tmp, "empty": empty, "crashes EPANET": crash,
             "random bytes": binary}  # fmt: skip
    for name, path in files.items():
        out = tmp / f"on{len(RESULTS)}"
        cli(f"network onboard: {name}", ["network", "onboard", path, "--out", out], "refused",
            out)  # fmt: skip
    options = [["--scenarios", "0"], ["--scenarios", "-5"], ["--scenarios", "1000000000"],
               ["--epochs", "0"], ["--layers", "0"], ["--layers", "9"], ["--workers", "-1"],
               ["--device", "xyz"], ["--scenarios", "3"]]  # fmt: skip
    for option in options:
        out = tmp / f"on{len(RESULTS)}"
        expect = "ok" if option == ["--layers", "9"] else "refused"  # Net1: 11 nodes, |I| 2^11
        cli(f"network onboard Net1 {' '.join(option)}", ["network", "onboard", net1, "--out", out,
            *option], expect, None if expect == "ok" else out)  # fmt: skip
    file_out = tmp / "a-file"
    file_out.write_text("x")
    cli("network onboard --out an existing file", ["network", "onboard", net1, "--out",
        file_out], "refused")  # fmt: skip


def explain_cases(tmp: Path) -> None:
    deep = tmp / "deep-card"
    shutil.copytree(MODEL, deep)
    (deep / "card.json").write_text("[" * 100000 + "]" * 100000)
    listcard = tmp / "list-card"
    shutil.copytree(MODEL, listcard)
    (listcard / "card.json").write_text("[1, 2]")
    empty = tmp / "empty-model"
    empty.mkdir()
    notices = {"empty notice": {}, "notice without numbers": {"coefficients": {"a": "x"}}}
    for name, notice in notices.items():
        folder = tmp / name.replace(" ", "-")
        shutil.copytree(MODEL, folder)
        card = json.loads((folder / "card.json").read_text())
        card["notice"] = notice
        (folder / "card.json").write_text(json.dumps(card))
        out = tmp / f"e{len(RESULTS)}.npz"
        cli(f"explain, card with an {name}", ["explain", "--scenario", SHORT, "--model", folder,
            "--out", out], "refused", out)  # fmt: skip
    options = {
        "--budget 0": ["--budget", "0"], "--budget -1": ["--budget", "-1"],
        "--budget 65": ["--budget", "65"], "--budget 10^12": ["--budget", "1000000000000"],
        "--memory-gb 0": ["--memory-gb", "0"], "--memory-gb -1": ["--memory-gb", "-1"],
        "--memory-gb nan": ["--memory-gb", "nan"], "--node on a share model": ["--node", "3"],
        "--index -1": ["--index", "-1"], "--model missing": ["--model", tmp / "nope"],
        "--model a file": ["--model", tmp / "crash.inp"], "--model empty": ["--model", empty],
        "--model deeply nested card": ["--model", deep], "--model list card": ["--model", listcard],
        "--scheduler bad": ["--scheduler", "tcp://127.0.0.1:1"],
    }  # fmt: skip
    for name, option in options.items():
        out = tmp / f"e{len(RESULTS)}.npz"
        args = ["explain", "--scenario", SHORT, "--out", out, *option]
        if "--model" not in option:
            args += ["--model", MODEL]
        cli(f"explain {name}", args, "refused", out)
    for node in ["999", "", "1,2"]:
        out = tmp / f"e{len(RESULTS)}.npz"
        cli(f"explain node model --node {node!r}", ["explain", "--scenario", SHORT, "--model",
            NODES, "--node", node, "--out", out], "refused", out)  # fmt: skip
    into_file = tmp / "a-file" / "t.npz"
    cli("explain --out below a file", ["explain", "--scenario", SHORT, "--model", MODEL, "--out",
        into_file], "refused")  # fmt: skip
    out = tmp / "ok.npz"
    cli("explain a short pressure-driven scenario", ["explain", "--scenario", SHORT, "--model",
        MODEL, "--out", out], "ok")  # fmt: skip
    cli("explain it again (cached)", ["explain", "--scenario", SHORT, "--model", MODEL, "--out",
        out], "ok")  # fmt: skip
    other = "{duration_s: 2100, reporting_step_s: 300}"
    cli("explain another scenario into it", ["explain", "--scenario", other, "--model", MODEL,
        "--out", out], "refused")  # fmt: skip
    cli("explain node model, node 3", ["explain", "--scenario", SHORT, "--model", NODES, "--node",
        "3", "--out", tmp / "nodes.npz"], "ok")  # fmt: skip


def model_cases(tmp: Path) -> None:
    empty = tmp / "empty-data"
    empty.mkdir()
    train = [
        ("--data missing", ["--data", tmp / "nope"]), ("--data empty", ["--data", empty]),
        ("--horizon 0", ["--horizon", "0"]), ("--horizon -3", ["--horizon", "-3"]),
        ("--threshold nan", ["--threshold", "nan"]), ("--target xyz", ["--target", "xyz"]),
        ("--features unknown", ["--features", "nonsense"]), ("--batch-size 0", ["--batch-size", "0"]),
        ("--lr -1", ["--lr", "-1"]), ("--warmup-epochs x", ["--warmup-epochs", "x"]),
        ("--hidden 10^8", ["--hidden", "100000000"]), ("--min-residual -1", ["--min-residual", "-1"]),
        ("--ema-decay 2", ["--ema-decay", "2"]), ("--epochs 0", ["--epochs", "0"]),
    ]  # fmt: skip
    for name, option in train:
        out = tmp / f"m{len(RESULTS)}"
        args = ["train", "--out", out, *option]
        if "--data" not in option:
            args += ["--data", DATA]
        cli(f"train {name}", args, "refused", out)
    for command in ["evaluate", "calibrate"]:
        cli(f"{command} on missing data", [command, "--model", MODEL, "--data", tmp / "no"],
            "refused")  # fmt: skip
        cli(f"{command} on an empty folder", [command, "--model", MODEL, "--data", empty],
            "refused")  # fmt: skip
    cli("evaluate --split bad", ["evaluate", "--model", MODEL, "--data", DATA, "--split", "zz"],
        "refused")  # fmt: skip
    if os.geteuid() != 0:  # root writes into a 0555 folder: no read-only case to try
        read_only = tmp / "ro-model"
        shutil.copytree(MODEL, read_only)
        read_only.chmod(0o555)
        cli("calibrate a read-only model", ["calibrate", "--model", read_only, "--data", DATA],
            "refused")  # fmt: skip
        read_only.chmod(0o755)


def output_cases(tmp: Path) -> None:
    timeline = tmp / "ok.npz"
    truncated = tmp / "truncated.npz"
    truncated.write_bytes(timeline.read_bytes()[:5000])
    pickled = tmp / "pickled.npz"
    np.savez(pickled, meta=np.array([{"a": 1}], dtype=object), steps=np.arange(3))
    bomb = tmp / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("meta.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f8", "fortran_order": False, "shape": (100_000_000,)}
            )
            for _ in range(50):
                member.write(bytes(16 << 20))
    existing = tmp / "mine.csv"
    existing.write_text("keep me")
    for name, path in [("missing", tmp / "none.npz"), ("truncated", truncated),
                       ("pickled", pickled), ("decompression bomb", bomb)]:  # fmt: skip
        out = tmp / f"x{len(RESULTS)}.csv"
        cli(f"export --timeline {name}", ["export", "--timeline", path, "--csv", out], "refused",
            out)  # fmt: skip
        out = tmp / f"r{len(RESULTS)}.html"
        cli(f"report --timeline {name}", ["report", "--timeline", path, "--out", out], "refused",
            out)  # fmt: skip
    cli("export over a user's file", ["export", "--timeline", timeline, "--csv", existing],
        "refused")  # fmt: skip
    RESULTS.append((existing.read_text() == "keep me", "the user's file kept", ""))
    cli("export --csv into a folder", ["export", "--timeline", timeline, "--csv", tmp], "refused")
    cli("report --gif into a folder", ["report", "--timeline", timeline, "--out",
        tmp / "r.html", "--gif", tmp], "refused")  # fmt: skip


def library_cases() -> None:
    from wdn_explain.model_folder import read_card
    from wdn_explain.network import load_network
    from wdn_explain.notice import hard_scenario_notice
    from wdn_explain.scenario import parse_config
    from wdn_explain.servable import check_design, peak_demand_level
    from wdn_explain.shipped import model_name_for, user_model_folder

    hanoi = load_network("hanoi")
    for scale in [0.01, 1.0, 40.0]:
        config = parse_config({"n_scenarios": 4, "design": {"demand_scale": [scale, scale]}})
        lib(f"servable.check_design demand_scale {scale}", lambda c=config: check_design(c, hanoi))
    lib("servable.peak_demand_level nan", lambda: peak_demand_level(float("nan"), 0.3, 0.1))
    lib("notice.hard_scenario_notice, shipped record, no features", lambda: (
        hard_scenario_notice(read_card(ROOT / "models" / "default").notice, {})))  # fmt: skip
    for name in ["a" * 300, "../x", "ok-name", "CON", "name with spaces", "é"]:
        lib(f"user_model_folder {name[:20]!r}", lambda n=name: user_model_folder(n))
    for inp in ["My Town (2024).inp", "...inp", "a" * 300 + ".inp", ".inp"]:
        lib(f"model_name_for {inp[:20]!r}", lambda n=inp: user_model_folder(model_name_for(n)))


def _tampered(tmp: Path, model: Path, name: str, change: Callable[[dict], object]) -> Path:
    """A copy of ``model`` whose card.json ``change`` edited in place (its weights intact)."""
    folder = tmp / f"card-{name}"
    shutil.copytree(model, folder)
    card = json.loads((folder / "card.json").read_text())
    change(card)
    (folder / "card.json").write_text(json.dumps(card))
    return folder


def risk_cases(tmp: Path) -> None:
    """The risk of non-compliance: its card record, `calibrate --min-residual`,
    `export --risk-csv` and the timeline's ``node_risk``."""
    heads = lambda c: c["risk"]["heads"]  # noqa: E731
    records = {
        "risk a string": lambda c: c.update(risk="x"),
        "risk a list": lambda c: c.update(risk=[]),
        "risk without heads": lambda c: c["risk"].pop("heads"),
        "heads empty": lambda c: c["risk"].update(heads={}),
        "head any missing": lambda c: heads(c).pop("any"),
        "intercepts one short": lambda c: heads(c)["any"]["intercept"].pop(),
        "an intercept NaN": lambda c: heads(c)["any"]["intercept"].__setitem__(0, float("nan")),
        "an intercept a string": lambda c: heads(c)["any"]["intercept"].__setitem__(0, "1"),
        "a slope infinite": lambda c: next(iter(heads(c).values())).update(
            {
                k: [1e400] * len(v)
                for k, v in next(iter(heads(c).values())).items()
                if k != "intercept"
            }
        ),  # fmt: skip
        "min residual negative": lambda c: c["risk"].update(min_residual_mg_l=-1),
        "min residual a string": lambda c: c["risk"].update(min_residual_mg_l="0.2"),
        "min residual missing": lambda c: c["risk"].pop("min_residual_mg_l"),
        "risk deeply nested": lambda c: c.update(risk={"heads": {"any": {"intercept": [[[[0]]]]}}}),
    }
    for name, change in records.items():
        folder = _tampered(tmp, NODES, name.replace(" ", "-"), change)
        out = tmp / f"rk{len(RESULTS)}.npz"
        cli(f"explain, node card: {name}", ["explain", "--scenario", SHORT, "--model", folder,
            "--out", out], "refused", out)  # fmt: skip
    for value in ["-1", "nan", "inf", "1e9", "-0.0001"]:
        folder = tmp / f"cal{len(RESULTS)}"
        shutil.copytree(NODES, folder)
        before = (folder / "card.json").read_bytes()
        cli(f"calibrate --min-residual {value}", ["calibrate", "--model", folder, "--data", DATA,
            "--min-residual", value], "refused")  # fmt: skip
        record((folder / "card.json").read_bytes() == before,
               f"calibrate --min-residual {value}: card unchanged")  # fmt: skip
    cli("calibrate --min-residual x", ["calibrate", "--model", NODES, "--data", DATA,
        "--min-residual", "x"], "usage")  # fmt: skip
    cli("calibrate a sensor model on data of another design", ["calibrate", "--model", SENSORS,
        "--data", ROOT / "data" / "monitoring-fresh"], "refused")  # fmt: skip
    node_tl, share_tl = NODES / "default_timeline.npz", MODEL / "default_timeline.npz"
    cli("export --risk-csv of a share timeline", ["export", "--timeline", share_tl, "--risk-csv",
        tmp / "share-risk.csv"], "refused", tmp / "share-risk.csv")  # fmt: skip
    out = tmp / "risk.csv"
    cli("export --risk-csv of hanoi-nodes' timeline", ["export", "--timeline", node_tl,
        "--risk-csv", out], "ok")  # fmt: skip
    rows = out.read_text().splitlines() if out.exists() else []
    record(len(rows) == 1 + 33 * 32, "the risk CSV: one row per step and node",
           f"{len(rows)} lines")  # fmt: skip
    cli("export --risk-csv over it", ["export", "--timeline", node_tl, "--risk-csv", out],
        "refused")  # fmt: skip
    cli("export --risk-csv into a folder", ["export", "--timeline", node_tl, "--risk-csv", tmp],
        "refused")  # fmt: skip
    cli("export --risk-csv named .txt", ["export", "--timeline", node_tl, "--risk-csv",
        tmp / "risk.txt"], "ok")  # fmt: skip
    plants = {
        "node_risk NaN": lambda a: a["node_risk"].__setitem__((0, 0), np.nan),
        "node_risk 1.5": lambda a: a["node_risk"].__setitem__((0, 0), 1.5),
        "node_risk -0.5": lambda a: a["node_risk"].__setitem__((0, 0), -0.5),
        "node_risk one step short": lambda a: a.__setitem__("node_risk", a["node_risk"][1:]),
        "node_risk a string": lambda a: a.__setitem__("node_risk", np.array("x")),
        "node_risk removed": lambda a: a.pop("node_risk"),
    }
    for name, plant in plants.items():
        with np.load(node_tl, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        arrays["node_risk"] = arrays["node_risk"].copy()
        plant(arrays)
        path = tmp / f"planted-{len(RESULTS)}.npz"
        with open(path, "wb") as handle:
            np.savez(handle, **arrays)
        out = tmp / f"pr{len(RESULTS)}.csv"
        cli(f"export --risk-csv, timeline with {name}", ["export", "--timeline", path,
            "--risk-csv", out], "refused", out)  # fmt: skip


def sensor_cases(tmp: Path) -> None:
    """Sensors: `train --sensors`, the card's quality_node_sensors, models/hanoi-sensors."""
    for value in ["999", "3,3", "", ",", "3,,999", "a b", "3;10", "0", "-1", "3," * 40]:
        out = tmp / f"ts{len(RESULTS)}"
        cli(f"train --target node --sensors {value[:20]!r}", ["train", "--data", DATA, "--out",
            out, "--target", "node", "--sensors", value], "refused", out)  # fmt: skip
    sensors = lambda c, v: [c[k].update(quality_node_sensors=v) for k in ("inputs", "train")]  # noqa: E731
    cards = {
        "a sensor that is not a node": ["3", "999"],
        "a sensor twice": ["3", "3", "16", "30"],
        "no sensors": [],
        "sensors a string": "3,10",
        "a sensor a number": [3, 10, 16, 30],
        "100 000 sensors": [str(i) for i in range(100_000)],
    }
    for name, value in cards.items():
        folder = _tampered(tmp, SENSORS, name.replace(" ", "-"), lambda c, v=value: sensors(c, v))
        out = tmp / f"sc{len(RESULTS)}.npz"
        cli(f"explain, sensor card: {name}", ["explain", "--scenario", SHORT, "--model", folder,
            "--out", out], "refused", out)  # fmt: skip
    out = tmp / "sensors.npz"
    cli("explain hanoi-sensors, a short scenario", ["explain", "--scenario", SHORT, "--model",
        SENSORS, "--out", out], "ok")  # fmt: skip
    cli("explain hanoi-sensors at a sensor node", ["explain", "--scenario", SHORT, "--model",
        SENSORS, "--node", "16", "--out", tmp / "sensor16.npz"], "ok")  # fmt: skip
    cli("explain hanoi-sensors --node 999", ["explain", "--scenario", SHORT, "--model", SENSORS,
        "--node", "999", "--out", tmp / "s999.npz"], "refused", tmp / "s999.npz")  # fmt: skip
    cli("export --risk-csv of a sensor timeline", ["export", "--timeline", out, "--risk-csv",
        tmp / "sensor-risk.csv"], "ok")  # fmt: skip


def engine_cases() -> None:
    """``GraphSHAPIQ.explain(players=, hold=)`` and ``explain_nodes`` on a seeded node model."""
    import torch

    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.pipeline import scenario_graphs
    from wdn_explain.scenario import ScenarioConfig
    from wdn_explain.simulation import simulate

    model, card = load_model(NODES)
    net = load_network("hanoi")
    result = simulate(ScenarioConfig(duration_s=1800, reporting_step_s=300), net)
    graph = scenario_graphs(result, net, card.input_spec)[0]
    explainer = GraphSHAPIQ(model, method="masked")
    players = {
        "[]": [], "[-1]": [-1], "[32]": [32], "[999]": [999], "[1, 1]": [1, 1],
        "[1.5]": [1.5], "'12'": "12", "[True]": [True], "[[1, 2]]": [[1, 2]],
        "[None]": [None], "a set {1, 2}": {1, 2}, "range(3)": range(3),
        "numpy [3, 10]": np.array([3, 10]), "[2**70]": [2**70], "a tensor": torch.tensor([3]),
    }  # fmt: skip
    for name, chosen in players.items():
        lib(f"engine explain node 3, players={name}",
            lambda c=chosen: explainer.explain(graph, node=3, players=c))  # fmt: skip
    for hold in ["x", None, "", "OBSERVED", 1]:
        lib(f"engine explain hold={hold!r}",
            lambda h=hold: explainer.explain(graph, node=3, players=[3, 10], hold=h))  # fmt: skip
    for name, nodes in {"[]": [], "[999]": [999], "[3, 3]": [3, 3], "[-1]": [-1],
                        "'3'": "3"}.items():  # fmt: skip
        lib(f"engine explain_nodes nodes={name}",
            lambda n=nodes: explainer.explain_nodes(graph, n, players=[3, 10]))  # fmt: skip
    lib("engine explain_nodes, output_index one short",
        lambda: explainer.explain_nodes(graph, [3, 10], output_index=[0]))  # fmt: skip
    lib("engine local method with players",
        lambda: GraphSHAPIQ(model, method="local").explain(graph, node=3, players=[3]))  # fmt: skip
    found = explainer.explain(graph, node=3, players=[3, 10, 16])
    values = found.interaction_values("SV", 1)
    whole = sum(float(values[(k,)]) for k in range(3))  # efficiency over the 3 players
    ok = abs(whole - (found.prediction - found.empty_prediction)) < 1e-4
    record(ok, "engine players [3, 10, 16]: efficiency", f"{whole:.6f}")


def input_cases(tmp: Path) -> None:
    """The new inputs (chlorine history, pipe flushes), cards without them, `train` and
    `calibrate` thread options."""
    features = ["chlorine_history_mg_l", "chlorine_mg_l,chlorine_mg_l", "", "source_mg_l,xyz",
                "CHLORINE_MG_L", "chlorine_fraction,chlorine_history_mg_l"]  # fmt: skip
    for value in features:
        out = tmp / f"if{len(RESULTS)}"
        cli(f"train --features {value!r}", ["train", "--data", DATA, "--out", out, "--features",
            value, "--epochs", "0"], "refused", out)  # fmt: skip
    for value in ["", "flow,flow", "nonsense", "pipe_flushes,pipe_flushes", "FLOW"]:
        out = tmp / f"ie{len(RESULTS)}"
        cli(f"train --edge-features {value!r}", ["train", "--data", DATA, "--out", out,
            "--edge-features", value, "--epochs", "0"], "refused", out)  # fmt: skip
    inputs = {
        "an unknown node feature": lambda c: c["inputs"]["node_features"].append("xyz"),
        "an unknown edge feature": lambda c: c["inputs"].update(edge_features=["xyz"]),
        "no edge features key": lambda c: c["inputs"].pop("edge_features"),
        "edge features a string": lambda c: c["inputs"].update(edge_features="flow"),
        "horizon 0": lambda c: c["inputs"].update(horizon=0),
        "horizon 10^9": lambda c: c["inputs"].update(horizon=10**9),
        "no inputs": lambda c: c.pop("inputs"),
    }
    for name, change in inputs.items():
        folder = _tampered(tmp, MODEL, name.replace(" ", "-"), change)
        out = tmp / f"ic{len(RESULTS)}.npz"
        cli(f"explain, card with {name}", ["explain", "--scenario", SHORT, "--model", folder,
            "--out", out], "refused", out)  # fmt: skip
    paper = ROOT / "models" / "waq-paper"
    cli("explain the WAQ-paper model (no history, no flushes)", ["explain", "--scenario",
        "{duration_s: 2400, reporting_step_s: 300, demand_model: DDA}", "--model", paper,
        "--out", tmp / "paper.npz"], "ok")  # fmt: skip
    for variable, value in [("OMP_NUM_THREADS", "abc"), ("OMP_NUM_THREADS", "0"),
                            ("MKL_NUM_THREADS", "-3"), ("OMP_NUM_THREADS", "")]:  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT), variable: value}
        for args in (["train", "--data", str(tmp / "nope"), "--out", str(tmp / "tt")],
                     ["calibrate", "--model", str(NODES), "--data", str(tmp / "nope")]):  # fmt: skip
            done = subprocess.run([sys.executable, "-m", "wdn_explain", *args], env=env,
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
            text = done.stdout + done.stderr
            ok = (
                done.returncode == 1
                and "Traceback" not in text
                and _last(text).startswith("error:")
            )
            record(ok, f"{args[0]} with {variable}={value!r}", _last(text))


def verdict_cases(tmp: Path) -> None:
    """The onboarding verdict on odd cards, and onboarding options."""
    from wdn_explain.model_folder import read_card
    from wdn_explain.onboard import onboard_verdict

    metrics = {
        "metrics empty": {}, "mae NaN": {"mae": float("nan"), "tree_mae": 0.01},
        "tree_mae missing": {"mae": 0.01}, "mae a string": {"mae": "0.01", "tree_mae": 0.01},
        "mae infinite": {"mae": float("inf"), "tree_mae": 0.01},
    }  # fmt: skip
    for name, m in metrics.items():
        folder = _tampered(tmp, MODEL, f"verdict-{name.replace(' ', '-')}",
                           lambda c, m=m: c.update(metrics=m))  # fmt: skip
        lib(f"onboard_verdict, card with {name}", lambda f=folder: onboard_verdict(read_card(f)))
    import epyt

    net1 = Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net1.inp"
    for option in [["--seed", "-1"], ["--epochs", "-1"], ["--workers", "100000"],
                   ["--device", "cuda:99"], ["--layers", "100"]]:  # fmt: skip
        out = tmp / f"ob{len(RESULTS)}"
        cli(f"network onboard Net1 {' '.join(option)}", ["network", "onboard", net1, "--out",
            out, "--scenarios", "3", *option], "refused", out)  # fmt: skip


def wave6_process_cases(tmp: Path) -> None:
    """Two explains of hanoi-sensors into one file at once; Ctrl-C and a rerun."""
    _two_at_once(SENSORS, tmp / "sensors-twice.npz", "two explains of hanoi-sensors at once")
    spec = "{duration_s: 10800, reporting_step_s: 300}"
    cut = tmp / "sensors-cut.npz"
    child = _child(["explain", "--scenario", spec, "--model", str(SENSORS), "--out", str(cut)])
    time.sleep(3)  # before the first step (the simulation)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    ok = child.returncode == 130 and "Traceback" not in output
    record(ok, "explain hanoi-sensors, Ctrl-C early: exit 130, one line", _last(output))
    again = _child(["explain", "--scenario", spec, "--model", str(SENSORS), "--out", str(cut)])
    output, _ = again.communicate()
    ok = again.returncode == 0 and "Traceback" not in output and "resumed" not in output
    record(ok, "explain rerun after the early Ctrl-C: computed afresh", _last(output))


def _child(args: list[str]) -> subprocess.Popen:
    """The CLI in a child process with SIGINT at its default, as a terminal starts it (a
    harness started in the background would pass it on ignored)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "wdn_explain", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip


def _two_at_once(model: Path, out: Path, name: str) -> None:
    """Two ``explain`` runs into one file at once: honest when both end well, or one does
    and the other is refused in one line naming the other process; never 'resumed' from the
    other's fresh steps."""
    args = ["explain", "--scenario", SHORT, "--model", str(model), "--out", str(out)]
    pair = [_child(args), _child(args)]
    outputs = [p.communicate()[0] for p in pair]
    codes = sorted(p.returncode for p in pair)
    said = [o for p, o in zip(pair, outputs) if p.returncode == 1]
    honest = codes == [0, 0] or (codes == [0, 1] and "another process" in _last(said[0]))
    ok = honest and not any("Traceback" in o for o in outputs) and out.exists()
    ok = ok and not any("resumed" in o for o in outputs)
    record(ok, name, " | ".join(_last(o) for o in outputs))


def process_cases(tmp: Path) -> None:
    """Ctrl-C then a rerun (same bytes as an uninterrupted run), and two runs at once."""
    cfg = tmp / "six.yaml"
    cfg.write_text((ROOT / "simulations" / "smoke.yaml").read_text())
    whole, cut = tmp / "whole", tmp / "cut"
    _child(["simulate", "--config", str(cfg), "--out", str(whole), "--workers", "1"]).wait()
    child = _child(["simulate", "--config", str(cfg), "--out", str(cut), "--workers", "1"])
    while not list(cut.glob("scenario_*.npz")) and child.poll() is None:
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    ok = child.returncode == 130 and "Traceback" not in output
    RESULTS.append((ok, "simulate Ctrl-C: exit 130, one line", _last(output)))
    _child(["simulate", "--config", str(cfg), "--out", str(cut), "--workers", "1"]).wait()
    same = all(
        p.read_bytes() == (whole / p.name).read_bytes() for p in cut.glob("scenario_*.npz")
    ) and len(list(cut.glob("scenario_*.npz"))) == len(list(whole.glob("scenario_*.npz")))
    RESULTS.append((same, "simulate rerun after Ctrl-C: the same bytes", ""))
    _two_at_once(MODEL, tmp / "twice.npz", "two explain runs into one file at once")
    child = _child(["explain", "--scenario", "{duration_s: 14400, reporting_step_s: 300}",
                    "--model", str(MODEL), "--out", str(tmp / "cut.npz")])  # fmt: skip
    partial = tmp / ".cut.npz.partial"
    while child.poll() is None and not list(partial.glob("step_*.npz")):  # a step kept
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    ok = child.returncode == 130 and "Traceback" not in output
    RESULTS.append((ok, "explain Ctrl-C: exit 130, steps kept", _last(output)))
    again = _child(["explain", "--scenario", "{duration_s: 14400, reporting_step_s: 300}",
                    "--model", str(MODEL), "--out", str(tmp / "cut.npz")])  # fmt: skip
    output, _ = again.communicate()
    ok = again.returncode == 0 and "Traceback" not in output
    RESULTS.append((ok, "explain rerun after Ctrl-C resumes", _last(output)))
    for ok, name, shown in RESULTS[-5:]:
        if name != "two explain runs into one file at once":  # said by _two_at_once
            print(f"{'PASS' if ok else 'FAIL'} {name}: {shown}", flush=True)


WAVES = {
    "5": (scenario_cases, config_cases, onboard_cases, explain_cases, model_cases, output_cases,
          process_cases, lambda tmp: library_cases()),
    "6": (risk_cases, sensor_cases, lambda tmp: engine_cases(), input_cases, verdict_cases,
          wave6_process_cases),
}  # fmt: skip
"""The cases of each wave's code (5: the fourth- and fifth-wave modules; 6: the risk of
non-compliance, sensors, the onboarding verdict, the new inputs)."""


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    os.environ.setdefault("WDN_EXPLAIN_CACHE", tempfile.mkdtemp(prefix="wdn-cases-cache-"))
    tmp = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="wdn-cases-"))
    tmp.mkdir(parents=True, exist_ok=True)
    for wave in sys.argv[2:] or WAVES:
        for group in WAVES[wave]:
            group(tmp)
    passed = sum(ok for ok, _, _ in RESULTS)
    print(f"outside cases: {passed} of {len(RESULTS)} pass")
    for ok, name, shown in RESULTS:
        if not ok:
            print(f"  failed: {name}: {shown}")


if __name__ == "__main__":
    main()
