"""The paper's molecule examples, from the shipped models: one figure per line.

Usage: ``python benchmarks/paper/chem_examples.py [MUTAG_MODEL] [BENZENE_MODEL] [OUT_DIR]``
(defaults: ``models/chem/mutag-gin3``, ``models/chem/benzene-gin3``, ``benchmarks/results``).
Prints the NO2 group of the first mutagenic MUTAG molecule, the 6-way Möbius interaction of
the ring of the first small Benzene molecule the model gets right, and the pyridine case
(one CH of that ring turned into N); draws their SI-Graphs.
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
        f"MUTAG #0 log-odds 'mutagenic' {result.prediction:+.3f} (masked {result.empty_prediction:.3f})"
    )
    print(f"MUTAG #0 SV N14 O15 O16: {sv[(n,)]:+.3f} {sv[(o1,)]:+.3f} {sv[(o2,)]:+.3f}")
    print(f"MUTAG #0 SV sum of the NO2 group {sv[(n,)] + sv[(o1,)] + sv[(o2,)]:+.3f}")
    print(f"MUTAG #0 Moebius N14+O15+O16 {mi[(n, o1, o2)]:+.3f}, |I| = {result.n_interactions}")
    fig = draw_si_graph(result.interaction_values("k-SII", 2), graph, symbols, title="MUTAG #0")
    fig.savefig(out / "chem_mutag0_ksii2.png", dpi=100)

    model, card = load_classifier(benzene_dir)
    benzene = load_dataset("Benzene", "../shared/datasets/chem", download=False)
    index, ring = first_benzene_molecule(benzene, model)
    graph, symbols = benzene.graphs[index], benzene.symbols[index]
    result = explain_molecule(model, graph)
    benzene_sv = result.interaction_values("SV", 1)
    mi = result.moebius.dict_values
    rank = sorted(mi, key=lambda s: -abs(mi[s])).index(ring) + 1
    print(f"Benzene #{index} {benzene.smiles[index]} log-odds 'benzene' {result.prediction:+.3f}")
    print(f"Benzene #{index} 6-way Moebius of the ring {mi[ring]:+.3f} (rank {rank} of {len(mi)})")
    top = sorted(mi, key=lambda s: -abs(mi[s]))[:3]
    print(f"Benzene #{index} largest Moebius: {', '.join(f'{s} {mi[s]:+.3f}' for s in top)}")
    fig = draw_si_graph(
        result.interaction_values("Moebius", 6), graph, symbols, title=f"Benzene #{index}"
    )
    fig.savefig(out / "chem_benzene_moebius.png", dpi=100)
    # the pyridine case: one CH of that ring turned into N
    pyridine, c_atom = aza_variant(benzene.smiles[index], ring)
    graph, symbols = smiles_graph_for(pyridine, card.feature_names)
    n_atom, aza_ring = pyridine_ring(pyridine)  # the SMILES is written in another atom order
    result = explain_molecule(model, graph)
    sv = result.interaction_values("SV", 1)
    print(f"pyridine variant {pyridine} log-odds 'benzene' {result.prediction:+.3f}")
    print(
        f"pyridine variant SV of N{n_atom} {sv[(n_atom,)]:+.3f} "
        f"(the C{c_atom} it replaces in Benzene #{index}: {benzene_sv[(c_atom,)]:+.3f})"
    )
    ring_sv = sum(sv[(i,)] for i in aza_ring)
    print(
        f"pyridine variant SV sum of the ring {ring_sv:+.3f} "
        f"(Benzene #{index}: {sum(benzene_sv[(i,)] for i in ring):+.3f})"
    )
    aza_mi = result.moebius.dict_values.get(aza_ring, 0.0)
    print(
        f"pyridine variant 6-way Moebius of the ring {aza_mi:+.3f} (Benzene #{index}: {mi[ring]:+.3f})"
    )
    mean = explain_molecule(model, graph, baseline="mean").interaction_values("SV", 1)
    print(f"pyridine variant SV of N{n_atom} against the mean atom {mean[(n_atom,)]:+.3f}")
    fig = draw_si_graph(result.interaction_values("k-SII", 2), graph, symbols, title=pyridine)
    fig.savefig(out / "chem_pyridine_ksii2.png", dpi=100)


def first_benzene_molecule(dataset, model, max_atoms: int = 16) -> tuple[int, tuple[int, ...]]:
    """The first small, correctly predicted positive molecule with one benzene ring."""
    from rdkit import Chem

    pattern = Chem.MolFromSmarts("c1ccccc1")
    for i, (graph, smiles) in enumerate(zip(dataset.graphs, dataset.smiles)):
        if int(graph.y) != 1 or graph.num_nodes > max_atoms:
            continue
        matches = Chem.MolFromSmiles(smiles).GetSubstructMatches(pattern)
        with torch.no_grad():
            positive = model(graph.x, graph.edge_index).argmax(dim=1).item() == 1
        if len(matches) == 1 and positive:
            return i, tuple(sorted(matches[0]))
    raise ValueError("no such molecule")


def pyridine_ring(smiles: str) -> tuple[int, tuple[int, ...]]:
    """The N and the six ring atoms of the pyridine ring, in the SMILES's atom order."""
    from rdkit import Chem

    match = Chem.MolFromSmiles(smiles).GetSubstructMatch(Chem.MolFromSmarts("n1ccccc1"))
    return match[0], tuple(sorted(match))


def aza_variant(smiles: str, ring: tuple[int, ...]) -> tuple[str, int]:
    """The molecule with the first unsubstituted ring carbon replaced by N, and that carbon."""
    from rdkit import Chem

    mol = Chem.RWMol(Chem.MolFromSmiles(smiles))
    atom = next(mol.GetAtomWithIdx(i) for i in ring if mol.GetAtomWithIdx(i).GetDegree() == 2)
    atom.SetAtomicNum(7)
    atom.SetNoImplicit(False)
    Chem.SanitizeMol(mol)
    return Chem.MolToSmiles(mol, canonical=False), atom.GetIdx()


if __name__ == "__main__":
    main()
