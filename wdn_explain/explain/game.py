"""The graph game of GraphSHAP-IQ and its batched evaluation.

nu(T) is the model's explained output on the graph with the features of every node outside
T replaced by a baseline vector b (GUIDE §4). With a chosen player set P (``players``) the
game is played by P alone: every other node is held at its observed features
(``hold="observed"``, nu_P(T) = nu(T ∪ (N \\ P))) or at the baseline (``hold="baseline"``,
nu_P(T) = nu(T)), and player k is node ``players[k]``: the graph's output, or the output at each of
some target nodes for a model that returns one row per node (node games nu_v, evaluated
together on the same masked copies). Masked copies are evaluated in large batches:
one ``torch.where`` over a (batch, nodes, features) tensor and one shared, offset
``edge_index``, chunked so that a batch holds at most ``max_batch_nodes`` nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Literal, get_args

import numpy as np
import torch

from ..errors import ExplainError
from .inputs import ModelCall

Baseline = Literal["mean", "zeros"] | torch.Tensor | np.ndarray
Hold = Literal["observed", "baseline"]
HOLDS: tuple[str, ...] = get_args(Hold)


@contextmanager
def inference(model: torch.nn.Module) -> Iterator[None]:
    """``eval()`` plus ``torch.inference_mode()``; the previous train/eval mode is restored."""
    was_training = model.training
    if was_training:
        model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        if was_training:
            model.train()


def model_device_dtype(model: torch.nn.Module) -> tuple[torch.device, torch.dtype]:
    """Device and floating dtype of the model's first parameter (CPU/float32 if none)."""
    for p in model.parameters():
        return p.device, p.dtype
    return torch.device("cpu"), torch.float32


