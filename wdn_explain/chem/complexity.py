"""Model calls of exact explanation per molecule: |I| against the 2^n of brute force.

One CSV per dataset and layer count (graph id, n, largest receptive field, |I| counted
exactly while the largest field has at most ``max_exact_field`` nodes, otherwise the
Theorem 3.7 bound, flagged) and the paper's plot: log10 model calls against n, with 2^n.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from ..explain import complexity
from ..files import atomic_write
from ..progress import ProgressArg, progress_callback
from .datasets import MoleculeDataset

FIELDS = ["graph_id", "n", "layers", "max_field", "interactions", "exact", "log10_calls"]


def complexity_rows(
    dataset: MoleculeDataset,
    n_layers: int,
    *,
    max_exact_field: int = 23,
    progress: ProgressArg = False,
) -> list[dict]:
    """One row per graph: its size, largest receptive field and |I| (exact or bound)."""
    rows = []
    with progress_callback(progress, f"{dataset.name} L={n_layers}") as cb:
        for graph_id, graph in zip(dataset.ids, dataset.graphs):
            rows.append(_row(graph_id, graph, n_layers, max_exact_field))
            if cb:
                cb(len(rows), len(dataset))
    return rows


def _row(graph_id: str, graph, n_layers: int, max_exact_field: int) -> dict:
    c = complexity(graph.edge_index, graph.num_nodes, n_layers, max_exact_field=max_exact_field)
    return {
        "graph_id": graph_id,
        "n": c.n_nodes,
        "layers": n_layers,
        "max_field": c.max_field,
        "interactions": c.n_interactions,
        "exact": c.exact,
        "log10_calls": round(math.log10(max(c.n_interactions, 1)), 4),
    }


def write_complexity(
    dataset: MoleculeDataset,
    layers: list[int],
    out_dir: str | Path,
    *,
    max_exact_field: int = 23,
    progress: ProgressArg = False,
) -> dict[int, list[dict]]:
    """Write ``NAME_L{l}.csv`` per layer count and ``NAME_complexity.png`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = {}
    for n_layers in layers:
        rows = complexity_rows(
            dataset, n_layers, max_exact_field=max_exact_field, progress=progress
        )
        with atomic_write(out / f"{dataset.name}_L{n_layers}.csv") as tmp:
            with open(tmp, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(rows)
        tables[n_layers] = rows
    fig = plot_complexity(tables, dataset.name)
    with atomic_write(out / f"{dataset.name}_complexity.png") as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    return tables


def plot_complexity(tables: dict[int, list[dict]], name: str, *, annotate: bool = False):
    """log10 model calls against the number of nodes per layer count, with 2^n (the paper's
    complexity figure); bounded counts are drawn hollow. Rows hold ``n``, ``log10_calls``,
    ``exact`` and ``graph_id``; ``annotate`` names each graph once, above its points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    named: set[str] = set()
    largest = max(r["n"] for rows in tables.values() for r in rows)
    ax.plot([0, largest], [0, largest * math.log10(2)], "k--", label="$2^n$ (brute force)")
    for n_layers, rows in tables.items():
        colour = f"C{n_layers}"
        for exact, style in ((True, {"color": colour}), (False, {"facecolors": "none"})):
            pts = [(r["n"], r["log10_calls"]) for r in rows if r["exact"] == exact]
            if pts:
                xs, ys = zip(*pts)
                label = f"L = {n_layers}" + ("" if exact else " (bound)")
                ax.scatter(xs, ys, s=12, label=label, edgecolors=colour, **style)
        for r in rows if annotate else []:
            if r["graph_id"] not in named:  # once per graph, at its first layer count
                named.add(r["graph_id"])
                ax.annotate(str(r["graph_id"]), (r["n"], r["log10_calls"] + 4), fontsize=7)
    ax.set_xlabel("number of nodes n")
    ax.set_ylabel("log10 model calls")
    ax.set_title(f"{name}: exact GraphSHAP-IQ vs brute force")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
