"""Outside cases against the CLI and the fourth-wave modules: bad values, missing and odd
files, interrupts, reruns and concurrent runs. One line per case (PASS/FAIL, the case, the
last line of its output), then the counts.

Usage: python benchmarks/quality/bench_outside_cases.py [OUT_FOLDER [WAVE ...]]
(waves: 5, 6, 7; default all)

A case passes when the command ends as expected -- ``refused``: exit 1, one ``error:`` line
last, no traceback, its output path not created; ``ok``: exit 0, no traceback -- or, for the
library cases, raises the project's own error (``WdnExplainError``) or none; for the app
page, no exception and an error shown (or none, for a good replay).
Runs in one process with typer's CliRunner (``OMP_NUM_THREADS=1``), the interrupt, rerun,
follow and cluster cases in child processes. Uses models/default, models/hanoi-nodes,
models/hanoi-sensors and the monitoring data under data/. The full-disk and read-only cases
mount small tmpfs folders (root; skipped, and said so, where mounting is not allowed).
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


def _mounted(tmp: Path, name: str, options: str) -> Path | None:
    """A tmpfs mounted at ``tmp/name`` with ``options`` (a full disk: ``size=...``; a
    read-only folder, which root can write into unless its file system is read-only: ``ro``),
    unmounted at exit; None where this process may not mount."""
    import atexit

    folder = tmp / name
    folder.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        print(f"SKIP {name}: cannot mount a tmpfs here", flush=True)
        return None
    atexit.register(subprocess.run, ["umount", "-l", str(folder)], capture_output=True)
    return folder


def _sensor_rows(duration_s: int) -> tuple[list[str], list[list[str]]]:
    """The header and rows (exact float text) of hanoi-sensors' readings of the scenario
    ``{duration_s, reporting_step_s: 300}``, as simulated."""
    from wdn_explain.model_folder import read_card
    from wdn_explain.network import load_network
    from wdn_explain.scenario import ScenarioConfig
    from wdn_explain.simulation import simulate

    sensors = read_card(SENSORS).input_spec.quality_node_sensors
    net = load_network("hanoi")
    result = simulate(ScenarioConfig(duration_s=duration_s, reporting_step_s=300), net)
    index = [net.node_index(s) for s in sensors]
    header = ["time_s", *(f"chlorine_mg_l@{s}" for s in sensors)]
    rows = [[str(int(t)), *(repr(float(v)) for v in result.node_chlorine_mg_l[k, index])]
            for k, t in enumerate(result.times_s)]  # fmt: skip
    return header, rows


def _csv(path: Path, header: list[str], rows: list[list[str]], end: str = "\n") -> Path:
    path.write_text(end.join(",".join(row) for row in [header, *rows]) + end)
    return path


def replay_cases(tmp: Path) -> None:
    """`wdn-explain replay`: bad readings files (CSV and EPyT-Flow ScadaData), bad values,
    bad options, models and outputs. A bad file is refused in one line, nothing written; a
    bad reading is marked and replayed."""
    header, rows = _sensor_rows(1800)
    sensors = [h.split("@")[1] for h in header[1:]]

    def replay(name: str, path: Path, expect: str, *options) -> Path:
        out = tmp / f"rp{len(RESULTS)}"
        args = ["replay", path, "--scenario", SHORT, "--model", SENSORS, "--out", out, *options]
        cli(f"replay {name}", args, expect, out if expect == "refused" else None)
        return out

    def bad(name: str, make: Callable[[list, list], tuple[list, list]]) -> None:
        h, r = make(list(header), [list(row) for row in rows])
        replay(name, _csv(tmp / f"bad{len(RESULTS)}.csv", h, r), "refused")

    def value(name: str, cell: str, expect: str = "ok") -> None:
        r = [list(row) for row in rows]
        r[3][1] = cell
        replay(f"a reading {name}", _csv(tmp / f"v{len(RESULTS)}.csv", header, r), expect)

    good = _csv(tmp / "good.csv", header, rows)
    first = replay("simulated readings of a short scenario", good, "ok")
    shutil.copytree(first, tmp / "replay-good")  # the app page's cases read it
    cli("replay the same again (resumed)", ["replay", good, "--scenario", SHORT, "--model",
        SENSORS, "--out", first], "ok")  # fmt: skip
    bad("an unknown sensor column", lambda h, r: (h[:-1] + ["chlorine_mg_l@999"], r))
    bad("a column of a sensor the model lacks", lambda h, r: (h[:-1] + ["chlorine_mg_l@3"], r))
    bad("a sensor column missing", lambda h, r: (h[:-1], [row[:-1] for row in r]))
    bad("a sensor column twice", lambda h, r: (h + [h[1]], [row + [row[1]] for row in r]))
    bad("readings in ug/L", lambda h, r: (h[:1] + [c.replace("mg_l", "ug_l") for c in h[1:]], r))
    bad("a column without a node", lambda h, r: (h[:-1] + ["chlorine_mg_l"], r))
    bad("time in minutes", lambda h, r: (["time_min"] + h[1:], r))
    bad("no time column", lambda h, r: (h[1:], [row[1:] for row in r]))
    bad("times going back", lambda h, r: (h, [r[0], r[2], r[1], *r[3:]]))
    bad("a time repeated", lambda h, r: (h, [r[0], r[1], r[1], *r[2:]]))
    bad("a time off the report grid", lambda h, r: (h, [r[0], ["150", *r[1][1:]], *r[2:]]))
    bad("a negative time", lambda h, r: (h, [["-300", *r[0][1:]], *r]))
    bad("a time after the scenario", lambda h, r: (h, [*r, ["99900", *r[0][1:]]]))
    bad("a time inf", lambda h, r: (h, [*r, ["inf", *r[0][1:]]]))
    bad("a time nan", lambda h, r: (h, [*r, ["nan", *r[0][1:]]]))
    bad("a time that is text", lambda h, r: (h, [["noon", *r[0][1:]], *r[1:]]))
    bad("a row one cell short", lambda h, r: (h, [r[0], r[1][:-1], *r[2:]]))
    bad("a row one cell long", lambda h, r: (h, [r[0], r[1] + ["0.1"], *r[2:]]))
    bad("100 000 unknown sensor columns", lambda h, r: (h + [f"chlorine_mg_l@x{i}" for i in range(100_000)], r))  # fmt: skip
    value("NaN", "nan")
    value("inf", "inf")
    value("-inf", "-inf")
    value("negative", "-0.5")
    value("1e308", "1e308")
    value("1e999 (overflows)", "1e999")
    value("that is text", "high")
    value("empty", "")
    value("of 100 000 digits", "1" * 100_000)
    r = [list(row) for row in rows]
    for row in r:
        row[1] = "nan"
    replay("every reading of one sensor missing", _csv(tmp / "nan1.csv", header, r), "ok")
    r = [[row[0]] + ["nan"] * len(sensors) for row in rows]
    replay("every reading missing", _csv(tmp / "nan-all.csv", header, r), "ok")
    replay("header only", _csv(tmp / "header.csv", header, []), "ok")
    (tmp / "empty.csv").write_text("")
    replay("an empty file", tmp / "empty.csv", "refused")
    (tmp / "blank.csv").write_text("\n\n  \n")
    replay("blank lines only", tmp / "blank.csv", "refused")
    (tmp / "bom.csv").write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    replay("a UTF-8 BOM", tmp / "bom.csv", "ok")
    replay("CRLF line ends", _csv(tmp / "crlf.csv", header, rows, "\r\n"), "ok")
    (tmp / "utf16.csv").write_text(good.read_text(), encoding="utf-16")
    replay("UTF-16 text", tmp / "utf16.csv", "refused")
    (tmp / "junk.csv").write_bytes(os.urandom(200_000))
    replay("binary junk", tmp / "junk.csv", "refused")
    (tmp / "junk.epytflow_scada_data").write_bytes(os.urandom(200_000))
    replay("binary junk named as ScadaData", tmp / "junk.epytflow_scada_data", "refused")
    big = tmp / "million.csv"
    with open(big, "w") as handle:
        handle.write(",".join(header) + "\n")
        tail = "," + ",".join(rows[1][1:]) + "\n"
        handle.writelines(f"{300 * i}{tail}" for i in range(1_000_000))
    replay("a million rows (beyond the scenario)", big, "refused")
    (tmp / "longline.csv").write_text("time_s," + "9" * 10_000_000)
    replay("one 10 MB line without its end", tmp / "longline.csv", "refused")
    replay("a missing file", tmp / "none.csv", "refused")
    replay("a folder", tmp, "refused")
    _scada_cases(tmp, replay)
    for model, name in [(NODES, "a full-state node model"), (MODEL, "a share model"),
                        (tmp / "nope", "a missing model")]:  # fmt: skip
        out = tmp / f"rp{len(RESULTS)}"
        cli(f"replay with {name}", ["replay", good, "--scenario", SHORT, "--model", model,
            "--out", out], "refused", out)  # fmt: skip
    import epyt

    net1 = Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net1.inp"
    spec = f"{{network: '{net1}', duration_s: 1800, reporting_step_s: 300}}"
    out = tmp / f"rp{len(RESULTS)}"
    cli("replay a scenario on another network", ["replay", good, "--scenario", spec, "--model",
        SENSORS, "--out", out], "refused", out)  # fmt: skip
    part = _csv(tmp / "part.csv", header, rows[:3])
    for poll in ["0", "-1", "nan", "inf"]:  # in a child: a busy or endless wait is a failure
        out = tmp / f"rp{len(RESULTS)}"
        child = _child(["replay", str(part), "--scenario", SHORT, "--model", str(SENSORS),
                        "--out", str(out), "--follow", "--poll", poll])  # fmt: skip
        output = _ended(child, 30)
        ok = child.returncode == 1 and _last(output).startswith("error:") and not out.exists()
        record(ok and "Traceback" not in output, f"replay --follow --poll {poll}", _last(output))
    replay("--index 3 with an inline scenario", good, "refused", "--index", "3")
    file_out = tmp / "a-file"
    file_out.write_text("x")
    cli("replay --out an existing file", ["replay", good, "--scenario", SHORT, "--model",
        SENSORS, "--out", file_out], "refused")  # fmt: skip
    record(file_out.read_text() == "x", "replay --out an existing file: the file kept")
    cli("replay --out below a file", ["replay", good, "--scenario", SHORT, "--model", SENSORS,
        "--out", file_out / "r"], "refused")  # fmt: skip
    mine = tmp / "my-folder"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    cli("replay --out a folder of the user's files", ["replay", good, "--scenario", SHORT,
        "--model", SENSORS, "--out", mine], "refused")  # fmt: skip
    record(sorted(p.name for p in mine.iterdir()) == ["notes.txt"],
           "replay --out a user's folder: nothing written into it")  # fmt: skip
    other = "{duration_s: 2100, reporting_step_s: 300}"
    cli("replay another scenario into a replay", ["replay", good, "--scenario", other, "--model",
        SENSORS, "--out", first], "refused")  # fmt: skip
    changed = [list(row) for row in rows]
    changed[4][2] = "0.123"
    again = tmp / "replay-changed"
    shutil.copytree(tmp / "replay-good", again)
    cli("replay after a reading changed (recomputed from it)", ["replay", _csv(tmp / "ch.csv",
        header, changed), "--scenario", SHORT, "--model", SENSORS, "--out", again], "ok")  # fmt: skip
    ro = _mounted(tmp, "ro-replay", "ro,size=1m")
    if ro is not None:
        cli("replay --out on a read-only file system", ["replay", good, "--scenario", SHORT,
            "--model", SENSORS, "--out", ro / "r"], "refused")  # fmt: skip
    full = _mounted(tmp, "full-replay", "size=120k")
    if full is not None:
        cli("replay --out on a disk that fills", ["replay", good, "--scenario", SHORT,
            "--model", SENSORS, "--out", full / "r"], "refused")  # fmt: skip
        _steps_intact(full / "r", "replay on a full disk: the steps written are whole")


def _steps_intact(folder: Path, name: str) -> None:
    """A case: the replay in ``folder`` loads, and no temporary file is left."""
    from wdn_explain.replay import load_replay

    try:
        n = len(load_replay(folder).steps)
        left = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
        record(not left, name, f"{n} steps, temporaries: {left}")
    except WdnExplainError as exc:
        record(False, name, str(exc))


def _scada_cases(tmp: Path, replay: Callable[..., Path]) -> None:
    """EPyT-Flow ScadaData files: a planted pickle, foreign MessagePack, object arrays,
    another sensor set, a decompression bomb."""
    import gzip
    import pickle

    import umsgpack
    from epyt_flow.serialization import NUMPY_ARRAY_ID

    marker = tmp / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (exec, (f"open({str(marker)!r}, 'w').write('x')",))

    for name, raw in [("a pickle", pickle.dumps(Payload())),
                      ("a gzipped pickle", gzip.compress(pickle.dumps(Payload())))]:  # fmt: skip
        path = tmp / f"planted{len(RESULTS)}.epytflow_scada_data"
        path.write_bytes(raw)
        replay(f"ScadaData that is {name}", path, "refused")
        record(not marker.exists(), f"ScadaData that is {name}: the payload never ran")
    for name, data in [("a dict", {"a": 1}), ("a list", [1, 2]), ("a number", 3)]:
        path = tmp / f"foreign{len(RESULTS)}.epytflow_scada_data"
        path.write_bytes(gzip.compress(umsgpack.packb(data)))
        replay(f"ScadaData holding {name}", path, "refused")
    ext = umsgpack.Ext(NUMPY_ARRAY_ID, umsgpack.packb(("|O", [2], b"\0" * 16)))
    path = tmp / "object.epytflow_scada_data"
    path.write_bytes(gzip.compress(umsgpack.packb(ext)))
    replay("ScadaData holding an object array", path, "refused")
    bomb = tmp / "bomb.epytflow_scada_data"
    with gzip.open(bomb, "wb", compresslevel=1) as handle:
        chunk = bytes(64 << 20)
        for _ in range(32):  # 2 GiB of zeros
            handle.write(chunk)
    replay("ScadaData: a gzip of 2 GiB of zeros", bomb, "refused")
    scada = _scada_file(tmp, ["3", "10", "16", "30"])
    replay("ScadaData of another sensor set", scada, "refused")
    scada = _scada_file(tmp, [])
    replay("ScadaData without chlorine sensors", scada, "refused")


def _scada_file(tmp: Path, sensors: list[str]) -> Path:
    """EPyT-Flow's ScadaData of a half-hour Hanoi run with chlorine analysers at ``sensors``."""
    from epanet_plus import EpanetConstants
    from epyt_flow.simulation import ScenarioSimulator

    from wdn_explain.network import load_network

    with ScenarioSimulator(f_inp_in=str(load_network("hanoi").inp_path)) as sim:
        sim.set_general_parameters(simulation_duration=1800, hydraulic_time_step=300,
                                   reporting_time_step=300, quality_time_step=60)  # fmt: skip
        sim.enable_chemical_analysis()
        sim.add_quality_source("2", EpanetConstants.EN_SETPOINT, np.ones(1), source_strength=1.5)
        config = sim.sensor_config
        config.quality_node_sensors = sensors
        sim.sensor_config = config
        scada = sim.run_simulation()
    stem = tmp / f"scada{len(RESULTS)}"
    scada.save_to_file(str(stem))
    return stem.with_name(stem.name + ".epytflow_scada_data")


