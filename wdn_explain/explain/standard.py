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
edge features) are gathered along. After call c a row depends on M ∩ N_j^(c+1) only,
so edges run into those canonical rows and a post-hook copies their outputs to the
others (:meth:`StandardStateGraph.wiring`). Every row that is read has exactly node j's
in-edges, so degrees, self loops and attention neighbourhoods are the original graph's,
and anything the model does between layers (activations, eval-mode batch norm and
dropout, jumping knowledge, linear maps) runs unchanged. Per-row outputs minus the bias are the node
games, scaled by 1/n for mean pooling.

Why this way and not a rewrite of each layer or a traced graph: it runs the model's own
code (no re-implementation of seven layers and their options to keep in step with PyG,
no tracing that breaks on Python control flow in ``forward``), and everything it cannot
see structurally is caught numerically: before the rows of a graph are trusted, their
sums for the grand and empty coalitions and four random ones are compared with masked
evaluations of the model (within the readout check's tolerance), which also decides mean
(1/n) or add pooling. A model that fails stays on masked graphs (``method="auto"``, with
the reason logged) or is refused (``method="local"``). Unlike the protocol path
(:mod:`.local`), all rows of a graph are evaluated in one call: a graph whose rows do not
fit the memory budget stays on masked graphs too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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
    found: list[tuple[str, MessagePassing]] = []
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
        self._cached_positions: dict[tuple[int, int], np.ndarray] = {}
        self._wired: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]] = {}

    @property
    def n_states(self) -> int:
        """Rows of the whole state graph (every mask of every final field)."""
        return int(self.offsets[-1])

    def final_keys(self, coalitions: np.ndarray) -> np.ndarray:
        """The row of each (coalition, node j) pair: (j, T ∩ F_j), shape (m, n)."""
        return np.stack(
            [
                self.offsets[j] + (coalitions[:, f] << np.arange(len(f))).sum(axis=1)
                for j, f in enumerate(self.fields[-1])
            ],
            axis=1,
        )

    def wiring(self, call: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The state graph of layer call ``call`` (0-based), kept (time steps share it):
        edges (2, E') sorted by target, the original edge of each, and each row's
        canonical row (None: every row is its own).

        After the call, row (j, M) depends on M ∩ N_j^(call+1) only, so edges run into the
        canonical rows (j, M ∩ N_j^(call+1)) alone and the others copy their output. The
        sources of every call are canonical rows of the call before, so they keep all their
        in-edges (degrees, attention neighbourhoods) where they are read."""
        if call not in self._wired:
            last = call + 1 == self.n_layers
            src_rows, dst_rows, edge_ids, canon = [], [], [], []
            for j, field in enumerate(self.fields[-1]):
                k, lo = len(field), self.offsets[j]
                keep = int((np.isin(field, self.fields[call + 1][j]) << np.arange(k)).sum())
                masks = np.arange(2**k, dtype=np.int64)
                canon.append(lo + (masks & keep))
                masks = masks if last else masks[(masks & ~keep) == 0]
                in_edges = self.in_edges[j]
                if not len(in_edges):
                    continue
                sources = [
                    self.offsets[self.src[e]] + project_masks(k, self._positions(j, e, call), masks)
                    for e in in_edges
                ]
                src_rows.append(np.stack(sources, axis=1).ravel())
                dst_rows.append(np.repeat(lo + masks, len(in_edges)))
                edge_ids.append(np.tile(in_edges, len(masks)))
            if src_rows:
                edges = np.stack([np.concatenate(src_rows), np.concatenate(dst_rows)])
                ids = np.concatenate(edge_ids)
            else:
                edges, ids = np.zeros((2, 0), np.int64), np.zeros(0, np.int64)
            rows = None if last else torch.from_numpy(np.concatenate(canon))
            self._wired[call] = torch.from_numpy(edges), torch.from_numpy(ids), rows
        return self._wired[call]

    def _positions(self, j: int, e: int, call: int) -> np.ndarray:
        """For edge e = k -> j: the bit of F_j that each bit of F_k reads after ``call``
        layers (``_ABSENT`` where k's state does not depend on that node yet)."""
        key = (e, call)
        if key not in self._cached_positions:
            k = self.src[e]
            field, reach = self.fields[-1][k], self.fields[call][k]
            found = np.searchsorted(reach, field)
            inside = reach[np.minimum(found, len(reach) - 1)] == field
            at = np.searchsorted(self.fields[-1][j], field)
            self._cached_positions[key] = np.where(inside, at, _ABSENT)
        return self._cached_positions[key]


def row_features(graph: StandardStateGraph, game: GraphGame) -> torch.Tensor:
    """x of each row: x_j when j is in the row's mask, else the baseline."""
    keys = np.arange(graph.n_states, dtype=np.int64)
    nodes = np.searchsorted(graph.offsets, keys, side="right") - 1
    own_bit = np.array([np.searchsorted(f, j) for j, f in enumerate(graph.fields[-1])])
    present = ((keys - graph.offsets[nodes]) >> own_bit[nodes]) & 1 == 1
    device = game.x.device
    nodes_t = torch.from_numpy(nodes).to(device)
    present_t = torch.from_numpy(present).to(device)
    return torch.where(present_t[:, None], game.x[nodes_t], game.baseline[None, :])


@contextmanager
def state_graph_layers(
    model: torch.nn.Module,
    wire: Callable[[int], tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]],
    n_edges: int,
) -> Iterator[None]:
    """Within the block, the i-th call of a message-passing layer of ``model`` runs on
    ``wire(i)`` = (edge_index, original edge of each, canonical rows) instead of its own
    edges: tensor arguments with one row per original edge are gathered along, and each
    row's output is its canonical row's (see :meth:`StandardStateGraph.wiring`)."""
    calls, canonical = [0], [None]

    def before(module, args, kwargs):
        edge_index, edge_id, canonical[0] = wire(calls[0])
        calls[0] += 1
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

    def after(module, args, output):
        return output if canonical[0] is None else output.index_select(0, canonical[0])

    handles = []
    for layer in message_passing_layers(model):
        handles.append(layer.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(layer.register_forward_hook(after))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def row_outputs(graph: StandardStateGraph, game: GraphGame) -> np.ndarray:
    """The explained output of every row (graph 1 + r) and of the empty graph (first).

    Raises:
        NotLocal: the model calls its layers more often than the receptive fields allow,
            fails on rows, or returns an output of another shape.
    """
    device = game.x.device

    def wire(call: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if call >= graph.n_layers:
            raise NotLocal(f"the model runs more than n_layers={graph.n_layers} layer calls")
        edges, ids, canonical = graph.wiring(call)
        return edges.to(device), ids.to(device), None if canonical is None else canonical.to(device)

    x = row_features(graph, game)
    rows = graph.n_states
    batch = torch.arange(1, rows + 1, device=device)
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
    if y.ndim != 2 or y.shape[0] != rows + 1:
        raise NotLocal(f"the model returns shape {tuple(y.shape)} for {rows + 1} row graphs")
    return y[:, game.output_index].double().cpu().numpy()


def checked_scale(
    graph: StandardStateGraph, game: GraphGame, outputs: np.ndarray, seed: int = 0
) -> float:
    """The pooling scale (1 for add, 1/n for mean) with which the row ``outputs``
    reproduce masked evaluations of the grand, the empty and ``CHECK_COALITIONS`` random
    coalitions.

    Raises:
        NotLocal: no scale does, within the readout check's tolerance.
    """
    n = game.n_players
    rng = np.random.default_rng(seed)
    coalitions = np.concatenate(
        [
            np.ones((1, n), bool),
            np.zeros((1, n), bool),
            rng.random((CHECK_COALITIONS, n)) < rng.uniform(0.2, 0.8, (CHECK_COALITIONS, 1)),
        ]
    )
    games = outputs[1:][graph.final_keys(coalitions.astype(np.int64))] - outputs[0]
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


@dataclass(frozen=True)
class StandardGames:
    """Every node game of a graph, evaluated on the standard state graph and proven."""

    graph: StandardStateGraph
    outputs: np.ndarray  # the empty graph's output (the head's bias), then every row's
    scale: float  # 1 for add pooling, 1/n for mean pooling

    def node_games(self, sink: Callable[[int, int, int, np.ndarray], None]) -> float:
        """Node j's game on its whole field into ``sink(j, 0, 2**|F_j|, values)``;
        returns the constant (the head's bias)."""
        values = (self.outputs[1:] - self.outputs[0]) * self.scale
        offsets = self.graph.offsets
        for j in range(len(offsets) - 1):
            sink(j, 0, int(offsets[j + 1] - offsets[j]), values[offsets[j] : offsets[j + 1]])
        return float(self.outputs[0])


def row_bytes(model: torch.nn.Module, game: GraphGame, graph: StandardStateGraph) -> int:
    """Generous working memory of evaluating all rows at once: a few vectors of the widest
    layer per row and per layer call, and the wiring of every call."""
    width = game.x.shape[1]
    for layer in message_passing_layers(model):
        width = max(width, int(getattr(layer, "out_channels", 0)) * int(getattr(layer, "heads", 1)))
    degree = max(1.0, game.edge_index.shape[1] / max(game.n_players, 1))
    per_row = game.x.element_size() * width * (6 + 3 * degree) * graph.n_layers
    return int(graph.n_states * (per_row + 8 * 3 * degree * graph.n_layers))


def standard_games(
    model: torch.nn.Module,
    game: GraphGame,
    fields: list[list[np.ndarray]],
    budget_bytes: int,
    graphs: dict | None = None,
) -> StandardGames | str:
    """The node games of a model of standard layers on this graph, proven (structure,
    memory, then the numerical check), or the reason they cannot be. ``graphs`` keeps
    the state graph of the last structure (time steps share it)."""
    reason = structural_reason(model) or self_loop_reason(game.edge_index)
    if reason:
        return reason
    if not game.call.takes_batch:
        return f"{game.call.name}.forward takes no batch (one output per row is needed)"
    key = (len(fields) - 1, game.edge_index.detach().cpu().numpy().tobytes())
    graphs = {} if graphs is None else graphs
    if key not in graphs:
        graphs.clear()
        graphs[key] = StandardStateGraph(game.edge_index, fields)
    graph = graphs[key]
    need = row_bytes(model, game, graph)
    if need > budget_bytes:
        return (
            f"its {graph.n_states} node states need about {need / 2**30:.3g} GB at once, over "
            f"the memory budget of {budget_bytes / 2**30:.3g} GB (memory_budget_gb)"
        )
    try:
        outputs = row_outputs(graph, game)
        return StandardGames(graph, outputs, checked_scale(graph, game, outputs))
    except NotLocal as exc:
        return str(exc)
