import numpy as np

from wdn_explain.explain.hypercube import (
    global_keys,
    keys_to_members,
    masks_of_size,
    moebius_transform,
    project_masks,
    set_key,
    subset_sum,
    superset_sum,
    unique_keys,
)


def test_transforms_against_their_definitions():
    values = np.random.default_rng(0).normal(size=(3, 32))
    m = moebius_transform(values.copy())
    z = superset_sum(values.copy())
    subsets = lambda s: [t for t in range(32) if t & s == t]  # noqa: E731
    for s in range(32):
        size = bin(s).count("1")
        expected = sum((-1) ** (size - bin(t).count("1")) * values[:, t] for t in subsets(s))
        np.testing.assert_allclose(m[:, s], expected, atol=1e-12)
        np.testing.assert_allclose(
            z[:, s], sum(values[:, t] for t in range(32) if t & s == s), atol=1e-12
        )
    np.testing.assert_allclose(subset_sum(m), values, atol=1e-12)


def test_keys_are_collision_free_beyond_64_players():
    nodes = np.array([[0, 63, 64], [1, 64, 130]])
    keys = global_keys(nodes, 131)
    assert keys.shape == (16, 3)
    uniq, first, inverse = unique_keys(keys)
    assert len(uniq) == 14  # the empty set and {64} stand in both blocks
    rows, cols = keys_to_members(uniq)
    sets = {tuple(cols[rows == r]) for r in range(len(uniq))}
    assert (0, 63, 64) in sets and (1, 64, 130) in sets and (64,) in sets
    np.testing.assert_array_equal(set_key([1, 64, 130], 131)[0], keys[15])


def test_masks_and_projection():
    masks, positions = masks_of_size(4, 2)
    assert masks.tolist() == [3, 5, 6, 9, 10, 12]
    assert positions.tolist()[1] == [0, 2]
    # local masks over (a, b, c) projected to the sub-list (a, c)
    assert project_masks(3, np.array([0, 2])).tolist() == [0, 1, 0, 1, 2, 3, 2, 3]
