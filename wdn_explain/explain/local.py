"""Exact node games by message passing on a "state graph" (the fast path of the engine).

With a linear pooling and readout, nu(T) = sum_i g_i(T ∩ N_i) + c, where the node game
g_i(M) = scale * w · h_i^L(M) depends only on node i's receptive field N_i (scale = 1/n for
mean pooling, 1 for sum pooling). The embedding of node j after layer l depends only on
T ∩ N_j^(l), so each distinct (node, T ∩ N_j^(l)) pair -- a *state* -- is computed once:
a target state (j, M) at layer l receives one message from the state (k, M ∩ N_k^(l-1)) of
each in-neighbour k and keeps its own previous state (j, M ∩ N_j^(l-1)). Running the model's
own layer on this bipartite state graph gives exactly the embeddings of the masked graphs
(mean aggregation sees the same in-degree), at a fraction of the messages.

A node-level model (no pooling, the head applied to each node's final state) outputs
g_i(M) + c at node i itself: its node games are the explained targets.

Memory is bounded: every layer is evaluated in chunks of at most ``max_states`` target
states (a large field is split into aligned ranges of its local masks), each chunk wired
when it is evaluated (two table look-ups per index: about 0.05 s per million states, against
about a second of model work) and the last layer's chunks reduced at once into the node
games. On a CPU a chunk's hidden states take at most ``CPU_CHUNK_BYTES`` (8 192 states at 64
float32 channels), so its buffers stay near the core's caches: chunks of 65 536 states made a
4-layer Hanoi explanation 1.9x slower on one thread (2.47 s against 1.28 s) and a placement
chunk 1.3x (7.25 s of CPU against 5.67 s; ``benchmarks/speed/bench_chunks.py``).

Models opt in by implementing :class:`LocalMessagePassing`. A model whose layers also
implement :class:`FactoredLayers` (message -> mean/add aggregation -> update) is evaluated
faster: each message is computed once per (previous state of the source, edge) instead of
once per state-graph edge -- for Hanoi at L = 3 about 9 000 messages instead of 270 000 --
and the target states only gather, sum and apply the update's pointwise part.
The wiring of small state graphs (up to ``WIRING_CACHE_BYTES``) is kept between
explanations of the same structure (the time steps of a timeline).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import torch

from ..errors import ExplainError
from .game import inference
from .hypercube import project_masks
from .standard import structural_reason

Pooling = Literal["mean", "add"] | None
POOLINGS: tuple[str, ...] = ("mean", "add")  # of graph-level models; None marks a node-level one
Piece = tuple[int, int, int]  # (node j, first local mask, end): target states of one chunk
MIN_CHUNK_STATES = 64  # chunks never shrink below this, whatever the budget
CPU_CHUNK_BYTES = 2 << 20  # nor grow beyond this many bytes of hidden states on a CPU
MAX_CHUNK_STATES_CUDA = 1 << 20  # on a GPU, fewer and larger chunks (fewer kernel launches)
WIRING_CACHE_BYTES = 64 << 20  # state graphs wired in at most this much are wired once


@runtime_checkable
class LocalMessagePassing(Protocol):
    """A model built as encode -> L local layers -> (linear pooling) -> linear head.

    * ``encode(x, edge_attr)`` applies pointwise node and edge encoders.
    * ``propagate_layer(layer, (h_src, h_dst), edge_index, edge_feat)`` is layer ``layer``
      (0-based) on a bipartite graph; a target's new state may depend only on its own
      previous state and its incoming messages.
    * ``readout_parameters()`` returns the head's weight (C, H) and bias (C,).
    * ``pooling`` is ``"mean"`` or ``"add"`` for a graph-level model (head after pooling,
      output (n_graphs, C)), or ``None`` for a node-level model (head on every node's final
      state, output (n, C)); ``num_layers`` is L.
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


@runtime_checkable
class FactoredLayers(Protocol):
    """Optional refinement of :class:`LocalMessagePassing`: layer ``layer`` factored as

    ``new = layer_update(layer, own, aggr)`` with ``own = layer_self(layer, h_dst)`` and
    ``aggr`` the ``aggregation`` (``"mean"`` or ``"add"``; zero without in-edges) over the
    in-edges of ``layer_messages(layer, h_src, edge_feat)``, all equal to
    ``propagate_layer`` up to float rounding. ``layer_self`` and ``layer_messages`` may
    apply linear maps that commute with the aggregation (they run on few rows).
    """

    aggregation: Literal["mean", "add"]

    def layer_self(self, layer: int, h: torch.Tensor) -> torch.Tensor: ...

    def layer_messages(
        self, layer: int, h_src: torch.Tensor, edge_feat: torch.Tensor | None
    ) -> torch.Tensor: ...

    def layer_update(self, layer: int, own: torch.Tensor, aggr: torch.Tensor) -> torch.Tensor:
        """The new states (``aggr`` is the engine's scratch: it may be overwritten)."""


