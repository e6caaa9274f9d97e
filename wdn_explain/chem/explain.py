"""Exact Shapley interactions of one molecule and its SI-Graph on RDKit 2-D coordinates.

Uses only the public engine: ``GraphSHAPIQ`` with ``method="auto"``, under which the GCN,
GIN and GAT of :mod:`.models` run on the standard-layer state graph once the engine has
proven it on the molecule (else on masked graphs, |I| model calls).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from ..errors import DataError
from ..explain import Explanation, GraphSHAPIQ
from ..progress import ProgressArg
from .datasets import BOND_TYPES

POSITIVE, NEGATIVE = "#d62728", "#1f77b4"  # as the water maps (wdn_explain.plot)

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from shapiq import InteractionValues
    from torch_geometric.data import Data


class LogOdds(torch.nn.Module):
    """A binary classifier's log-odds of class 1, logit_1 - logit_0: still a linear readout
    of the node embeddings, and the quantity the predicted class depends on."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.num_layers = model.num_layers
        self.train(model.training)  # the engine restores this mode on the wrapped model too

    def forward(self, x, edge_index, edge_attr=None, batch=None) -> torch.Tensor:
        logits = self.model(x, edge_index, edge_attr=edge_attr, batch=batch)
        return logits[:, 1] - logits[:, 0]


def explain_molecule(
    model: torch.nn.Module,
    graph: Data,
    *,
    output_index: int | None = None,
    baseline: str | torch.Tensor = "zeros",
    progress: ProgressArg = False,
) -> Explanation:
    """Exact Möbius interactions of one molecule's prediction.

    Explains the log-odds of class 1 ("mutagenic", "contains benzene") by default, or the
    logit ``output_index``. A masked atom gets the ``baseline`` features: ``zeros`` (default:
    all features 0, no atom) or the engine's ``mean`` atom of the molecule -- with which a
    molecule of identical atoms, such as benzene, would show no contributions at all.
    """
    target = LogOdds(model) if output_index is None else model
    explainer = GraphSHAPIQ(target, baseline=baseline, progress=progress)
    return explainer.explain(graph, output_index=0 if output_index is None else output_index)


def molecule_layout(
    symbols: list[str], edge_index: torch.Tensor, edge_attr: torch.Tensor | None
) -> np.ndarray:
    """RDKit 2-D depiction coordinates, shape (n, 2), of a molecule graph.

    The molecule is rebuilt from atom symbols and bond types (no sanitisation, so graphs
    from TU files draw too); unknown symbols become dummy atoms.
    """
    from rdkit import Chem
    from rdkit.Chem import rdDepictor

    kinds = {
        "single": Chem.BondType.SINGLE,
        "double": Chem.BondType.DOUBLE,
        "triple": Chem.BondType.TRIPLE,
        "aromatic": Chem.BondType.AROMATIC,
    }
    table = Chem.GetPeriodicTable()
    mol = Chem.RWMol()
    for symbol in symbols:
        try:
            number = table.GetAtomicNumber(symbol)
        except RuntimeError:  # "other" or a non-element label
            number = 0
        mol.AddAtom(Chem.Atom(number))
    seen = set()
    for e, (i, j) in enumerate(edge_index.t().tolist()):
        if i == j or (min(i, j), max(i, j)) in seen:
            continue
        seen.add((min(i, j), max(i, j)))
        kind = BOND_TYPES[int(edge_attr[e].argmax())] if edge_attr is not None else "single"
        mol.AddBond(i, j, kinds[kind])
    mol.UpdatePropertyCache(strict=False)
    rdDepictor.Compute2DCoords(mol)
    conf = mol.GetConformer()
    return np.array(
        [[conf.GetAtomPosition(i).x, conf.GetAtomPosition(i).y] for i in range(len(symbols))]
    )


