"""The readout check: whether the MIs a method computed recover the model's output (on N, the
empty coalition, the largest receptive fields and random coalitions) within float rounding, as
they do when pooling and output layer are linear; and the recovery error it is built on."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from ..errors import ExplainError
from .blocks import MoebiusBlocks
from .game import GraphGame
from .hypercube import (
    subset_sum,
)

RANDOM_CHECKS = 8  # random coalitions of the readout check, beside N, ∅ and the fields
MAX_FIELD_CHECKS = 8  # receptive fields checked by their own coalition (the largest first)
READOUT_TOLERANCE_EPS = 64  # readout tolerance: float epsilons of the model's dtype x (1 + max|nu|)
# ... or, on graphs of more nodes, that many epsilons: pooling sums one term per node, and the
# rounding of such a sum grows with its length (a 400-atom chain misses by ~70 eps in float32)


def check_coalitions(
    game: GraphGame, blocks: list[MoebiusBlocks], fields: list[np.ndarray], check: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coalitions to evaluate after explaining: N and ∅ first, then (when ``check``) the
    largest receptive fields and random coalitions; the values the MIs of each target
    recover on them and the sums of the absolute MIs recovered (the scale of the rounding),
    both (coalitions, targets)."""
    n = game.n_players
    rows = [np.ones(n, bool), np.zeros(n, bool)]
    if check:
        largest = sorted({tuple(f.tolist()) for f in fields}, key=len, reverse=True)
        for f in largest[:MAX_FIELD_CHECKS]:
            row = np.zeros(n, bool)
            row[list(f)] = True
            rows.append(row)
        rng = np.random.default_rng(0)
        rows.extend(rng.random((RANDOM_CHECKS, n)) < rng.uniform(0.2, 0.8, (RANDOM_CHECKS, 1)))
    coalitions = np.stack(rows)
    if not check:
        zeros = np.zeros((len(rows), len(blocks)))
        return coalitions, zeros, zeros
    predicted = np.stack([recovered_values(b, coalitions) for b in blocks], axis=1)
    magnitude = np.stack([recovered_values(b, coalitions, absolute=True) for b in blocks], axis=1)
    return coalitions, predicted, magnitude


def recovered_values(
    blocks: MoebiusBlocks, coalitions: np.ndarray, *, absolute: bool = False
) -> np.ndarray:
    """sum_{S ⊆ T} m(S) for every row T of a boolean (m, n) coalition matrix (with
    ``absolute``: sum_{S ⊆ T} |m(S)|, the size of what is summed)."""
    predicted = np.full(len(coalitions), abs(blocks.constant) if absolute else blocks.constant)
    for k, (nodes, mi) in blocks.groups.items():
        mi = np.abs(mi) if absolute else mi.copy()
        values = subset_sum(mi)  # block game values v_b(M) = sum_{S ⊆ M} m_b(S)
        local = (coalitions[:, nodes] * (1 << np.arange(k))[None, None, :]).sum(axis=2)
        predicted += values[np.arange(len(nodes))[None, :], local].sum(axis=1)
    return predicted


def recovery_error(
    game: GraphGame, blocks: MoebiusBlocks, *, n_samples: int = 8, seed: int = 0
) -> float:
    """Largest |nu(T) - sum_{S ⊆ T} m(S)| over random coalitions T (MI recovery test)."""
    rng = np.random.default_rng(seed)
    n = game.n_players
    coalitions = rng.random((n_samples, n)) < rng.uniform(0.2, 0.8, size=(n_samples, 1))
    return float(np.abs(game.evaluate(coalitions) - recovered_values(blocks, coalitions)).max())


def check_readout(
    actual: np.ndarray,
    predicted: np.ndarray,
    magnitude: np.ndarray,
    dtype: torch.dtype,
    nodes: tuple[int, ...] | None,
    n_nodes: int,
    *,
    n_layers: int,
    mode: str,
) -> None:
    """Raise or warn when MI recovery misses by more than the model's float rounding;
    always raise when the model's output is not finite (NaN or infinite weights or
    inputs), which no readout explains. ``actual``, ``predicted`` and ``magnitude`` are
    (coalitions, targets), rows as in :func:`check_coalitions`; ``n_layers`` is the explainer's, ``mode`` its
    ``readout_check`` ("error" raises, else warns).

    The rounding allowed grows with the MIs summed at a coalition (``magnitude``: sum of
    their absolute values) and with the number of nodes the pooling sums, so that large
    graphs are not refused for float rounding alone."""
    n_fields = len(actual) - 2 - RANDOM_CHECKS
    where = ["the whole graph (efficiency gap)", "the empty coalition"]
    where += [f"receptive field {i + 1} (largest first)" for i in range(n_fields)]
    where += ["a random coalition"] * RANDOM_CHECKS
    if not np.isfinite(actual).all():
        row, target = np.argwhere(~np.isfinite(actual))[0]
        raise ExplainError(
            f"the model's output is {actual[row, target]} on {where[row]}: NaN or infinite "
            "values in its parameters or in the graph's features (check the weights)"
        )
    violation = np.abs(actual - predicted)
    scale = 1.0 + np.maximum(np.abs(actual).max(axis=0)[None, :], magnitude)
    tolerance = max(READOUT_TOLERANCE_EPS, n_nodes) * torch.finfo(dtype).eps * scale
    excess = violation / tolerance
    row, target = np.unravel_index(int(excess.argmax()), excess.shape)
    if excess[row, target] <= 1:
        return
    what = (
        f"the model's output is not a linear readout of {n_layers}-hop node embeddings"
        if nodes is None
        else f"the model's output at node {nodes[target]} is not a function of its "
        f"{n_layers}-hop receptive field"
    )
    msg = (
        f"{what}: Möbius recovery misses by {violation[row, target]:.3g} on {where[row]} "
        f"(tolerance {tolerance[row, target]:.2g} for {dtype} and {n_nodes} nodes), so the "
        "explanation would not be exact (check n_layers and that pooling and output layer "
        "are linear; "
        "readout_check='off' skips this test)"
    )
    if mode == "error":
        raise ExplainError(msg)
    warnings.warn(msg, stacklevel=4)
