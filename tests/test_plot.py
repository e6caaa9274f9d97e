"""Figures, plain-language texts and reports of the shipped default timeline."""

import json

import numpy as np
import pytest

from wdn_explain.narrative import driver_name, forecast_time, summary
from wdn_explain.plot import (
    chlorine_figure,
    forecast_figure,
    frame_data,
    si_graph_figure,
    timeline_figure,
    value_figure,
    value_over_time,
)
from wdn_explain.shipped import DEFAULT_TIMELINE
from wdn_explain.timeline import Timeline

from conftest import inp_table


@pytest.fixture(scope="module")
def tl():
    """The shipped default timeline without its flows: the maps' plain-pipe drawing (the
    flow drawing is tested on ``flowing``)."""
    from dataclasses import replace

    return replace(Timeline.load(DEFAULT_TIMELINE), link_flow_lps=None, node_pressure_m=None)


def traces(fig, name):
    return [tr for tr in fig.data if tr.name == name]


def test_figure_holds_expected_traces(tl, hanoi):
    fig = timeline_figure(tl, hanoi, index="k-SII", order=3, top_k=5)
    assert len(fig.frames) == len(tl)
    step = 8
    frame = fig.frames[step]
    names = [tr.name for tr in frame.data]
    assert names[0] == "pipes" and names[-2:] == ["nodes", "source"]
    assert names.count("pairs +") == 3 and names.count("pairs -") == 3
    assert "hyperedges +" in names and "hyperedges -" in names
    nodes = frame.data[-2]
    expected = tl.node_values("k-SII", 3)[step]
    np.testing.assert_allclose(np.asarray(nodes.marker.color), expected)
    # one colour scale for all frames
    scale = np.abs(tl.node_values("k-SII", 3)).max()
    assert {f.data[-2].marker.cmax for f in fig.frames} == {scale}
    assert len(fig.layout.sliders[0].steps) == len(tl)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ play", "❚❚ pause"]
    first = tl.first_informative_step()  # then on to where chlorine has left its source
    moved = (tl.chlorine[first:] > 0).sum(axis=1) >= 2
    assert fig.layout.sliders[0].active == first + np.argmax(moved)


def test_one_step_figure_draws_the_frame_without_its_empty_placeholders(tl, hanoi):
    step = 8
    frame = timeline_figure(tl, hanoi, index="k-SII", order=3, top_k=5).frames[step].data
    fig = si_graph_figure(tl, hanoi, step, index="k-SII", order=3, top_k=5)
    shown = [tr for tr in frame if np.isfinite(np.asarray(tr.x, dtype=float)).any()]
    assert len(shown) < len(frame)  # the frame holds placeholders for absent classes
    assert [tr.name for tr in fig.data] == [tr.name for tr in shown]
    for a, b in zip(fig.data, shown):
        np.testing.assert_array_equal(np.asarray(a.x, dtype=float), np.asarray(b.x, dtype=float))
        np.testing.assert_array_equal(np.asarray(a.y, dtype=float), np.asarray(b.y, dtype=float))
        assert a.marker == b.marker and a.line == b.line


def test_pairs_are_arcs_off_the_pipes_and_hover_names_the_node(tl, hanoi):
    step = 8
    fig = si_graph_figure(tl, hanoi, step, index="k-SII", order=2, top_k=5)
    data = frame_data(tl, step, "k-SII", 2, 5)
    (i, j), value = max(data.pairs, key=lambda kv: abs(kv[1]))
    lines = [tr for tr in fig.data if tr.name == f"pairs {'+' if value > 0 else '-'}"]
    xs = np.concatenate([np.asarray(tr.x) for tr in lines])
    ys = np.concatenate([np.asarray(tr.y) for tr in lines])
    pts = np.column_stack([xs, ys])
    a, b = hanoi.coordinates[i], hanoi.coordinates[j]
    assert np.isclose(pts, a).all(axis=1).any() and np.isclose(pts, b).all(axis=1).any()
    # the arc's middle lies off the straight segment between its two nodes (the pipe's line)
    mid = (a + b) / 2
    nearest = np.nanmin(np.linalg.norm(pts - mid, axis=1))
    assert nearest > 0.1 * np.linalg.norm(b - a)
    # lines carry no hover; each pair's value hovers at its arc's middle, with the unit
    assert all(tr.hoverinfo == "skip" for tr in lines)
    (mids,) = traces(fig, "pair values")
    label = f"pair {{{hanoi.node_ids[i]}, {hanoi.node_ids[j]}}}<br>k-SII {value:+.4f}"
    assert any(t.startswith(label) for t in mids.hovertext)
    # a node's hover starts with the node and its kind, holds chlorine in mg/L, then its
    # value and unit
    (nodes,) = traces(fig, "nodes")
    k = hanoi.node_index("20")
    assert nodes.hovertext[k].startswith("<b>node 20</b> (junction)<br>")
    assert f"chlorine {tl.chlorine[step, k]:.3f} mg/L" in nodes.hovertext[k]
    assert (
        f"k-SII {tl.node_values('k-SII', 2)[step, k]:+.4f} (share of nodes)" in nodes.hovertext[k]
    )
    assert nodes.textfont.size >= 12
    assert "share of" in nodes.marker.colorbar.title.text
    # every node lies inside the drawn area (node 12 was clipped)
    x0, x1 = fig.layout.xaxis.range
    y0, y1 = fig.layout.yaxis.range
    xy = hanoi.coordinates
    assert (x0 < xy[:, 0]).all() and (xy[:, 0] < x1).all()
    assert (y0 < xy[:, 1]).all() and (xy[:, 1] < y1).all()


