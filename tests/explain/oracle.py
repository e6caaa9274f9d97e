"""The test oracle: the graph game computed in the test itself, one unbatched model call per
coalition, fed to shapiq's ``ExactComputer`` (nothing here uses the engine)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from shapiq import ExactComputer

Call = Callable[[torch.Tensor], torch.Tensor]


def outputs(call: Call, x: torch.Tensor, row: np.ndarray, baseline: torch.Tensor | None = None):
    """All outputs of ``call(x')``, x' = x with the rows of nodes outside the coalition
    ``row`` (boolean, (n,)) replaced by ``baseline`` (default: the mean node feature)."""
    masked = x.clone()
    masked[~torch.as_tensor(row, dtype=torch.bool)] = (
        x.mean(dim=0) if baseline is None else baseline
    )
    with torch.no_grad():
        return call(masked).reshape(-1).double().numpy()


def masked_game(call: Call, x, output_index, baseline=None) -> Callable[[np.ndarray], np.ndarray]:
    """The masked game of one output, evaluated coalition by coalition."""

    def game(coalitions: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(coalitions)
        return np.array([outputs(call, x, row, baseline)[output_index] for row in rows])

    return game


class Oracle:
    """All 2^n values of the masked game (every output), one unbatched call per coalition."""

    def __init__(self, call: Call, x: torch.Tensor, baseline: torch.Tensor | None = None):
        n = len(x)
        bits = np.arange(n)
        self.n_players = n
        self.table = np.stack(  # (2^n, outputs); row = bitmask of the coalition
            [outputs(call, x, (mask >> bits) & 1 == 1, baseline) for mask in range(2**n)]
        )

    def __call__(self, output_index: int) -> ExactComputer:
        """shapiq's brute force over all 2^n coalitions of output ``output_index``."""
        weights = 1 << np.arange(self.n_players)

        def game(coalitions: np.ndarray) -> np.ndarray:
            return self.table[np.atleast_2d(coalitions).astype(np.int64) @ weights, output_index]

        return ExactComputer(n_players=self.n_players, game=game)


def exact_computer(call: Call, x, output_index, baseline=None) -> ExactComputer:
    """shapiq's brute force of one output of the masked game."""
    return Oracle(call, x, baseline)(output_index)


def max_error(a, b) -> float:
    """Largest |a[S] - b[S]| over the interactions of both (a missing one counts as 0)."""
    keys = set(a.interaction_lookup) | set(b.interaction_lookup)
    return max(abs(a[k] - b[k]) for k in keys)
