"""Pressure-driven hydraulics: EPyT-Flow's run of a scenario against an independent EPANET 2.2
run of the same scenario built through WNTR, and what the scenario files record of it."""

from __future__ import annotations

import numpy as np
import pytest

from wdn_explain.scenario import ScenarioConfig
from wdn_explain.simulation import SimulationResult, simulate

# Constant demand multipliers (no noise, no diurnal swing), so the test can give WNTR the
# same demands without the package's pattern code: every junction at 1.25 x its base demand,
# more than Hanoi delivers at 20 m (its pipes serve about 0.84 x).
OVERLOADED = dict(
    demand_scale=1.25,
    demand_variation=0.0,
    diurnal_amplitude=0.0,
    duration_s=7200,
    injection_node="12",
    injection_strength_mg_l=1.5,
    bulk_decay_per_day=2.0,
)


def _wntr_run(config: ScenarioConfig, inp_path: str):
    """The scenario through WNTR's EpanetSimulator (EPANET 2.2), built from its config alone:
    node chlorine (mg/L) and pressure (m), indexed by time (s) and node id."""
    wntr = pytest.importorskip("wntr")
    wn = wntr.network.WaterNetworkModel(inp_path)
    o = wn.options
    o.time.duration = config.duration_s
    o.time.hydraulic_timestep = config.hydraulic_step_s
    o.time.quality_timestep = config.quality_step_s
    o.time.report_timestep = config.reporting_step_s
    o.time.pattern_timestep = config.pattern_step_s
    n_steps = config.duration_s // config.pattern_step_s + 1
    wn.add_pattern("level", [config.demand_scale] * n_steps)
    for _, junction in wn.junctions():
        if junction.demand_timeseries_list and junction.base_demand:
            junction.demand_timeseries_list[0].pattern_name = "level"
    o.hydraulic.demand_model = "PDA"
    o.hydraulic.minimum_pressure = config.pressure_min_m
    o.hydraulic.required_pressure = config.pressure_required_m
    o.hydraulic.pressure_exponent = config.pressure_exponent
    o.quality.parameter = "CHEMICAL"
    o.reaction.bulk_coeff = -config.bulk_decay_per_day / 86400  # 1/s
    wn.add_pattern("booster", [1.0] * n_steps)
    strength_kg_m3 = config.injection_strength_mg_l / 1000
    wn.add_source("booster", config.injection_node, "SETPOINT", strength_kg_m3, "booster")
    results = wntr.sim.EpanetSimulator(wn).run_sim(file_prefix=str(inp_path) + ".wntr-test")
    return results.node["quality"] * 1000, results.node["pressure"]


@pytest.fixture(scope="module")
def overloaded(hanoi):
    return simulate(ScenarioConfig(**OVERLOADED), hanoi)


def test_pressure_driven_run_equals_an_independent_epanet_run(overloaded, hanoi, tmp_path):
    inp = tmp_path / "hanoi.inp"
    inp.write_bytes(open(hanoi.inp_path, "rb").read())
    chlorine, pressure = _wntr_run(overloaded.config, str(inp))
    ids = [str(n) for n in overloaded.node_ids]
    times = list(overloaded.times_s)
    np.testing.assert_allclose(
        overloaded.node_chlorine_mg_l, chlorine.loc[times, ids].to_numpy(), rtol=0, atol=1e-4
    )
    np.testing.assert_allclose(
        overloaded.node_pressure_m, pressure.loc[times, ids].to_numpy(), rtol=0, atol=0.01
    )
    assert overloaded.node_pressure_m.min() > -1  # demand-driven, this goes to about -50 m


