"""Receptive fields and the interaction family I of GraphSHAP-IQ.

With L message-passing layers and a linear pooling and readout, the Möbius interaction
m(S) vanishes unless S lies inside the L-hop receptive field N_i of some node i
(Muschalik, Fumagalli et al., ICLR 2025, Thm. 3.6). The non-trivial interactions are
I = union of the power sets of all N_i, and exact Shapley interactions need |I| game values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from scipy.special import comb

from ..errors import ExplainError
from .hypercube import global_keys, unique_keys


def _as_numpy(edge_index: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(edge_index, torch.Tensor):
        edge_index = edge_index.detach().cpu().numpy()
    return np.asarray(edge_index, dtype=np.int64)


def receptive_fields(
    edge_index: torch.Tensor | np.ndarray, n_nodes: int, n_layers: int
) -> list[list[np.ndarray]]:
    """Sorted receptive fields per layer: ``fields[l][i]`` holds the nodes whose features
    reach node i within l message-passing steps (edges run source -> target), i included.

    Returns a list of length ``n_layers + 1``; ``fields[0][i] == [i]``.
    """
    if n_layers < 1:
        raise ExplainError(f"the number of message-passing layers must be >= 1 (got {n_layers})")
    src, dst = _as_numpy(edge_index)
    incoming = sp.csr_matrix(
        (np.ones(len(src), dtype=bool), (dst, src)), shape=(n_nodes, n_nodes), dtype=bool
    )
    reach = sp.identity(n_nodes, dtype=bool, format="csr")
    fields = [[np.array([i]) for i in range(n_nodes)]]
    for _ in range(n_layers):
        reach = (reach + incoming @ reach).tocsr()
        reach.sort_indices()
        fields.append(
            [
                reach.indices[reach.indptr[i] : reach.indptr[i + 1]].astype(np.int64)
                for i in range(n_nodes)
            ]
        )
    return fields


def maximal_fields(fields: list[np.ndarray]) -> list[np.ndarray]:
    """Distinct fields that are not a subset of another field (their power sets cover I)."""
    unique = {tuple(f.tolist()) for f in fields}
    ordered = sorted(unique, key=len, reverse=True)
    kept: list[frozenset[int]] = []
    out = []
    for f in ordered:
        s = frozenset(f)
        if not any(s <= other for other in kept):
            kept.append(s)
            out.append(np.array(f, dtype=np.int64))
    return out


def group_by_size(fields: list[np.ndarray]) -> dict[int, np.ndarray]:
    """Stack fields of equal size: size k -> array (n_fields_k, k)."""
    groups: dict[int, list[np.ndarray]] = {}
    for f in fields:
        groups.setdefault(len(f), []).append(f)
    return {k: np.stack(v) for k, v in sorted(groups.items())}


@dataclass(frozen=True)
class Complexity:
    """Cost of exact explanation of one graph.

    Attributes:
        n_nodes: Players n.
        n_layers: Message-passing layers L.
        max_field: Largest receptive field max |N_i|.
        n_interactions: |I| (exact when ``exact``, else the Thm. 3.7 bound sum_i 2^|N_i|).
        exact: Whether ``n_interactions`` was counted rather than bounded.
    """

    n_nodes: int
    n_layers: int
    max_field: int
    n_interactions: int
    exact: bool

    @property
    def n_coalitions(self) -> int:
        """2^n, the cost of brute force."""
        return 2**self.n_nodes


def count_interactions(fields: list[np.ndarray], n_nodes: int) -> int:
    """|I|: distinct subsets over all receptive fields, counted by unique bitmask keys."""
    keys = np.concatenate(
        [global_keys(nodes, n_nodes) for nodes in group_by_size(maximal_fields(fields)).values()]
    )
    return len(unique_keys(keys)[0])


def counting_bytes(fields: list[np.ndarray], n_nodes: int) -> int:
    """Memory an exact count of |I| needs: one bitmask key per subset of every maximal field
    (``n_nodes / 64`` words each), about three copies while deduplicating."""
    n_words = max(1, -(-n_nodes // 64))
    return 3 * 8 * n_words * sum(2 ** len(f) for f in maximal_fields(fields))


def interaction_count(
    fields: list[np.ndarray],
    n_nodes: int,
    *,
    max_exact_field: int = 24,
    max_count_bytes: int = 2**30,
) -> tuple[int, bool]:
    """(|I|, True) counted exactly while max |N_i| <= ``max_exact_field`` and the count fits
    in ``max_count_bytes`` (see :func:`counting_bytes`), else (the Theorem 3.7 bound
    ``min(2^n, sum_i 2^|N_i|)`` over maximal fields, False). Never exhausts memory."""
    largest = max((len(f) for f in fields), default=0)
    if largest <= max_exact_field and counting_bytes(fields, n_nodes) <= max_count_bytes:
        return count_interactions(fields, n_nodes), True
    return min(2**n_nodes, sum(2 ** len(f) for f in maximal_fields(fields))), False


def complexity(
    edge_index: torch.Tensor | np.ndarray,
    n_nodes: int,
    n_layers: int,
    *,
    max_exact_field: int = 24,
    max_count_bytes: int = 2**30,
) -> Complexity:
    """|I| for a graph, counted or bounded by :func:`interaction_count` (flagged
    ``exact=False`` when bounded), so the check never exhausts memory, whatever the network
    and L."""
    fields = receptive_fields(edge_index, n_nodes, n_layers)[-1]
    largest = max((len(f) for f in fields), default=0)
    count, exact = interaction_count(
        fields, n_nodes, max_exact_field=max_exact_field, max_count_bytes=max_count_bytes
    )
    return Complexity(n_nodes, n_layers, largest, count, exact)


def approximation_calls(maximal: list[np.ndarray], lam: int) -> int:
    """Model calls of the lambda-approximation at most: every subset of size <= ``lam`` of
    every maximal field (from :func:`maximal_fields`), plus one call per maximal field."""
    return sum(int(comb(len(f), np.arange(lam + 1)).sum()) for f in maximal) + len(maximal)
