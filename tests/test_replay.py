"""``wdn-explain replay``: readings of a simulated scenario replayed through the shipped sensor
model give the offline timeline's forecasts and the engine's explanations; bad readings are
marked and left out; bad files are refused in one line with nothing written; an interrupt
keeps the steps written and a rerun resumes."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner

from wdn_explain.cli import app
from wdn_explain.errors import DataError
from wdn_explain.features import HORIZON_WIDE_FEATURES
from wdn_explain.readings import (
    FLAGS,
    MISSING,
    OK,
    OUT_OF_RANGE,
    STUCK,
    Readings,
    load_readings,
    reading_flags,
    readings_csv,
)
from wdn_explain.replay import load_replay, replay

from conftest import brute_force_shapley

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "models" / "hanoi-sensors"
SENSORS = json.loads((MODEL / "card.json").read_text())["inputs"]["quality_node_sensors"]
SCENARIO = REPO / "simulations" / "default_scenario.yaml"
DURATION_S = 5400  # 19 reports of the default scenario: the booster's front reaches sensor 3
runner = CliRunner()


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory) -> Path:
    """The app's default scenario file, shortened to :data:`DURATION_S`."""
    config = yaml.safe_load(SCENARIO.read_text())
    config["scenario"]["duration_s"] = DURATION_S
    path = tmp_path_factory.mktemp("scenario") / "scenario.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def case(scenario_file):
    """The sensor model, the shortened default scenario, its simulation and sensor indices."""
    from wdn_explain.model_folder import load_model
    from wdn_explain.network import load_network
    from wdn_explain.scenario import load_config
    from wdn_explain.simulation import simulate

    model, card = load_model(MODEL)
    scenario = load_config(scenario_file).scenario_config(0)
    network = load_network(scenario.network)
    result = simulate(scenario, network)
    sensors = card.input_spec.quality_node_sensors
    index = [network.node_index(s) for s in sensors]
    return model, card, scenario, network, result, sensors, index


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def simulated_rows(case) -> tuple[list[str], list[list]]:
    """The header and rows of the simulated chlorine at the sensors (exact float text)."""
    *_, result, sensors, index = case
    header = ["time_s", *(f"chlorine_mg_l@{s}" for s in sensors)]
    rows = [
        [int(t), *(repr(float(v)) for v in result.node_chlorine_mg_l[k, index])]
        for k, t in enumerate(result.times_s)
    ]
    return header, rows


@pytest.fixture(scope="module")
def replayed(case, tmp_path_factory):
    """The replay of the simulated readings, uninterrupted."""
    folder = tmp_path_factory.mktemp("replay")
    readings = write_csv(folder / "readings.csv", *simulated_rows(case))
    out, kept = replay(readings, case[2], MODEL, folder / "out")
    assert kept == 0
    return out, folder


def test_replay_of_simulated_readings_equals_the_offline_timeline(case, replayed):
    from wdn_explain.pipeline import explain_scenario, scenario_graphs

    model, card, scenario, network, result, sensors, index = case
    out, _ = replayed
    timeline, _ = explain_scenario(scenario, MODEL)
    n = len(timeline)
    assert [s.step for s in out.steps] == list(range(result.n_steps))  # every report, to the end
    assert all((s.flags == OK).all() and s.used.all() for s in out.steps)
    forecast = np.stack([s.forecast for s in out.steps])
    np.testing.assert_array_equal(forecast[:n], timeline.node_forecast)
    np.testing.assert_array_equal(np.stack([s.lower for s in out.steps])[:n], timeline.node_lower)
    np.testing.assert_array_equal(np.stack([s.upper for s in out.steps])[:n], timeline.node_upper)
    risk = np.stack([s.risk for s in out.steps])[:n]
    np.testing.assert_allclose(risk, timeline.node_risk, atol=1e-6)  # the timeline's float32
    # the compliance share the app charts: served as the offline timeline serves it
    from wdn_explain.replay import replay_timeline

    shown = replay_timeline(out, "3").compliance_forecast[:n]
    np.testing.assert_allclose(shown, timeline.compliance_forecast, atol=1e-6)
    # the explanation of a node's forecast over the sensors: Shapley values by enumeration of
    # the 16 coalitions of sensors on the offline graph, a masked sensor at the zero reference
    graphs = scenario_graphs(result, network, card.input_spec)
    for t, node in ((10, network.node_index("3")), (18, network.node_index("7"))):
        graph = graphs[t]

        def game(coalition: frozenset, graph=graph, node=node) -> float:
            x = graph.x.clone()
            for k, v in enumerate(index):
                if k not in coalition:
                    x[v] = 0.0
            with torch.no_grad():
                return float(model(x, graph.edge_index, graph.edge_attr)[node])

        explanation = out.steps[t].explanations[node]
        assert explanation.player_nodes().tolist() == sorted(index)
        assert explanation.prediction == pytest.approx(float(out.steps[t].raw_forecast[node]))
        order = np.argsort(index)  # players are sorted node indices
        expected = brute_force_shapley(game, len(index))[order]
        np.testing.assert_allclose(explanation.node_values("SV"), expected, atol=1e-5)


