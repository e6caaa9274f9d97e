"""|I| of MUTAG graphs against an independent enumeration; the CSVs and the plot."""

from __future__ import annotations

import csv
from itertools import chain, combinations

import networkx as nx
import pytest

from wdn_explain.chem.complexity import complexity_rows, write_complexity


def enumerate_interactions(graph, layers: int) -> int:
    """|union of the power sets of all L-hop neighbourhoods|, by listing every subset."""
    g = nx.Graph(graph.edge_index.t().tolist())
    g.add_nodes_from(range(graph.num_nodes))
    family = set()
    for i in g:
        field = sorted(nx.ego_graph(g, i, radius=layers))
        family.update(chain.from_iterable(combinations(field, k) for k in range(len(field) + 1)))
    return len(family)


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_counts_equal_enumeration(mutag, layers):
    ids = [0, 1, 5, 20, 100] if layers < 3 else [1, 5]  # small fields keep 3 layers quick
    subset = type(mutag)(
        mutag.name, [mutag.graphs[i] for i in ids], [], None, [str(i) for i in ids]
    )
    rows = complexity_rows(subset, layers)
    for row, i in zip(rows, ids):
        graph = mutag.graphs[i]
        assert row["exact"] and row["graph_id"] == str(i) and row["n"] == graph.num_nodes
        assert row["interactions"] == enumerate_interactions(graph, layers)


def test_bound_is_flagged_and_files_written(mutag, tmp_path):
    subset = type(mutag)("MUTAG", mutag.graphs[:6], [], None, [str(i) for i in range(6)])
    tables = write_complexity(subset, [1, 2], tmp_path, max_exact_field=4)
    with open(tmp_path / "MUTAG_L2.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 and rows[0].keys() >= {"graph_id", "n", "max_field", "interactions"}
    for row, graph in zip(rows, subset.graphs):
        assert row["exact"] == "False"  # 2-hop fields of MUTAG molecules exceed 4 atoms
        # Thm. 3.7 bound: at least the exact count, at most 2^n
        assert enumerate_interactions(graph, 2) <= int(row["interactions"]) <= 2**graph.num_nodes
    assert all(r["exact"] for r in tables[1] if r["max_field"] <= 4)
    assert (tmp_path / "MUTAG_complexity.png").read_bytes()[:4] == b"\x89PNG"