def test_higher_orders_name_their_members(tl, hanoi):
    step = 10
    fig = si_graph_figure(tl, hanoi, step, index="k-SII", order=3, top_k=4)
    data = frame_data(tl, step, "k-SII", 3, 4)
    assert data.higher
    (groups,) = traces(fig, "group values")
    texts = list(groups.hovertext)
    for members, value in data.higher:
        ids = ", ".join(hanoi.node_ids[m] for m in members)
        assert any(t.startswith(f"order 3: {{{ids}}}<br>k-SII {value:+.4f}") for t in texts)
    assert len(texts) == len(data.higher)


def test_titles_units_and_the_time_they_show(tl, hanoi):
    step = 8  # made at 40 min, for 60 min (horizon 4 reports of 5 min)
    assert forecast_time(tl, step) == "forecast made at 40 min for 60 min"
    title = si_graph_figure(tl, hanoi, step, index="SV", order=None).layout.title.text
    assert title.startswith("SV, forecast made at 40 min for 60 min<br>")
    assert f"forecast {tl.forecast[step]:.2f}, simulated {tl.truth[step]:.2f}" in title
    reference = tl.explanations[step].empty_prediction
    assert f"reference {reference:.2f} (the network average)" in title
    forecast = forecast_figure(tl, step)
    names = [tr.name for tr in forecast.data]
    assert names[2:5] == ["simulated", "forecast", "reference forecast (the network average)"]
    np.testing.assert_allclose(forecast.data[4].y, [e.empty_prediction for e in tl.explanations])
    (now,) = traces(forecast, "now")
    assert now.x == (40.0,) and now.y == (pytest.approx(tl.forecast[step]),)
    assert forecast.layout.title.text == (
        "share of nodes chlorinated<br><sup>forecast 20 min ahead</sup>"
    )
    chlorine = chlorine_figure(tl, hanoi, step)
    title = "chlorine at 40 min<br><sup>chlorinated: at least 0.05 mg/L</sup>"
    assert chlorine.layout.title.text == title
    assert "mg/L" in traces(chlorine, "chlorine")[0].marker.colorbar.title.text


def test_value_over_time_and_its_cursor(tl, hanoi):
    k = hanoi.node_index("2")
    series = value_over_time(tl, (k,), "SV", 1)
    np.testing.assert_allclose(series, tl.node_values("SV")[:, k])
    fig = value_figure(tl, hanoi, (k,), "SV", 1, step=5)
    widths = np.asarray(fig.data[0].marker.line.width)
    assert widths[5] > 0 and (np.delete(widths, 5) == 0).all()
    assert fig.layout.yaxis.title.text == "share of nodes"


@pytest.mark.parametrize("reference", ["mean", "none"])
@pytest.mark.parametrize(("index", "order"), [("SV", None), ("k-SII", 2), ("FSII", 3)])
def test_summary_names_the_strongest_drivers(tl, hanoi, reference, index, order):
    """The sentence against the values: recomputed here from shapiq InteractionValues."""
    tl = tl.relative_to(reference)
    step = 12
    e = tl.explanations[step]
    iv = tl.interaction_values(step, index, order)
    items = [(k, v) for k, v in iv.dict_values.items() if len(k) >= 1 and v]
    noise = 1e-3 * max(abs(e.prediction - e.empty_prediction), 1e-2)  # below: not a driver
    up = sorted((kv for kv in items if kv[1] > noise), key=lambda kv: -kv[1])[:2]
    down = sorted((kv for kv in items if kv[1] < -noise), key=lambda kv: kv[1])[:1]
    text = summary(tl, hanoi, step, index, order)
    assert text.startswith(f"Forecast made at 60 min for 80 min: {e.prediction:.2f} share of")
    assert f"(simulated: {tl.truth[step]:.2f})" in text
    shown = f"{e.empty_prediction:.2f}".replace("-0.00", "0.00")  # no negative zero
    assert f"reference forecast {shown}" in text
    assert f"that is {e.prediction - e.empty_prediction:+.2f}" in text

    def first_upper(words):
        return words[:1].upper() + words[1:]

    raised = " and ".join(driver_name(hanoi, k) for k, _ in up)
    raised += " raises" if len(up) == 1 else " raise"
    if up:
        assert f". {first_upper(raised)} the forecast most" in text
    if down:
        lowered = f"{driver_name(hanoi, down[0][0])} lowers it most"
        assert (f"; {lowered}" if up else f". {first_upper(lowered)}") in text