def test_a_missing_an_impossible_and_a_stuck_reading_are_marked_and_left_out(
    case, scenario_file, tmp_path
):
    from wdn_explain.pipeline import scenario_graphs

    model, card, scenario, network, result, sensors, index = case
    header, rows = simulated_rows(case)
    rows[5][1 + 2] = ""  # the third sensor at 25 min: missing
    rows[6][1 + 3] = "7.5"  # the fourth at 30 min: above the 1.5 mg/L setpoint
    for k in range(8, 19):  # the second stuck at 0.7 mg/L from 40 min
        rows[k][1 + 1] = "0.7"
    readings = write_csv(tmp_path / "faulty.csv", header, rows)
    result_cli = runner.invoke(
        app,
        ["replay", str(readings), "--model", str(MODEL), "--out", str(tmp_path / "out")]
        + ["--scenario", str(scenario_file)],
    )
    assert result_cli.exit_code == 0, result_cli.output
    assert f"25 min  used 3 of 4 readings ({sensors[2]}: missing)" in result_cli.output
    # the model reads the history: the third sensor's missing reading keeps it out until the
    # horizon's previous reports are good again
    why = f"{sensors[2]}: bad reading in its history, {sensors[3]}: out_of_range"
    assert f"30 min  used 2 of 4 readings ({why})" in result_cli.output
    out = load_replay(tmp_path / "out")
    flags = np.stack([s.flags for s in out.steps])
    assert flags[5, 2] == MISSING and flags[6, 3] == OUT_OF_RANGE
    stuck = flags[:, 1] == STUCK
    assert not stuck[:11].any() and stuck[11:].all()  # 4 equal readings: from 55 min on
    assert FLAGS[STUCK] in result_cli.output
    # the forecast with a sensor left out is the model's on the offline graph with that node
    # unmeasured: its chlorine columns (now and, if read, before) and its measured flag at 0
    inputs = card.input_spec
    wide = {f: inputs.horizon for f in HORIZON_WIDE_FEATURES} | {"source_arrival_mg_l": 2}
    widths = [wide.get(f, 1) for f in inputs.node_features]
    ends = np.cumsum(widths)
    chlorine = [
        c
        for f, end, w in zip(inputs.node_features, ends, widths)
        if f in ("chlorine_mg_l", "chlorine_fraction", "chlorine_history_mg_l")
        for c in range(end - w, end)
    ]
    graph = scenario_graphs(result, network, inputs)[5]
    x = graph.x.clone()
    x[index[2], [*chlorine, -1]] = 0.0
    with torch.no_grad():
        expected = model(x, graph.edge_index, graph.edge_attr).squeeze(-1).numpy()
    np.testing.assert_allclose(out.steps[5].raw_forecast, expected, atol=1e-6)
    players = sorted(out.steps[5].explanations[0].player_nodes().tolist())
    assert players == sorted([index[0], index[1], index[3]])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h, r: (h[:-1] + ["chlorine_mg_l@5"], r), "unknown sensor '5'"),
        (lambda h, r: (h[:-1], [row[:-1] for row in r]), f"no column for sensor '{SENSORS[-1]}'"),
        (
            lambda h, r: ([h[0], f"chlorine_ug_l@{SENSORS[0]}", *h[2:]], r),
            f"column 'chlorine_ug_l@{SENSORS[0]}' is in",
        ),
        (lambda h, r: (["time_min", *h[1:]], r), "the first column must be 'time_s'"),
        (lambda h, r: (h, [r[0], r[2], r[1], *r[3:]]), "time 300 s at row 3 goes back"),
        (lambda h, r: (h, [r[0], r[1], r[1], *r[2:]]), "time 300 s at row 3 repeated"),
        (lambda h, r: (h, [["150", *r[1][1:]]]), "time 150 s is not a report of the scenario"),
        (lambda h, r: (h, [["noon", *r[1][1:]]]), "line 2: time 'noon' is not a number"),
    ],
)
def test_a_bad_readings_file_gives_one_line_and_writes_nothing(
    case, scenario_file, tmp_path, change, message
):
    header, rows = change(*simulated_rows(case))
    readings = write_csv(tmp_path / "bad.csv", header, rows)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["replay", str(readings), "--model", str(MODEL), "--out", str(out)]
        + ["--scenario", str(scenario_file)],
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists()


