import shutil

import numpy as np
import pytest
import torch

from wdn_explain.dataset import (
    WaqDataset,
    arrival_steps,
    load_waq_arrays,
    split_scenarios,
)
from wdn_explain.errors import ConfigError, DataError
from wdn_explain.features import InputSpec, chlorinated_fraction, travel_times_s
from wdn_explain.simulation import SimulationResult
from wdn_explain.waq import scenario_path


def test_sample_shapes_and_label(waq_dir, hanoi):
    ds = WaqDataset(waq_dir, "all", horizon=4)
    assert len(ds) == 6 * (13 - 4)
    g = ds[0]
    # chlorine, source and the plan over the 4 steps ahead
    assert g.x.shape == (32, 6) and g.edge_attr.shape == (68, 1) and g.y.shape == (1,)
    assert torch.equal(g.edge_index, hanoi.edge_index)
    s, t = ds.locate(5)
    raw = SimulationResult.load(scenario_path(waq_dir, s))
    g = ds[5]
    np.testing.assert_allclose(g.x[:, 0].numpy(), raw.node_chlorine_mg_l[t])
    # the source feature: 1 mg/L at the reservoir (node '1'), 0 everywhere else
    expected_source = np.zeros(32)
    expected_source[hanoi.node_index(hanoi.reservoirs[0])] = 1.0
    np.testing.assert_allclose(g.x[:, 1].numpy(), expected_source)
    for k in range(4):  # a constant source from t = 0: planned on at every step ahead
        np.testing.assert_allclose(g.x[:, 2 + k].numpy(), expected_source)
    expected = (raw.node_chlorine_mg_l[t + 4] >= 0.05).mean()
    assert g.y.item() == pytest.approx(expected)
    # signed flows: the reverse direction carries the negated flow
    np.testing.assert_allclose(g.edge_attr[:34, 0].numpy(), -g.edge_attr[34:, 0].numpy())
    np.testing.assert_allclose(
        g.edge_attr[:34, 0].numpy() * ds.inputs.flow_scale_lps, raw.link_flow_lps[t], rtol=1e-5
    )


def test_splits_are_disjoint_and_seeded():
    splits = split_scenarios(100, seed=3)
    parts = [set(splits[s].tolist()) for s in ("train", "calib", "val", "test")]
    assert [len(p) for p in parts] == [70, 10, 10, 10]
    assert set().union(*parts) == set(range(100))
    # the calibration scenarios come out of the training share: val and test stay as they were
    without = split_scenarios(100, seed=3, calibration=0.0)
    assert set(without["train"]) == parts[0] | parts[1] and not len(without["calib"])
    assert (without["test"] == splits["test"]).all() and (without["val"] == splits["val"]).all()
    assert (split_scenarios(100, seed=3)["test"] == splits["test"]).all()
    assert not (split_scenarios(100, seed=4)["test"] == splits["test"]).all()


def test_normalisation_uses_training_split_only(waq_dir):
    arrays = load_waq_arrays(waq_dir)
    train = WaqDataset(waq_dir, "train", arrays=arrays)
    test = WaqDataset(waq_dir, "test", arrays=arrays)
    expected = arrays.flow_lps[split_scenarios(6)["train"]].std()
    assert train.inputs.flow_scale_lps == pytest.approx(expected)
    assert test.inputs == train.inputs


def test_arrival_and_fraction():
    c = np.array([[[0.0, 0.0], [1.0, 0.0], [1.0, 0.2]]])  # (S=1, T=3, n=2)
    assert arrival_steps(c, 0.05).tolist() == [[1, 2]]
    assert chlorinated_fraction(c[0], 0.05).tolist() == [0.0, 0.5, 1.0]
    assert arrival_steps(np.zeros((1, 3, 1)), 0.05).tolist() == [[-1]]


def test_bad_options(waq_dir):
    with pytest.raises(ConfigError, match="split must be one of"):
        WaqDataset(waq_dir, "dev")
    with pytest.raises(ConfigError, match="horizon must be between 1 and 12"):
        WaqDataset(waq_dir, horizon=13)


def test_missing_incomplete_and_corrupt_folders(tmp_path, waq_dir):
    with pytest.raises(DataError, match="does not exist"):
        WaqDataset(tmp_path / "nothing")
    copy = tmp_path / "copy"
    shutil.copytree(waq_dir, copy)
    scenario_path(copy, 2).unlink()
    with pytest.raises(DataError, match="incomplete: 'scenario_00002.npz' is missing"):
        WaqDataset(copy)
    shutil.copy(scenario_path(waq_dir, 2), scenario_path(copy, 2))
    scenario_path(copy, 4).write_bytes(b"garbage")
    with pytest.raises(DataError, match="scenario_00004.npz' is truncated or corrupt"):
        WaqDataset(copy)