def test_summary_before_anything_moves(tmp_path, hanoi):
    """A booster planned to start at 30 min: the shipped model (which reads the dosing plan
    20 min ahead) sees nothing move at the first step."""
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.scenario import ScenarioConfig
    from wdn_explain.shipped import DEFAULT_MODEL

    late = ScenarioConfig(injection_node="20", injection_start_s=1800, duration_s=2700)
    quiet, _ = explain_scenario(late, DEFAULT_MODEL, out=tmp_path / "late.npz")
    quiet = quiet.relative_to("none")
    gaps = [abs(e.prediction - e.empty_prediction) for e in quiet.explanations]
    moved = next(t for t, gap in enumerate(gaps) if gap > 1e-3)
    assert moved > 0
    assert summary(quiet, hanoi, 0, "SV", None).endswith(
        "No node differs from the reference enough to move the forecast. The next forecast "
        f"that moves is made at {quiet.times_s[moved] / 60:.0f} min (▶ play)."
    )


def test_a_node_models_silent_node_says_when_its_forecast_moves(hanoi, tmp_path):
    """The time cursor survives a switch of model: a node-level model's explained node far
    from the chlorine (node 30, dry until 135 min in the default scenario) shows nothing
    there, and the sentence says when it will."""
    from wdn_explain.explain_settings import ExplainSettings
    from wdn_explain.pipeline import explain_scenario
    from wdn_explain.scenario import load_config
    from wdn_explain.shipped import DEFAULT_SCENARIO, SHIPPED_ROOT

    spec = load_config(DEFAULT_SCENARIO).scenario_config(0)
    nodes, _ = explain_scenario(
        spec,
        SHIPPED_ROOT / "models" / "hanoi-nodes",
        settings=ExplainSettings(target_nodes=("30",)),
        out=tmp_path / "t.npz",
    )
    nodes = nodes.relative_to("none")
    gaps = np.array([abs(e.prediction - e.empty_prediction) for e in nodes.explanations])
    silent = int(np.flatnonzero(gaps <= 1e-3)[0])
    moved = silent + int(np.flatnonzero(gaps[silent:] > 1e-3)[0])
    text = summary(nodes, hanoi, silent, "k-SII", 2)
    assert text.endswith(
        f"The next forecast that moves is made at {nodes.times_s[moved] / 60:.0f} min "
        "(▶ play, or pick another explained node)."
    )


def test_values_that_cancel_are_said_to_cancel(tl, hanoi):
    """Where the explained difference reads +0.00 though values of either sign read at
    least 0.01: the sentence says they cancel, not that one of them moves the forecast."""
    tl = tl.relative_to("mean")
    found = 0
    for step, e in enumerate(tl.explanations):
        values = tl.interaction_values(step, "k-SII", 2).dict_values
        values = {k: v for k, v in values.items() if k}
        top, bottom = max(values, key=values.get), min(values, key=values.get)
        if abs(e.prediction - e.empty_prediction) < 0.005 and values[top] >= 0.005:
            if values[bottom] <= -0.005:
                text = summary(tl, hanoi, step, "k-SII", 2)
                assert "that is +0.00" in text or "that is -0.00" in text
                assert f"The values cancel: {driver_name(hanoi, top)}" in text
                assert f"and {driver_name(hanoi, bottom)} lowers it by about as much." in text
                assert "most" not in text.split("The values cancel")[1]
                found += 1
    assert found  # the shipped timeline has such steps


def test_a_share_just_below_zero_reads_0_00(tl, hanoi):
    from wdn_explain.narrative import summary
    from wdn_explain.plot import frame_title

    none = tl.relative_to("none")
    step = next(t for t, e in enumerate(none.explanations) if -0.005 < e.empty_prediction < 0)
    assert "(reference forecast 0.00)" in summary(none, hanoi, step, "k-SII", 2)
    assert "reference 0.00 (" in frame_title(none, step, "k-SII", 2)


def test_driver_names(hanoi):
    assert driver_name(hanoi, (hanoi.node_index("20"),)) == "junction 20"
    assert driver_name(hanoi, (hanoi.node_index("1"),)) == "reservoir 1"
    pair = tuple(sorted((hanoi.node_index("4"), hanoi.node_index("20"))))
    assert driver_name(hanoi, pair) == "the pair 4–20"