def test_delivered_and_requested_demand(overloaded, hanoi):
    asked, got = overloaded.node_requested_demand_lps, overloaded.node_demand_lps
    junctions = [i for i, role in enumerate(hanoi.node_roles) if role == "junction"]
    # requested: the .inp's base demand (Hanoi's units are LPS) x 1.25, read from the file
    text = open(hanoi.inp_path).read()
    assert "LPS" in text.split("[OPTIONS]")[1].split("[")[0]
    base = {
        f[0]: float(f[2])
        for line in text.split("[JUNCTIONS]")[1].split("[")[0].splitlines()
        if (f := line.split(";")[0].split()) and len(f) >= 3
    }
    for i in junctions:
        np.testing.assert_allclose(asked[:, i], base[str(overloaded.node_ids[i])] * 1.25, rtol=1e-6)
    # delivered never above requested; somewhere well below it at 1.25 x
    assert (got[:, junctions] <= asked[:, junctions] * (1 + 1e-5) + 1e-6).all()
    fraction = overloaded.node_delivered_fraction
    assert fraction.min() < 0.9
    assert "demand not met at" in overloaded.delivery_warning


def test_demand_driven_delivers_what_is_asked(hanoi):
    r = simulate(ScenarioConfig(**{**OVERLOADED, "demand_model": "DDA"}), hanoi)
    np.testing.assert_allclose(r.node_demand_lps, r.node_requested_demand_lps, rtol=1e-5)
    assert r.delivery_warning is None
    assert r.node_pressure_m.min() < -1 and "negative pressure" in r.pressure_warning


def test_requested_demand_round_trips_and_old_files_read_as_demand_driven(overloaded, tmp_path):
    back = SimulationResult.load(overloaded.save(tmp_path / "s.npz"))
    np.testing.assert_array_equal(
        back.node_requested_demand_lps, overloaded.node_requested_demand_lps
    )
    assert back.config == overloaded.config and back.config.demand_model == "PDA"
    # a file written before pressure-driven analysis: no requested demand, no demand model
    import json

    with np.load(tmp_path / "s.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "node_requested_demand_lps"}
    config = json.loads(str(arrays.pop("config_json")))
    for key in ("demand_model", "pressure_min_m", "pressure_required_m", "pressure_exponent"):
        config.pop(key)
    np.savez(tmp_path / "old.npz", config_json=np.array(json.dumps(config)), **arrays)
    old = SimulationResult.load(tmp_path / "old.npz")
    assert old.config.demand_model == "DDA"
    np.testing.assert_array_equal(old.node_requested_demand_lps, old.node_demand_lps)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("pressure_required_m", 0.0, "pressure_required_m"),
        ("pressure_min_m", -1.0, "pressure_min_m"),
        ("pressure_exponent", -0.5, "pressure_exponent"),
        ("pressure_exponent", float("nan"), "pressure_exponent"),
        ("pressure_required_m", float("inf"), "pressure_required_m"),
        ("demand_model", "PPA", "demand_model"),
    ],
)
def test_bad_pressure_settings_are_refused(field, value, match):
    from wdn_explain.errors import ConfigError
    from wdn_explain.scenario import parse_config

    with pytest.raises(ConfigError, match=match):
        parse_config({"scenario": {field: value}})


def test_required_not_above_minimum_names_both():
    from wdn_explain.errors import ConfigError
    from wdn_explain.scenario import parse_config

    with pytest.raises(ConfigError, match=r"above pressure_min_m \(got 10 <= 15\)"):
        parse_config({"scenario": {"pressure_min_m": 15, "pressure_required_m": 10}})


def test_demand_model_is_in_the_hash_and_demand_driven_hashes_as_before():
    pda, dda = ScenarioConfig(), ScenarioConfig(demand_model="DDA")
    assert pda.config_hash() != dda.config_hash()
    assert pda.config_hash() != ScenarioConfig(pressure_required_m=25).config_hash()
    # a demand-driven run ignores the pressures, and hashes as a config from before they existed
    assert (
        dda.config_hash()
        == ScenarioConfig(demand_model="DDA", pressure_required_m=25).config_hash()
    )
    import hashlib
    import json

    before = {
        k: v
        for k, v in dda.model_dump(mode="json").items()
        if k not in ("demand_model", "pressure_min_m", "pressure_required_m", "pressure_exponent")
    }
    text = json.dumps(before, sort_keys=True)
    assert dda.config_hash() == hashlib.sha256(text.encode()).hexdigest()[:16]