@dataclass(frozen=True)
class LayerWiring:
    """Bipartite state graph of one chunk of a layer: previous states -> target states.

    ``self_state[t]`` is target state t's own previous state; edge e runs from previous
    state ``edge_src[e]`` to target ``edge_dst[e]``, carries original edge ``edge_id[e]``
    and reads row ``edge_message[e]`` of the layer's message table (see
    :meth:`StateGraph.message_table`). Edges are sorted by target: target t's edges start
    at ``bag_start[t]``.
    """

    self_state: torch.Tensor
    edge_src: torch.Tensor
    edge_dst: torch.Tensor
    edge_id: torch.Tensor
    edge_message: torch.Tensor
    bag_start: torch.Tensor

    @property
    def n_states(self) -> int:
        return len(self.self_state)


@dataclass(frozen=True)
class StateGraph:
    """The state graph of one graph structure (see the module docstring).

    ``fields[l][j]`` is node j's sorted receptive field after l layers; ``fields[-1]`` are
    the final fields N_i. Wiring is made per chunk by :meth:`chunks`.
    """

    fields: list[list[np.ndarray]]
    in_edges: list[np.ndarray]
    src: np.ndarray
    _wired: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, edge_index: torch.Tensor, fields: list[list[np.ndarray]]) -> StateGraph:
        """The state graph for receptive ``fields`` (from ``receptive_fields``)."""
        n = len(fields[0])
        src, dst = edge_index.detach().cpu().numpy()
        order = np.argsort(dst, kind="stable")
        cuts = np.searchsorted(dst[order], np.arange(n + 1))
        in_edges = [order[cuts[j] : cuts[j + 1]] for j in range(n)]
        return cls(fields, in_edges, src)

    @property
    def n_layers(self) -> int:
        return len(self.fields) - 1

    def layer_states(self, layer: int) -> int:
        """Target states of layer ``layer`` (0-based; layer -1 is the masked/present input)."""
        return sum(2 ** len(f) for f in self.fields[layer + 1])

    @property
    def n_states(self) -> int:
        """Node states evaluated per explanation, over all layers (input states included)."""
        return 2 * len(self.fields[0]) + sum(map(self.layer_states, range(self.n_layers)))

    def mean_in_degree(self) -> float:
        """Edges per target state, weighted by the final layer's states (for chunk sizing)."""
        degrees = np.array([len(e) for e in self.in_edges], dtype=np.float64)
        sizes = np.array([2.0 ** len(f) for f in self.fields[-1]])
        return float((sizes * degrees).sum() / sizes.sum())

    def chunks(self, layer: int, max_states: int) -> Iterator[tuple[list[Piece], LayerWiring]]:
        """Chunks of layer ``layer``: (pieces, wiring) with at most ``max_states`` targets
        (a field over ``max_states`` alone is split into aligned ranges of its masks)."""
        key = (layer, max_states)
        if key in self._wired:
            yield from self._wired[key]
            return
        offsets = self._offsets(layer)
        cache = self.wiring_bytes() <= WIRING_CACHE_BYTES
        wired = []
        for pieces in _plan(self.fields[layer + 1], max_states):
            chunk = pieces, self._wire(layer, offsets, pieces)
            if cache:
                wired.append(chunk)
            yield chunk
        if cache:
            self._wired[key] = wired

    def wiring_bytes(self) -> int:
        """Bytes of the wiring of all layers (two indices per state and four per edge)."""
        degrees = np.array([len(e) for e in self.in_edges], dtype=np.int64)
        return sum(
            8 * int(sum(2 ** len(f) * (2 + 4 * d) for f, d in zip(fields, degrees)))
            for fields in self.fields[1:]
        )

    def _message_starts(self, layer: int) -> np.ndarray:
        """Row of each edge's first message in the layer's message table."""
        offsets = self._offsets(layer)
        return np.concatenate([[0], np.cumsum((offsets[1:] - offsets[:-1])[self.src])])

    def message_table(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The messages of layer ``layer``, one row per (edge e, previous state of its
        source): the previous state and the edge of every row (see :class:`FactoredLayers`)."""
        key = ("messages", layer)
        if key not in self._wired:
            offsets, starts = self._offsets(layer), self._message_starts(layer)
            edge = np.repeat(np.arange(len(self.src), dtype=np.int64), np.diff(starts))
            state = np.arange(starts[-1], dtype=np.int64) - starts[edge] + offsets[self.src[edge]]
            self._wired[key] = torch.from_numpy(state), torch.from_numpy(edge)
        return self._wired[key]

    def _offsets(self, layer: int) -> np.ndarray:
        """Start of every node's states in the previous layer's state array."""
        sizes = np.array([2 ** len(f) for f in self.fields[layer]], dtype=np.int64)
        return np.concatenate([[0], np.cumsum(sizes)])

    def _wire(self, layer: int, offsets: np.ndarray, pieces: list[Piece]) -> LayerWiring:
        fields, prev = self.fields[layer + 1], self.fields[layer]
        rows = self._message_starts(layer)
        self_ids, e_src, e_msg, e_dst, e_ids, bags = [], [], [], [], [], []
        start = n_edges = 0
        for j, lo, hi in pieces:
            f, in_edges = fields[j], self.in_edges[j]
            masks = np.arange(lo, hi, dtype=np.int64)
            self_ids.append(offsets[j] + project_masks(len(f), np.searchsorted(f, prev[j]), masks))
            local = [
                project_masks(len(f), np.searchsorted(f, prev[self.src[e]]), masks)
                for e in in_edges
            ]
            if len(in_edges):  # target-major: a target's edges are consecutive
                local = np.stack(local, axis=1)
                e_src.append((offsets[self.src[in_edges]] + local).ravel())
                e_msg.append((rows[in_edges] + local).ravel())
                e_dst.append(np.repeat(np.arange(start, start + hi - lo), len(in_edges)))
                e_ids.append(np.tile(in_edges, hi - lo))
            bags.append(n_edges + len(in_edges) * np.arange(hi - lo, dtype=np.int64))
            start += hi - lo
            n_edges += len(in_edges) * (hi - lo)

        def cat(parts: list[np.ndarray]) -> torch.Tensor:
            return torch.from_numpy(np.concatenate(parts) if parts else np.zeros(0, np.int64))

        return LayerWiring(*map(cat, (self_ids, e_src, e_dst, e_ids, e_msg, bags)))


def _plan(fields: list[np.ndarray], max_states: int) -> list[list[Piece]]:
    """Pack nodes' mask ranges into chunks of at most ``max_states`` target states."""
    step = 1 << max(0, int(max_states).bit_length() - 1)  # a power of two <= max_states
    chunks: list[list[Piece]] = [[]]
    filled = 0
    for j, f in enumerate(fields):
        size = 2 ** len(f)
        for lo in range(0, size, step):
            hi = min(size, lo + step)
            if chunks[-1] and filled + hi - lo > max_states:
                chunks.append([])
                filled = 0
            chunks[-1].append((j, lo, hi))
            filled += hi - lo
    return chunks


def state_bytes(hidden: int, itemsize: int, mean_degree: float) -> int:
    """Working memory of one target state while its chunk is evaluated: the wiring, the
    gathered own state and messages, and the layer's intermediates (a generous estimate
    for a layer of a few linear maps: about 6 hidden vectors per state and 3 per edge)."""
    return int(8 * (1 + 4 * mean_degree) + hidden * itemsize * (8 + 4 * mean_degree))


def chunk_cap(h: torch.Tensor) -> int:
    """Most target states in one chunk for hidden states like ``h`` (n, hidden): on a GPU
    :data:`MAX_CHUNK_STATES_CUDA`, on a CPU as many as fit in :data:`CPU_CHUNK_BYTES`."""
    if h.device.type == "cuda":
        return MAX_CHUNK_STATES_CUDA
    return CPU_CHUNK_BYTES // (h.shape[1] * h.element_size())


GameSink = Callable[[int, int, int, np.ndarray], None]
"""Receives the values of node j's game on local masks lo..hi: ``sink(j, lo, hi, values)``."""


def node_games(
    model: LocalMessagePassing,
    x: torch.Tensor,
    edge_attr: torch.Tensor | None,
    baseline: torch.Tensor,
    output_index: int,
    state_graph: StateGraph,
    sink: GameSink,
    *,
    work_bytes: int = 1 << 30,
    progress: Callable[[int, int], None] | None = None,
) -> float:
    """Evaluate the node games g_i on the power set of each field N_i into ``sink``.

    Each chunk of every layer holds at most as many target states as ``work_bytes`` allows
    (see :func:`state_bytes`); values reach ``sink`` as float32-exact float64 arrays.

    Returns:
        The readout bias (the game's constant).
    """
    n = x.shape[0]
    device = x.device
    scale = {"mean": 1.0 / n, "add": 1.0, None: 1.0}[model.pooling]  # validated by the explainer
    with inference(model):
        weight, bias = model.readout_parameters()
        w = weight[output_index].to(x.dtype)
        constant = float(bias[output_index])
        h, edge_feat = model.encode(
            torch.stack([baseline.expand_as(x), x], dim=1).reshape(2 * n, -1), edge_attr
        )
        per_state = state_bytes(h.shape[1], h.element_size(), state_graph.mean_in_degree())
        max_states = max(MIN_CHUNK_STATES, min(chunk_cap(h), work_bytes // per_state))
        last = state_graph.n_layers - 1
        for layer in range(last):
            apply = _layer(model, layer, h, edge_feat, state_graph, device)
            parts = [apply(wiring) for _, wiring in state_graph.chunks(layer, max_states)]
            h = torch.cat(parts) if len(parts) > 1 else parts[0]
        total = state_graph.layer_states(last)
        done = 0
        apply = _layer(model, last, h, edge_feat, state_graph, device)
        for pieces, wiring in state_graph.chunks(last, max_states):
            values = (apply(wiring) @ w).double().mul_(scale)
            values = values.cpu().numpy()
            start = 0
            for j, lo, hi in pieces:
                sink(j, lo, hi, values[start : start + hi - lo])
                start += hi - lo
            done += wiring.n_states
            if progress:
                progress(done, total)
    return constant


def _layer(
    model: LocalMessagePassing,
    layer: int,
    h: torch.Tensor,
    edge_feat: torch.Tensor | None,
    state_graph: StateGraph,
    device: torch.device,
) -> Callable[[LayerWiring], torch.Tensor]:
    """Layer ``layer`` as a function of a chunk's wiring, on previous states ``h``."""
    if not isinstance(model, FactoredLayers):

        def propagate(wiring: LayerWiring) -> torch.Tensor:
            h_dst = h.index_select(0, wiring.self_state.to(device))
            edge_index = torch.stack([wiring.edge_src, wiring.edge_dst]).to(device)
            ef = None if edge_feat is None else edge_feat.index_select(0, wiring.edge_id.to(device))
            return model.propagate_layer(layer, (h, h_dst), edge_index, ef)

        return propagate
    # factored: every message once per (source state, edge), every own part once per state
    state, edge = (t.to(device) for t in state_graph.message_table(layer))
    ef = None if edge_feat is None else edge_feat.index_select(0, edge)
    messages = model.layer_messages(layer, h.index_select(0, state), ef)
    own = model.layer_self(layer, h)
    mode = {"mean": "mean", "add": "sum"}[model.aggregation]

    def update(wiring: LayerWiring) -> torch.Tensor:
        # one fused gather-and-sum per target (its edges are consecutive); no edges: zeros
        aggr = torch.nn.functional.embedding_bag(
            wiring.edge_message.to(device), messages, wiring.bag_start.to(device), mode=mode
        )
        return model.layer_update(layer, own.index_select(0, wiring.self_state.to(device)), aggr)

    return update


def local_model_refusal(model: torch.nn.Module, n_layers: int) -> str | None:
    """Why ``local`` cannot run ``model`` with ``n_layers`` layers (None: it can, for
    standard layers once proven on the graph)."""
    if not isinstance(model, LocalMessagePassing):
        reason = structural_reason(model)
        if reason is None:
            return None
        return (
            f"needs a model implementing LocalMessagePassing or built from layers the engine "
            f"can prove local ({type(model).__name__}: {reason}); use 'masked'"
        )
    if model.num_layers != n_layers:
        return (
            f"runs the model's own {model.num_layers} layers, so n_layers must equal "
            f"num_layers={model.num_layers} (got n_layers={n_layers})"
        )
    return None


def check_pooling(model: LocalMessagePassing, node_level: bool) -> None:
    """Refuse a LocalMessagePassing model whose declared pooling does not fit the target."""
    name = type(model).__name__
    if node_level and model.pooling is not None:
        raise ExplainError(
            f"method 'local' explains node outputs of models with pooling None (a head on "
            f"every node); {name}.pooling is {model.pooling!r}; use 'masked'"
        )
    if not node_level and model.pooling not in POOLINGS:
        raise ExplainError(
            f"method 'local' needs pooling 'mean' or 'add' (got {model.pooling!r} from "
            f"{name}.pooling; None marks a node-level model, explained with node=); use 'masked'"
        )
