"""Where the paper-version AlkaneCarbonyl model (fluoride AND carbonyl) puts its value.

Usage: ``python benchmarks/paper/chem_paper_examples.py [MODEL] [OUT_DIR]`` (defaults:
``models/chem/alkanecarbonyl-paper-gcn3``, ``benchmarks/results``). First how far the
fluorine alone goes in the data (RDKit SMARTS counts, :func:`fluoride_counts`). For the first few
positives of the paper's data version, the smallest first, and two negatives (a fluoride
without a carbonyl, a carbonyl without a fluoride): the log-odds of "fluoride and carbonyl",
the SV sum of the fluorine atoms and of the carbonyl C=O atoms against the rest, the atoms
with the largest SVs, the graph distance between F and C=O, and the largest order-2 k-SII
between a fluorine and a carbonyl atom. Draws the SI-Graph (k-SII order 2) of the first
positive.
"""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import torch
from rdkit import Chem
from torch_geometric.utils import to_networkx

from wdn_explain.chem.datasets import load_dataset
from wdn_explain.chem.explain import draw_si_graph, explain_molecule
from wdn_explain.chem.training import PAPER_TRAINING, load_classifier

FLUORIDE = Chem.MolFromSmarts("[F]")
CARBONYL = Chem.MolFromSmarts("[CX3]=[OX1]")
# what a carbonyl O looks like without bond orders and hydrogens: an O with one heavy neighbour,
# a carbon (C=O, but also C-OH and C-O-)
LOOKALIKE = Chem.MolFromSmarts("[OD1]~[#6]")


def groups(smiles: str) -> tuple[set[int], set[int]]:
    """Atom indices of the fluorines and of the carbonyl C and O atoms (RDKit order = graph)."""
    mol = Chem.MolFromSmiles(smiles)
    fluorines = {i for (i,) in mol.GetSubstructMatches(FLUORIDE)}
    carbonyls = {i for match in mol.GetSubstructMatches(CARBONYL) for i in match}
    return fluorines, carbonyls


def fluoride_counts(smiles: list[str], labels: list[int]) -> str:
    """How far the fluorine alone goes: molecules with F, with F and C=O, with F and no C=O
    (and of these, with a C=O look-alike), and the accuracy of "label = has F" on the paper's
    downsampled pool (all positives and :data:`PAPER_TRAINING`'s negatives per positive, in
    expectation)."""
    mols = [Chem.MolFromSmiles(s) for s in smiles]
    has_f = [m.HasSubstructMatch(FLUORIDE) for m in mols]
    has_co = [m.HasSubstructMatch(CARBONYL) for m in mols]
    f_no_co = [i for i, (f, c) in enumerate(zip(has_f, has_co)) if f and not c]
    lookalike = sum(mols[i].HasSubstructMatch(LOOKALIKE) for i in f_no_co)
    positives = sum(labels)
    negatives = len(labels) - positives
    drawn = round(PAPER_TRAINING["AlkaneCarbonyl"]["negatives_per_positive"] * positives)
    wrong = drawn * len(f_no_co) / negatives  # F-without-C=O negatives in the pool
    return (
        f"{len(mols)} molecules: {sum(has_f)} with F, {sum(f and c for f, c in zip(has_f, has_co))} "
        f"with F and C=O (positives: {positives}), {len(f_no_co)} with F and no C=O "
        f"({lookalike} of them with an O bound to one carbon only, a C=O look-alike without "
        f"bond orders); in the paper's pool of {positives + drawn} (all positives, "
        f"{drawn} of {negatives} negatives) about {wrong:.0f} negatives have F, so "
        f"'label = has F' scores {100 * (1 - wrong / (positives + drawn)):.1f} %"
    )


def main() -> None:
    torch.set_num_threads(1)
    model_dir = sys.argv[1] if len(sys.argv) > 1 else "models/chem/alkanecarbonyl-paper-gcn3"
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results")
    model, _ = load_classifier(model_dir)
    data = load_dataset("AlkaneCarbonyl", "../shared/datasets/chem", version="paper")
    labels = data.labels.tolist()
    print(fluoride_counts(data.smiles, labels), flush=True)
    by_size = sorted(range(len(data)), key=lambda i: data.graphs[i].num_nodes)
    positives = [i for i in by_size if labels[i] == 1][:4]
    kinds = [groups(data.smiles[i]) for i in range(len(data))]
    f_only = next(i for i in by_size if kinds[i][0] and not kinds[i][1])
    c_only = next(i for i in by_size if kinds[i][1] and not kinds[i][0])
    for number, index in enumerate([*positives, f_only, c_only]):
        graph, symbols = data.graphs[index], data.symbols[index]
        fluorines, carbonyls = kinds[index]
        result = explain_molecule(model, graph)
        sv = result.interaction_values("SV", 1)
        values = {i: sv[(i,)] for i in range(graph.num_nodes)}
        rest = sum(v for i, v in values.items() if i not in fluorines | carbonyls)
        top = sorted(values, key=lambda i: -abs(values[i]))[:4]
        line = (
            f"AlkaneCarbonyl (paper) #{index} {data.smiles[index]} label {labels[index]}: "
            f"log-odds {result.prediction:+.2f} (masked {result.empty_prediction:+.2f}); "
            f"SV sum F {sum(values[i] for i in fluorines):+.2f}, "
            f"C=O {sum(values[i] for i in carbonyls):+.2f}, other atoms {rest:+.2f}; "
            f"largest SVs {', '.join(f'{symbols[i]}{i} {values[i]:+.2f}' for i in top)}"
        )
        if fluorines and carbonyls:
            g = to_networkx(graph, to_undirected=True)
            distance = min(nx.shortest_path_length(g, f, c) for f in fluorines for c in carbonyls)
            ksii = result.interaction_values("k-SII", 2)
            pairs = [(f, c) for f in fluorines for c in carbonyls]
            f, c = max(pairs, key=lambda p: abs(ksii[tuple(sorted(p))]))
            line += (
                f"; F-C=O distance {distance} bonds, largest k-SII F-C=O pair "
                f"F{f}-{symbols[c]}{c} {ksii[tuple(sorted((f, c)))]:+.2f}"
            )
        print(line, flush=True)
        if number == 0:
            fig = draw_si_graph(
                result.interaction_values("k-SII", 2),
                graph,
                symbols,
                title=f"AlkaneCarbonyl (paper: fluoride and carbonyl) #{index}: k-SII order 2",
            )
            fig.savefig(out / "chem_paper_alkane_ksii2.png", dpi=100)


if __name__ == "__main__":
    main()
