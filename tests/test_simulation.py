import numpy as np
import pytest

from wdn_explain.errors import ConfigError, DataError
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.simulation import SimulationResult, simulate

SHORT = {"duration_s": 3600, "reporting_step_s": 300}


@pytest.fixture(scope="module")
def base_run(hanoi):
    return simulate(ScenarioConfig(seed=1, **SHORT), hanoi)


def test_shapes_and_times(base_run):
    r = base_run
    assert r.n_steps == 13
    np.testing.assert_array_equal(r.times_s, np.arange(0, 3601, 300))
    assert r.node_chlorine_mg_l.shape == (13, 32)
    assert r.link_flow_lps.shape == (13, 34)
    assert r.link_chlorine_mg_l.shape == (13, 34)
    assert r.node_pressure_m.shape == r.node_demand_lps.shape == (13, 32)


def test_chlorine_front_moves_downstream(base_run, hanoi):
    c = base_run.node_chlorine_mg_l
    res = hanoi.node_index("1")
    assert (c[0] == 0).all()  # the initial state has no chlorine anywhere
    assert np.allclose(c[1:, res], 1.0)
    # node 2 is next to the reservoir, node 32 is far downstream
    first = lambda nid: int(np.argmax(c[:, hanoi.node_index(nid)] > 0.05))  # noqa: E731
    assert first("2") < first("12") < first("32") or (c[:, hanoi.node_index("32")] <= 0.05).all()
    assert (c[-1] > 0.05).sum() > (c[1] > 0.05).sum()


def test_seeds_change_flows(hanoi, base_run):
    other = simulate(ScenarioConfig(seed=2, **SHORT), hanoi)
    assert not np.allclose(other.link_flow_lps, base_run.link_flow_lps)
    again = simulate(ScenarioConfig(seed=1, **SHORT), hanoi)
    np.testing.assert_array_equal(again.link_flow_lps, base_run.link_flow_lps)
    np.testing.assert_array_equal(again.node_chlorine_mg_l, base_run.node_chlorine_mg_l)


def test_injection_elsewhere_and_decay(hanoi):
    r = simulate(ScenarioConfig(injection_node="12", bulk_decay_per_day=5.0, **SHORT), hanoi)
    c = r.node_chlorine_mg_l
    assert np.allclose(c[1:, hanoi.node_index("12")], 1.0, atol=1e-4)
    assert (c[:, hanoi.node_index("1")] == 0).all()  # the reservoir is upstream of node 12


def test_unknown_injection_node(hanoi):
    with pytest.raises(ConfigError, match="node '999' is not in network 'hanoi'"):
        simulate(ScenarioConfig(injection_node="999", **SHORT), hanoi)


def test_save_load_round_trip(tmp_path, base_run):
    path = base_run.save(tmp_path / "s.npz")
    back = SimulationResult.load(path)
    assert back.config == base_run.config
    for name in ("node_chlorine_mg_l", "link_flow_lps", "node_ids", "times_s"):
        np.testing.assert_array_equal(getattr(back, name), getattr(base_run, name))
    assert not list(tmp_path.glob(".*tmp"))


def test_corrupt_file_is_named(tmp_path, base_run):
    path = base_run.save(tmp_path / "s.npz")
    path.write_bytes(path.read_bytes()[:500])
    with pytest.raises(DataError, match="s.npz' is truncated or corrupt"):
        SimulationResult.load(path)


def _patterns_by_epyt_flow(sim, patterns, base):
    for node, pattern in patterns.items():
        sim.set_node_demand_pattern(node, base[node], f"wdn_{node}", pattern)


@pytest.mark.parametrize("network", ["hanoi", "net1"])
def test_demand_patterns_as_epyt_flow_sets_them(monkeypatch, network):
    """The fast path through the EPANET toolkit gives EPyT-Flow's own setter's arrays."""
    from wdn_explain import simulation

    config = ScenarioConfig(network=network, diurnal_amplitude=0.3, seed=5, **SHORT)
    fast = simulate(config)
    monkeypatch.setattr(simulation, "_set_demand_patterns", _patterns_by_epyt_flow)
    oracle = simulate(config)
    assert not np.allclose(fast.node_demand_lps[1], fast.node_demand_lps[-1])  # patterns act
    for name in ("node_chlorine_mg_l", "link_flow_lps", "node_demand_lps", "node_pressure_m"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(oracle, name))


