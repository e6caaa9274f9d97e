"""Molecule graphs collated once, mini-batches cut from them by indexing.

Training on a few hundred small molecules is dominated by collating ``Data`` objects into a
``Batch`` every step (PyG's DataLoader does it per batch and per epoch). :class:`PackedGraphs`
collates a split once and gathers the nodes and edges of any graphs, in any order, with a
few tensor operations; the result equals what PyG's DataLoader makes of the same graphs in
the same order (tested), so training on it gives the same numbers.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data


class GraphBatch(NamedTuple):
    """Graphs in PyG's batched layout: ``x`` (nodes, F), ``edge_index`` (2, edges) with
    batch-wide node indices, ``edge_attr`` (edges, C) or None, ``y`` (graphs,), ``batch``
    (nodes,) the graph of each node."""

    x: Tensor
    edge_index: Tensor
    edge_attr: Tensor | None
    y: Tensor
    batch: Tensor


class PackedGraphs:
    """A list of graphs collated once; :meth:`batch` gathers any of them as a :class:`GraphBatch`."""

    def __init__(self, graphs: list[Data]) -> None:
        packed = Batch.from_data_list(graphs)
        self.x, self.edge_index, self.y = packed.x, packed.edge_index, packed.y
        self.edge_attr: Tensor | None = packed.get("edge_attr")
        self.graph, self.node_ptr = packed.batch, packed.ptr
        n_edges = torch.tensor([g.edge_index.shape[1] for g in graphs], dtype=torch.long)
        self.edge_ptr = torch.cat([n_edges.new_zeros(1), n_edges.cumsum(0)])

    def __len__(self) -> int:
        return len(self.y)

    def to(self, device: torch.device | str) -> PackedGraphs:
        """Move every tensor to ``device`` (in place; returns self)."""
        for name in ("x", "edge_index", "edge_attr", "y", "graph", "node_ptr", "edge_ptr"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value.to(device))
        return self

    def all(self) -> GraphBatch:
        """Every graph, in order, as one batch: the collated tensors themselves."""
        return GraphBatch(self.x, self.edge_index, self.edge_attr, self.y, self.graph)

    def batch(self, index: Tensor) -> GraphBatch:
        """The graphs ``index`` (graph positions, in this order) as one batch."""
        index = index.to(self.y.device)
        n_nodes = self.node_ptr[index + 1] - self.node_ptr[index]
        n_edges = self.edge_ptr[index + 1] - self.edge_ptr[index]
        nodes = _ranges(self.node_ptr[index], n_nodes)
        edges = _ranges(self.edge_ptr[index], n_edges)
        # each graph's nodes move from their packed start to their start in this batch
        start = n_nodes.cumsum(0) - n_nodes
        shift = torch.repeat_interleave(start - self.node_ptr[index], n_edges)
        graph = torch.repeat_interleave(torch.arange(len(index), device=index.device), n_nodes)
        return GraphBatch(
            x=self.x[nodes],
            edge_index=self.edge_index[:, edges] + shift,
            edge_attr=None if self.edge_attr is None else self.edge_attr[edges],
            y=self.y[index],
            batch=graph,
        )


def _ranges(starts: Tensor, counts: Tensor) -> Tensor:
    """The concatenation of ``arange(s, s + c)`` for every start s and count c."""
    offsets = torch.repeat_interleave(starts - (counts.cumsum(0) - counts), counts)
    return offsets + torch.arange(int(counts.sum()), device=starts.device)
