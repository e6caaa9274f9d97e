"""Interaction-informed baselines: shapiq's model-agnostic approximators on the graph game,
with every interaction outside I (not inside some receptive field) fixed to zero -- the
structure GraphSHAP-IQ knows to be exact (the paper's §4.2 comparison, in small)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import shapiq
from shapiq import InteractionValues
from torch_geometric.data import Data

from ..errors import ExplainError
from .graphshapiq import GraphSHAPIQ
from .neighbourhoods import receptive_fields

Approximator = Literal["KernelSHAPIQ", "SHAPIQ", "SVARMIQ", "PermutationSamplingSII", "KernelSHAP"]
APPROXIMATORS: tuple[str, ...] = (
    "KernelSHAPIQ",
    "SHAPIQ",
    "SVARMIQ",
    "PermutationSamplingSII",
    "KernelSHAP",
)


def _within_fields(key: tuple[int, ...], fields: list[frozenset[int]]) -> bool:
    members = set(key)
    return any(members <= f for f in fields)


def informed_approximation(
    explainer: GraphSHAPIQ,
    data: Data,
    approximator: Approximator,
    budget: int,
    *,
    index: str = "k-SII",
    order: int = 2,
    seed: int = 0,
    output_index: int | None = None,
) -> InteractionValues:
    """Approximate ``index`` with a shapiq approximator on ``budget`` model calls, then zero
    every interaction that lies in no receptive field."""
    if approximator not in APPROXIMATORS:
        raise ExplainError(
            f"unknown approximator '{approximator}' (choose from {', '.join(APPROXIMATORS)})"
        )
    if budget < 2:
        raise ExplainError(f"budget must be >= 2 model calls (got {budget})")
    game = explainer.game(data, output_index)
    n = game.n_players
    if approximator == "KernelSHAP":
        index, order = "SV", 1
        approx = shapiq.KernelSHAP(n, random_state=seed)
    else:
        approx = getattr(shapiq, approximator)(n, max_order=order, index=index, random_state=seed)
    values = approx.approximate(budget, game)
    fields = [
        frozenset(f.tolist()) for f in receptive_fields(game.edge_index, n, explainer.n_layers)[-1]
    ]
    kept = {k: v for k, v in values.dict_values.items() if _within_fields(k, fields)}
    lookup = {k: i for i, k in enumerate(kept)}
    return InteractionValues(
        values=np.array(list(kept.values())),
        index=values.index,
        max_order=values.max_order,
        min_order=values.min_order,
        n_players=n,
        interaction_lookup=lookup,
        estimated=True,
        estimation_budget=budget,
        baseline_value=values.baseline_value,
    )