def replay_process_cases(tmp: Path) -> None:
    """`replay --follow` on a file that grows, then one that is cut short; Ctrl-C mid replay
    and a rerun."""
    header, rows = _sensor_rows(1800)
    growing = _csv(tmp / "growing.csv", header, rows[:3])
    out = tmp / "follow"
    args = ["replay", str(growing), "--scenario", SHORT, "--model", str(SENSORS), "--out",
            str(out), "--follow", "--poll", "0.2"]  # fmt: skip
    child = _child(args)
    _wait_for(out / "step_000002.npz", child)
    with open(growing, "a") as handle:
        handle.write("\n".join(",".join(row) for row in rows[3:]) + "\n")
    output = _ended(child, 120)
    ok = child.returncode == 0 and "Traceback" not in output and "replayed 7 steps" in output
    record(ok, "replay --follow of a growing file ends at the scenario's last report",
           _last(output))  # fmt: skip
    cut = _csv(tmp / "cut.csv", header, rows[:4])
    out = tmp / "follow-cut"
    child = _child([*args[:1], str(cut), *args[2:7], str(out), *args[8:]])
    _wait_for(out / "step_000003.npz", child)
    _csv(cut, header, rows[:2])  # truncated: a log rotated, a logger restarted
    output = _ended(child, 30)
    ok = child.returncode == 1 and "Traceback" not in output and _last(output).startswith("error:")
    record(ok, "replay --follow of a file cut short: one line, not a wait", _last(output))
    _steps_intact(out, "replay --follow cut short: the steps replayed are kept")
    header, rows = _sensor_rows(10800)
    long = _csv(tmp / "long.csv", header, rows)
    out = tmp / "cut-replay"
    args = ["replay", str(long), "--scenario", "{duration_s: 10800, reporting_step_s: 300}",
            "--model", str(SENSORS), "--out", str(out)]  # fmt: skip
    child = _child(args)
    _wait_for(out / "step_000002.npz", child)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    ok = child.returncode == 130 and "Traceback" not in output
    record(ok, "replay Ctrl-C: exit 130, one line", _last(output))
    _steps_intact(out, "replay Ctrl-C: every step written is whole")
    again = _child(args)
    output, _ = again.communicate()
    ok = (
        again.returncode == 0 and "kept from an earlier run" in output and "Traceback" not in output
    )
    record(ok, "replay rerun after Ctrl-C resumes", _last(output))