def test_a_readings_file_above_the_limit_is_refused_before_it_is_read(
    scenario_file, tmp_path, monkeypatch
):
    """A 1.1 GB file (sparse: no disk used) is refused in one line; reading it would hold it
    whole in memory."""
    from pathlib import Path

    readings = tmp_path / "year.csv"
    with readings.open("wb") as f:
        f.truncate(1_100_000_000)
    read_text = Path.read_text

    def unless_the_readings(self, *args, **kwargs):
        assert self != readings, "the readings file was read"
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", unless_the_readings)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["replay", str(readings), "--model", str(MODEL), "--out", str(out)]
        + ["--scenario", str(scenario_file)],
    )
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and "holds 1.1 GB, more than the 1 GB" in result.output
    assert not out.exists()


def test_an_interrupt_keeps_the_steps_written_and_a_rerun_resumes(case, replayed, tmp_path):
    full, folder = replayed
    out = tmp_path / "out"
    seen = []

    def interrupt(step) -> None:
        seen.append(step.step)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replay(folder / "readings.csv", case[2], MODEL, out, on_step=interrupt)
    assert [s.step for s in load_replay(out).steps] == [0, 1, 2]
    resumed, kept = replay(folder / "readings.csv", case[2], MODEL, out)
    assert kept == 3
    for a, b in zip(resumed.steps, full.steps, strict=True):
        np.testing.assert_array_equal(a.forecast, b.forecast)
        assert a.explanations[4].node_values("SV").tolist() == (
            b.explanations[4].node_values("SV").tolist()
        )


@pytest.mark.parametrize("poll", [0.0, -1.0, float("nan"), float("inf")])
def test_a_poll_that_is_not_a_positive_number_is_refused_up_front(scenario_file, tmp_path, poll):
    """--follow --poll -1 or nan crashed in time.sleep once the file ran out; 0 spun."""
    from wdn_explain.errors import ConfigError

    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=r"poll must be a positive number of seconds \(got "):
        replay(tmp_path / "any.csv", None, MODEL, out, follow=True, poll_s=poll)
    assert not out.exists()


def test_a_file_cut_short_under_follow_ends_in_one_line_keeping_the_steps(
    case, tmp_path, monkeypatch
):
    """A followed file that loses rows already replayed (a log rotated, a logger restarted)
    is refused, not waited on until the scenario's end; the steps written stay."""
    import wdn_explain.replay as replay_module

    header, rows = simulated_rows(case)
    path = write_csv(tmp_path / "growing.csv", header, rows[:4])
    polls = []

    def sleep(seconds):
        polls.append(seconds)
        if len(polls) > 3:
            raise AssertionError("kept waiting on a file cut short")

    monkeypatch.setattr(replay_module.time, "sleep", sleep)

    def cut(step) -> None:
        if step.step == 3:
            write_csv(path, header, rows[:2])

    with pytest.raises(DataError, match=r"no longer holds the reading at 900 s .* 4 steps"):
        replay(path, case[2], MODEL, tmp_path / "out", follow=True, on_step=cut)
    assert [s.step for s in load_replay(tmp_path / "out").steps] == [0, 1, 2, 3]