def test_drivers_table_names_pairs_briefly(tl, hanoi):
    from wdn_explain.narrative import drivers_table

    step = tl.first_informative_step()
    e = tl.explanations[step]
    members, values = e.index_values("k-SII", 2, 2)
    strongest = max(zip(map(tuple, members), values), key=lambda mv: abs(mv[1]))[0]
    a, b = sorted((hanoi.node_ids[v] for v in strongest), key=int)
    rows = drivers_table(tl, hanoi, step, "k-SII", 2, k=10_000)  # every value
    assert f"pair {a}–{b}" in [row["driver"] for row in rows]  # no "the": a narrow column


def test_shapiq_zip_holds_every_step_with_node_ids(tl):
    import io
    import json
    import zipfile

    from wdn_explain.report import shapiq_zip

    none = tl.relative_to("none")
    with zipfile.ZipFile(io.BytesIO(shapiq_zip(none, "FSII", 2))) as archive:
        names = archive.namelist()
        assert names == [f"step_{int(s):04d}.json" for s in tl.steps]
        text = archive.read("step_0009.json").decode()
    params = json.loads(text)["parameters"]
    assert params["node_ids"] == [str(n) for n in tl.node_ids] and params["reference"] == "none"
    assert params["forecast"] == pytest.approx(tl.forecast[9])
    k = params["node_ids"].index("20")
    values = json.loads(text)["data"]
    expected = none.interaction_values(9, "FSII", 2)[(k,)]
    assert any(v == pytest.approx(expected) for v in values.values())


def test_report_html_has_title_reading_guide_and_both_figures(tl, hanoi):
    from wdn_explain.report import report_html

    page = report_html(tl, hanoi, index="SV")
    assert page.count("<h1>") == 1
    assert (
        "<h1>Why the model expects chlorine there: booster at 2, 1.5 mg/L, intermittent, 3 h<"
        in page
    )
    assert "How to read this" in page and "<b>SV</b> values relative to" in page
    assert page.count('class="plotly-graph-div"') == 2


def test_report_sentence_and_forecast_marker_follow_the_map(tl, hanoi):
    """The report carries every step's sentence and forecast for the script that moves the
    sentence and the forecast chart's marker with the map's frame; it opens on the first
    informative step at which chlorine has left its source, with the marker there."""
    import html
    import json
    import re

    from wdn_explain.report import report_html

    page = report_html(tl, hanoi, index="k-SII", order=2)
    follow = json.loads(re.search(r"const FOLLOW = (\{.*?\});\n", page).group(1))
    assert follow["sentences"] == [summary(tl, hanoi, t, "k-SII", 2) for t in range(len(tl))]
    assert follow["minutes"] == [t / 60 for t in tl.times_s]
    np.testing.assert_allclose(follow["forecast"], tl.forecast)
    assert "plotly_animatingframe" in page and "getElementById('summary')" in page
    first = tl.first_informative_step()  # on to where chlorine has left its source
    start = next(t for t in range(first, len(tl)) if (tl.chlorine[t] > 0).sum() >= 2)
    assert f"<i id='summary'>{html.escape(follow['sentences'][start])}</i>" in page
    forecast = page.split('id="forecast"')[1]
    assert '"name":"now"' in forecast.replace(" ", "")


def test_gif_frames_draw_the_pairs_their_title_names(tl, hanoi):
    import matplotlib.pyplot as plt

    from wdn_explain.report import gif_frame

    t = 12
    data = frame_data(tl, t, "k-SII", 2, 10)
    assert data.pairs
    fig = gif_frame(tl, hanoi, t, data, "k-SII", 2, scale=1.0, top=1.0)
    (pairs,) = [c for c in fig.axes[0].collections if c.get_label() == "pairs"]
    xy = hanoi.map_coordinates
    expected = [xy[list(m)] for m, _ in data.pairs]
    np.testing.assert_allclose(np.array(pairs.get_segments()), np.array(expected))
    assert fig._suptitle.get_text().startswith("k-SII of order 2, nodes and strongest pairs")
    plt.close(fig)
    sv = gif_frame(tl, hanoi, t, frame_data(tl, t, "SV", 1, 10), "SV", 1, scale=1.0, top=1.0)
    assert not [c for c in sv.axes[0].collections if c.get_label() == "pairs"]
    plt.close(sv)


