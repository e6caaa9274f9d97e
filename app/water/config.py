"""The water page's settings: constants, the user cache, widget keys and charts."""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st
from live_chart import live_chart

from wdn_explain.files import cache_root

logger = logging.getLogger("wdn_explain.app")
INDICES = ["SV", "k-SII", "STII", "FSII", "Moebius"]
MAX_DURATION_S = 12 * 3600
DURATION_HELP = (
    "simulated time; the first forecast is made at 0 min, the last one horizon before the end"
)
PLAY_S = 0.5  # seconds per frame while playing (a frame waits for the previous one)
CHART = {"displayModeBar": False}  # no Plotly toolbar over the titles
# maps: wheel zoom, drag a box, double-click resets; the toolbar (zoom, pan, reset, PNG)
# shows while the pointer is over the map
MAP = {
    "scrollZoom": True,
    "displaylogo": False,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"],
    "toImageButtonOptions": {"scale": 2},
}
ZOOM_HINT = "scroll to zoom, drag a box, double-click to reset; the toolbar saves a PNG"
# Less empty space above the page, so that the map starts high on a 900 px screen.
# Narrow side padding: at 1280 px beside the sidebar the page keeps ~930 px for a large
# network's full-width maps (Streamlit's 5rem each side left ~820 px).
COMPACT = (
    "<style>[data-testid='stMainBlockContainer']"
    "{padding-top:2.5rem;padding-left:1.5rem;padding-right:1.5rem}</style>"
)
LARGE_MAP_PX = 560  # the height of a large network's full-width chlorine map


def keyed(name: str) -> str:
    """A widget key of the chosen model: every model gets its own widgets, so the sidebar
    never shows another model's scenario, injection node or followed node."""
    return f"{name}@{st.session_state.get('model', '')}"


# Under the drivers table (a plain HTML table: every number shows at 1280 px and copies).
DRIVERS_NOTE = (
    "value: what the driver adds to the forecast; of the difference: its share of the "
    "forecast minus the reference's forecast"
)

MAP_VIEWS = {
    "chlorine": "chlorine (mg/L)",
    "compliance": "below the minimum",
    "risk": "risk of non-compliance",  # node models with a calibrated risk only
}
RISK_NOTE = (
    "Risk: the calibrated probability that the node's chlorine one horizon ahead is below "
    "the minimum residual the model was calibrated at; its exact explanation is that of the "
    "risk model's score (or, without a risk model, of the forecast) times a constant per "
    "node and kind of injection."
)
PANELS_ON_PAUSE = (
    "Playing: the SI-Graph and its sentence move, the pipes by flow without their arrows; "
    "the flow arrows, drivers table, forecast chart, chlorine map and followed node show "
    "the step you pause at."
)


BUILT = "built_model"  # the session key through which a new model is chosen after a rerun
VERDICT = "built_verdict"  # the session key of a new model's verdict against the tree


def cache_dir() -> Path:
    """The user cache of computed timelines and the charts' assets (:func:`cache_root`: read
    on every script run, as the page's settings are)."""
    return cache_root()


def chart(fig, *, key: str, config: dict) -> None:
    """Every chart of the page, updated in place on a rerun (:func:`live_chart.live_chart`)."""
    live_chart(fig, key=key, config=config, cache_dir=cache_dir())