def _damaged_step(folder: Path, change) -> None:
    path = folder / "step_000001.npz"
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _damaged_record(folder: Path, change) -> None:
    record = json.loads((folder / "replay.json").read_text())
    change(record)
    (folder / "replay.json").write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "replay.json").write_text("[" * 100_000), "holds no replay"),
        (lambda f: (f / "replay.json").write_text("[1, 2]"), "has format list, expected 1"),
        (lambda f: _damaged_record(f, lambda r: r.pop("sensors")), "is damaged: no sensors"),
        (
            lambda f: _damaged_record(f, lambda r: r.update(sensors=["999"])),
            "is damaged: sensor '999' is not a node",
        ),
        (
            lambda f: (f / "step_000001.npz").write_bytes(b"PK\x03\x04 cut short"),
            "step_000001.npz' is truncated or corrupt",
        ),
        (
            lambda f: _damaged_step(f, lambda a: a.update(forecast=a["forecast"][1:])),
            r"forecast has shape \(31,\), expected \(32,\)",
        ),
        (
            lambda f: _damaged_step(f, lambda a: a["flags"].__setitem__(0, 99)),
            "are not all codes 0..4",
        ),
    ],
)
def test_a_damaged_replay_folder_is_refused_in_one_line(replayed, tmp_path, damage, message):
    """What the Replay page opens: a record nested too deeply, not a mapping or lacking what a
    replay writes, a step cut short, of another shape or with an unknown flag. Each crashed
    the page (RecursionError, AttributeError, KeyError, BadZipFile, a ragged stack) or, for
    the flag, waited for the step to be shown."""
    folder = tmp_path / "out"
    shutil.copytree(replayed[1] / "out", folder)
    damage(folder)
    with pytest.raises(DataError, match=message) as raised:
        load_replay(folder)
    assert "\n" not in str(raised.value)


def test_a_row_still_being_written_is_left_for_the_next_read(tmp_path):
    path = tmp_path / "growing.csv"
    path.write_text("time_s,chlorine_mg_l@3\n0,0.1\n300,0.2\n600,0.")
    readings = load_readings(path, ["3"])
    assert readings.times_s.tolist() == [0, 300]
    assert readings.chlorine_mg_l[:, 0].tolist() == [0.1, 0.2]


def _flags(series, forecast, half=0.05, rest=(0.0, 1.5)):
    """reading_flags at the last report of one sensor's ``series`` against ``forecast``."""
    series = np.asarray(series, float)[:, None]
    expected = np.asarray(forecast, float)[:, None]
    return reading_flags(
        series[-1], 1.5, np.asarray(rest), series[:-1], expected, expected - half, expected + half
    )[0]


def test_the_bad_reading_rules_on_series_built_to_break_them():
    flat = [0.7] * 6
    assert FLAGS[_flags(flat, flat)] == "stuck"  # not a level water rests at
    assert FLAGS[_flags([1.5] * 6, [1.5] * 6)] == "ok"  # fully flushed at the setpoint
    assert FLAGS[_flags([0.0] * 6, [0.0] * 6)] == "ok"  # not reached yet
    assert FLAGS[_flags([0.0] * 6, [0.3] * 6)] == "stuck"  # none where chlorine was forecast
    assert FLAGS[_flags([0.0] * 6, [0.0, 0.0, 0.0, 0.3, 0.3, 0.3])] == "ok"  # missed 3 of 4
    assert FLAGS[_flags([0.7, 0.71, 0.7, 0.7, 0.7, 0.7], [0.7] * 6)] == "stuck"  # last 4 equal
    assert FLAGS[_flags([0.7, 0.7, 0.71, 0.7, 0.7, 0.7], [0.7] * 6)] == "ok"
    drift = [0.5 + 0.1 * k for k in range(1, 7)]  # 0.1 further outside every report
    assert FLAGS[_flags(drift, [0.5] * 6)] == "drift"
    assert FLAGS[_flags(drift[:5], [0.5] * 5)] == "ok"  # 5 reports are not enough
    back = [*drift[:4], drift[2], drift[5]]  # came back once
    assert FLAGS[_flags(back, [0.5] * 6)] == "ok"
    assert FLAGS[_flags([*drift[:5], 1.7], [0.5] * 6)] == "out_of_range"  # above 1.5 + 0.05
    assert FLAGS[_flags([*drift[:5], np.nan], [0.5] * 6)] == "missing"