def draw_si_graph(
    values: InteractionValues,
    graph: Data,
    symbols: list[str] | None,
    *,
    n_interactions: int | None = 20,
    title: str | None = None,
) -> Figure:
    """The SI-Graph of a molecule: atoms at RDKit 2-D positions with their symbols, bonds as
    grey lines, node values as halos and interactions as edges / hyperedges (shapiq's
    ``si_graph_plot``; red positive, blue negative)."""
    import networkx as nx
    from shapiq.plot import si_graph_plot

    n = graph.num_nodes
    if symbols is not None and len(symbols) != n:
        raise DataError(f"{len(symbols)} atom symbols for a graph of {n} nodes")
    bonds = nx.Graph()
    bonds.add_nodes_from(range(n))
    bonds.add_edges_from((i, j) for i, j in graph.edge_index.t().tolist() if i != j)
    if symbols is None:
        coords = np.array(list(nx.kamada_kawai_layout(bonds).values()))
        names = [str(i) for i in range(n)]
    else:
        coords = molecule_layout(symbols, graph.edge_index, getattr(graph, "edge_attr", None))
        names = [f"{s}{i}" for i, s in enumerate(symbols)]
    # shapiq scales each axis to [0, 1]; two unused corner keys keep the aspect ratio
    centre, half = coords.mean(axis=0), np.ptp(coords, axis=0).max() / 2 + 0.5
    pos = {i: coords[i] for i in range(n)}
    pos.update({"lo": centre - half, "hi": centre + half})
    fig, ax = si_graph_plot(
        values,
        graph=bonds,
        pos=pos,
        feature_names=names,
        n_interactions=n_interactions,
        plot_original_nodes=True,
        node_size_scaling=0.55 * min(1.0, np.sqrt(_SPACED_ATOMS / n)),
        show=False,
    )
    _bonds_underneath(ax)
    _pair_lines(ax, values, (coords - (centre - half)) / (2 * half), n_interactions)
    ax.set_aspect("equal")
    if title:
        ax.set_title(title)
    return fig


_SPACED_ATOMS = 17  # atoms keep shapiq's size up to this many, then shrink (no overlaps)
BOND = "#b0b0b0"


def _bonds_underneath(ax) -> None:
    """Bonds as thin light-grey lines beneath the interactions: shapiq draws them black over
    its interaction bands, which hides the pairs along bonds (often the strongest)."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import PathPatch

    for patch in ax.patches:
        plain = isinstance(patch, PathPatch) and patch.get_facecolor()[3] == 0
        if plain and patch.get_edgecolor() == to_rgba("black"):
            patch.set_edgecolor(BOND)
            patch.set_zorder(0)


def _pair_lines(ax, values: InteractionValues, xy: np.ndarray, n: int | None) -> None:
    """The strongest pairs (of the ``n`` strongest interactions) as lines between their atoms
    (``xy``: positions in shapiq's unit square), red positive and blue negative, width by
    magnitude against the strongest pair: shapiq scales its bands against the largest value
    of any order, so next to a dominant atom the pairs along bonds (often the strongest
    pairs) are near-invisible."""
    items = sorted(
        ((s, v) for s, v in values.dict_values.items() if s), key=lambda kv: -abs(kv[1])
    )[:n]
    pairs = [(s, v) for s, v in items if len(s) == 2 and v]
    top = max((abs(v) for _, v in pairs), default=1.0)
    for (i, j), v in pairs:
        ax.plot(
            *xy[[i, j]].T,
            color=POSITIVE if v > 0 else NEGATIVE,
            lw=1 + 5 * abs(v) / top,
            alpha=0.75,
            solid_capstyle="round",
            zorder=0.5,
            label="pair",
        )


def top_interactions(
    values: InteractionValues, symbols: list[str] | None, k: int = 10
) -> list[tuple[str, float]]:
    """The ``k`` largest interactions by magnitude (empty set excluded) as (atoms, value)."""
    items = [(s, v) for s, v in values.dict_values.items() if s]
    items.sort(key=lambda item: -abs(item[1]))

    def name(i: int) -> str:
        return f"{symbols[i]}{i}" if symbols is not None else str(i)

    return [("+".join(name(i) for i in s), float(v)) for s, v in items[:k]]