def test_maps_are_svg_with_one_pipe_trace_and_hanoi_keeps_its_look(tl, hanoi):
    from wdn_explain.plot import marker_scale

    step = 8
    fig = si_graph_figure(tl, hanoi, step, index="k-SII", order=3, top_k=5)
    assert {tr.type for tr in fig.data} == {
        "scatter"
    }  # SVG up to 60 nodes, WebGL beyond (L-Town below)
    (pipes,) = traces(fig, "pipes")
    segments = np.column_stack([pipes.x, pipes.y]).reshape(hanoi.n_links, 3, 2)
    assert np.isnan(segments[:, 2]).all()  # one NaN-separated segment per link
    np.testing.assert_array_equal(segments[:, :2], hanoi.coordinates[hanoi.link_nodes])
    (nodes,) = traces(fig, "nodes")
    assert len(nodes.x) == len(nodes.hovertext) == hanoi.n_nodes
    assert marker_scale(hanoi.n_nodes) == 1.0 and list(nodes.text) == list(hanoi.node_ids)
    values = tl.node_values("k-SII", 3)[step]
    scale = np.abs(tl.node_values("k-SII", 3)).max()
    np.testing.assert_allclose(nodes.marker.size, 9 + 22 * np.abs(values) / scale)
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1


def test_large_network_maps_shrink_markers(tl):
    from dataclasses import replace

    from wdn_explain.network import load_network
    from wdn_explain.plot import marker_scale

    town = load_network("l-town")
    assert town.n_nodes > 700 and town.has_coordinates
    chlorine = np.random.default_rng(0).random((len(tl), town.n_nodes))
    meta = {**tl.meta, "scenario": {**tl.meta["scenario"], "injection_node": "n303"}}
    hanoi_hydraulics = dict(link_flow_lps=None, node_pressure_m=None, node_delivered_fraction=None)
    fig = chlorine_figure(replace(tl, chlorine=chlorine, meta=meta, **hanoi_hydraulics), town, 3)
    pipes, links, devices, nodes, source = fig.data
    assert {pipes.type, links.type, devices.type, nodes.type, source.type} == {"scatter"}
    assert len(links.x) == town.n_links  # a hover marker per link (SVG up to 1000 nodes)
    # the pump and the three valves, read from the .inp by WNTR (an independent reader)
    import wntr

    wn = wntr.network.WaterNetworkModel(str(town.inp_path))
    expected = {f"pump {p}" for p in wn.pump_name_list} | {f"valve {v}" for v in wn.valve_name_list}
    assert set(devices.hovertext) == expected and len(expected) == 4
    assert set(devices.marker.symbol) == {"triangle-right", "bowtie"}
    assert nodes.text is None  # too many nodes to write their ids
    assert source.text[0].replace("<br>", " ") == "n303: source on (1.5 mg/L)"  # maybe wrapped
    assert len(pipes.x) == 3 * town.n_links
    assert len(nodes.x) == town.n_nodes
    np.testing.assert_array_equal(nodes.marker.color, chlorine[3])
    assert nodes.hovertext[0].startswith(f"<b>node {town.node_ids[0]}</b>")
    assert nodes.marker.size == pytest.approx(12 * marker_scale(town.n_nodes))
    sizes = [marker_scale(n) for n in (10, 32, 97, 785, 5000)]
    assert sizes[:2] == [1.0, 1.0] and sizes == sorted(sizes, reverse=True)
    assert sizes[-1] == 0.35  # never smaller: still visible


@pytest.fixture(scope="module")
def flowing(tl, hanoi):
    """The shipped timeline with the flows and pressures of its scenario, simulated here."""
    from dataclasses import replace

    from wdn_explain.simulation import simulate

    result = simulate(tl.scenario, hanoi)
    return replace(
        tl,
        link_flow_lps=result.link_flow_lps[tl.steps],
        node_pressure_m=result.node_pressure_m[tl.steps],
    )


@pytest.mark.parametrize("figure", ["si_graph", "chlorine", "compliance"])
def test_pipes_by_flow_with_arrows_downstream(flowing, hanoi, figure):
    """Every map draws the step's simulated flows: each link in the width class of its
    |flow|, an arrow at its midpoint pointing from the upstream to the downstream node,
    coloured by |flow| on one scale in L/s; hover names the link, diameter, length, flow."""
    from wdn_explain.plot import FLOW_WIDTHS, compliance_figure

    step = 10
    make = {"si_graph": si_graph_figure, "chlorine": chlorine_figure}.get(figure)
    fig = make(flowing, hanoi, step) if make else compliance_figure(flowing, hanoi, step, 0.2)
    flow = flowing.link_flow_lps[step]
    top = np.abs(flowing.link_flow_lps).max()
    (arrows,) = traces(fig, "flow")
    np.testing.assert_allclose(arrows.marker.color, np.abs(flow))
    assert arrows.marker.cmax == pytest.approx(top) and arrows.marker.cmin == 0
    assert "L/s" in arrows.marker.colorbar.title.text
    xy = hanoi.coordinates
    np.testing.assert_allclose(np.column_stack([arrows.x, arrows.y]), xy[hanoi.link_nodes].mean(1))
    theta = np.radians(np.asarray(arrows.marker.angle))  # clockwise from up
    pointing = np.column_stack([np.sin(theta), np.cos(theta)])
    for k, (a, b) in enumerate(hanoi.link_nodes):
        if abs(flow[k]) > 1e-3:
            upstream, downstream = (a, b) if flow[k] > 0 else (b, a)
            assert pointing[k] @ (xy[downstream] - xy[upstream]) > 0, hanoi.link_ids[k]
    for c in range(len(FLOW_WIDTHS)):  # the links of each class, drawn in that class's trace
        low, high = c * top / len(FLOW_WIDTHS), (c + 1) * top / len(FLOW_WIDTHS)
        inside = (np.abs(flow) >= low) & ((np.abs(flow) < high) | (c == len(FLOW_WIDTHS) - 1))
        found = traces(fig, f"flow class {c + 1}")
        if not inside.any() and not found:  # an empty class may be left out of one step
            continue
        (line,) = found
        drawn = np.column_stack([line.x, line.y])
        drawn = drawn[np.isfinite(drawn[:, 0])].reshape(-1, 2, 2)
        expected = xy[hanoi.link_nodes[inside]]
        np.testing.assert_allclose(drawn, expected.reshape(-1, 2, 2))
    k = hanoi.link_ids.index("1")  # reservoir 1 to junction 2: 100 m, 1016 mm in Hanoi.inp
    assert arrows.hovertext[k] == (
        f"<b>pipe 1</b><br>diameter 1016 mm<br>length 100 m<br>flow {abs(flow[k]):.2f} L/s, "
        + ("1 → 2" if flow[k] > 0 else "2 → 1")
    )