def test_the_app_replay_page_shows_the_readings_beside_the_forecast(replayed, monkeypatch):
    import json

    from streamlit.testing.v1 import AppTest
    from test_app import as_array

    out, folder = replayed
    monkeypatch.setenv("WDN_EXPLAIN_REPLAY", str(folder / "out"))
    page = AppTest.from_file(str(REPO / "app" / "pages" / "2_Replay.py"), default_timeout=120)
    page.run()
    assert not page.exception
    page.slider[0].set_value(13).run()
    shown = out.steps[12]
    assert "report at 60 min (step 13 of 19): the forecast used 4 of 4 readings" in (
        page.caption[0].value
    )
    table = page.table[0].value
    assert table["reading (mg/L)"].tolist() == [f"{v:.3f}" for v in shown.readings]
    charts = [json.loads(c.proto.spec)["data"] for c in page.get("plotly_chart")]
    series = {d.get("name"): as_array(d["y"]) for d in charts[0]}  # the first sensor's node
    at = out.node_ids.index(SENSORS[0])
    assert series["reading"][12] == pytest.approx(shown.readings[0])
    # the chart shows a forecast below 0 mg/L at the bound, as its interval
    assert series["forecast"][12] == pytest.approx(max(shown.forecast[at], 0.0))
    sv = as_array(charts[-1][0]["y"])
    np.testing.assert_allclose(sv, shown.explanations[at].node_values("SV"), rtol=1e-6)


def test_the_replay_pages_shapley_axis_does_not_stretch_near_zero_values(replayed, monkeypatch):
    """Where every Shapley value at the node is below 0.005 mg/L the axis spans +-0.005 mg/L
    (micro-values were stretched to the chart's height); elsewhere Plotly scales it."""
    import json

    from streamlit.testing.v1 import AppTest

    out, folder = replayed
    at = out.node_ids.index(SENSORS[0])  # the node the page opens on
    largest = [
        np.abs(step.explanations[at].node_values("SV")).max(initial=0.0)
        if step.explanations
        else None
        for step in out.steps
    ]
    small = next(i for i, v in enumerate(largest) if v is not None and v < 0.005)
    large = next(i for i, v in enumerate(largest) if v is not None and v >= 0.005)
    monkeypatch.setenv("WDN_EXPLAIN_REPLAY", str(folder / "out"))
    page = AppTest.from_file(str(REPO / "app" / "pages" / "2_Replay.py"), default_timeout=120)
    page.run()
    for step, wanted in ((small, [-0.005, 0.005]), (large, None)):
        page.slider[0].set_value(step + 1).run()
        assert not page.exception
        bars = json.loads(page.get("plotly_chart")[-1].proto.spec)
        assert bars["data"][0]["type"] == "bar"
        assert bars["layout"]["yaxis"].get("range") == wanted, (step, largest[step])


def test_the_app_replay_page_names_a_replay_of_another_network(replayed, tmp_path, monkeypatch):
    """A replay record naming another network than its nodes' (a folder of another network,
    or the network file changed since) is an error on the page, not a crash."""
    import epyt
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "out"
    shutil.copytree(replayed[1] / "out", folder)
    net1 = Path(epyt.__file__).parent / "networks" / "asce-tf-wdst" / "Net1.inp"
    _damaged_record(folder, lambda r: r["scenario"].update(network=str(net1)))
    monkeypatch.setenv("WDN_EXPLAIN_REPLAY", str(folder))
    page = AppTest.from_file(str(REPO / "app" / "pages" / "2_Replay.py"), default_timeout=120)
    page.run()
    assert not page.exception
    assert [e.value for e in page.error] == [
        "the replay's nodes are not those of its network 'net1' (32 nodes recorded, 11 in the "
        "network)"
    ]


def test_an_epyt_flow_scada_data_file_gives_its_quality_sensors_readings(tmp_path):
    """EPyT-Flow simulates Hanoi with chlorine analysers in another order than the model's and
    saves its ScadaData; the readings come back as its own arrays, in the model's order."""
    from epanet_plus import EpanetConstants
    from epyt_flow.simulation import ScenarioSimulator

    from wdn_explain.network import load_network

    order = ["30", "3", "16", "10"]
    with ScenarioSimulator(f_inp_in=str(load_network("hanoi").inp_path)) as sim:
        sim.set_general_parameters(
            simulation_duration=3600,
            hydraulic_time_step=300,
            reporting_time_step=300,
            quality_time_step=60,
        )
        sim.enable_chemical_analysis()
        sim.add_quality_source("2", EpanetConstants.EN_SETPOINT, np.ones(1), source_strength=1.5)
        sensors = sim.sensor_config
        sensors.quality_node_sensors = order
        sim.sensor_config = sensors
        scada = sim.run_simulation()
    scada.save_to_file(str(tmp_path / "hanoi"))
    path = tmp_path / "hanoi.epytflow_scada_data"
    readings = load_readings(path, ["3", "10", "16", "30"])
    measured = scada.get_data_nodes_quality()
    assert measured.max() > 0.1  # chlorine reached some sensor: the order matters
    assert readings.times_s.tolist() == list(range(0, 3601, 300))
    np.testing.assert_array_equal(readings.chlorine_mg_l, measured[:, [1, 3, 2, 0]])
    with pytest.raises(DataError, match="unknown sensor '30'"):
        load_readings(path, ["3", "10", "16"])


