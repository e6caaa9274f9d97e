"""Standard PyG layers (GCN, GIN, GINE, GAT, GATv2, SAGE, GraphConv) on the state graph.

Masking changes node features only: the nodes, edges, edge weights and degrees stay. So
after c layers the state of node j under coalition T is a function of the states of its
in-neighbours and its own state after c - 1 layers, each under T, with every
normalisation (GCN degrees, self loops, GAT's attention neighbourhood) that of the
original graph. The engine evaluates the model on *rows* (j, M), M a subset of node j's
final receptive field F_j, standing for node j under any coalition T with T ∩ F_j = M.

How: the model's own ``forward`` runs once on all rows at once, x_(j, M) = x_j if j is
in M else the baseline, with ``batch`` putting every row in a graph of its own (and an
empty graph 0 whose output is the head's bias), while a pre-hook on each message-passing
layer swaps the original ``edge_index`` for the state graph of that call: row (j, M)
receives, along each original edge k -> j, the row (k, M ∩ N_k^(c)) (k's state after c
calls) and keeps its own row as its previous state; per-edge arguments (edge weights,
edge features) are gathered along. Every row has exactly node j's in-edges, so degrees,
self loops and attention neighbourhoods are the original graph's, and anything the
model does between layers (activations, eval-mode batch norm and dropout, jumping
knowledge, linear maps) runs unchanged. Per-row outputs minus the bias are the node
games, scaled by 1/n for mean pooling.

Why this way and not a rewrite of each layer or a traced graph: it runs the model's own
code (no re-implementation of seven layers and their options to keep in step with PyG,
no tracing that breaks on Python control flow in ``forward``), and everything it cannot
see structurally is caught numerically: before a graph is explained this way, the same
rows for the grand and empty coalitions and four random ones are compared with masked
evaluations of the model (within the readout check's tolerance), which also decides mean
(1/n) or add pooling. A model that fails stays on masked graphs (``method="auto"``, with
the reason logged) or is refused (``method="local"``). Unlike the protocol path
(:mod:`.local`), all rows of a graph are evaluated in one call: a graph whose rows do not
fit the memory budget stays on masked graphs too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch_geometric.nn import (
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GINEConv,
    GraphConv,
    MessagePassing,
    SAGEConv,
)

from .game import GraphGame, inference
from .hypercube import project_masks

SUPPORTED_LAYERS = (GCNConv, GINConv, GINEConv, GATConv, GATv2Conv, SAGEConv, GraphConv)
CHECK_COALITIONS = 4  # random coalitions of the numerical check, beside N and ∅
CHECK_TOLERANCE_EPS = (
    64  # float epsilons of the model's dtype x (1 + max|nu|), as the readout check
)
_ABSENT = 1 << 40  # a bit position outside every field: the projected bit stays 0


class NotLocal(Exception):
    """The model cannot be evaluated on the state graph; the message says why."""


def message_passing_layers(model: torch.nn.Module) -> list[MessagePassing]:
    """The model's outermost message-passing layers (not those inside another)."""
    found: list[MessagePassing] = []
    for name, module in model.named_modules():
        if isinstance(module, MessagePassing) and not any(
            name.startswith(f"{outer}.") for outer, _ in found
        ):
            found.append((name, module))
    return [module for _, module in found]


def structural_reason(model: torch.nn.Module) -> str | None:
    """Why the model's layers cannot take the standard state graph, or None."""
    layers = message_passing_layers(model)
    if not layers:
        return f"{type(model).__name__} has no torch_geometric message-passing layer"
    for layer in layers:
        if not isinstance(layer, SUPPORTED_LAYERS):
            names = ", ".join(c.__name__ for c in SUPPORTED_LAYERS)
            return f"{type(layer).__name__} is not one of the layers it can prove local ({names})"
        if isinstance(layer, GCNConv) and layer.cached:
            return "GCNConv(cached=True) keeps the normalisation of the first graph it saw"
    return None