def test_si_graph_without_arrows_keeps_the_pipes_by_flow(flowing, hanoi):
    """``arrows=False`` (play on large networks) drops the arrow markers and their hover
    and nothing else: every other trace is the same as with the arrows."""
    step = 10
    full = json.loads(si_graph_figure(flowing, hanoi, step).to_json())["data"]
    light = json.loads(si_graph_figure(flowing, hanoi, step, arrows=False).to_json())["data"]
    assert [t for t in full if t["name"] != "flow"] == light
    assert any(t["name"] == "flow" for t in full)


def test_node_hover_holds_the_inp_properties_and_pressure(flowing, hanoi):
    from wdn_explain.plot import node_hover

    step = 5
    text = node_hover(hanoi, flowing, step)
    k = hanoi.node_index("2")  # Hanoi.inp: junction 2, elevation 30, demand 247.22
    assert text[k] == (
        f"<b>node 2</b> (junction)<br>elevation 30.0 m<br>base demand 247.22 L/s<br>"
        f"chlorine {flowing.chlorine[step, k]:.3f} mg/L<br>"
        f"pressure {flowing.node_pressure_m[step, k]:.1f} m"
    )
    r = hanoi.node_index("1")  # the reservoir: its head, no demand
    assert text[r].startswith("<b>node 1</b> (reservoir)<br>head 100.0 m<br>chlorine ")


def test_forecast_band_and_summary_interval(tl, hanoi):
    """The calibrated interval is a band on the forecast chart named with its coverage,
    and the summary sentence gives the step's interval."""
    step = 7
    fig = forecast_figure(tl, step)
    (band,) = traces(fig, "90% interval (calibrated)")
    (edge,) = traces(fig, "90% interval (calibrated) upper")
    assert band.fill == "tonexty" and fig.data.index(edge) == fig.data.index(band) - 1
    np.testing.assert_allclose(band.y, tl.lower)
    np.testing.assert_allclose(edge.y, tl.upper)
    assert band.showlegend is not False and edge.showlegend is False
    text = summary(tl, hanoi, step, "k-SII", 2)
    assert f", 90% interval {tl.lower[step]:.2f}–{tl.upper[step]:.2f} (simulated: " in text
    from dataclasses import replace

    bare = replace(tl, lower=None, upper=None)
    assert "interval" not in summary(bare, hanoi, step, "k-SII", 2)
    assert not [tr for tr in forecast_figure(bare, step).data if "interval" in tr.name]


def test_node_chlorine_chart_with_minimum_and_optional_forecast(tl, hanoi):
    from wdn_explain.plot import node_chlorine_figure

    k, step = hanoi.node_index("17"), 9
    fig = node_chlorine_figure(tl, hanoi, k, minimum_mg_l=0.3, step=step)
    (sim,) = traces(fig, "simulated")
    np.testing.assert_allclose(sim.y, tl.chlorine[:, k])
    np.testing.assert_allclose(sim.x, tl.times_s / 60)
    (now,) = traces(fig, "now")
    assert now.x[0] == tl.times_s[step] / 60 and now.y[0] == tl.chlorine[step, k]
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == 0.3 and line.xref == "x domain" and (line.x0, line.x1) == (0, 1)
    # named in the legend below the chart, not written on it where a series may run
    assert line.name == "minimum 0.3 mg/L" and line.showlegend and fig.layout.showlegend
    assert not fig.layout.annotations and fig.layout.legend.y < 0
    assert "node 17" in fig.layout.title.text and "mg/L" in fig.layout.title.text
    assert not traces(fig, "forecast")
    # a node-level forecast joins in one call: drawn at the time it is made for
    guess = np.linspace(0, 1, len(tl))
    fig = node_chlorine_figure(
        tl, hanoi, k, forecast=guess, lower=guess - 0.1, upper=guess + 0.1, step=step
    )
    (forecast,) = traces(fig, "forecast")
    ahead = (tl.times_s + tl.meta["horizon"] * tl.scenario.reporting_step_s) / 60
    np.testing.assert_allclose(forecast.x, ahead)
    np.testing.assert_allclose(forecast.y, guess)
    (band,) = traces(fig, "forecast interval")
    np.testing.assert_allclose(band.y, guess - 0.1)


