"""The paper's molecule examples, from the shipped models: one figure per line.

Usage: ``python benchmarks/chem_examples.py [MUTAG_MODEL] [BENZENE_MODEL] [OUT_DIR]``
(defaults: ``models/chem/mutag-gin3``, ``models/chem/benzene-gin3``, ``benchmarks/results``).
Prints the NO2 group of the first mutagenic MUTAG molecule, the 6-way Möbius interaction of
a benzene ring and the pyridine case (the N atom lowers "benzene"); draws their SI-Graphs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from wdn_explain.chem.datasets import load_dataset, smiles_graph_for
from wdn_explain.chem.explain import draw_si_graph, explain_molecule
from wdn_explain.chem.training import load_classifier


def main() -> None:
    torch.set_num_threads(1)
    mutag_dir = sys.argv[1] if len(sys.argv) > 1 else "models/chem/mutag-gin3"
    benzene_dir = sys.argv[2] if len(sys.argv) > 2 else "models/chem/benzene-gin3"
    out = Path(sys.argv[3] if len(sys.argv) > 3 else "benchmarks/results")

    model, _ = load_classifier(mutag_dir)
    mutag = load_dataset("MUTAG", "../shared/datasets/chem", download=False)
    graph, symbols = mutag.graphs[0], mutag.symbols[0]
    result = explain_molecule(model, graph)
    n, o1, o2 = 14, 15, 16  # the NO2 group of MUTAG #0 (mutagenic)
    assert [symbols[i] for i in (n, o1, o2)] == ["N", "O", "O"]
    sv = result.interaction_values("SV", 1)
    mi = result.moebius
    print(
        f"MUTAG #0 logit 'mutagenic' {result.prediction:.3f} (masked {result.empty_prediction:.3f})"
    )
    print(f"MUTAG #0 SV N14 O15 O16: {sv[(n,)]:+.3f} {sv[(o1,)]:+.3f} {sv[(o2,)]:+.3f}")
    print(f"MUTAG #0 SV sum of the NO2 group {sv[(n,)] + sv[(o1,)] + sv[(o2,)]:+.3f}")
    print(f"MUTAG #0 Moebius N14+O15+O16 {mi[(n, o1, o2)]:+.3f}, |I| = {result.n_interactions}")
    fig = draw_si_graph(result.interaction_values("k-SII", 2), graph, symbols, title="MUTAG #0")
    fig.savefig(out / "chem_mutag0_ksii2.png", dpi=100)

    model, card = load_classifier(benzene_dir)
    for name, smiles in (("benzene", "c1ccccc1"), ("toluene", "Cc1ccccc1")):
        graph, symbols = smiles_graph_for(smiles, card.feature_names)
        result = explain_molecule(model, graph)
        ring = tuple(i for i, a in enumerate(symbols) if a == "C")[-6:]
        top = max(result.moebius.dict_values.items(), key=lambda kv: abs(kv[1]) * (len(kv[0]) > 1))
        print(
            f"{name} logit 'benzene' {result.prediction:.3f}: 6-way Moebius of the ring "
            f"{result.moebius[ring]:+.3f}, largest interaction {top[0]} {top[1]:+.3f}"
        )
    graph, symbols = smiles_graph_for("c1ccncc1", card.feature_names)
    result = explain_molecule(model, graph)
    sv = result.interaction_values("SV", 1)
    print(f"pyridine logit 'benzene' {result.prediction:.3f}: SV of N3 {sv[(3,)]:+.3f}")
    print(f"pyridine SV of the C atoms {', '.join(f'{sv[(i,)]:+.3f}' for i in (0, 1, 2, 4, 5))}")
    fig = draw_si_graph(result.interaction_values("Moebius", 6), graph, symbols, title="pyridine")
    fig.savefig(out / "chem_pyridine_moebius.png", dpi=100)


if __name__ == "__main__":
    main()