class StandardStateGraph:
    """Rows (node j, mask over F_j) of one graph and their wiring per layer call.

    Args:
        edge_index: The original edges (2, E).
        fields: Receptive fields per layer (``receptive_fields``); ``fields[-1]`` are F_j.
    """

    def __init__(self, edge_index: torch.Tensor, fields: list[list[np.ndarray]]) -> None:
        self.fields = fields
        self.n_layers = len(fields) - 1
        self.src, dst = edge_index.detach().cpu().numpy()
        order = np.argsort(dst, kind="stable")
        cuts = np.searchsorted(dst[order], np.arange(len(fields[0]) + 1))
        self.in_edges = [order[cuts[j] : cuts[j + 1]] for j in range(len(fields[0]))]
        sizes = np.array([2 ** len(f) for f in fields[-1]], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)])  # row key = offsets[j] + mask

    @property
    def n_states(self) -> int:
        """Rows of the whole state graph (every mask of every final field)."""
        return int(self.offsets[-1])

    def all_rows(self) -> np.ndarray:
        """Keys of every row, sorted (node j's rows are offsets[j] .. offsets[j + 1])."""
        return np.arange(self.n_states, dtype=np.int64)

    def coalition_rows(self, coalitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys of the rows that coalitions (m, n) need (sorted, closed under sources),
        and the key of each (coalition, node) pair, shape (m, n)."""
        final = np.stack(
            [
                self.offsets[j] + (coalitions[:, f] << np.arange(len(f))).sum(axis=1)
                for j, f in enumerate(self.fields[-1])
            ],
            axis=1,
        )
        keys = np.unique(final)
        while True:  # every row needs its sources at every call (degrees, self loops)
            found = [s.ravel() for c in range(self.n_layers) for *_, s in self._sources(keys, c)]
            grown = np.unique(np.concatenate([keys, *found]))
            if len(grown) == len(keys):
                return keys, final
            keys = grown

    def _sources(
        self, keys: np.ndarray, call: int
    ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """Per node j with rows among ``keys`` (positions lo..hi) and in-edges: the keys of
        the source rows of call ``call``, shape (hi - lo, in-degree)."""
        reach = self.fields[call]
        bounds = np.searchsorted(keys, self.offsets)
        for j, field in enumerate(self.fields[-1]):
            lo, hi = int(bounds[j]), int(bounds[j + 1])
            in_edges = self.in_edges[j]
            if lo == hi or not len(in_edges):
                continue
            masks = keys[lo:hi] - self.offsets[j]
            sources = []
            for e in in_edges:
                k = self.src[e]
                positions = np.where(
                    np.isin(self.fields[-1][k], reach[k]),
                    np.searchsorted(field, self.fields[-1][k]),
                    _ABSENT,
                )
                sources.append(self.offsets[k] + project_masks(len(field), positions, masks))
            yield lo, hi, in_edges, np.stack(sources, axis=1)

    def wiring(self, keys: np.ndarray, call: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Edges (2, E') between rows ``keys`` (closed under sources) for layer call
        ``call`` (0-based), sorted by target, and the original edge of each."""
        src_rows, dst_rows, edge_ids = [], [], []
        for lo, hi, in_edges, sources in self._sources(keys, call):
            src_rows.append(np.searchsorted(keys, sources.ravel()))
            dst_rows.append(np.repeat(np.arange(lo, hi), len(in_edges)))
            edge_ids.append(np.tile(in_edges, hi - lo))
        if not src_rows:
            return torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long)
        edges = torch.from_numpy(np.stack([np.concatenate(src_rows), np.concatenate(dst_rows)]))
        return edges, torch.from_numpy(np.concatenate(edge_ids))


def row_features(graph: StandardStateGraph, game: GraphGame, keys: np.ndarray) -> torch.Tensor:
    """x of each row: x_j when j is in the row's mask, else the baseline."""
    nodes = np.searchsorted(graph.offsets, keys, side="right") - 1
    own_bit = np.array([np.searchsorted(f, j) for j, f in enumerate(graph.fields[-1])])
    present = ((keys - graph.offsets[nodes]) >> own_bit[nodes]) & 1 == 1
    device = game.x.device
    nodes_t = torch.from_numpy(nodes).to(device)
    present_t = torch.from_numpy(present).to(device)
    return torch.where(present_t[:, None], game.x[nodes_t], game.baseline[None, :])


