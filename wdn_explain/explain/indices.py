"""Exact conversion of Möbius interactions (MIs) to Shapley and Banzhaf interaction indices.

Every index below is linear in the MIs with a weight that depends only on the sizes of the
MI's set T (u = |T|) and of the explained set S (s = |S|), and on the order k:
I(S) = sum_{T ⊇ S} w(u, s, k) m(T). The MIs are held as hypercube blocks
(:mod:`.hypercube`), so the sum over supersets is a superset-sum transform on each block.

Weights (see e.g. shapiq's ``MoebiusConverter`` for reference behaviour):
SII 1/(u-s+1); k-SII sum_j B_j C(u-s, j)/(u-s-j+1) over j <= min(k, u) - s (Bord et al. 2023,
Bernoulli numbers B_j); STII m(S) below order k and m(T)/C(u, k) at order k (Sundararajan
et al. 2020); FSII and FBII the closed forms of Tsai et al. 2022; BII (1/2)^(u-s).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from scipy.special import bernoulli, comb

from ..errors import ExplainError

Index = Literal["SV", "SII", "k-SII", "STII", "FSII", "BV", "BII", "FBII", "Moebius"]
INDICES: tuple[str, ...] = get_args(Index)
_FIRST_ORDER = {"SV": "k-SII", "BV": "BII"}
_SPELLINGS = {"Möbius": "Moebius"}
"""Names people write for an index, accepted beside the ASCII one (shapiq's)."""


DEFAULT_ORDER = 2


def check_index(index: str, order: int | None, max_order: int) -> tuple[str, int]:
    """Validate an index name and order: the one path from (index, order) to what is computed.
    ``Möbius`` is accepted for ``Moebius``.

    SV and BV have order 1 and need none; Moebius keeps the MIs up to size ``order`` (all,
    up to ``max_order``, by default); the other indices default to order 2.

    Returns:
        (base index, order): SV is computed as k-SII and BV as BII of order 1.

    Raises:
        ExplainError: unknown index, or an order that is not a positive integer.
    """
    index = _SPELLINGS.get(index, index)
    if index not in INDICES:
        raise ExplainError(f"unknown index {index!r} (choose from {', '.join(INDICES)})")
    if index in _FIRST_ORDER:
        if order not in (1, None):
            raise ExplainError(f"index '{index}' has order 1 (got order {order})")
        return _FIRST_ORDER[index], 1
    if order is None:
        return index, max_order if index == "Moebius" else DEFAULT_ORDER
    if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 1:
        raise ExplainError(f"order must be a positive integer (got {order!r})")
    return index, min(int(order), max_order) if index == "Moebius" else int(order)


def index_name(index: str) -> str:
    """How people read an index's name: ``Möbius`` for the engine's ASCII ``Moebius``."""
    return "Möbius" if index == "Moebius" else index


@lru_cache(maxsize=256)
def weights(index: str, order: int, max_size: int) -> np.ndarray:
    """Weight table w[u, s] for u = 0..max_size, s = 0..order (read-only)."""
    u = np.arange(max_size + 1)[:, None].astype(float)
    s = np.arange(order + 1)[None, :].astype(float)
    k = order
    below = (u <= k) & (u == s)  # MIs of size <= k go to themselves for STII/FSII/FBII
    with np.errstate(divide="ignore", invalid="ignore"):
        if index == "SII":
            w = 1.0 / (u - s + 1)
        elif index == "Moebius":  # the MIs of size s themselves
            w = (u == s).astype(float)
        elif index == "BII":
            w = 0.5 ** (u - s)
        elif index == "k-SII":
            bern = bernoulli(max(order, 1))
            w = np.zeros((max_size + 1, order + 1))
            for j in range(order + 1):
                term = bern[j] * comb(u - s, j) / (u - s - j + 1)
                w += np.where(j <= np.minimum(k, u) - s, term, 0.0)
        elif index == "STII":
            w = np.where(u <= k, below, (s == k) / comb(u, k))
        elif index == "FSII":
            top = (
                (-1.0) ** (k - s)
                * s
                / (k + s)
                * comb(k, s)
                * comb(u - 1, k)
                / comb(u + k - 1, k + s)
            )
            w = np.where(u <= k, below, top)
        elif index == "FBII":
            top = (-1.0) ** (k - s) * 0.5 ** (u - s) * comb(u - s - 1, k - s)
            w = np.where(u <= k, below, top)
        else:  # pragma: no cover - guarded by check_index
            raise ExplainError(f"unknown index '{index}'")
    w = np.where(u >= s, np.nan_to_num(w), 0.0)
    w.flags.writeable = False
    return w
