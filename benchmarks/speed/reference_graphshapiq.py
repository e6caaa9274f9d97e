"""A straightforward implementation of GraphSHAP-IQ's Algorithm 1, kept as the baseline the
benchmarks compare against (not part of the package).

As in the paper's published code: the interaction family I is enumerated as Python tuples
(union of power sets of the L-hop neighbourhoods), the model is called once per coalition
on a masked copy of the graph, and each Möbius interaction is a sum over all subsets of its
set (3^k work per neighbourhood); SV follows from m(S)/|S|.
"""

from __future__ import annotations

from itertools import chain, combinations

import networkx as nx
import numpy as np
import torch


def powerset(items):
    items = list(items)
    return chain.from_iterable(combinations(items, r) for r in range(len(items) + 1))


def neighbourhoods(edge_index: torch.Tensor, n: int, layers: int) -> list[tuple[int, ...]]:
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edge_index.T.tolist())
    return [
        tuple(sorted(nx.single_source_shortest_path_length(graph, i, cutoff=layers)))
        for i in range(n)
    ]


def interactions(fields: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    family: set[tuple[int, ...]] = set()
    for field in fields:
        family.update(powerset(field))
    return sorted(family, key=lambda s: (len(s), s))


@torch.no_grad()
def game_values(model, x, edge_index, edge_attr, baseline, coalitions, output_index=0) -> dict:
    """nu(T) for every coalition, one model call per coalition."""
    model.eval()
    values = {}
    for coalition in coalitions:
        mask = torch.zeros(x.shape[0], dtype=torch.bool)
        mask[list(coalition)] = True
        masked = torch.where(mask[:, None], x, baseline[None, :])
        out = (
            model(masked, edge_index, edge_attr)
            if edge_attr is not None
            else model(masked, edge_index)
        )
        values[coalition] = float(out.reshape(-1)[output_index])
    return values


def moebius(values: dict) -> dict:
    """m(S) = sum over T subset of S of (-1)^(|S|-|T|) nu(T), by explicit subset sums."""
    return {s: sum((-1) ** (len(s) - len(t)) * values[t] for t in powerset(s)) for s in values}


def shapley_values(mi: dict, n: int) -> np.ndarray:
    sv = np.zeros(n)
    for s, value in mi.items():
        for i in s:
            sv[i] += value / len(s)
    return sv
