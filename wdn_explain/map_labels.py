"""Where a map's text label goes: beside its point, clear of the node markers and their ids,
inside the drawn area.

Plotly writes a trace's text beside its marker at one of nine ``textposition`` values, in
pixels; a map's pixels per metre are known only in the browser (equal aspect, the page's
column width). So a label is placed where it is free at every width a map is shown at
(:data:`MAP_WIDTHS_PX`, :data:`PANEL_WIDTHS_PX`, :data:`COLUMN_WIDTHS_PX`), from estimates
of the text's size (:func:`text_size_px`) and of where Plotly puts it (:func:`text_box_px`,
after plotly.js ``textPointPosition``): :func:`free_position`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POSITIONS = (
    "bottom center",
    "top center",
    "middle right",
    "middle left",
    "bottom right",
    "bottom left",
    "top right",
    "top left",
)
"""Where a label may go, in order of preference (below its point first)."""
MAP_WIDTHS_PX = (480, 640, 810)
"""Widths the SI-Graph is shown at (the app at 1280 x 900 px: 478 beside the panels on
Hanoi, 810 across the page on L-Town; wider screens)."""
PANEL_WIDTHS_PX = (316, 400, 480)
"""Widths a side panel's map of a network with node labels is shown at, beside the SI-Graph
(the app at 1280 x 900 px: 316; wider screens)."""
COLUMN_WIDTHS_PX = (260, 320, 400)
"""Widths a side panel's map of a larger network is shown at, in one of three columns below
the SI-Graph (the app at 1280 x 900 px: ~260; wider screens)."""
COLORBAR_PX = 80
"""What the colour bars at a map's right and their labels take from its width (measured:
74-85)."""
CHAR_EM = 0.5
"""A character's mean width in ems, with room to spare (measured in headless Chromium:
0.45 for ``20: source on (1.5 mg/L)`` in Plotly's sans-serif)."""
LINE_EM = 1.3
"""Line height in ems (plotly.js ``LINE_SPACING``)."""


def text_size_px(text: str, font_px: float) -> tuple[float, float]:
    """Estimated (width, height) in pixels of ``text`` (lines split at ``<br>``) written in
    a font of ``font_px`` pixels."""
    lines = text.split("<br>")
    return CHAR_EM * font_px * max(len(line) for line in lines), LINE_EM * font_px * len(lines)


def text_box_px(position: str, text: str, font_px: float, marker_px: float) -> np.ndarray:
    """The box (x0, x1, y0, y1) in pixels, y upwards, relative to its point, that ``text``
    at ``position`` covers beside a marker of diameter ``marker_px`` (plotly.js keeps it
    ``radius / 0.8 + 1`` pixels off the point)."""
    width, height = text_size_px(text, font_px)
    gap = marker_px / 2 / 0.8 + 1 if marker_px else 0.0
    x0 = {"left": -gap - width, "right": gap}.get(position.split()[1], -width / 2)
    y0 = {"top": gap, "bottom": -gap - height}.get(position.split()[0], -height / 2)
    return np.array([x0, x0 + width, y0, y0 + height])


@dataclass(frozen=True)
class MapView:
    """A map laid out at one width: ``(xy - origin) * scale`` are the pixels of data
    coordinates ``xy`` in a plot area of ``size`` pixels (equal aspect: Plotly widens the
    axis range that has room to spare)."""

    origin: np.ndarray
    scale: float
    size: np.ndarray


def map_views(
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    height: int,
    margin: dict,
    colorbar: bool,
    widths: tuple[int, ...],
) -> list[MapView]:
    """The map with axis ranges ``x_range``, ``y_range`` (data units), ``height`` and
    ``margin`` (px, Plotly's ``l r t b``) at each of ``widths``, with colour bars at its
    right when ``colorbar``."""
    span = np.array([x_range[1] - x_range[0], y_range[1] - y_range[0]])
    centre = np.array([sum(x_range), sum(y_range)]) / 2
    views = []
    for width in widths:
        size = np.array(
            [
                width - margin["l"] - margin["r"] - (COLORBAR_PX if colorbar else 0),
                height - margin["t"] - margin["b"],
            ],
            dtype=float,
        )
        scale = float(np.min(size / span))
        views.append(MapView(centre - size / scale / 2, scale, size))
    return views


def position_clashes(
    *,
    xy: np.ndarray,
    at: int,
    text: str,
    font_px: float,
    marker_px: float,
    node_px: np.ndarray | float,
    views: list[MapView],
    node_labels: tuple[list[str], float] | None = None,
) -> np.ndarray:
    """Clashes of the label ``text`` of node ``at`` at each of :data:`POSITIONS`, summed
    over ``views``: node markers it covers (diameters ``node_px``, the labelled node's own
    excepted), node ids it covers (``node_labels``: the ids and their font size, written
    ``top right`` of their markers), and one for leaving the plot. Shape (8,)."""
    others = np.arange(len(xy)) != at
    boxes = np.array([text_box_px(p, text, font_px, marker_px) for p in POSITIONS])  # (8, 4)
    radii = np.broadcast_to(np.asarray(node_px, dtype=float) / 2, (len(xy),))[others]
    ids = None  # the other nodes' ids, written top right of their markers: relative boxes
    if node_labels is not None:
        names, size = node_labels
        gap = radii / 0.8 + 1
        width = CHAR_EM * size * np.array([len(names[i]) for i in np.flatnonzero(others)])
        ids = np.column_stack([gap, gap + width, gap, gap + LINE_EM * size])
    clashes = np.zeros(len(POSITIONS), dtype=int)
    for view in views:
        pixels = (xy - view.origin) * view.scale
        box = boxes + np.repeat(pixels[at], 2)  # (8, 4): x0, x1, y0, y1
        centres = pixels[others]
        nearest = np.clip(centres[None], box[:, None, [0, 2]], box[:, None, [1, 3]])
        clashes += (np.linalg.norm(centres[None] - nearest, axis=2) < radii).sum(axis=1)
        if ids is not None:
            other = ids + np.repeat(centres, 2, axis=1)
            apart = (
                (other[None, :, 1] <= box[:, None, 0])
                | (box[:, None, 1] <= other[None, :, 0])
                | (other[None, :, 3] <= box[:, None, 2])
                | (box[:, None, 3] <= other[None, :, 2])
            )
            clashes += (~apart).sum(axis=1)
        inside = (box[:, [0, 2]] >= 0).all(axis=1) & (box[:, [1, 3]] <= view.size).all(axis=1)
        clashes += ~inside
    return clashes


def free_position(**label) -> tuple[str, int]:
    """The first of :data:`POSITIONS` where the label clashes with nothing
    (:func:`position_clashes`, same keyword arguments), else the one with the fewest
    clashes; and its clashes."""
    clashes = position_clashes(**label)
    best = int(np.argmin(clashes))
    return POSITIONS[best], int(clashes[best])