def test_si_network_reported_in_si_as_converted(monkeypatch):
    """L-Town (flows in m³/h): EPANET reporting L/s and m directly agrees with EPyT-Flow's
    conversion of its native units after the run."""
    from wdn_explain import simulation

    config = ScenarioConfig(network="l-town", duration_s=1800, injection_node="n336")
    direct = simulate(config)
    monkeypatch.setattr(simulation, "_si_flow_units", lambda: ())
    converted = simulate(config)
    assert np.abs(converted.link_flow_lps).max() > 10  # water flows: not a vacuous match
    for name, tol in (
        ("link_flow_lps", 1e-3),
        ("node_pressure_m", 1e-4),
        ("node_chlorine_mg_l", 1e-5),
    ):
        np.testing.assert_allclose(getattr(direct, name), getattr(converted, name), atol=tol)


def test_epanet_report_goes_to_a_private_folder_and_is_removed(tmp_path, monkeypatch):
    """EPANET's report file lives in a temporary folder of its own while the simulator is
    open, and nothing is left in the temp folder afterwards (EPyT-Flow's default leaves one
    <random>.rpt per process in the system temp folder)."""
    import tempfile

    from wdn_explain.network import builtin_network_path, scenario_simulator

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with scenario_simulator(builtin_network_path("net1")) as sim:
        sim.run_simulation()
        reports = list(tmp_path.glob("*/epanet.rpt"))
        assert len(reports) == 1
    assert list(tmp_path.iterdir()) == []
    simulate(ScenarioConfig(duration_s=600, reporting_step_s=300))
    assert list(tmp_path.iterdir()) == []


# -- every source follows its schedule at every node kind (issue 18) ------------------------

STARTED = {"duration_s": 5400, "reporting_step_s": 300, "pattern_step_s": 300}
SCHEDULES = {
    "intermittent": {
        "injection_mode": "intermittent",
        "intermittent_on_s": 1200,
        "intermittent_off_s": 1200,
    },
    "failure": {"injection_mode": "failure", "outage_start_s": 1800, "outage_duration_s": 1800},
}


def _planned_on(times_s: np.ndarray, schedule: str, start_s: int = 600) -> np.ndarray:
    """The schedule written out by hand: is the source on at each time (s)?"""
    t = np.asarray(times_s)
    if schedule == "intermittent":
        on = (t - start_s) % 2400 < 1200
    else:
        on = ~((t >= 1800) & (t < 3600))
    return (t >= start_s) & on


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("node", ["1", "3"])  # the reservoir, a junction with nodes downstream
def test_source_follows_its_schedule(hanoi, node, schedule):
    start = {"injection_node": node, "injection_start_s": 600, "injection_strength_mg_l": 0.8}
    constant = simulate(ScenarioConfig(**STARTED, **start), hanoi)
    run = simulate(ScenarioConfig(**STARTED, **start, **SCHEDULES[schedule]), hanoi)
    i, t = hanoi.node_index(node), run.times_s
    # the source feature is the plan
    np.testing.assert_allclose(
        run.node_source_mg_l[:, i], 0.8 * _planned_on(t, schedule), rtol=1e-6
    )
    # what EPANET did: the chlorine leaving the source node over the last quality step is the
    # setpoint then in force -- 0 while off, also at the reservoir
    then = _planned_on(t - 60, schedule)
    np.testing.assert_allclose(run.node_chlorine_mg_l[:, i], 0.8 * then, atol=1e-6)
    # off means less chlorine than constant dosing downstream, never more
    gap = constant.node_chlorine_mg_l - run.node_chlorine_mg_l
    assert gap.min() >= -1e-3  # EPANET merges segments within a quality tolerance
    downstream = [j for j in range(hanoi.n_nodes) if j != i and gap[:, j].max() > 0.5]
    assert downstream, "switching the source off changed nothing downstream"


def test_tank_booster_follows_its_schedule():
    """Net1's tank starts to drain after about 7.5 h: a booster there that fails from 6 h to
    12 h adds nothing while it drains (equal to a run without any source), then doses."""
    from wdn_explain.network import load_network

    net1 = load_network("net1")
    tank = net1.node_ids[net1.node_roles.index("tank")]
    base = {"injection_node": tank, "duration_s": 24 * 3600, "injection_strength_mg_l": 3.0}
    base |= {"reporting_step_s": 900, "pattern_step_s": 900}
    constant = simulate(ScenarioConfig(**base), net1)
    never = simulate(ScenarioConfig(**base, injection_pattern=(0.0,)), net1)
    failing = ScenarioConfig(
        **base, injection_mode="failure", outage_start_s=6 * 3600, outage_duration_s=6 * 3600
    )
    run = simulate(failing, net1)
    off = run.times_s <= 12 * 3600
    np.testing.assert_allclose(run.node_chlorine_mg_l[off], never.node_chlorine_mg_l[off])
    assert np.abs(constant.node_chlorine_mg_l - run.node_chlorine_mg_l)[off].max() > 1.0
    assert np.abs(never.node_chlorine_mg_l - run.node_chlorine_mg_l)[~off].max() > 1.0
