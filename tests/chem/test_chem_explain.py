"""Exact SIs of small molecules equal brute force computed here, and the SI-Graph drawing."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
import torch

from wdn_explain.chem.datasets import SMILES_FEATURES, smiles_to_graph
from wdn_explain.chem.explain import (
    draw_si_graph,
    explain_molecule,
    molecule_layout,
    top_interactions,
)
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN


def random_model(architecture: str, layers: int, seed: int = 0, **options) -> MoleculeGNN:
    """Random weights and batch-norm statistics (so batch norm is not the identity)."""
    torch.manual_seed(seed)
    model = MoleculeGNN(
        ChemModelConfig(
            architecture=architecture,
            in_channels=len(SMILES_FEATURES),
            hidden=8,
            num_layers=layers,
            **options,
        )
    )
    for norm in model.norms:
        norm.running_mean.uniform_(-0.5, 0.5)
        norm.running_var.uniform_(0.5, 2.0)
    return model.double().eval()


def brute_force_moebius(model, graph, output, mean: bool) -> dict[frozenset, float]:
    """nu(T) on all 2^n coalitions by direct model calls (masked atoms: all-zero features or
    the molecule's mean atom), then m(S) = sum_{T ⊆ S} (-1)^{|S|-|T|} nu(T) by subset sums."""
    x = graph.x.double()
    n = len(x)
    baseline = x.mean(dim=0) if mean else torch.zeros(x.shape[1], dtype=x.dtype)
    nu = {}
    with torch.no_grad():
        for size in range(n + 1):
            for members in combinations(range(n), size):
                masked = baseline.repeat(n, 1)
                masked[list(members)] = x[list(members)]
                logits = model(masked, graph.edge_index)[0]
                value = logits[1] - logits[0] if output is None else logits[output]
                nu[frozenset(members)] = float(value)
    return {s: sum((-1) ** (len(s) - len(t)) * nu[t] for t in nu if t <= s) for s in nu}


@pytest.mark.parametrize(
    ("architecture", "layers", "baseline", "output", "options"),
    [
        ("GCN", 2, "zeros", None, {}),
        ("GIN", 1, "zeros", 1, {}),
        ("GIN", 3, "mean", None, {}),
        ("GAT", 2, "zeros", 0, {}),
        ("GCN", 3, "zeros", None, {"node_hidden": 6}),  # a node-level layer before pooling
    ],
)
def test_exact_sis_equal_brute_force(architecture, layers, baseline, output, options):
    graph, _ = smiles_to_graph("Oc1ccncc1C")  # 3-methyl-4-pyridinol, 8 atoms
    model = random_model(architecture, layers, **options)
    explanation = explain_molecule(model, graph, output_index=output, baseline=baseline)
    oracle = brute_force_moebius(model, graph, output, mean=baseline == "mean")
    got = explanation.moebius.dict_values
    for s, value in oracle.items():
        assert got.get(tuple(sorted(s)), 0.0) == pytest.approx(value, abs=1e-9), s
    n = graph.num_nodes
    sv = explanation.interaction_values("SV", 1)
    for i in range(n):
        expected = sum(v / len(s) for s, v in oracle.items() if i in s)
        assert sv[(i,)] == pytest.approx(expected, abs=1e-9)
    # the engine holds MIs only on I (the loop above checks the rest vanish), computed on
    # the standard-layer state graph (no masked graph): with one layer the fields are
    # single atoms and their bonded neighbours
    assert explanation.method == "local" and explanation.n_graph_evaluations == 0
    if layers == 1:
        assert explanation.n_interactions < 2**n // 4


def test_layout_draw_and_top(tmp_path):
    graph, symbols = smiles_to_graph("O=[N+]([O-])c1ccccc1")
    coords = molecule_layout(symbols, graph.edge_index, graph.edge_attr)
    assert coords.shape == (9, 2)
    bonded = np.linalg.norm(coords[1] - coords[0])
    assert bonded == pytest.approx(1.5, abs=0.2)  # RDKit's standard bond length
    model = random_model("GIN", 2)
    values = explain_molecule(model, graph).interaction_values("k-SII", 2)
    top = top_interactions(values, symbols, 3)
    assert len(top) == 3 and abs(top[0][1]) >= abs(top[1][1]) >= abs(top[2][1])
    assert all(name.rstrip("0123456789+") for name, _ in top)
    fig = draw_si_graph(values, graph, symbols, n_interactions=8, title="nitrobenzene")
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"O0", "N1", "C3"} <= labels
    fig.savefig(tmp_path / "si.png")
    assert (tmp_path / "si.png").read_bytes()[:4] == b"\x89PNG"


def _atoms(fig) -> np.ndarray:
    """(x, y, radius) of every atom circle drawn (white-filled, black-edged patches)."""
    from matplotlib.colors import to_rgba

    rows = []
    for patch in fig.axes[0].patches:
        if patch.get_facecolor() == to_rgba("white") and patch.get_edgecolor() == to_rgba("k"):
            (x0, y0), (x1, y1) = patch.get_path().get_extents().get_points()
            rows.append(((x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2))
    return np.array(rows)


def test_shipped_mutag_drawings_show_bond_pairs_and_no_overlapping_atoms(mutag):
    """MUTAG #0 (17 atoms) and a 24-atom molecule with the shipped GIN: every strongest pair
    is a visible coloured line (also C6+C7, a bond), bonds are grey beneath, no two atom
    circles overlap."""
    import matplotlib.pyplot as plt

    from wdn_explain.chem.training import load_classifier
    from wdn_explain.shipped import shipped

    model, _ = load_classifier(shipped("models/chem/mutag-gin3"))
    big = next(i for i, g in enumerate(mutag.graphs) if g.num_nodes == 24)
    for index in (0, big):
        graph, symbols = mutag.graphs[index], mutag.symbols[index]
        values = explain_molecule(model, graph).interaction_values("k-SII", 2)
        fig = draw_si_graph(values, graph, symbols, n_interactions=20)
        strongest = sorted(
            ((s, v) for s, v in values.dict_values.items() if s), key=lambda kv: -abs(kv[1])
        )[:20]
        pairs = {s: v for s, v in strongest if len(s) == 2}
        lines = [ln for ln in fig.axes[0].lines if ln.get_label() == "pair"]
        assert len(lines) == len(pairs) > 0
        colours = {ln.get_color() for ln in lines}
        assert colours <= {"#d62728", "#1f77b4"}
        bonds = {tuple(sorted(e)) for e in graph.edge_index.t().tolist()}
        if index == 0:
            assert (6, 7) in pairs and (6, 7) in bonds and pairs[(6, 7)] > 1  # C6+C7 +1.11
        atoms = _atoms(fig)
        assert len(atoms) == graph.num_nodes
        for a, b in combinations(range(len(atoms)), 2):
            gap = np.hypot(*(atoms[a, :2] - atoms[b, :2]))
            assert gap > atoms[a, 2] + atoms[b, 2], (index, a, b)
        plt.close(fig)