@contextmanager
def state_graph_layers(
    model: torch.nn.Module, wire: Callable[[int], tuple[torch.Tensor, torch.Tensor]], n_edges: int
) -> Iterator[None]:
    """Within the block, the i-th call of a message-passing layer of ``model`` runs on
    ``wire(i)`` = (edge_index, original edge of each) instead of its own edges; tensor
    arguments with one row per original edge are gathered along."""
    calls = [0]

    def hook(module, args, kwargs):
        edge_index, edge_id = wire(calls[0])
        calls[0] += 1
        edge_id = edge_id.to(edge_index.device)
        args = list(args)
        if len(args) > 1:
            args[1] = edge_index
        else:
            kwargs["edge_index"] = edge_index

        def gather(value):
            if isinstance(value, torch.Tensor) and value.ndim >= 1 and len(value) == n_edges:
                return value.index_select(0, edge_id)
            return value

        args[2:] = [gather(a) for a in args[2:]]
        kwargs = {k: v if k == "edge_index" else gather(v) for k, v in kwargs.items()}
        return tuple(args), kwargs

    handles = [
        layer.register_forward_pre_hook(hook, with_kwargs=True)
        for layer in message_passing_layers(model)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def row_outputs(graph: StandardStateGraph, game: GraphGame, keys: np.ndarray) -> np.ndarray:
    """The explained output of every row (graph 1 + r) and of the empty graph (first).

    Raises:
        NotLocal: the model calls its layers more often than the receptive fields allow,
            fails on rows, or returns an output of another shape.
    """
    device = game.x.device
    cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def wire(call: int) -> tuple[torch.Tensor, torch.Tensor]:
        if call >= graph.n_layers:
            raise NotLocal(f"the model runs more than n_layers={graph.n_layers} layer calls")
        if call not in cache:
            edges, ids = graph.wiring(keys, call)
            cache[call] = edges.to(device), ids.to(device)
        return cache[call]

    x = row_features(graph, game, keys)
    batch = torch.arange(1, len(keys) + 1, device=device)
    n_edges = game.edge_index.shape[1]
    with inference(game.model), state_graph_layers(game.model, wire, n_edges):
        try:
            y = game.model(x, game.edge_index, **game.call.inputs, batch=batch)
        except NotLocal:
            raise
        except Exception as exc:  # any failure on rows means: not provably local
            first = (str(exc).splitlines() or [""])[0]
            raise NotLocal(
                f"the model fails on state-graph rows ({type(exc).__name__}: {first})"
            ) from None
    y = y[:, None] if y.ndim == 1 else y
    if y.ndim != 2 or y.shape[0] != len(keys) + 1:
        raise NotLocal(f"the model returns shape {tuple(y.shape)} for {len(keys) + 1} row graphs")
    return y[:, game.output_index].double().cpu().numpy()


def checked_scale(graph: StandardStateGraph, game: GraphGame, seed: int = 0) -> float:
    """The pooling scale (1 for add, 1/n for mean) with which rows reproduce masked
    evaluations of the grand, the empty and ``CHECK_COALITIONS`` random coalitions.

    Raises:
        NotLocal: no scale does, within the readout check's tolerance.
    """
    if not game.call.takes_batch:
        raise NotLocal(f"{game.call.name}.forward takes no batch (one output per row needed)")
    n = game.n_players
    rng = np.random.default_rng(seed)
    coalitions = np.concatenate(
        [
            np.ones((1, n), bool),
            np.zeros((1, n), bool),
            rng.random((CHECK_COALITIONS, n)) < rng.uniform(0.2, 0.8, (CHECK_COALITIONS, 1)),
        ]
    )
    keys, final = graph.coalition_rows(coalitions.astype(np.int64))
    outputs = row_outputs(graph, game, keys)
    games = outputs[1:][np.searchsorted(keys, final)] - outputs[0]  # (m, n) node games
    actual = game.evaluate(coalitions)
    tolerance = CHECK_TOLERANCE_EPS * torch.finfo(game.x.dtype).eps * (1 + np.abs(actual).max())
    errors = {}
    for scale in (1.0, 1.0 / n):
        errors[scale] = np.abs(outputs[0] + scale * games.sum(axis=1) - actual).max()
        if errors[scale] <= tolerance:
            return scale
    raise NotLocal(
        f"rows of the state graph miss masked evaluations by {min(errors.values()):.3g} "
        f"(tolerance {tolerance:.2g}): the model is not a linear readout of these layers"
    )


def self_loop_reason(edge_index: torch.Tensor) -> str | None:
    """Self loops of the original graph would be removed on some rows and not others."""
    if bool((edge_index[0] == edge_index[1]).any()):
        return "the graph has self loops (layers that add or remove them see other edges)"
    return None


def node_games(
    graph: StandardStateGraph,
    game: GraphGame,
    scale: float,
    sink: Callable[[int, int, int, np.ndarray], None],
) -> float:
    """Every node game on its whole field into ``sink(j, 0, 2**|F_j|, values)``; returns
    the constant (the head's bias)."""
    keys = graph.all_rows()
    outputs = row_outputs(graph, game, keys)
    values = (outputs[1:] - outputs[0]) * scale
    for j in range(len(graph.fields[-1])):
        lo, hi = graph.offsets[j], graph.offsets[j + 1]
        sink(j, 0, int(hi - lo), values[lo:hi])
    return float(outputs[0])


def row_bytes(model: torch.nn.Module, game: GraphGame, graph: StandardStateGraph) -> int:
    """Generous working memory of evaluating all rows at once: a few vectors of the widest
    layer per row and per layer call, and the wiring of every call."""
    width = game.x.shape[1]
    for layer in message_passing_layers(model):
        width = max(width, int(getattr(layer, "out_channels", 0)) * int(getattr(layer, "heads", 1)))
    degree = max(1.0, game.edge_index.shape[1] / max(game.n_players, 1))
    per_row = game.x.element_size() * width * (6 + 3 * degree) * graph.n_layers
    return int(graph.n_states * (per_row + 8 * 3 * degree * graph.n_layers))


def standard_state_graph(
    model: torch.nn.Module, game: GraphGame, fields: list[list[np.ndarray]], budget_bytes: int
) -> tuple[StandardStateGraph, float] | str:
    """The state graph and pooling scale of a model of standard layers, proven on this
    graph (structure, memory, then the numerical check), or the reason it is not."""
    reason = structural_reason(model) or self_loop_reason(game.edge_index)
    if reason:
        return reason
    graph = StandardStateGraph(game.edge_index, fields)
    need = row_bytes(model, game, graph)
    if need > budget_bytes:
        return (
            f"its {graph.n_states} node states need about {need / 2**30:.3g} GB at once, over "
            f"the memory budget of {budget_bytes / 2**30:.3g} GB (memory_budget_gb)"
        )
    try:
        return graph, checked_scale(graph, game)
    except NotLocal as exc:
        return str(exc)