@pytest.mark.parametrize("minimum", [0.0, 0.2, 1.0, 2.0])
def test_compliance_map_and_sentence_count_the_nodes_below(tl, hanoi, minimum):
    from wdn_explain.narrative import compliance_text
    from wdn_explain.plot import compliance_figure

    step = 12
    # the reservoir (node 1, read from the .inp) is a source, not a customer tap: not counted
    (reservoir,) = inp_table(hanoi.inp_path, "RESERVOIRS")
    taps = [i for i in range(hanoi.n_nodes) if hanoi.node_ids[i] != reservoir]
    below = [i for i in taps if tl.chlorine[step, i] < minimum]
    fig = compliance_figure(tl, hanoi, step, minimum)
    (nodes,) = traces(fig, "compliance")
    marked = [i for i, s in enumerate(nodes.marker.symbol) if s == "x"]
    assert marked == below
    source = hanoi.node_ids.index(reservoir)
    assert nodes.marker.color[source] not in (nodes.marker.color[taps[0]], "#e6550d")
    title = fig.layout.title.text
    assert title.startswith(f"chlorine at {tl.times_s[step] // 60:.0f} min<br>")
    assert f"below {minimum:g} mg/L: {len(below)} of 31 customer nodes" in title
    text = compliance_text(tl, hanoi, step, minimum)
    if below:
        assert text.startswith(f"{len(below)} of 31 customer nodes have less than the minimum")
    else:
        assert text.startswith("Every customer node has at least")


def test_compliance_map_writes_ids_that_the_forecast_rings_leave_clear():
    """hanoi-nodes' compliance map (316 px in the app) writes every node id, and each ring
    (a node its forecast puts below the minimum) lies under the markers and ids, around its
    marker but inside the corner of its node's id: plotly.js writes an id ``top right`` at
    marker radius / 0.8 + 1 px on each axis, so the id's nearest point lies that times
    sqrt(2) from the node (the 2.2-marker rings reached over it)."""
    from wdn_explain.plot import compliance_figure, opening_step
    from wdn_explain.shipped import SHIPPED_ROOT, model_network

    folder = SHIPPED_ROOT / "models" / "hanoi-nodes"
    nodes_tl, net = Timeline.load(folder / "default_timeline.npz"), model_network(folder)
    step = opening_step(nodes_tl)
    fig = compliance_figure(nodes_tl, net, step, 0.2)
    names = [t.name for t in fig.data]
    assert names.index("forecast below") < names.index("compliance")
    (nodes,), (rings,) = traces(fig, "compliance"), traces(fig, "forecast below")
    assert list(nodes.text) == list(net.node_ids) and nodes.textposition == "top right"
    taps = ~np.isin(net.node_ids, list(inp_table(net.inp_path, "RESERVOIRS")))
    ahead = np.flatnonzero((nodes_tl.node_forecast[step] < 0.2) & taps)  # no ring on a source
    assert len(ahead) > 0
    np.testing.assert_allclose(rings.x, net.map_coordinates[ahead, 0])
    marker = np.asarray(nodes.marker.size)[ahead] / 2
    outer = np.asarray(rings.marker.size) / 2 + rings.marker.line.width / 2
    id_corner = np.sqrt(2) * (marker / 0.8 + 1)
    assert np.all(outer > marker + rings.marker.line.width) and np.all(outer < id_corner)


