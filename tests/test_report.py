"""The report's forecast interval: the band in the HTML chart and the GIF's title, checked
against the arrays the shipped default timeline stores."""

import base64
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from wdn_explain.plot import frame_data
from wdn_explain.report import gif_frame, report_html
from wdn_explain.shipped import DEFAULT_TIMELINE
from wdn_explain.timeline import Timeline


@pytest.fixture(scope="module")
def tl():
    return Timeline.load(DEFAULT_TIMELINE)


def forecast_traces(page: str) -> list[dict]:
    """The traces of the page's forecast chart, read back from its Plotly.newPlot call."""
    start = re.search(r'Plotly\.newPlot\(\s*"forecast",\s*', page).end()
    traces, _ = json.JSONDecoder().raw_decode(page[start:])
    return traces


def values(v) -> np.ndarray:
    """A trace's numbers: a list, or Plotly's typed array (base64 bytes and a dtype)."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
    return np.asarray(v)


def test_report_draws_the_stored_interval_as_a_band_and_names_its_coverage(tl, hanoi):
    assert tl.lower is not None and tl.meta["interval"]["confidence"] == 0.9
    page = report_html(tl, hanoi, index="SV")
    traces = forecast_traces(page)
    names = [t.get("name") for t in traces]
    lower = names.index("90% interval (calibrated)")
    # the band fills from the lower edge up to the trace drawn just before it: the upper edge
    assert traces[lower]["fill"] == "tonexty"
    assert names[lower - 1] == "90% interval (calibrated) upper"
    np.testing.assert_allclose(values(traces[lower]["y"]), tl.lower, rtol=1e-6)
    np.testing.assert_allclose(values(traces[lower - 1]["y"]), tl.upper, rtol=1e-6)
    np.testing.assert_allclose(values(traces[lower]["x"]), tl.times_s / 60)
    assert np.all(tl.lower <= tl.forecast) and np.all(tl.forecast <= tl.upper)
    # drawn under the forecast line, which keeps its own trace and the moving marker
    assert lower < names.index("forecast") and "now" in names
    assert "its 90% interval (split conformal" in page


def test_report_without_intervals_has_no_band_and_no_coverage_sentence(tl, hanoi):
    page = report_html(replace(tl, lower=None, upper=None), hanoi, index="SV")
    names = [t.get("name") for t in forecast_traces(page)]
    assert not any("interval" in str(n) for n in names)
    assert "shaded band" not in page


def test_gif_title_names_the_interval_of_its_step(tl, hanoi):
    import matplotlib.pyplot as plt

    t = 12
    fig = gif_frame(tl, hanoi, t, frame_data(tl, t, "SV", 1, 10), "SV", 1, scale=1.0, top=1.0)
    title = fig._suptitle.get_text()
    plt.close(fig)
    assert f"(90% interval {tl.lower[t]:.2f}–{tl.upper[t]:.2f})" in title


@pytest.mark.parametrize("model", ["default", "hanoi-nodes"])
def test_gif_title_lies_inside_the_frame_and_marks_the_source_as_the_maps_do(model, hanoi):
    """Every line of the GIF's title within the frame's width (it was clipped on both sides),
    in the timeline's own unit; the source drawn as the app's maps draw it (orange star)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    from wdn_explain.narrative import unit
    from wdn_explain.plot import SOURCE_ON
    from wdn_explain.shipped import SHIPPED_ROOT

    tl = Timeline.load(SHIPPED_ROOT / "models" / model / "default_timeline.npz")
    t = len(tl) // 2
    fig = gif_frame(tl, hanoi, t, frame_data(tl, t, "k-SII", 2, 10), "k-SII", 2, scale=1, top=1)
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    title = fig._suptitle.get_text()
    stars = [c for c in fig.axes[0].collections if c.get_paths() and c.get_facecolor().size == 0]
    edge = [tuple(c.get_edgecolor()[0]) for c in stars]
    plt.close(fig)
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, title)
    assert title.replace("\n", " ").endswith(unit(tl))
    assert to_rgba(SOURCE_ON) in edge


def test_report_shows_the_warnings_the_app_shows(tl, hanoi):
    """The hydraulics and model warnings and the design notice, each with its heading, as
    the app shows them above the map; none for a timeline without them."""
    meta = {
        **tl.meta,
        "pressure_warning": "negative pressures at 3 of 32 nodes (down to -5.0 m)",
        "forecast_warning": None,
        "out_of_design": ["strength 5 mg/L (trained on 0.3-2)"],
    }
    page = report_html(replace(tl, meta=meta), hanoi, index="SV")
    assert (
        "<b>Check the hydraulics</b> -- negative pressures at 3 of 32 nodes (down to -5.0 m)."
        in page
    )
    assert "<b>Outside what this model learned</b>" in page and "strength 5 mg/L" in page
    assert "Check the model" not in page
    clean = {**tl.meta, "pressure_warning": None, "out_of_design": []}
    page = report_html(replace(tl, meta=clean), hanoi, index="SV")
    assert "class='warning'" not in page