# SHA-256 of the nine arrays of WAQ scenarios 0-2 as the generator wrote them before
# pressure-driven analysis existed (commit 8ed9c2e), by name in file order.
WAQ_BEFORE_PDA = {
    0: "294a1e3a94a111e97a64d52e0044462746948b1522da19461a04f018ff8ac448",
    1: "5b3708719c7d90582654596d67935d94abbd125b72f3c76a8a749341aa466e4a",
    2: "1f84155910171e1c0f9588641adfeac9c70777c75394c869c0816b723c609a6a",
}
ARRAYS_BEFORE_PDA = (
    "times_s",
    "node_ids",
    "link_ids",
    "node_chlorine_mg_l",
    "link_chlorine_mg_l",
    "link_flow_lps",
    "node_demand_lps",
    "node_pressure_m",
    "node_source_mg_l",
)


def test_the_waq_paper_design_stays_demand_driven_byte_for_byte(hanoi):
    import hashlib

    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import shipped

    config = load_config(shipped("simulations/waq.yaml"))
    assert config.scenario.demand_model == "DDA"
    for index, digest in WAQ_BEFORE_PDA.items():
        result = simulate(config.scenario_config(index), hanoi)
        h = hashlib.sha256()
        for name in ARRAYS_BEFORE_PDA:
            h.update(name.encode())
            h.update(np.ascontiguousarray(getattr(result, name)).tobytes())
        assert h.hexdigest() == digest


def test_the_monitoring_design_never_goes_below_minus_one_metre(hanoi):
    """A small draw of the shipped design and its most demanding corner (every factor at the
    top of its range, at noon: the diurnal peak) stay physical."""
    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import shipped

    config = load_config(shipped("simulations/monitoring.yaml"))
    d = config.design
    worst = config.scenario.model_copy(
        update=dict(
            demand_scale=d.demand_scale[1],
            demand_variation=d.demand_variation[1],
            diurnal_amplitude=d.diurnal_amplitude[1],
            start_hour=10.5,
            duration_s=3600,
        )
    )
    runs = [simulate(config.scenario_config(i, hanoi.junctions), hanoi) for i in range(6)]
    runs.append(simulate(worst, hanoi))
    assert min(r.node_pressure_m.min() for r in runs) > -1
    assert all(r.config.demand_model == "PDA" for r in runs)


def _lowest_junction_pressure(hanoi, level: float) -> float:
    steady = ScenarioConfig(
        demand_model="DDA", demand_scale=level, demand_variation=0.0, duration_s=300
    )
    result = simulate(steady, hanoi)
    junctions = [i for i, role in enumerate(hanoi.node_roles) if role == "junction"]
    return float(result.node_pressure_m[0, junctions].min())


def test_servable_level_and_the_design_check_against_plain_runs(hanoi):
    from wdn_explain.scenario import parse_config
    from wdn_explain.servable import LEVEL_TOLERANCE, check_design, servable_demand_level

    level, never = servable_demand_level(hanoi, ScenarioConfig())
    assert never == ()
    # the oracle: demand-driven runs of the whole package just below and above the level
    assert _lowest_junction_pressure(hanoi, level) >= 20
    assert _lowest_junction_pressure(hanoi, level + 2 * LEVEL_TOLERANCE) < 20
    ranges = {
        "demand_scale": [0.3, 0.8],
        "diurnal_amplitude": [0.0, 0.3],
        "demand_variation": [0.0, 0.1],
    }
    config = parse_config({"n_scenarios": 2, "design": ranges})
    peaks = [s * (1 + a) * (1 + v) for s in (0.3, 0.8) for a in (0.0, 0.3) for v in (0.0, 0.1)]
    check = check_design(config, hanoi)
    assert sorted(check.corner_peaks) == pytest.approx(sorted(peaks))
    assert check.n_unservable == sum(p > level for p in peaks) == 3
    assert check.message.startswith("design check: 3 of 8 corners of the design's demand (38%)")