def test_nan_is_reported_with_scenario(tmp_path, waq_dir):
    copy = tmp_path / "nan"
    shutil.copytree(waq_dir, copy)
    r = SimulationResult.load(scenario_path(copy, 1))
    r.link_flow_lps[3, 3] = np.nan
    r.save(scenario_path(copy, 1))
    with pytest.raises(DataError, match="flow in .*scenario_00001.npz' holds NaN or inf"):
        WaqDataset(copy)


def test_stacked_batches_equal_pyg_collation(waq_dir):
    from torch_geometric.loader import DataLoader

    ds = WaqDataset(waq_dir, "all")
    ours = list(ds.batches(7))
    theirs = list(DataLoader(ds, batch_size=7))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        for key in ("x", "edge_index", "edge_attr", "y", "batch"):
            assert torch.equal(a[key], b[key]), key
    gen = torch.Generator().manual_seed(0)
    shuffled = torch.cat([b.y for b in ds.batches(5, shuffle=True, generator=gen)])
    assert sorted(shuffled.tolist()) == sorted(torch.cat([b.y for b in ours]).tolist())


def _on_by_hand(config, t):
    """Whether the scenario's source is on at time t (s), from its schedule's fields."""
    start = config.injection_start_s  # drawn on the 5-minute grid
    if t < start:
        return False
    if config.injection_mode == "intermittent":
        return (t - start) % (config.intermittent_on_s + config.intermittent_off_s) < (
            config.intermittent_on_s
        )
    if config.injection_mode == "failure":
        return not config.outage_start_s <= t < config.outage_start_s + config.outage_duration_s
    return True


def test_plan_input_follows_the_schedule_at_every_horizon_step(monitoring_dir, hanoi):
    """Columns 2.. of x are the setpoint the schedule holds 1..h reports ahead, also past the
    scenario's end, at the injection node only; checked against the schedule by hand."""
    ds = WaqDataset(monitoring_dir, "all", horizon=4)
    switching = 0
    for s in range(ds.arrays.n_scenarios):
        config = ds.arrays.configs[s]
        node = hanoi.node_index(config.injection_node or hanoi.reservoirs[0])
        for t in range(ds.n_times):
            x = ds.graph(s, t).x.numpy()
            for k in range(1, 5):
                planned = config.injection_strength_mg_l * _on_by_hand(config, (t + k) * 300)
                assert x[node, 1 + k] == pytest.approx(planned, rel=1e-6), (s, t, k)
            assert not np.delete(x[:, 2:], node, axis=0).any()
            switching += len(set(x[node, 1:].tolist())) > 1
    assert switching > 20  # the design really switches sources within the horizon


def test_a_view_of_some_scenarios_equals_their_samples_in_the_whole_folder(monitoring_dir):
    """Reading only scenarios 5 and 1 (a placement chunk) gives, byte for byte, the samples
    those scenarios have in the whole folder's dataset; a split is refused on such a view."""
    whole = WaqDataset(monitoring_dir, "all", horizon=4)
    scale = whole.inputs.flow_scale_lps
    arrays = load_waq_arrays(monitoring_dir, [5, 1])
    view = WaqDataset(monitoring_dir, "all", horizon=4, flow_scale_lps=scale, arrays=arrays)
    assert arrays.n_scenarios == 2 and view.n_times == whole.n_times
    for i, s in enumerate([5, 1]):
        for t in range(whole.n_times):
            a, b = whole.graph(s, t), view.graph(i, t)
            for name in ("x", "edge_attr", "y"):
                assert a[name].numpy().tobytes() == b[name].numpy().tobytes(), (s, t, name)
    with pytest.raises(ConfigError, match="2 of the folder's .* scenarios .* \\(got 'train'\\)"):
        WaqDataset(monitoring_dir, "train", flow_scale_lps=scale, arrays=arrays)
    with pytest.raises(ConfigError, match="with a given flow scale"):
        WaqDataset(monitoring_dir, "all", arrays=arrays)


def test_plan_contradicting_the_schedule_is_refused(tmp_path, monitoring_dir):
    copy = tmp_path / "copy"
    shutil.copytree(monitoring_dir, copy)
    raw = SimulationResult.load(scenario_path(copy, 3))
    node = int(np.flatnonzero(raw.node_source_mg_l.any(axis=0))[0])
    source = raw.node_source_mg_l.copy()
    source[5, node] = 7.0  # the file says 7 mg/L where the schedule plans otherwise
    from dataclasses import replace

    replace(raw, node_source_mg_l=source).save(scenario_path(copy, 3))
    with pytest.raises(DataError) as err:
        WaqDataset(copy, "all")
    message = str(err.value)
    assert "\n" not in message and "contradicts the schedule's recorded 7 mg/L" in message
    assert f"node {raw.node_ids[node]}" in message
    # without the plan input the same folder loads
    WaqDataset(copy, "all", node_features=("chlorine_mg_l", "source_mg_l"))


