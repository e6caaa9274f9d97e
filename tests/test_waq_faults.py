"""`simulate` under bad input and faults: one line and nothing left behind, verified resume,
size limits, clean interruption and workers that die with their parent."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wdn_explain import waq
from wdn_explain.cli import app
from wdn_explain.errors import ConfigError
from wdn_explain.scenario import parse_config
from wdn_explain.simulation import SimulationResult
from wdn_explain.sizes import estimate_waq
from wdn_explain.waq import generate_waq, scenario_path

from conftest import ROOT, TINY

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _net2() -> Path:
    import epyt

    return Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net2.inp"


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"reporting_step_s": 450}, "reporting_step_s must be a multiple of hydraulic_step_s"),
        ({"pattern_step_s": 1000}, "pattern_step_s must be a multiple of hydraulic_step_s"),
        ({"injection_strength_mg_l": ".inf"}, "injection_strength_mg_l: Input should be a finite"),
        ({"bulk_decay_per_day": ".inf"}, "bulk_decay_per_day: Input should be a finite"),
        ({"demand_scale": ".nan"}, "demand_scale: Input should be a finite"),
        ({"network": "NET2"}, "has no reservoir: give scenario.injection_node"),
        ({"pressure_required_m": 5}, "pressure_required_m must be above pressure_min_m"),
        ({"pressure_exponent": -0.5}, "pressure_exponent: Input should be greater than 0"),
        ({"pressure_min_m": ".inf"}, "pressure_min_m: Input should be a finite"),
        ({"demand_model": "PPA"}, "demand_model: Input should be 'PDA' or 'DDA'"),
    ],
)
def test_simulate_refuses_what_the_simulator_would(tmp_path, scenario, message):
    lines = [f"  {k}: {str(_net2()) if v == 'NET2' else v}" for k, v in scenario.items()]
    if "pressure_required_m" in scenario:  # not above the minimum
        lines.append("  pressure_min_m: 10")
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("n_scenarios: 2\nscenario:\n  duration_s: 3600\n" + "\n".join(lines) + "\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_binary_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(bytes(range(256)))
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o")
    assert result.exit_code == 1
    assert result.output.strip() == f"error: config file '{cfg}' is not a text file"


def test_simulator_failure_leaves_no_manifest(tmp_path, tiny_config, monkeypatch):
    def fail(index):
        raise RuntimeError("EPANET error 110")

    monkeypatch.setattr(waq, "_run_one", fail)
    out = tmp_path / "o"
    with pytest.raises(ConfigError, match=r"scenario \d failed in the simulator \(RuntimeError"):
        generate_waq(tiny_config, out, n_workers=1)
    assert not (out / "manifest.json").exists()
    monkeypatch.undo()
    corrected = parse_config({**TINY, "n_scenarios": 1})
    generate_waq(corrected, out, n_workers=1)  # not blocked by the failed run
    assert scenario_path(out, 0).exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "a list, not a mapping"),
        (
            json.dumps({"format": waq.FORMAT}),
            "it lacks config, config_hash, seed, n_scenarios, network",
        ),
        (b"\x80\x81\xfe", "is corrupt"),
    ],
)
def test_malformed_manifest_is_one_line(tmp_path, content, message):
    path = tmp_path / "manifest.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = run("data-stats", tmp_path)
    assert result.exit_code == 1
    assert result.output.startswith(f"error: manifest '{path}'") and message in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_resume_redoes_a_damaged_file_and_removes_stray_temporaries(tmp_path, waq_dir):
    out = tmp_path / "w"
    shutil.copytree(waq_dir, out)
    original = SimulationResult.load(scenario_path(out, 2))
    damaged = scenario_path(out, 2)
    damaged.write_bytes(damaged.read_bytes()[:300])
    (out / ".scenario_00004.npz.4194305.2.ab.tmp").write_bytes(b"half")  # writer gone
    config = waq.SimulationConfig.model_validate(
        json.loads((out / "manifest.json").read_text())["config"]
    )
    calls = []
    generate_waq(config, out, n_workers=1, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (5, 6)  # the damaged file was not counted as done
    again = SimulationResult.load(scenario_path(out, 2))
    np.testing.assert_array_equal(again.node_chlorine_mg_l, original.node_chlorine_mg_l)
    assert not list(out.glob(".*.tmp"))
    assert run("data-stats", out).exit_code == 0


def test_absurd_size_is_refused_up_front(tmp_path):
    cfg = tmp_path / "huge.yaml"
    smoke = (ROOT / "simulations" / "smoke.yaml").read_text()
    cfg.write_text(smoke.replace("n_scenarios: 6", "n_scenarios: 10000000"))
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 2)
    assert result.exit_code == 1
    assert result.output.startswith("error: this would take about ")
    assert "GB on disk" in result.output and "pass --yes to proceed" in result.output
    assert not (tmp_path / "o").exists()


def test_one_endless_scenario_is_refused_by_its_memory(tmp_path):
    """One scenario of 1e9 s (3.3 million reports) is small on disk per the training stack,
    but the simulator holds every reported state while it runs: refused before any file, not
    out of memory minutes later (issue 33 item 7)."""
    cfg = tmp_path / "long.yaml"
    cfg.write_text("n_scenarios: 1\nscenario:\n  duration_s: 1000000000\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 1
    assert result.output.startswith("error: this would take about ")
    assert "GB of memory (memory " in result.output
    assert not (tmp_path / "o").exists()


def test_negative_worker_count_is_refused(tmp_path):
    """--workers -1 silently meant every core; now one line before anything is written
    (found by the outside cases of issue 33)."""
    out = tmp_path / "o"
    config = ROOT / "simulations" / "smoke.yaml"
    result = run("simulate", "--config", config, "--out", out, "--workers", -1)
    assert result.exit_code == 1
    assert result.output.strip() == "error: workers must be >= 0, 0 for every usable core (got -1)"
    assert not out.exists()


def test_disk_estimate_matches_real_files(waq_dir, tiny_config, hanoi):
    """The estimate of the tiny set against the files it really wrote (within 25 %)."""
    written = sum(scenario_path(waq_dir, i).stat().st_size for i in range(6))
    estimate = estimate_waq(tiny_config, hanoi, n_workers=2)
    assert estimate.disk_bytes == pytest.approx(written, rel=0.25)


# -- interruption and worker hygiene, in a child process ----------------------------------

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from wdn_explain import waq
    from wdn_explain.cli import app

    marks = sys.argv[1]
    run_one = waq._run_one

    def slow(index):
        with open(os.path.join(marks, f"w{os.getpid()}_{index}"), "w") as handle:
            handle.write(os.getcwd())
        time.sleep(float(sys.argv[2]))
        return run_one(index)

    waq._run_one = slow
    app(sys.argv[3:])
    """
)


