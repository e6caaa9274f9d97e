"""Loaders on the offline copies, SMILES featurisation and every loader error."""

from __future__ import annotations

import pytest
import torch

from wdn_explain.chem.datasets import (
    ATOM_TYPES,
    SMILES_URL,
    TU_URL,
    load_dataset,
    read_smiles_csv,
    smiles_graph_for,
    smiles_to_graph,
)
from wdn_explain.errors import DataError


def test_mutag(mutag):
    assert len(mutag) == 188
    assert int(mutag.labels.sum()) == 125  # README: 125 mutagenic, 63 not
    assert mutag.feature_names == ["C", "N", "O", "F", "I", "Cl", "Br"]
    g = mutag.graphs[0]
    assert g.x.shape[1] == 7 and g.edge_attr.shape == (g.edge_index.shape[1], 4)
    assert [mutag.feature_names[i] for i in g.x.argmax(dim=1)] == mutag.symbols[0]
    # bonds come in both directions with the same type
    pairs = {(i, j): tuple(a.tolist()) for (i, j), a in zip(g.edge_index.t().tolist(), g.edge_attr)}
    assert all(pairs[(j, i)] == t for (i, j), t in pairs.items())


def test_benzene_balanced(benzene):
    assert len(benzene) == 12_000
    assert int(benzene.labels.sum()) == 6_001
    assert benzene.feature_names == list(ATOM_TYPES)
    assert all(g.x.shape[1] == len(ATOM_TYPES) for g in benzene.graphs[:50])


def test_pyridine_graph():
    graph, symbols = smiles_to_graph("c1ccncc1")
    assert symbols == ["C", "C", "C", "N", "C", "C"]
    assert graph.x.argmax(dim=1).tolist() == [0, 0, 0, 1, 0, 0]
    assert graph.edge_index.shape == (2, 12)
    assert graph.edge_attr.argmax(dim=1).tolist() == [3] * 12  # aromatic
    acetone, _ = smiles_to_graph("CC(=O)C")
    kinds = {
        (i, j): k
        for (i, j), k in zip(acetone.edge_index.t().tolist(), acetone.edge_attr.argmax(dim=1))
    }
    assert kinds[(1, 2)] == 1 and kinds[(0, 1)] == 0  # double C=O, single C-C


def write(tmp_path, text):
    path = tmp_path / "mols.csv"
    path.write_text(text)
    return path


def test_other_atoms_counted_in_warning(tmp_path):
    path = write(tmp_path, "mol_id,smiles,label\na,C[Se]C,1\nb,[Si](C)(C)C[Se],0\nc,CCO,0\n")
    with pytest.warns(UserWarning, match=r"3 atoms .* mapped to 'other' \(Se x2, Si x1\)"):
        ds = read_smiles_csv(path)
    assert len(ds) == 3 and ds.ids == ["a", "b", "c"]
    assert ds.graphs[0].x[1].argmax() == ATOM_TYPES.index("other")
    assert ds.labels.tolist() == [1, 0, 0]


def test_malformed_row_names_line(tmp_path):
    path = write(tmp_path, "mol_id,smiles,label\na,CCO,1\nb,CCN\nc,CC,0\n")
    with pytest.raises(DataError, match=r"line 3 is malformed"):
        read_smiles_csv(path)
    path = write(tmp_path, "mol_id,smiles,label\na,CCO,1\nb,CCN,yes\n")
    with pytest.raises(DataError, match=r"line 3 is malformed: label 'yes'"):
        read_smiles_csv(path)
    path = write(tmp_path, "id,smi,y\na,CCO,1\n")
    with pytest.raises(DataError, match="line 1 must be the header"):
        read_smiles_csv(path)


def test_unparsable_smiles_names_id(tmp_path):
    path = write(tmp_path, "mol_id,smiles,label\nok,CCO,1\nZINC42,C1CC(,0\n")
    with pytest.raises(DataError, match=r"line 3: unparsable SMILES 'C1CC\(' of 'ZINC42'"):
        read_smiles_csv(path)


@pytest.mark.parametrize(
    ("name", "where", "url"),
    [
        ("MUTAG", "MUTAG/raw", f"{TU_URL}/MUTAG.zip"),
        ("Benzene", "Benzene", f"{SMILES_URL}/benzene/benzene_smiles.csv"),
        ("AlkaneCarbonyl", "AlkaneCarbonyl", "alkane_carbonyl/alkane_carbonyl_smiles.csv"),
    ],
)
def test_missing_folder_says_where_and_download_path(tmp_path, name, where, url):
    with pytest.raises(DataError) as err:
        load_dataset(name, tmp_path, download=False)
    message = str(err.value)
    assert f"dataset '{name}' not found" in message
    assert str(tmp_path / where) in message and url in message


def test_unknown_dataset(tmp_path):
    with pytest.raises(DataError, match="unknown dataset 'QM9'.*MUTAG"):
        load_dataset("QM9", tmp_path)


def test_pasted_smiles_for_a_model_without_other():
    mutag_types = ["C", "N", "O", "F", "I", "Cl", "Br"]
    graph, symbols = smiles_graph_for("O=[N+]([O-])c1ccccc1", mutag_types)
    assert graph.x.shape == (9, 7) and symbols[:3] == ["O", "N", "O"]
    assert torch.equal(graph.x.sum(dim=1), torch.ones(9))
    with pytest.raises(DataError, match="atom 'S' of SMILES 'CCS' is not one of the atom types"):
        smiles_graph_for("CCS", mutag_types)
    with pytest.raises(DataError, match="unparsable SMILES 'C1CC\\('"):
        smiles_graph_for("C1CC(", mutag_types)
