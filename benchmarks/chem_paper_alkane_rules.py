"""Two fixed rules on the exact splits of the AlkaneCarbonyl GCN-3 cell: what its inputs allow.

Usage: ``python benchmarks/chem_paper_alkane_rules.py [DATA_ROOT]`` (default
``../shared/datasets/chem``). For seeds 0-9, the paper's downsampled pool and split of that
seed (as ``train_chem_paper_table.py`` draws them) and two rules written as RDKit SMARTS:
"has F" (what a model that leans on the fluorine alone scores) and "has F and an O bound to
one carbon only" (the carbonyl as atom types and bonds without orders or hydrogens show it;
a C-OH or C-O- looks the same). Prints the accuracy of each rule on train, val and test per
seed and the means over the seeds: the figures a GCN-3 on atom types can be held against.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np
from rdkit import Chem

from wdn_explain.chem.datasets import load_dataset
from wdn_explain.chem.training import PAPER_TRAINING, downsample_negatives, stratified_split

RULES = {
    "has F": [Chem.MolFromSmarts("[F]")],
    "has F and an O bound to one carbon only": [
        Chem.MolFromSmarts("[F]"),
        Chem.MolFromSmarts("[OD1]~[#6]"),
    ],
}
SEEDS = range(10)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("../shared/datasets/chem")
    data = load_dataset("AlkaneCarbonyl", root, version="paper")
    labels = data.labels.numpy()
    mols = [Chem.MolFromSmiles(s) for s in data.smiles]
    options = PAPER_TRAINING["AlkaneCarbonyl"]
    predicted = {
        name: np.array([all(m.HasSubstructMatch(q) for q in queries) for m in mols])
        for name, queries in RULES.items()
    }
    means: dict[tuple[str, str], list[float]] = {}
    for seed in SEEDS:
        pool = downsample_negatives(labels, options["negatives_per_positive"], seed)
        split = stratified_split(labels[pool], seed, options["split"])
        parts = []
        for name, rule in predicted.items():
            for part, index in split.items():
                acc = 100 * float(np.mean(rule[pool[index]] == labels[pool[index]]))
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