def test_history_and_pipe_flush_inputs_against_the_raw_files(waq_dir, hanoi):
    """Chlorine history: the raw chlorine k = 1..4 reports before (the first report's before
    the scenario starts); pipe flushes: |flow| x 300 s / the pipe's volume from the .inp's
    [PIPES] (length m, diameter mm), capped at the horizon, signed along each direction."""
    from conftest import inp_table

    ds = WaqDataset(
        waq_dir,
        "all",
        horizon=4,
        node_features=("chlorine_mg_l", "chlorine_history_mg_l"),
        edge_features=("flow", "pipe_flushes"),
    )
    pipes = inp_table(hanoi.inp_path, "PIPES")
    volume_l = np.array(
        [
            np.pi * (float(pipes[i][3]) / 2000) ** 2 * float(pipes[i][2]) * 1000
            for i in hanoi.link_ids
        ]
    )
    assert ds.inputs.link_volume_l == pytest.approx(tuple(volume_l))
    raw = SimulationResult.load(scenario_path(waq_dir, 2))
    capped = 0
    for t in (0, 1, 3, 8):
        g = ds.graph(2, t)
        assert g.x.shape == (32, 5) and g.edge_attr.shape == (68, 2)
        for k in range(1, 5):
            np.testing.assert_allclose(g.x[:, k].numpy(), raw.node_chlorine_mg_l[max(t - k, 0)])
        flow = raw.link_flow_lps[t]
        expected = np.sign(flow) * np.minimum(np.abs(flow) * 300 / volume_l, 4)
        np.testing.assert_allclose(g.edge_attr[:34, 1].numpy(), expected, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(g.edge_attr[34:, 1].numpy(), -expected, rtol=1e-5, atol=1e-7)
        capped += int((np.abs(flow) * 300 / volume_l > 4).sum())
    assert capped  # the cap is exercised on Hanoi's short trunk pipes


def test_pipe_flushes_of_pumps_still_water_and_bad_volumes():
    spec = InputSpec(
        node_features=("chlorine_mg_l",),
        edge_features=("pipe_flushes",),
        link_volume_l=(3000.0, 0.0, 3000.0),
        report_step_s=300,
        horizon=4,
    )
    flow = np.array([[10.0, 5.0, 0.0], [-100.0, -5.0, 2.0]])
    got = spec.edge_inputs(flow)
    assert got.shape == (2, 6, 1)
    # 10 L/s x 300 s fills 3000 L once; a pump (volume 0) passes at once: the cap
    np.testing.assert_allclose(got[..., 0], [[1, 4, 0, -1, -4, 0], [-4, -4, 0.2, 4, 4, -0.2]])
    for bad in ((-1.0, 1.0, 1.0), (np.nan, 1.0, 1.0)):
        with pytest.raises(ConfigError, match="link volumes must be finite"):
            InputSpec(edge_features=("pipe_flushes",), link_volume_l=bad, report_step_s=300)
    with pytest.raises(ConfigError, match="pipe_flushes needs the links' volumes"):
        InputSpec(edge_features=("pipe_flushes",)).edge_inputs(flow)
    with pytest.raises(ConfigError, match="edge features must be a non-empty list"):
        InputSpec(edge_features=("speed",))


def test_source_arrival_follows_the_flows_from_the_source():
    """A diamond 0 -> {1, 2} -> 3 plus a link 3 -> 4 whose flow runs back towards 3 and a
    still link to 5: travel times are the faster of the two paths (volume / flow summed by
    hand), node 4 and 5 are never reached; the arrival columns are the setpoint
    ceil(tau / 300 s) reports back, now and 4 reports ahead (the plan past t), 0 before the
    first report."""
    links = np.array([[0, 1], [0, 2], [1, 3], [2, 3], [3, 4], [3, 5]])
    volume = (3000.0, 600.0, 3000.0, 9000.0, 100.0, 100.0)
    flow = np.array([10.0, 2.0, 10.0, 2.0, -1.0, 0.0])  # L/s, link 4 flows from 4 to 3
    spec = InputSpec(
        node_features=("chlorine_mg_l", "source_plan_mg_l", "source_arrival_mg_l"),
        link_volume_l=volume,
        report_step_s=300,
        horizon=4,
    )
    assert spec.in_channels == 1 + 4 + 2
    via_1, via_2 = 3000 / 10 + 3000 / 10, 600 / 2 + 9000 / 2
    expected_tau = [0, 300, 300, min(via_1, via_2), np.inf, np.inf]
    n_t, n = 12, 6
    tau = np.asarray(travel_times_s(np.tile(flow, (n_t, 1)), links, volume, 0, n))
    np.testing.assert_allclose(tau[5], expected_tau)
    setpoint = np.array([0, 0, 1.5, 1.5, 0, 0, 2.0, 2.0, 2.0, 0, 0, 1.0])  # per report
    source = np.zeros((n_t, n))
    source[:, 0] = setpoint
    schedule = np.concatenate([setpoint, [1.0] * 4])  # the plan holds the last setpoint
    plan = np.zeros((n_t, n, 4))
    plan[:, 0] = [schedule[t + 1 : t + 5] for t in range(n_t)]
    x = spec.node_inputs(
        np.zeros((n_t, n)),
        source,
        np.ones(n_t),
        plan,
        flow_lps=np.tile(flow, (n_t, 1)),
        link_nodes=links,
    )
    for t in range(n_t):
        for i in range(n):
            for col, ahead in ((5, 0), (6, 4)):
                back = t + ahead - int(np.ceil(expected_tau[i] / 300)) if i < 4 else -1
                want = schedule[back] if back >= 0 else 0.0
                assert x[t, i, col] == pytest.approx(want), (t, i, ahead)
    with pytest.raises(ConfigError, match="source_arrival_mg_l needs the link flows"):
        spec.node_inputs(np.zeros((n_t, n)), source, np.ones(n_t), plan)


def test_source_arrival_on_hanoi_against_networkx_and_the_schedule(monitoring_dir, hanoi):
    """On simulated scenarios (boosters and the reservoir, intermittent schedules): the
    arrival columns equal the scenario's schedule read at t - tau and t + 4 reports - tau,
    tau networkx's shortest path over the links taken along their flow at t."""
    import networkx as nx

    from wdn_explain.simulation import injection_node

    ds = WaqDataset(
        monitoring_dir,
        "all",
        node_features=("chlorine_mg_l", "source_plan_mg_l", "source_arrival_mg_l"),
    )
    volume = hanoi.link_volume_l
    reached = 0
    for s in (0, 7, 31):
        raw = SimulationResult.load(scenario_path(monitoring_dir, s))
        config = raw.config
        source = hanoi.node_index(injection_node(config, hanoi))
        for t in (0, 3, 6, 8):
            g = nx.DiGraph()
            for (u, v), q, vol in zip(hanoi.link_nodes, raw.link_flow_lps[t], volume):
                if q != 0:
                    g.add_edge(*((u, v) if q > 0 else (v, u)), weight=vol / abs(q))
            tau = nx.single_source_dijkstra_path_length(g, source)
            x = ds.graph(s, t).x.numpy()
            for i in range(hanoi.n_nodes):
                for col, ahead in ((5, 0), (6, 4)):
                    back = t + ahead - int(np.ceil(tau[i] / 300)) if i in tau else -1
                    want = config.injection_setpoint_mg_l(300 * back) if back >= 0 else 0.0
                    assert x[i, col] == pytest.approx(want, rel=1e-6), (s, t, i, ahead)
                    reached += want > 0
    assert reached  # the chlorine reaches some nodes within the steps checked


def test_a_features_columns_count_the_arrivals_two_and_the_horizons():
    """Columns by hand: the arrival takes 2 (now and at the horizon), the plan and the
    history ``horizon`` each, the rest one; a sensor set's flag comes last."""
    spec = InputSpec(
        node_features=("chlorine_mg_l", "source_arrival_mg_l", "source_mg_l", "source_plan_mg_l"),
        horizon=3,
        quality_node_sensors=("2",),
    )
    assert spec.columns("chlorine_mg_l") == slice(0, 1)
    assert spec.columns("source_arrival_mg_l") == slice(1, 3)
    assert spec.columns("source_mg_l") == slice(3, 4)
    assert spec.columns("source_plan_mg_l") == slice(4, 7)
    assert spec.in_channels == 8


def test_travel_times_pass_a_link_without_volume_or_flow_silently():
    """A closed valve (no volume, no flow) is no path, and no 0/0 warning on every L-Town
    report; a pump with flow (no volume) passes at once."""
    import warnings

    links = np.array([[0, 1], [1, 2], [0, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tau = travel_times_s(np.array([[2.0, 0.0, 1.0]]), links, [0.0, 0.0, 50.0], 0, 4)
    np.testing.assert_allclose(tau, [[0, 1e-6, np.inf, 50]])
