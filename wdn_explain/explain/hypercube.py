"""Set functions on hypercubes: fast Möbius and superset-sum transforms, set keys.

A *block* is a set function on all subsets of a small sorted node list ``nodes`` (k nodes):
a vector of length 2**k indexed by local bitmasks, bit b standing for ``nodes[b]``. Blocks
of equal size are stacked as arrays of shape (n_blocks, 2**k), so every transform is k
vectorised passes over the stack (Yates' algorithm: k * 2**k instead of 3**k per block).
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from threadpoolctl import ThreadpoolController

YATES_GROUP_BITS = 4  # bits transformed per pass: one small matrix product each


@lru_cache(maxsize=64)
def _pass_matrix(bits: int, target: int, sign: float) -> np.ndarray:
    """The transform of ``bits`` bits at once: the Kronecker power of the one-bit map."""
    one_bit = np.eye(2)
    one_bit[target, 1 - target] = sign
    matrix = np.ones((1, 1))
    for _ in range(bits):
        matrix = np.kron(one_bit, matrix)
    matrix.flags.writeable = False
    return matrix


@cache
def _blas() -> ThreadpoolController:
    """numpy's BLAS thread pool (created once, after numpy loaded it)."""
    return ThreadpoolController()


def _yates(values: np.ndarray, target: int, sign: float) -> np.ndarray:
    """Yates' algorithm in place over stacked blocks of shape (n_blocks, 2**k): for each bit,
    the half of each pair with bit value ``target`` gets ``sign`` times the other half added.
    Bits are taken ``YATES_GROUP_BITS`` at a time as one product with a 16 x 16 matrix
    of 0/±1 (the same sums as bit by bit, in a faster order), on one BLAS thread: the
    products are memory-bound, and BLAS threads only spin against a busy core."""
    with _blas().limit(limits=1, user_api="blas"):
        return _yates_passes(values, target, sign)


def _yates_passes(values: np.ndarray, target: int, sign: float) -> np.ndarray:
    n_blocks, size = values.shape
    k = size.bit_length() - 1
    bit = 0
    while bit < k:
        bits = min(YATES_GROUP_BITS, k - bit)
        matrix = _pass_matrix(bits, target, sign)
        if bit == 0:
            rows = values.reshape(-1, 1 << bits)
            rows[...] = rows @ matrix.T
        else:
            view = values.reshape(n_blocks, -1, 1 << bits, 1 << bit)
            view[...] = np.matmul(matrix, view)
        bit += bits
    return values


def moebius_transform(values: np.ndarray) -> np.ndarray:
    """Möbius transform in place: m(S) = sum_{T<=S} (-1)^{|S|-|T|} v(T); shape (n_blocks, 2**k)."""
    return _yates(values, 1, -1.0)


def subset_sum(values: np.ndarray) -> np.ndarray:
    """Inverse Möbius (zeta) transform in place: v(S) = sum_{T<=S} m(T)."""
    return _yates(values, 1, 1.0)


def superset_sum(values: np.ndarray) -> np.ndarray:
    """Superset-sum transform in place: z(S) = sum_{T>=S} f(T)."""
    return _yates(values, 0, 1.0)


@lru_cache(maxsize=64)
def popcounts(k: int) -> np.ndarray:
    """Number of set bits of every local mask 0 .. 2**k - 1 (read-only)."""
    counts = np.zeros(1, dtype=np.int64)
    for _ in range(k):
        counts = np.concatenate([counts, counts + 1])
    counts.flags.writeable = False
    return counts


@lru_cache(maxsize=256)
def masks_of_size(k: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Local masks with ``size`` bits set, and their bit positions, shape (C(k, size), size)."""
    masks = np.flatnonzero(popcounts(k) == size)
    bits = (masks[:, None] >> np.arange(k)[None, :]) & 1
    positions = np.nonzero(bits)[1].reshape(len(masks), size)
    masks.flags.writeable = False
    positions.flags.writeable = False
    return masks, positions


def project_masks(k: int, positions: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
    """Map local masks over k nodes to masks over the sub-list at ``positions``.

    Bit b of the result is bit ``positions[b]`` of the input; ``masks`` defaults to all
    2**k masks. Two lookup tables (low and high bits) make it two gathers per mask.
    """
    if masks is None:
        masks = np.arange(2**k, dtype=np.int64)
    low = min(k, _TABLE_BITS)
    positions = np.asarray(positions, dtype=np.int64)
    low_table = _project_table(low, tuple(positions.tolist()), 0)
    high_table = _project_table(k - low, tuple(positions.tolist()), low)
    return low_table[masks & ((1 << low) - 1)] | high_table[masks >> low]


_TABLE_BITS = 12


@lru_cache(maxsize=1024)
def _project_table(bits: int, positions: tuple[int, ...], shift: int) -> np.ndarray:
    """Projected value of every ``bits``-bit mask standing for input bits shift.. (read-only)."""
    masks = np.arange(2**bits, dtype=np.int64)
    out = np.zeros(2**bits, dtype=np.int64)
    for b, p in enumerate(positions):
        if shift <= p < shift + bits:
            out |= ((masks >> (p - shift)) & 1) << b
    out.flags.writeable = False
    return out


def global_keys(nodes: np.ndarray, n_players: int) -> np.ndarray:
    """Collision-free keys of every subset of each block, shape (n_blocks * 2**k, n_words).

    Keys are bitmasks over all players split into 64-bit words (word w holds players
    64w .. 64w + 63); for up to 64 players that is a single column.
    """
    n_blocks, k = nodes.shape
    n_words = max(1, -(-n_players // 64))
    masks = np.arange(2**k, dtype=np.uint64)
    keys = np.zeros((n_blocks, 2**k, n_words), dtype=np.uint64)
    for b in range(k):
        has = ((masks >> np.uint64(b)) & np.uint64(1)).astype(bool)  # (2**k,)
        word = nodes[:, b] // 64
        bit = np.uint64(1) << (nodes[:, b] % 64).astype(np.uint64)  # (n_blocks,)
        for w in np.unique(word):
            rows = word == w
            keys[rows, :, w] |= np.where(has[None, :], bit[rows, None], np.uint64(0))
    return keys.reshape(n_blocks * 2**k, n_words)


def set_key(members, n_players: int) -> np.ndarray:
    """The key row (see :func:`global_keys`) of one set of players, shape (1, n_words)."""
    key = np.zeros((1, max(1, -(-n_players // 64))), dtype=np.uint64)
    for m in members:
        key[0, m // 64] |= np.uint64(1) << np.uint64(m % 64)
    return key


def unique_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique over key rows: (unique rows, index of first occurrence, inverse)."""
    if keys.shape[1] == 1:
        uniq, first, inverse = np.unique(keys[:, 0], return_index=True, return_inverse=True)
        return uniq[:, None], first, inverse.ravel()
    keys = np.ascontiguousarray(keys)
    view = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
    _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
    return keys[first], first, inverse.ravel()


def keys_to_members(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Members of keyed sets as (set index, player) pairs, sorted by set then player."""
    n_sets, n_words = keys.shape
    set_idx, players = [], []
    for w in range(n_words):
        bits = np.unpackbits(keys[:, w : w + 1].view(np.uint8), axis=1, bitorder="little")
        rows, cols = np.nonzero(bits)
        set_idx.append(rows)
        players.append(cols + 64 * w)
    rows, cols = np.concatenate(set_idx), np.concatenate(players)
    order = np.lexsort((cols, rows))
    return rows[order], cols[order]