def _start(tmp_path, sleep_s: float, n_scenarios: int = 4):
    marks, out = tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"n_scenarios: {n_scenarios}\nscenario:\n  duration_s: 1800\n")
    args = ["simulate", "--config", str(cfg), "--out", str(out), "--workers", "2"]
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(marks), str(sleep_s), *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, like a shell job
        # Ctrl-C as in a terminal, also when the suite runs in the background (SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for _ in range(600):  # bounded wait (60 s) until both workers are busy
        if len(list(marks.iterdir())) >= 2 or child.poll() is not None:
            break
        time.sleep(0.1)
    workers = {int(p.name[1:].split("_")[0]) for p in marks.iterdir()}
    assert len(workers) == 2, child.communicate()
    return child, workers, marks, out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # zombies are dead
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(tmp_path):
    child, workers, _, _ = _start(tmp_path, sleep_s=120)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    for _ in range(100):  # bounded wait (10 s); the workers sleep for 120 s
        if not any(_alive(pid) for pid in workers):
            break
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)


def test_ctrl_c_stops_cleanly_without_litter(tmp_path):
    child, workers, marks, out = _start(tmp_path, sleep_s=30)
    os.killpg(child.pid, signal.SIGINT)  # the terminal sends Ctrl-C to the whole job
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 130
    assert "Traceback" not in stderr.decode() and "KeyboardInterrupt" not in stderr.decode()
    assert "interrupted: finished scenarios are kept" in stdout.decode()
    assert not any(_alive(pid) for pid in workers)
    scratch = {Path(p.read_text()) for p in marks.iterdir()}
    assert tmp_path not in scratch and not any(p.exists() for p in scratch)  # removed
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("en")]
    assert not list(out.glob(".*.tmp"))


def test_progress_moves_one_scenario_at_a_time(tmp_path):
    """40 scenarios on 2 workers: the bar moves by one, not by chunks of tasks."""
    config = parse_config({"n_scenarios": 40, "scenario": {"duration_s": 1800}})
    calls = []
    generate_waq(config, tmp_path / "w", n_workers=2, progress=lambda d, t: calls.append(d))
    assert calls == list(range(41))  # 0 (nothing done yet), then every scenario


def _hanoi_cut_inside_pipes(tmp_path) -> Path:
    """Hanoi's .inp ending after its first four pipes (a file cut short): 27 of its 32
    nodes are then joined to the reservoir by no pipe."""
    from wdn_explain.network import builtin_network_path

    text = builtin_network_path("hanoi").read_text()
    start = text.index("[PIPES]")
    lines = text[start:].splitlines()
    path = tmp_path / "hanoi_cut.inp"
    path.write_text(text[:start] + "\n".join(lines[:6]) + "\n")
    return path