def test_onboarding_designs_stay_within_what_the_network_serves(hanoi, tmp_path):
    from wdn_explain.network import load_network
    from wdn_explain.onboard import default_design

    for network in (hanoi, load_network("Net1")):
        design = default_design(network, tmp_path).design
        low, high = design.demand_scale
        peak = high * (1 + design.diurnal_amplitude[1])
        assert 0 < low < high <= 1.0
        if network is hanoi:  # Hanoi's pipes serve less than its base demand at 20 m
            assert _lowest_junction_pressure(hanoi, peak) >= 20
            assert _lowest_junction_pressure(hanoi, peak + 0.02) < 20
        else:  # Net1 serves its base demand at the diurnal peak: the levels stay as designed
            assert high == 1.0


def test_cache_identity_and_timelines_follow_the_demand_model(tmp_path):
    from wdn_explain.shipped import shipped
    from wdn_explain.timeline import ExplainSettings, cache_identity, cache_path

    model = shipped("models/default")
    pda, dda = ScenarioConfig(), ScenarioConfig(demand_model="DDA")
    settings = ExplainSettings()
    assert cache_identity(pda, model, settings) != cache_identity(dda, model, settings)
    assert cache_path(pda, model, tmp_path) != cache_path(dda, model, tmp_path)
    stricter = ScenarioConfig(pressure_required_m=30)
    assert cache_path(pda, model, tmp_path) != cache_path(stricter, model, tmp_path)


def test_negative_pressure_is_said_as_the_demand_model_makes_it(overloaded):
    """ky3's pump junctions go to -3 m under pressure-driven analysis, where no demand is
    asked: the warning said 'demand-driven hydraulics deliver demands the network cannot'.
    Pressures planted into a pressure-driven run: where no demand is asked, and where it is
    (the share delivered there computed here from the stored arrays)."""
    from dataclasses import replace

    from wdn_explain.waq import hydraulics_summary

    asked = overloaded.node_requested_demand_lps
    idle = int(np.flatnonzero((asked <= 0).all(axis=0))[0])  # the reservoir: never asks
    pressure = overloaded.node_pressure_m.copy()
    pressure[:, idle] = -3.0
    no_demand = replace(overloaded, node_pressure_m=pressure)
    text = no_demand.pressure_warning
    assert text.endswith(
        f"-3 m at node {overloaded.node_ids[idle]} at {int(overloaded.times_s[0])} s: no demand "
        "is asked there then, so pressure-driven analysis lost none; the pressure is below "
        "atmospheric (a pump's suction side, or ground above the supply's head: check the "
        "elevations if that is not expected)"
    )
    assert "demand-driven" not in hydraulics_summary([no_demand]).negative
    busy = int(np.argmax(asked.sum(axis=0)))
    pressure = overloaded.node_pressure_m.copy()
    pressure[:, busy] = -2.0
    short = replace(overloaded, node_pressure_m=pressure)
    got = np.minimum(overloaded.node_demand_lps[:, busy], asked[:, busy]).sum()
    assert short.pressure_warning.endswith(
        "pressure-driven analysis delivers nothing below 0 m, so those nodes got "
        f"{got / asked[:, busy].sum():.0%} of the demand they asked for then"
    )
    driven = replace(short, config=short.config.model_copy(update={"demand_model": "DDA"}))
    assert driven.pressure_warning.endswith(
        "demand-driven hydraulics deliver demands the network cannot, so flows and chlorine "
        "there are not physical"
    )
