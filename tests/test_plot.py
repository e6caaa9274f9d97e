import numpy as np

from wdn_explain.plot import (
    chlorine_figure,
    forecast_figure,
    frame_data,
    timeline_figure,
    value_over_time,
)
from wdn_explain.timeline import DEFAULT_TIMELINE, Timeline


def test_figure_holds_expected_traces(hanoi):
    tl = Timeline.load(DEFAULT_TIMELINE)
    fig = timeline_figure(tl, hanoi, index="k-SII", order=3, top_k=5)
    assert len(fig.frames) == len(tl)
    step = 8
    frame = fig.frames[step]
    names = [tr.name for tr in frame.data]
    assert names[0] == "pipes" and names[-1] == "nodes"
    assert names.count("pairs +") == 3 and names.count("pairs -") == 3
    assert "hyperedges +" in names and "hyperedges -" in names
    nodes = frame.data[-1]
    expected = tl.node_values("k-SII", 3)[step]
    np.testing.assert_allclose(np.asarray(nodes.marker.color), expected)
    # one colour scale for all frames
    scale = np.abs(tl.node_values("k-SII", 3)).max()
    assert {f.data[-1].marker.cmax for f in fig.frames} == {scale}
    # the strongest pair of this frame is drawn, between its two nodes
    data = frame_data(tl, step, "k-SII", 3, 5)
    (i, j), value = max(data.pairs, key=lambda kv: abs(kv[1]))
    sign = "+" if value > 0 else "-"
    xs = [x for tr in frame.data if tr.name == f"pairs {sign}" for x in tr.x]
    assert hanoi.coordinates[i, 0] in xs and hanoi.coordinates[j, 0] in xs
    assert len(fig.layout.sliders[0].steps) == len(tl)
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == ["▶ play", "❚❚ pause"]


def test_side_panels(hanoi):
    tl = Timeline.load(DEFAULT_TIMELINE)
    assert len(forecast_figure(tl, 3).data) == 2
    assert len(chlorine_figure(tl, hanoi, 3).data) == 2
    series = value_over_time(tl, (hanoi.node_index("2"),), "SV", 1)
    np.testing.assert_allclose(series, tl.node_values("SV")[:, hanoi.node_index("2")])
