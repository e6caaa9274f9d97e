"""Two fixed rules on the exact splits of the AlkaneCarbonyl GCN-3 cell: what its inputs allow.

Usage: ``python docs/studies/alkanecarbonyl/chem_paper_alkane_rules.py [DATA_ROOT]`` (default
``../shared/datasets/chem``). For seeds 0-9, the paper's downsampled pool and split of that
seed (as ``train_chem_paper_table.py`` draws them) and two rules written as RDKit SMARTS:
"has F" (what a model that leans on the fluorine alone scores) and "has F and an O bound to
one carbon only" (the carbonyl as atom types and bonds without orders or hydrogens show it;
a C-OH or C-O- looks the same). Prints the accuracy of each rule on train, val and test per
seed and the means over the seeds: the figures a GCN-3 on atom types can be held against.

A third line per seed, "linear in counts", is what sum pooling and a linear readout can do
when each atom's contribution depends on its own group only (the fluorine and the carbonyl
are farther apart than the receptive field in most molecules): a logistic regression on two
counts per molecule, fluorine-bearing carbons and O bound to one carbon only, fitted on the
seed's training split. An AND of two groups is not linear in their counts: two fluorinated
carbons without a carbonyl outweigh the threshold as one with a carbonyl does.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
from rdkit import Chem
from sklearn.linear_model import LogisticRegression

from wdn_explain.chem.datasets import load_dataset
from wdn_explain.chem.training import PAPER_TRAINING, ChemTrainConfig, training_split

FLUORINE = Chem.MolFromSmarts("[F]")
F_CARBON = Chem.MolFromSmarts("[#6]F")
TERMINAL_O = Chem.MolFromSmarts("[OD1]~[#6]")
RULES = {
    "has F": [FLUORINE],
    "has F and an O bound to one carbon only": [FLUORINE, TERMINAL_O],
}
SEEDS = range(10)
LINEAR = "linear in counts"


def group_counts(mol: Chem.Mol) -> tuple[int, int]:
    """Fluorine-bearing carbons (a CF3 counts once) and O atoms bound to one carbon only."""
    carbons = {c for c, _ in mol.GetSubstructMatches(F_CARBON)}
    return len(carbons), len(mol.GetSubstructMatches(TERMINAL_O))


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/datasets/chem")
    data = load_dataset("AlkaneCarbonyl", root, version="paper")
    labels = data.labels.numpy()
    mols = [Chem.MolFromSmiles(s) for s in data.smiles]
    predicted = {
        name: np.array([all(m.HasSubstructMatch(q) for q in queries) for m in mols])
        for name, queries in RULES.items()
    }
    counts = np.array([group_counts(m) for m in mols], dtype=float)
    means: dict[tuple[str, str], list[float]] = {}
    for seed in SEEDS:
        split = training_split(
            labels, ChemTrainConfig(seed=seed, **PAPER_TRAINING["AlkaneCarbonyl"])
        )
        train = split["train"]
        fit = LogisticRegression(C=1e4, max_iter=5000).fit(counts[train], labels[train])
        parts = []
        for name, rule in {**predicted, LINEAR: fit.predict(counts)}.items():
            for part, index in split.items():
                acc = 100 * float(np.mean(rule[index] == labels[index]))
                means.setdefault((name, part), []).append(acc)
                parts.append(f"{name} {part} {acc:.1f} %")
        print(f"seed {seed}: " + "; ".join(parts), flush=True)
    for (name, part), accs in means.items():
        print(
            f"== {name}, {part}: mean {statistics.mean(accs):.2f} % "
            f"({min(accs):.1f}-{max(accs):.1f}) over seeds 0-9"
        )


if __name__ == "__main__":
    main()