def test_readings_written_as_csv_read_back_exactly(tmp_path):
    """readings_csv is the CSV load_readings reads: times, sensors in the model's order and
    every value (a missing one stays missing) come back bit for bit, columns reordered by
    the model's sensor list."""
    values = np.array([[0.0, 0.1 + 0.2], [np.nan, 1 / 3], [2.5e-7, 0.7]])
    written = Readings(np.array([0.0, 300.0, 600.0]), ("12", "3"), values)
    path = tmp_path / "readings.csv"
    path.write_text("\n".join(readings_csv(written)) + "\n")
    assert path.read_text().splitlines()[0] == "time_s,chlorine_mg_l@12,chlorine_mg_l@3"
    read = load_readings(path, ["3", "12"])
    np.testing.assert_array_equal(read.times_s, written.times_s)
    assert read.sensors == ("3", "12")
    np.testing.assert_array_equal(read.chlorine_mg_l, values[:, ::-1])  # NaN where missing


def test_the_shipped_sample_readings_are_the_default_scenario_s_with_three_faults():
    """models/hanoi-sensors/sample_readings.csv (scripts/sample_readings.py) holds the default
    scenario's simulated chlorine at the model's sensors, every report, read here with the
    csv module, except sensor 9 missing at 25 min, sensor 19 at 7.5 mg/L at 30 min and sensor
    23 at 0.7 mg/L from 40 to 90 min; rerun the script when this fails."""
    from wdn_explain.network import load_network
    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import SAMPLE_READINGS
    from wdn_explain.simulation import simulate

    rows = list(csv.reader(SAMPLE_READINGS.open()))
    assert rows[0] == ["time_s", *(f"chlorine_mg_l@{s}" for s in SENSORS)]
    times = np.array([float(r[0]) for r in rows[1:]])
    values = np.array([[float(v) if v else np.nan for v in r[1:]] for r in rows[1:]])
    scenario = load_config(SCENARIO).scenario_config(0)
    network = load_network(scenario.network)
    result = simulate(scenario, network)
    assert times.tolist() == result.times_s.tolist()
    want = result.node_chlorine_mg_l[:, [network.node_index(s) for s in SENSORS]].astype(float)
    minute = times / 60
    col = {s: SENSORS.index(s) for s in ("9", "19", "23")}
    want[minute == 25, col["9"]] = np.nan
    want[minute == 30, col["19"]] = 7.5
    want[(minute >= 40) & (minute <= 90), col["23"]] = 0.7
    np.testing.assert_array_equal(values, want)


def test_the_app_replay_page_replays_the_sample_readings_on_a_click(monkeypatch, tmp_path):
    """Without a replay folder the page offers the sample readings; a click replays them into
    the user cache and shows them: at 55 min sensor 23's reading (0.7 mg/L, stuck since 40 min)
    is marked stuck and left out, its table reading the file's values."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("WDN_EXPLAIN_REPLAY", raising=False)
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path))
    page = AppTest.from_file(str(REPO / "app" / "pages" / "2_Replay.py"), default_timeout=300)
    page.run()
    assert not page.exception
    assert "replay the sample readings" in page.info[0].value
    page.button(key="replay_sample").click().run()
    assert not page.exception
    assert page.text_input(key="replay_folder").value == str(tmp_path / "replay-sample")
    page.slider[0].set_value(12).run()  # the report at 55 min
    assert "report at 55 min (step 12 of 37): the forecast used 3 of 4 readings" in (
        page.caption[0].value
    )
    table = page.table[0].value
    assert table["sensor"].tolist() == list(SENSORS)
    row = dict(zip(table["sensor"], table["mark"]))
    assert row["23"] == "stuck" and table["reading (mg/L)"].tolist()[SENSORS.index("23")] == "0.700"
    assert dict(zip(table["sensor"], table["used"]))["23"] == "no"