def test_network_with_unconnected_nodes_is_refused(tmp_path):
    import networkx as nx

    inp = _hanoi_cut_inside_pipes(tmp_path)
    cfg = tmp_path / "cut.yaml"
    cfg.write_text(f"n_scenarios: 2\nscenario:\n  network: {inp}\n  duration_s: 3600\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 1
    # the oracle: nodes outside the reservoir's connected component, by networkx
    from wdn_explain.network import load_network

    net = load_network(inp)
    graph = nx.Graph(list(zip(*(np.array(net.node_ids)[net.link_nodes.T]))))
    graph.add_nodes_from(net.node_ids)
    lonely = [n for n in net.node_ids if n not in nx.node_connected_component(graph, "1")]
    assert len(lonely) == 27
    assert result.output.strip() == (
        f"error: network 'hanoi_cut' ({inp}) has 27 of 32 nodes connected to no reservoir "
        f"or tank: {', '.join(lonely[:20])} ... (check its [PIPES], [PUMPS] and [VALVES] "
        "sections)"
    )
    assert not (tmp_path / "o").exists()


def test_negative_pressures_are_reported_and_stored(tmp_path):
    """demand_scale 40, demand-driven: EPANET gives pressures of -70 km; the scenario file
    keeps the pressures, and simulate and data-stats say so in one line each."""
    cfg = tmp_path / "surge.yaml"
    cfg.write_text(
        "n_scenarios: 3\nscenario:\n  duration_s: 1800\n  demand_scale: 40\n  demand_model: DDA\n"
    )
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 0, result.output
    stored = SimulationResult.load(scenario_path(tmp_path / "o", 0))
    pressure = stored.node_pressure_m
    assert pressure.min() < -1000  # the oracle: the stored array itself
    low_nodes = int((pressure < -1e-3).any(axis=0).sum())
    assert stored.pressure_warning.startswith(
        f"negative pressure at {low_nodes} of 32 nodes ({(pressure < -1e-3).mean():.0%} of "
        f"node states), down to {pressure.min():.4g} m"
    )
    lows = [SimulationResult.load(scenario_path(tmp_path / "o", i)) for i in range(3)]
    lowest = min(r.node_pressure_m.min() for r in lows)
    expected = f"warning: negative pressure in 3 of 3 scenarios, down to {lowest:.4g} m"
    assert [line for line in result.output.splitlines() if line.startswith("warning:")][
        0
    ].startswith(expected)
    stats = run("data-stats", tmp_path / "o")
    assert stats.exit_code == 0, stats.output
    warning = [line for line in stats.output.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and warning[0].startswith(expected)
    assert "hydraulics     demand-driven" in stats.output


def test_demand_no_pressure_delivers_is_refused_before_writing(tmp_path):
    """Hanoi's reservoir stands 100 m above its junctions: no junction reaches a required
    pressure of 150 m at any demand, so nothing would be delivered in full: one line naming
    the value, nothing written. The same surge pressure-driven runs, and says how much of the
    demand it delivered."""
    cfg = tmp_path / "high.yaml"
    cfg.write_text("n_scenarios: 2\nscenario:\n  duration_s: 1800\n  pressure_required_m: 150\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 1
    assert result.output.startswith("error: pressure_required_m: no junction of network 'hanoi'")
    assert "(got 150)" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()
    cfg.write_text("n_scenarios: 2\nscenario:\n  duration_s: 1800\n  demand_scale: 40\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 1)
    assert result.exit_code == 0, result.output
    assert "design check: 1 of 1 corners" in result.output
    runs = [SimulationResult.load(scenario_path(tmp_path / "o", i)) for i in range(2)]
    assert min(r.node_pressure_m.min() for r in runs) > -1
    asked = sum(r.node_requested_demand_lps.clip(min=0).sum() for r in runs)
    got = sum(
        np.minimum(r.node_demand_lps, r.node_requested_demand_lps).clip(min=0).sum() for r in runs
    )
    assert (
        f"warning: demand not met in 2 of 2 scenarios ({got / asked:.1%} of all demand"
        in result.output
    )


def test_design_is_validated_over_its_whole_range_at_load(tmp_path):
    cfg = tmp_path / "design.yaml"
    design = "n_scenarios: 30\nscenario:\n  duration_s: 1800\ndesign:\n  diurnal_amplitude: {}\n"
    cfg.write_text(design.format("[0.0, 1.01]"))
    out = tmp_path / "o"
    result = run("simulate", "--config", cfg, "--out", out, "--workers", 1)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: {cfg}: design.diurnal_amplitude: can draw diurnal_amplitude = 1.01, which a "
        "scenario refuses (Input should be less than 1) (got [0.0, 1.01])"
    )
    assert not out.exists()
    cfg.write_text(design.format("[0.0, 1.0]").replace("30", "2"))  # draws lie in [0, 1)
    result = run("simulate", "--config", cfg, "--out", out, "--workers", 1)
    assert result.exit_code == 0, result.output
    assert len(list(out.glob("scenario_*.npz"))) == 2


def test_more_workers_than_cores_are_capped(tmp_path, monkeypatch):
    from wdn_explain import workers

    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    started = []
    monkeypatch.setattr(waq, "_results", lambda todo, n, args: started.append(n) or iter(()))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("n_scenarios: 4\nscenario:\n  duration_s: 1800\n")
    result = run("simulate", "--config", cfg, "--out", tmp_path / "o", "--workers", 48)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "warning: 48 workers asked for, but this machine gives this process 2 cores; using 2"
    )
    assert started == [2]