def _label_box(fig, trace, width):
    """The pixel box (x0, x1, y0, y1; y up, in the plot area) of ``trace``'s text on
    ``fig`` shown ``width`` px wide: text 0.5 em a character and 1.3 em a line (Chromium
    measured 0.45 em), kept marker radius / 0.8 + 1 px off its point (plotly.js), on equal
    axes that fill the plot area left by the margins and an 80 px colour bar."""
    layout = fig.layout
    size = np.array(
        [
            width - layout.margin.l - layout.margin.r - 80,
            layout.height - layout.margin.t - layout.margin.b,
        ]
    )
    lo = np.array([layout.xaxis.range[0], layout.yaxis.range[0]])
    hi = np.array([layout.xaxis.range[1], layout.yaxis.range[1]])
    scale = (size / (hi - lo)).min()
    origin = (lo + hi) / 2 - size / scale / 2

    def pixels(x, y):
        return (np.column_stack([x, y]) - origin) * scale

    lines = trace.text[0].split("<br>")
    w, h = 0.5 * trace.textfont.size * max(map(len, lines)), 1.3 * trace.textfont.size * len(lines)
    gap = trace.marker.size / 2 / 0.8 + 1
    vertical, horizontal = trace.textposition.split()
    x = {"left": -gap - w, "right": gap, "center": -w / 2}[horizontal]
    y = {"top": gap, "bottom": -gap - h, "middle": -h / 2}[vertical]
    ((px, py),) = pixels(trace.x, trace.y)
    return np.array([px + x, px + x + w, py + y, py + y + h]), size, pixels


@pytest.mark.parametrize("model", ["default", "l-town", "waq-paper"])
@pytest.mark.parametrize("figure", ["si_graph", "chlorine", "compliance"])
def test_the_source_label_covers_no_node_and_stays_on_the_map(model, figure):
    """On every shipped network, at the widths the app shows each map at (1280 x 900 px:
    the SI-Graph 478 px on Hanoi, 810 on L-Town; the panels 316 and ~260), and wider: the
    source's label (its box estimated from position, font and text length) covers no node
    marker and no node id and lies inside the plot area (Plotly clips text there)."""
    from wdn_explain.plot import compliance_figure, opening_step
    from wdn_explain.shipped import SHIPPED_ROOT, model_network

    folder = SHIPPED_ROOT / "models" / model
    tl, net = Timeline.load(folder / "default_timeline.npz"), model_network(folder)
    step = opening_step(tl)
    large = net.n_nodes > 60
    if figure == "si_graph":
        fig, widths = si_graph_figure(tl, net, step, height=540), (478, 640, 810)
    else:
        make = chlorine_figure if figure == "chlorine" else compliance_figure
        fig, widths = make(tl, net, step), (260, 320, 400) if large else (316, 400, 480)
    (source,) = traces(fig, "source")
    where = tl.scenario.injection_node or net.reservoirs[0]  # the WAQ paper's: the reservoir
    assert source.text[0].replace("<br>", " ").startswith(f"{where}: source")
    (nodes,) = [tr for tr in fig.data if tr.name in ("nodes", "chlorine", "compliance")]
    at = net.node_ids.index(where)
    others = np.arange(net.n_nodes) != at
    radii = np.broadcast_to(np.asarray(nodes.marker.size, dtype=float) / 2, (net.n_nodes,))
    for width in widths:
        box, size, pixels = _label_box(fig, source, width)
        assert box[0] >= 0 and box[2] >= 0 and box[1] <= size[0] and box[3] <= size[1], width
        centres = pixels(nodes.x, nodes.y)
        nearest = np.clip(centres, box[[0, 2]], box[[1, 3]])
        covered = (np.linalg.norm(centres - nearest, axis=1) < radii) & others
        assert not covered.any(), (width, [net.node_ids[i] for i in np.flatnonzero(covered)])
        if nodes.text is not None:  # ids written top right of their markers
            for i in np.flatnonzero(others):
                gap = radii[i] / 0.8 + 1
                w, h = 0.5 * nodes.textfont.size * len(nodes.text[i]), 1.3 * nodes.textfont.size
                x0, y0 = centres[i] + gap
                apart = x0 + w <= box[0] or box[1] <= x0 or y0 + h <= box[2] or box[3] <= y0
                assert apart, (width, nodes.text[i])


def test_chart_titles_fit_a_narrow_column():
    """L-Town's panels are ~260 px wide (three columns at 1280 px): every line of the
    forecast, node chlorine and value charts' titles fits in 240 px (0.5 em a character,
    superscripts at 0.7 of the title's size), written from the left."""
    import re

    from wdn_explain.plot import node_chlorine_figure
    from wdn_explain.shipped import SHIPPED_ROOT, model_network

    folder = SHIPPED_ROOT / "models" / "l-town"
    tl, net = Timeline.load(folder / "default_timeline.npz"), model_network(folder)
    node = net.node_index(tl.scenario.injection_node)
    for fig in (
        forecast_figure(tl, 3),
        node_chlorine_figure(tl, net, node, step=3),
        value_figure(tl, net, (node,), "SV", 1, step=3),
    ):
        title = fig.layout.title
        assert title.x <= 0.02 and title.xanchor == "left"
        for line in title.text.split("<br>"):
            size = title.font.size * (0.7 if line.startswith("<sup>") else 1.0)
            assert 0.5 * size * len(re.sub("<[^>]+>", "", line)) <= 240, line
