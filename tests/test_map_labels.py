"""Where a map's label goes (wdn_explain/map_labels.py), on toy maps whose free side is
known by construction."""

import numpy as np
import pytest

from wdn_explain.map_labels import POSITIONS, free_position, map_views, position_clashes

MARGIN = dict(l=10, r=10, t=10, b=10)


def _views(width=400):
    """A 400 x 400 px map (no colour bar) of the square [-100, 100]^2: 380 px for 200
    units after the margins, 1.9 px per unit (a node 10 units off is 19 px off)."""
    return map_views((-100, 100), (-100, 100), 400, MARGIN, colorbar=False, widths=(width,))


@pytest.mark.parametrize(
    ("blocked", "expected"),
    [
        ([(0, -10), (0, 10), (10, 0)], "middle left"),  # below, above and right taken
        ([(0, -10), (0, 10), (-10, 0)], "middle right"),
        ([(0, -10), (-10, 0), (10, 0)], "top center"),
        ([], "bottom center"),  # all free: the first preference
    ],
)
def test_the_label_takes_the_free_side(blocked, expected):
    xy = np.array([(0.0, 0.0), *blocked])
    label = dict(xy=xy, at=0, text="src", font_px=12, marker_px=10, node_px=10.0)
    position, clashes = free_position(views=_views(), **label)
    assert (position, clashes) == (expected, 0)


def test_a_label_leaving_the_map_clashes():
    """A point at the map's left edge: every position that reaches left of the plot area
    counts one clash, the others none."""
    xy = np.array([(-100.0, 0.0)])
    clashes = position_clashes(
        xy=xy, at=0, text="a long label", font_px=12, marker_px=10, node_px=10.0, views=_views()
    )
    left = [p.endswith("left") or p.endswith("center") for p in POSITIONS]
    np.testing.assert_array_equal(clashes, np.array(left, dtype=int))


def test_node_ids_are_obstacles_too():
    """A node to the lower right whose marker is clear of the label below, but whose id
    (written top right of it) reaches under the point: ``bottom center`` clashes only when
    the ids are given."""
    xy = np.array([(0.0, 0.0), (-12.0, -18.0)])
    label = dict(xy=xy, at=0, text="src", font_px=12, marker_px=10, node_px=4.0)
    bare = position_clashes(views=_views(), **label)
    named = position_clashes(views=_views(), node_labels=(["0", "a long id"], 12), **label)
    below = POSITIONS.index("bottom center")
    assert bare[below] == 0 and named[below] == 1
