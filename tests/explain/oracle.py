"""The test oracle: the graph game computed in the test itself, one unbatched model call per
coalition, fed to shapiq's ``ExactComputer`` (nothing here uses the engine)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from shapiq import ExactComputer


class Oracle:
    """All 2^n values of the masked game, one unbatched ``call`` per coalition.

    nu_j(T) is output j of ``call(x')`` where x' has the rows of the nodes outside T replaced
    by ``baseline`` (default: the mean node feature).
    """

    def __init__(
        self,
        call: Callable[[torch.Tensor], torch.Tensor],
        x: torch.Tensor,
        baseline: torch.Tensor | None = None,
    ) -> None:
        n = len(x)
        fill = x.mean(dim=0) if baseline is None else baseline
        rows = []
        for mask in range(2**n):
            masked = x.clone()
            masked[[i for i in range(n) if not mask >> i & 1]] = fill
            with torch.no_grad():
                rows.append(call(masked).reshape(-1).double().numpy())
        self.n_players = n
        self.table = np.stack(rows)  # (2^n, outputs), row = bitmask of the coalition

    def game(self, output_index: int) -> Callable[[np.ndarray], np.ndarray]:
        weights = 1 << np.arange(self.n_players)

        def game(coalitions: np.ndarray) -> np.ndarray:
            masks = np.atleast_2d(coalitions).astype(np.int64) @ weights
            return self.table[masks, output_index]

        return game

    def __call__(self, output_index: int) -> ExactComputer:
        """shapiq's brute force over all 2^n coalitions of output ``output_index``."""
        return ExactComputer(n_players=self.n_players, game=self.game(output_index))


def exact_computer(call, x, output_index, baseline=None) -> ExactComputer:
    """shapiq's brute force of one output of the masked game."""
    return Oracle(call, x, baseline)(output_index)


def max_error(a, b) -> float:
    """Largest |a[S] - b[S]| over the interactions of both (a missing one counts as 0)."""
    keys = set(a.interaction_lookup) | set(b.interaction_lookup)
    return max(abs(a[k] - b[k]) for k in keys)