@dataclass
class GraphGame:
    """nu(T) for one graph and one model output (see the module docstring).

    Attributes:
        model: A PyG graph-level model (in eval mode while evaluated).
        x: Node features, shape (n, F).
        edge_index: Directed edges, shape (2, E).
        call: How the model is called, with its other inputs (never masked).
        baseline: Masking vector, shape (F,).
        output_index: Which model output is explained.
        max_batch_nodes: Upper bound of nodes in one evaluated batch (memory bound).
        nodes: Target nodes of a node-level model (their outputs, one game each), or None
            for the graph's output.
        players: The nodes that play, sorted (player k is node ``players[k]``), or None for
            every node.
        hold: Where the nodes that do not play stay: ``observed`` or ``baseline``.
    """

    model: torch.nn.Module
    x: torch.Tensor
    edge_index: torch.Tensor
    call: ModelCall
    baseline: torch.Tensor
    output_index: int
    max_batch_nodes: int = 400_000
    nodes: tuple[int, ...] | None = None
    players: np.ndarray | None = None
    hold: Hold = "observed"

    @property
    def n_nodes(self) -> int:
        return self.x.shape[0]

    @property
    def n_players(self) -> int:
        return self.n_nodes if self.players is None else len(self.players)

    def node_coalitions(self, coalitions: np.ndarray) -> np.ndarray:
        """Boolean (m, n) node masks of (m, :attr:`n_players`) player coalitions: the
        players' own bits, every other node kept (``observed``) or masked (``baseline``)."""
        if self.players is None:
            return coalitions
        out = np.full((len(coalitions), self.n_nodes), self.hold == "observed")
        out[:, self.players] = coalitions
        return out

    @property
    def n_targets(self) -> int:
        """Games evaluated at once: one per target node, or one for the graph."""
        return 1 if self.nodes is None else len(self.nodes)

    def target(self, i: int) -> GraphGame:
        """The game of target ``i`` alone (the graph game itself when there are no nodes)."""
        return self if self.nodes is None else replace(self, nodes=(self.nodes[i],))

    @property
    def edge_attr(self) -> torch.Tensor | None:
        """Edge features (E, D) when the model takes them, else None."""
        return self.call.inputs.get("edge_attr")

    def evaluate(self, coalitions: np.ndarray, progress=None) -> np.ndarray:
        """nu for a boolean coalition matrix of shape (m, n); returns float64, shape (m,).

        Raises:
            ExplainError: the game has several target nodes (see :meth:`evaluate_targets`).
        """
        if self.n_targets != 1:
            raise ExplainError(
                f"the game has {self.n_targets} target nodes: evaluate_targets gives one "
                "column per target, or take game.target(i)"
            )
        return self.evaluate_targets(coalitions, progress)[:, 0]

    def evaluate_targets(self, coalitions: np.ndarray, progress=None) -> np.ndarray:
        """nu of every target for a boolean (m, n) coalition matrix: float64, (m, targets)."""
        coalitions = np.asarray(coalitions, dtype=bool)
        if coalitions.ndim != 2 or coalitions.shape[1] != self.n_players:
            raise ExplainError(
                f"coalitions must have shape (m, {self.n_players}) (got {coalitions.shape})"
            )
        coalitions = self.node_coalitions(coalitions)
        n, total = self.n_nodes, len(coalitions)
        chunk = max(1, self.max_batch_nodes // max(n, 1)) if self.call.takes_batch else 1
        device = self.x.device
        out = np.empty((total, self.n_targets), dtype=np.float64)
        with inference(self.model):
            for start in range(0, total, chunk):
                mask = torch.as_tensor(coalitions[start : start + chunk], device=device)
                b = len(mask)
                xs = torch.where(mask[:, :, None], self.x[None], self.baseline[None, None])
                y = self.call(self.model, xs.reshape(b * n, -1), self.edge_index, b)
                out[start : start + b] = select_output(y, b, self.output_index, self.nodes, n)
                if progress:
                    progress(start + b, total)
        return out

    def __call__(self, coalitions: np.ndarray) -> np.ndarray:
        """Game function in shapiq's convention (boolean matrix in, values out)."""
        return self.evaluate(np.atleast_2d(coalitions))


def select_output(
    y: torch.Tensor,
    n_graphs: int,
    output_index: int,
    nodes: tuple[int, ...] | None = None,
    n_nodes: int = 1,
) -> np.ndarray:
    """Column ``output_index`` of a model output as float64, shape (n_graphs, targets): of
    the (n_graphs,) or (n_graphs, C) graph outputs, or of the per-node outputs at ``nodes``
    of a node-level output of shape (n_graphs * n_nodes,) or (n_graphs * n_nodes, C)."""
    if y.ndim == 1:
        y = y[:, None]
    rows, what = (n_graphs, "graph") if nodes is None else (n_graphs * n_nodes, "node")
    if y.ndim != 2 or y.shape[0] != rows:
        raise ExplainError(
            f"the model must return one value or one row of outputs per {what}, shape "
            f"({rows},) or ({rows}, C) (got {tuple(y.shape)})"
        )
    if not 0 <= output_index < y.shape[1]:
        raise ExplainError(f"output_index must be in 0..{y.shape[1] - 1} (got {output_index})")
    y = y[:, output_index].reshape(n_graphs, -1)
    return (y if nodes is None else y[:, list(nodes)]).double().cpu().numpy()


def check_players(players: Sequence[int] | None, hold: str, n_nodes: int) -> np.ndarray | None:
    """The sorted player nodes (None: every node plays); ExplainError naming a bad one."""
    if hold not in HOLDS:
        raise ExplainError(f"hold must be one of {', '.join(HOLDS)} (got '{hold}')")
    if players is None:
        return None
    found = np.asarray(list(players))
    if found.ndim != 1 or not len(found) or not np.issubdtype(found.dtype, np.integer):
        raise ExplainError(f"players must be a non-empty list of node indices (got {players!r})")
    bad = found[(found < 0) | (found >= n_nodes)]
    if len(bad):
        raise ExplainError(f"player {bad[0]} is not a node of the graph (0..{n_nodes - 1})")
    if len(np.unique(found)) != len(found):
        raise ExplainError(f"players must name each node once (got {found.tolist()})")
    return np.sort(found).astype(np.int64)


def player_fields(fields: list[np.ndarray], players: np.ndarray | None) -> list[np.ndarray]:
    """Each receptive field restricted to the players, as player indices: the sets whose
    power sets hold the MIs of the game over ``players`` (the receptive-field theorem
    restricted to them; the fields themselves when every node plays)."""
    if players is None:
        return fields
    position = np.full(max(len(fields), int(players.max()) + 1), -1, dtype=np.int64)
    position[players] = np.arange(len(players))
    return [position[f][position[f] >= 0] for f in fields]


def resolve_baseline(baseline: Baseline, x: torch.Tensor) -> torch.Tensor:
    """The masking vector: ``mean`` node feature (default), ``zeros`` or a given (F,) vector."""
    if isinstance(baseline, str):
        if baseline == "mean":
            return x.mean(dim=0)
        if baseline == "zeros":
            return torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
        raise ExplainError(f"baseline must be 'mean', 'zeros' or a vector (got '{baseline}')")
    vec = torch.as_tensor(baseline, dtype=x.dtype, device=x.device).reshape(-1)
    if vec.shape != (x.shape[1],):
        raise ExplainError(
            f"baseline vector must have one value per node feature, shape ({x.shape[1]},) "
            f"(got {tuple(torch.as_tensor(baseline).shape)})"
        )
    if not torch.isfinite(vec).all():
        raise ExplainError("baseline vector holds NaN or inf values")
    return vec
