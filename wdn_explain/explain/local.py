"""Exact node games by message passing on a "state graph" (the fast path of the engine).

With a linear pooling and readout, nu(T) = sum_i g_i(T ∩ N_i) + c, where the node game
g_i(M) = scale * w · h_i^L(M) depends only on node i's receptive field N_i (scale = 1/n for
mean pooling, 1 for sum pooling). The embedding of node j after layer l depends only on
T ∩ N_j^(l), so each distinct (node, T ∩ N_j^(l)) pair -- a *state* -- is computed once:
a target state (j, M) at layer l receives one message from the state (k, M ∩ N_k^(l-1)) of
each in-neighbour k and keeps its own previous state (j, M ∩ N_j^(l-1)). Running the model's
own layer on this bipartite state graph gives exactly the embeddings of the masked graphs
(mean aggregation sees the same in-degree), at a fraction of the messages. The wiring
depends only on the graph's structure, so it is built once and reused for every time step.

Models opt in by implementing :class:`LocalMessagePassing`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import torch

from .game import inference
from .hypercube import project_masks

Pooling = Literal["mean", "add"]
POOLINGS: tuple[str, ...] = ("mean", "add")


@runtime_checkable
class LocalMessagePassing(Protocol):
    """A graph-level model built as encode -> L local layers -> linear pooling -> linear head.

    * ``encode(x, edge_attr)`` applies pointwise node and edge encoders.
    * ``propagate_layer(layer, (h_src, h_dst), edge_index, edge_feat)`` is layer ``layer``
      (0-based) on a bipartite graph; a target's new state may depend only on its own
      previous state and its incoming messages.
    * ``readout_parameters()`` returns the head's weight (C, H) and bias (C,).
    * ``pooling`` is ``"mean"`` or ``"add"``; ``num_layers`` is L.
    """

    num_layers: int
    pooling: Pooling

    def encode(
        self, x: torch.Tensor, edge_attr: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]: ...

    def propagate_layer(
        self,
        layer: int,
        x: tuple[torch.Tensor, torch.Tensor],
        edge_index: torch.Tensor,
        edge_feat: torch.Tensor | None,
    ) -> torch.Tensor: ...

    def readout_parameters(self) -> tuple[torch.Tensor, torch.Tensor]: ...


@dataclass(frozen=True)
class LayerWiring:
    """Bipartite state graph of one layer: previous states -> this layer's states.

    ``self_state[t]`` is target state t's own previous state; edge e runs from previous
    state ``edge_src[e]`` to target ``edge_dst[e]`` and carries original edge ``edge_id[e]``.
    """

    self_state: torch.Tensor
    edge_src: torch.Tensor
    edge_dst: torch.Tensor
    edge_id: torch.Tensor

    @property
    def n_states(self) -> int:
        return len(self.self_state)


def _wire(
    fields: list[np.ndarray],
    prev_fields: list[np.ndarray],
    prev_offsets: np.ndarray,
    in_edges: list[np.ndarray],
    src: np.ndarray,
    targets: range | list[int],
) -> LayerWiring:
    self_ids, e_src, e_dst, e_ids = [], [], [], []
    start = 0
    for j in targets:
        field = fields[j]
        k = len(field)
        local = np.arange(2**k, dtype=np.int64)
        self_ids.append(prev_offsets[j] + project_masks(k, np.searchsorted(field, prev_fields[j])))
        for e in in_edges[j]:
            s = src[e]
            e_src.append(prev_offsets[s] + project_masks(k, np.searchsorted(field, prev_fields[s])))
            e_dst.append(start + local)
            e_ids.append(np.full(2**k, e, dtype=np.int64))
        start += 2**k

    def cat(parts: list[np.ndarray]) -> torch.Tensor:
        return torch.from_numpy(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))

    return LayerWiring(cat(self_ids), cat(e_src), cat(e_dst), cat(e_ids))


@dataclass(frozen=True)
class StateGraph:
    """The state graphs of all layers of one graph structure (see the module docstring).

    ``hidden[l]`` wires layer l (0-based) for l < L - 1 over all nodes; ``final`` holds the
    last layer in chunks of at most ``max_states`` target states, ``final_nodes`` the nodes
    of each chunk. ``fields`` are the final receptive fields N_i.
    """

    fields: list[np.ndarray]
    hidden: list[LayerWiring]
    final: list[LayerWiring]
    final_nodes: list[list[int]]

    @classmethod
    def build(
        cls, edge_index: torch.Tensor, fields: list[list[np.ndarray]], *, max_states: int = 1 << 15
    ) -> StateGraph:
        """Wire every layer for receptive ``fields`` (from ``receptive_fields``)."""
        n = len(fields[0])
        src, dst = edge_index.detach().cpu().numpy()
        order = np.argsort(dst, kind="stable")
        cuts = np.searchsorted(dst[order], np.arange(n + 1))
        in_edges = [order[cuts[j] : cuts[j + 1]] for j in range(n)]
        offsets = np.arange(0, 2 * n + 1, 2, dtype=np.int64)  # layer 0: masked / present
        hidden = []
        for layer in range(1, len(fields) - 1):
            hidden.append(_wire(fields[layer], fields[layer - 1], offsets, in_edges, src, range(n)))
            sizes = np.array([2 ** len(f) for f in fields[layer]], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(sizes)])
        chunks: list[list[int]] = [[]]
        filled = 0
        for j, f in enumerate(fields[-1]):
            if chunks[-1] and filled + 2 ** len(f) > max_states:
                chunks.append([])
                filled = 0
            chunks[-1].append(j)
            filled += 2 ** len(f)
        final = [_wire(fields[-1], fields[-2], offsets, in_edges, src, c) for c in chunks]
        return cls(fields[-1], hidden, final, chunks)

    @property
    def n_states(self) -> int:
        """Node states evaluated per explanation, over all layers (layer 0 included)."""
        return 2 * len(self.fields) + sum(w.n_states for w in self.hidden + self.final)


def node_games(
    model: LocalMessagePassing,
    x: torch.Tensor,
    edge_attr: torch.Tensor | None,
    baseline: torch.Tensor,
    output_index: int,
    state_graph: StateGraph,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[np.ndarray], float]:
    """Node games g_i on the power set of each receptive field N_i.

    Returns:
        (games, constant): ``games[i]`` has length 2**|N_i| (local masks over the sorted
        field); ``constant`` is the readout bias.
    """
    n = x.shape[0]
    device = x.device
    scale = {"mean": 1.0 / n, "add": 1.0}[model.pooling]  # validated by the explainer
    games: list[np.ndarray] = []
    with inference(model):
        weight, bias = model.readout_parameters()
        w = weight[output_index].to(x.dtype)
        constant = float(bias[output_index])
        h, edge_feat = model.encode(
            torch.stack([baseline.expand_as(x), x], dim=1).reshape(2 * n, -1), edge_attr
        )
        for layer, wiring in enumerate(state_graph.hidden):
            h = _apply(model, layer, h, wiring, edge_feat, device)
        last = len(state_graph.hidden)
        for i, (wiring, nodes) in enumerate(zip(state_graph.final, state_graph.final_nodes)):
            values = (_apply(model, last, h, wiring, edge_feat, device) @ w).double().mul_(scale)
            sizes = [2 ** len(state_graph.fields[j]) for j in nodes]
            games.extend(np.split(values.cpu().numpy(), np.cumsum(sizes)[:-1]))
            if progress:
                progress(i + 1, len(state_graph.final))
    return games, constant


def _apply(
    model: LocalMessagePassing,
    layer: int,
    h: torch.Tensor,
    wiring: LayerWiring,
    edge_feat: torch.Tensor | None,
    device: torch.device,
) -> torch.Tensor:
    h_dst = h[wiring.self_state.to(device)]
    edge_index = torch.stack([wiring.edge_src, wiring.edge_dst]).to(device)
    ef = None if edge_feat is None else edge_feat[wiring.edge_id.to(device)]
    return model.propagate_layer(layer, (h, h_dst), edge_index, ef)
