"""What is explained: node targets checked against the graph, and the rows of the model's
output that hold a graph's or each node's value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import ExplainError

if TYPE_CHECKING:
    pass


def check_nodes(nodes: Sequence[int], n: int) -> tuple[int, ...]:
    """Target nodes as a tuple of ints in 0..n-1.

    Raises:
        ExplainError: no targets, or a target that is not an integer node index.
    """
    if isinstance(nodes, torch.Tensor | np.ndarray):
        nodes = nodes.tolist()
    if isinstance(nodes, int | str) or not isinstance(nodes, Sequence) or not len(nodes):
        raise ExplainError(f"nodes must be a non-empty list of node indices (got {nodes!r})")
    for v in nodes:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or not 0 <= v < n:
            shown = v.item() if isinstance(v, np.generic) else v
            raise ExplainError(f"target node must be an integer in 0..{n - 1} (got {shown!r})")
    return tuple(int(v) for v in nodes)


def output_rows(y: torch.Tensor, n: int, node_level: bool, name: str) -> torch.Tensor:
    """The model's output on one graph as (rows, C): one row for the graph, or one per node.

    Raises:
        ExplainError: the shape does not fit the target (the message says which it fits).
    """
    rows = y[:, None] if y.ndim == 1 else y
    if node_level:
        if rows.ndim == 2 and rows.shape[0] == n:
            return rows
        if rows.ndim == 2 and rows.shape[0] == 1:
            raise ExplainError(
                f"a target node needs one output row per node, but {name} returns one per "
                f"graph, shape {tuple(y.shape)} (explain the graph without node=)"
            )
        raise ExplainError(
            f"a node-level model must return shape ({n},) or ({n}, C) for a graph of {n} "
            f"nodes (got {tuple(y.shape)} from {name})"
        )
    if rows.ndim == 2 and rows.shape[0] == 1:
        return rows
    hint = "; a per-node output is explained with node=" if rows.shape[:1] == (n,) else ""
    raise ExplainError(
        f"the model must return shape (1,) or (1, C) for one graph (got {tuple(y.shape)}){hint}"
    )