def _wait_for(path: Path, child: subprocess.Popen, limit_s: float = 300) -> None:
    """Wait until ``path`` exists (or the child ended, or ``limit_s`` passed)."""
    start = time.monotonic()
    while not path.exists() and child.poll() is None and time.monotonic() - start < limit_s:
        time.sleep(0.1)


def _ended(child: subprocess.Popen, limit_s: float) -> str:
    """The child's output once it ends; interrupted (and said so) after ``limit_s``."""
    try:
        return child.communicate(timeout=limit_s)[0]
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)
        return child.communicate()[0] + f"\n(still running after {limit_s} s: interrupted)"


def replay_page_cases(tmp: Path) -> None:
    """The app's Replay page (AppTest) on folders that are not replays, planted or damaged
    replays, a replay of another network and a good one."""
    import pickle

    from streamlit.testing.v1 import AppTest

    good = tmp / "replay-good"

    def page(name: str, folder: str | Path, expect: str) -> None:
        at = AppTest.from_file(str(ROOT / "app" / "pages" / "2_Replay.py"), default_timeout=120)
        try:
            at.run()
            at.sidebar.text_input[0].set_value(str(folder)).run()
            crashed = [e.value for e in at.exception]
        except Exception as exc:  # counted, not raised
            crashed = [f"{type(exc).__name__}: {exc}"]
        errors = [e.value for e in at.error] if not crashed else []
        ok = not crashed and (bool(errors) if expect == "error" else not errors)
        shown = (crashed or errors or [""])[0]
        record(ok, f"Replay page: {name}", str(shown).splitlines()[0][:160] if shown else "")

    def planted(name: str, change: Callable[[Path], object]) -> Path:
        folder = tmp / f"page-{name}"
        shutil.copytree(good, folder)
        change(folder)
        return folder

    def meta(change: Callable[[dict], object]) -> Callable[[Path], object]:
        def edit(folder: Path) -> None:
            record_ = json.loads((folder / "replay.json").read_text())
            change(record_)
            (folder / "replay.json").write_text(json.dumps(record_))

        return edit

    def step(change: Callable[[dict], object]) -> Callable[[Path], object]:
        def edit(folder: Path) -> None:
            path = folder / "step_000001.npz"
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            change(arrays)
            with open(path, "wb") as handle:
                np.savez(handle, **arrays)

        return edit

    import epyt

    net1 = str(Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net1.inp")
    page("a good replay", good, "ok")
    (tmp / "page-empty").mkdir(exist_ok=True)
    page("an empty folder", tmp / "page-empty", "error")
    page("a missing folder", tmp / "nowhere", "error")
    page("a file", tmp / "good.csv", "error")
    page("a path with a NUL byte", "a\x00b", "error")
    cases = {
        "replay.json deeply nested": lambda f: (f / "replay.json").write_text("[" * 100_000),
        "replay.json a list": lambda f: (f / "replay.json").write_text("[1, 2]"),
        "replay.json binary": lambda f: (f / "replay.json").write_bytes(os.urandom(5000)),
        "replay.json without sensors": meta(lambda m: m.pop("sensors")),
        "replay.json without node ids": meta(lambda m: m.pop("node_ids")),
        "sensors not in the network": meta(lambda m: m.update(sensors=["999"] * 4)),
        "a replay of another network": meta(lambda m: m["scenario"].update(network=net1)),
        "another network's node ids": meta(lambda m: m.update(node_ids=[str(i) for i in range(11)])),
        "the network a missing file": meta(lambda m: m["scenario"].update(network="/nowhere.inp")),
        "a step truncated": lambda f: (f / "step_000001.npz").write_bytes(
            (f / "step_000001.npz").read_bytes()[:3000]),
        "a step that is a pickle": lambda f: (f / "step_000001.npz").write_bytes(
            pickle.dumps({"a": 1})),
        "a step a decompression bomb": lambda f: _bomb(f / "step_000001.npz"),
        "a step's forecast one node short": step(lambda a: a.update(forecast=a["forecast"][1:])),
        "a step's readings of 3 sensors": step(lambda a: a.update(readings=a["readings"][1:])),
        "a step's flag 99": step(lambda a: a["flags"].__setitem__(0, 99)),
        "a step without its forecast": step(lambda a: a.pop("forecast")),
        "a step's explanation count 99": step(lambda a: a.update(n_explained=np.array(99))),
        "a step NaN forecast": step(lambda a: a["forecast"].__setitem__(0, np.nan)),
    }  # fmt: skip
    for name, change in cases.items():
        expect = "ok" if name == "a step NaN forecast" else "error"
        page(name, planted(name.replace(" ", "-").replace("'", ""), change), expect)


def placement_cases(tmp: Path) -> None:
    """`sensors place`: bad counts, models and folders, outputs, a design without the
    pressure-driven flag, chama without glpsol, rerun."""
    one = ["--scenarios", "1", "--chunk", "1"]

    def place(name: str, options: list, expect: str, out: Path | None = None) -> Path:
        """A case; a given ``out`` (the user's or an earlier run's) may exist after it."""
        given, out = out is not None, out or tmp / f"pl{len(RESULTS)}"
        args = ["sensors", "place", *options, "--out", out]
        if "--model" not in options:
            args += ["--model", NODES]
        if "--data" not in options:
            args += ["--data", DATA]
        if "--k" not in options:
            args += ["--k", "4"]
        cli(
            f"sensors place {name}",
            args,
            expect,
            out if expect == "refused" and not given else None,
        )
        return out

    for k in ["0", "-1", "33", "1000000"]:
        place(f"--k {k}", ["--k", k, *one], "refused")
    place("--k x", ["--k", "x", *one], "usage")
    for n in ["0", "-1", "1001", "1000000000"]:
        place(f"--scenarios {n}", ["--scenarios", n, "--chunk", "1"], "refused")
    place("--chunk 0", ["--scenarios", "1", "--chunk", "0"], "refused")
    place("--workers 0", [*one, "--workers", "0"], "refused")
    place("--rule nearest", [*one, "--rule", "nearest"], "refused")
    place("--random -1", [*one, "--random", "-1", "--compare", DATA], "refused")
    place("--compare a missing folder", [*one, "--compare", tmp / "nowhere"], "refused")
    place("--model hanoi-sensors (reads sensors only)", ["--model", SENSORS, *one], "refused")
    place("--model a share model", ["--model", MODEL, *one], "refused")
    place("--model missing", ["--model", tmp / "nope", *one], "refused")
    place("--data missing", ["--data", tmp / "nope", *one], "refused")
    net1 = ROOT / "data" / "onboard" / "net1" / "data"
    place("--data of another network", ["--data", net1, *one], "refused")
    place("--scheduler unreachable", [*one, "--scheduler", "tcp://127.0.0.1:1"], "refused")
    file_out = tmp / "a-file"
    place("--out an existing file", one, "refused", file_out)
    record(file_out.read_text() == "x", "sensors place --out an existing file: the file kept")
    out = place("k 4 on one scenario", one, "ok")
    place("the same again (resumed)", one, "ok", out)
    place("another --scenarios into that folder", ["--scenarios", "2", "--chunk", "1"],
          "refused", out)  # fmt: skip
    old = tmp / "no-pda-flag"
    old.mkdir()
    manifest = json.loads((DATA / "manifest.json").read_text())
    for name in ("demand_model", "pressure_min_m", "pressure_required_m", "pressure_exponent"):
        manifest["config"]["scenario"].pop(name)
    (old / "manifest.json").write_text(json.dumps(manifest | {"n_scenarios": 3}))
    for path in sorted(DATA.glob("scenario_*.npz"))[:3]:
        (old / path.name).symlink_to(path)
    out = tmp / f"pl{len(RESULTS)}"
    result = CliRunner().invoke(app, ["sensors", "place", "--model", NODES, "--data", old, "--k",
                                      "4", *one, "--out", out])  # fmt: skip
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    ok = not crashed and "Traceback" not in result.output and result.exit_code in (0, 1)
    ok = ok and (result.exit_code == 0 or not out.exists())
    record(ok, "sensors place on a design without the pressure-driven flag", _last(result.output))
    ro = _mounted(tmp, "ro-place", "ro,size=1m")
    if ro is not None:
        place("--out on a read-only file system", one, "refused", ro / "p")
    full = _mounted(tmp, "full-place", "size=8k")
    if full is not None:
        place("--out on a full disk", one, "refused", full / "p")  # resumable: it may stay
        left = [p.name for p in (full / "p").rglob("*.tmp*")]
        record(not left, "sensors place on a full disk: no temporaries left", str(left))
    no_glpk = tmp / "bin-without-glpsol"
    no_glpk.mkdir()
    (no_glpk / "python").symlink_to(sys.executable)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": str(no_glpk)}
    out = tmp / "place-no-glpk"
    done = subprocess.run([sys.executable, "-m", "wdn_explain", "sensors", "place", "--model",
                           str(NODES), "--data", str(DATA), "--k", "4", *one, "--out", str(out),
                           "--compare", str(ROOT / "data" / "monitoring-fresh"), "--random", "2"],
                          env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    text = done.stdout + done.stderr
    ok = "Traceback" not in text and (
        done.returncode == 0 or (done.returncode == 1 and _last(text).startswith("error:"))
    )
    record(ok, "sensors place --compare, chama without glpsol", _last(text))


def placement_process_cases(tmp: Path) -> None:
    """`sensors place`: Ctrl-C and a rerun (the same table as one run), a scheduler with no
    workers, a worker killed, the scheduler killed."""
    base = ["sensors", "place", "--model", str(NODES), "--data", str(DATA), "--k", "4",
            "--scenarios", "3", "--chunk", "1"]  # fmt: skip
    whole, cut = tmp / "place-whole", tmp / "place-cut"
    _child([*base, "--out", str(whole)]).wait()
    child = _child([*base, "--out", str(cut)])
    _wait_for(cut / "chunks" / "chunk_00000.npy", child)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    ok = child.returncode == 130 and "Traceback" not in output
    record(ok, "sensors place Ctrl-C: exit 130, one line", _last(output))
    _child([*base, "--out", str(cut)]).wait()
    same = (cut / "importance.csv").exists() and (cut / "importance.csv").read_bytes() == (
        whole / "importance.csv"
    ).read_bytes()
    record(same, "sensors place rerun after Ctrl-C: the same importance table")
    for name, kill in [("no workers", None), ("its worker killed", "worker"),
                       ("the scheduler killed", "scheduler")]:  # fmt: skip
        _cluster_case(tmp, base, name, kill)


def _cluster_case(tmp: Path, base: list[str], name: str, kill: str | None) -> None:
    """`sensors place --scheduler` on a scheduler of its own: with no worker, or with one
    that is killed (or the scheduler killed) once the run started. One line, exit 1, within
    the cluster's limits (30 s without workers, 10 s without a scheduler)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    quiet = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], **quiet)  # fmt: skip
    worker = None
    time.sleep(4)
    if kill is not None:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                   "--nthreads", "1", "--nworkers", "1", "--no-nanny"],
                                  **quiet)  # fmt: skip
        time.sleep(6)
    out = tmp / f"pc{len(RESULTS)}"
    start = time.monotonic()
    child = _child([*base, "--scenarios", "40", "--out", str(out), "--scheduler", address])
    if kill is not None:
        time.sleep(12)  # the run reached the cluster
        (worker if kill == "worker" else scheduler).kill()
    output = _ended(child, 150)
    took = time.monotonic() - start
    ok = child.returncode == 1 and "Traceback" not in output and _last(output).startswith("error:")
    record(ok, f"sensors place --scheduler, {name}", f"{took:.0f} s: {_last(output)}")
    for process in (scheduler, worker):
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


def train_risk_cases(tmp: Path) -> None:
    """`train-risk`: models without a node target or with a risk model, data of another
    design, bad epochs and minimum residuals; the card and weights never touched by a
    refusal."""

    def copy(name: str) -> Path:
        folder = tmp / f"risk-{name}"
        shutil.copytree(NODES, folder)
        return folder

    def refused(name: str, model: Path, options: list, data: Path = DATA) -> None:
        before = {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()}
        cli(f"train-risk {name}", ["train-risk", "--model", model, "--data", data, *options],
            "refused")  # fmt: skip
        after = (
            {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()}
            if model.is_dir()
            else {}
        )
        record(after == before, f"train-risk {name}: the model folder unchanged")

    share = tmp / "risk-share"
    shutil.copytree(MODEL, share)
    refused("on a share model", share, [])
    refused("on a sensor model's data of another design", copy("fresh"), ["--overwrite"],
            ROOT / "data" / "monitoring-fresh")  # fmt: skip
    refused("on data of another network", copy("net1"), ["--overwrite"],
            ROOT / "data" / "onboard" / "net1" / "data")  # fmt: skip
    refused("over an existing risk model", copy("again"), ["--epochs", "1"])
    for epochs in ["0", "-1"]:
        refused(f"--epochs {epochs}", copy(f"e{epochs}"), ["--epochs", epochs, "--overwrite"])
    for value in ["-1", "nan", "inf"]:
        refused(f"--min-residual {value}", copy(f"m{value}"), ["--min-residual", value,
                "--overwrite"])  # fmt: skip
    cli("train-risk --model missing", ["train-risk", "--model", tmp / "nope", "--data", DATA],
        "refused")  # fmt: skip
    cli("train-risk --data missing", ["train-risk", "--model", tmp / "risk-again", "--data", tmp / "nope",
        "--overwrite"], "refused")  # fmt: skip
    cli("train-risk --epochs x", ["train-risk", "--model", NODES, "--data", DATA, "--epochs",
        "x"], "usage")  # fmt: skip
    ro = _mounted(tmp, "ro-risk", "size=2m")
    if ro is not None:
        shutil.copytree(NODES, ro / "m")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        refused("on a read-only model folder", ro / "m", ["--overwrite", "--epochs", "1"])
    full = _mounted(tmp, "full-risk", "size=1300k")
    if full is not None:
        shutil.copytree(NODES, full / "m", ignore=shutil.ignore_patterns("*.npz"))
        (full / "fill").write_bytes(bytes(max(0, shutil.disk_usage(full).free - 40_000)))
        refused("on a full disk", full / "m", ["--overwrite", "--epochs", "1"])


def train_risk_process_cases(tmp: Path) -> None:
    """`train-risk --epochs 10^9` stopped by Ctrl-C: exit 130 with the folder unchanged, or
    the best epoch saved and said to be interrupted; never half a model."""
    from wdn_explain.model_folder import load_model

    folder = tmp / "risk-ctrl-c"
    shutil.copytree(NODES, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    child = _child(["train-risk", "--model", str(folder), "--data", str(DATA), "--epochs",
                    "1000000000", "--overwrite"])  # fmt: skip
    time.sleep(40)  # data read, the first epoch under way
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate()
    said = child.returncode == 130 or (child.returncode == 0 and "interrupted" in output)
    ok = said and "Traceback" not in output  # exit 0 when the best epoch was saved, as train
    record(ok, "train-risk --epochs 10^9, Ctrl-C: says what it kept", _last(output))
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    try:
        load_model(folder)
        loads = True
    except WdnExplainError:
        loads = False
    record(loads and (after == before or "interrupted" in output),
           "train-risk Ctrl-C: the folder whole", str(sorted(after)))  # fmt: skip


def _bomb(path: Path) -> None:
    """An .npz whose one member inflates to 800 MB of zeros."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("forecast.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f8", "fortran_order": False, "shape": (100_000_000,)}
            )
            for _ in range(50):
                member.write(bytes(16 << 20))


WAVES = {
    "5": (scenario_cases, config_cases, onboard_cases, explain_cases, model_cases, output_cases,
          process_cases, lambda tmp: library_cases()),
    "6": (risk_cases, sensor_cases, lambda tmp: engine_cases(), input_cases, verdict_cases,
          wave6_process_cases),
    "7": (replay_cases, replay_page_cases, placement_cases, train_risk_cases,
          replay_process_cases, placement_process_cases, train_risk_process_cases),
}  # fmt: skip
"""The cases of each wave's code (5: the fourth- and fifth-wave modules; 6: the risk of
non-compliance, sensors, the onboarding verdict, the new inputs; 7: `replay` and its app
page, `sensors place`, `train-risk`)."""


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
