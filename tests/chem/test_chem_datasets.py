"""Loaders on the offline copies, SMILES featurisation and every loader error."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from wdn_explain.chem.datasets import (
    ATOM_TYPES,
    SMILES_FEATURES,
    SMILES_URL,
    TU_DATASETS,
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
    assert benzene.feature_names == list(SMILES_FEATURES)
    assert all(g.x.shape[1] == len(SMILES_FEATURES) for g in benzene.graphs[:50])


def atom_features(graph, i: int) -> set[str]:
    """Names of the features set for atom ``i`` (one per one-hot block)."""
    return {SMILES_FEATURES[j] for j in torch.nonzero(graph.x[i]).flatten().tolist()}


def names(text: str) -> set[str]:
    return set(text.split(", "))


def test_pyridine_graph():
    graph, symbols = smiles_to_graph("c1ccncc1")
    assert symbols == ["C", "C", "C", "N", "C", "C"]
    assert graph.x[:, : len(ATOM_TYPES)].argmax(dim=1).tolist() == [0, 0, 0, 1, 0, 0]
    assert atom_features(graph, 3) == names("N, degree 2, H 0, charge 0, aromatic yes, ring yes")
    assert atom_features(graph, 0) == names("C, degree 2, H 1, charge 0, aromatic yes, ring yes")
    assert graph.edge_index.shape == (2, 12)
    assert graph.edge_attr.argmax(dim=1).tolist() == [3] * 12  # aromatic
    acetone, _ = smiles_to_graph("CC(=O)C")
    kinds = {
        (i, j): k
        for (i, j), k in zip(acetone.edge_index.t().tolist(), acetone.edge_attr.argmax(dim=1))
    }
    assert kinds[(1, 2)] == 1 and kinds[(0, 1)] == 0  # double C=O, single C-C


def test_descriptors_tell_carbonyl_from_hydroxyl_and_chain_from_ring():
    """What AlkaneCarbonyl's label depends on: C=O vs C-OH, a chain CH2 vs an aromatic CH."""
    acetone, _ = smiles_to_graph("CC(=O)C")
    propanol, _ = smiles_to_graph("CC(O)C")
    assert atom_features(acetone, 2) == names("O, degree 1, H 0, charge 0, aromatic no, ring no")
    assert atom_features(propanol, 2) == names("O, degree 1, H 1, charge 0, aromatic no, ring no")
    butane, _ = smiles_to_graph("CCCC")
    assert {"degree 2", "H 2", "aromatic no", "ring no"} <= atom_features(butane, 1)
    assert {"degree 1", "H 3+"} <= atom_features(butane, 0)
    ion, _ = smiles_to_graph("C[N+](C)(C)C.[O-]C=O")
    assert {"N", "degree 4", "charge +"} <= atom_features(ion, 1)
    assert {"O", "charge -"} <= atom_features(ion, 5)
    salt, _ = smiles_to_graph("[O-2]")  # beyond the end bins: the nearest bin
    assert {"O", "degree 0", "H 0", "charge -"} <= atom_features(salt, 0)
    # every atom sets exactly one feature per block (atom type and each descriptor)
    assert torch.equal(butane.x.sum(dim=1), torch.full((4,), 6.0))


def write(tmp_path, text):
    path = tmp_path / "mols.csv"
    path.write_text(text)
    return path


def test_other_atoms_counted_in_warning(tmp_path):
    path = write(tmp_path, "mol_id,smiles,label\na,C[Se]C,1\nb,[Si](C)(C)C[Se],0\nc,CCO,0\n")
    with pytest.warns(UserWarning, match=r"3 atoms .* mapped to 'other' \(Se x2, Si x1\)"):
        ds = read_smiles_csv(path)
    assert len(ds) == 3 and ds.ids == ["a", "b", "c"]
    assert ds.graphs[0].x[1, : len(ATOM_TYPES)].argmax() == ATOM_TYPES.index("other")
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
    full, _ = smiles_graph_for("O=[N+]([O-])c1ccccc1", list(SMILES_FEATURES))
    assert torch.equal(full.x, smiles_to_graph("O=[N+]([O-])c1ccccc1")[0].x)
    assert full.x.shape == (9, len(SMILES_FEATURES))


OTHER_TU = [name for name in TU_DATASETS if name != "MUTAG"]
#: node attributes per node in the real files (read past: the features are the node labels)
TU_ATTRIBUTES = {"Mutagenicity": 0, "PROTEINS": 1, "ENZYMES": 18, "BZR": 3, "COX2": 3}


def write_tu(root, name: str, graph_labels: list[int]) -> None:
    """A tiny TU-format folder: a triangle (nodes 1-3) and one bond (nodes 4-5)."""
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    edges = [(1, 2), (2, 3), (1, 3), (4, 5)]
    both = [pair for i, j in edges for pair in ((i, j), (j, i))]
    (raw / f"{name}_A.txt").write_text("".join(f"{i}, {j}\n" for i, j in both))
    (raw / f"{name}_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (raw / f"{name}_graph_labels.txt").write_text("".join(f"{y}\n" for y in graph_labels))
    (raw / f"{name}_node_labels.txt").write_text("0\n1\n0\n2\n1\n")
    if TU_ATTRIBUTES[name]:
        row = ", ".join(["0.5"] * TU_ATTRIBUTES[name])
        (raw / f"{name}_node_attributes.txt").write_text(f"{row}\n" * 5)


@pytest.mark.parametrize("name", OTHER_TU)
def test_other_tu_sets_load_through_the_same_path(tmp_path, name):
    write_tu(tmp_path, name, [2, 1])
    ds = load_dataset(name, tmp_path, download=False)
    assert ds.labels.tolist() == [1, 0]  # raw labels 2, 1 -> class numbers in sorted order
    first, second = ds.graphs
    assert first.x.tolist() == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]  # node labels 0, 1, 0
    assert second.x.tolist() == [[0, 0, 1], [0, 1, 0]]
    assert sorted(map(tuple, first.edge_index.t().tolist())) == [
        (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)
    ]  # fmt: skip
    atoms = TU_DATASETS[name]
    if atoms:  # Mutagenicity: node labels are atoms (C, O, Cl, ...)
        assert ds.feature_names == list(atoms[:3])
        assert ds.symbols == [["C", "O", "C"], ["Cl", "O"]]
    else:
        assert ds.feature_names == ["label 0", "label 1", "label 2"] and ds.symbols is None


@pytest.mark.parametrize("name", OTHER_TU)
def test_other_tu_set_missing_says_where(tmp_path, name):
    with pytest.raises(DataError) as err:
        load_dataset(name, tmp_path, download=False)
    message = str(err.value)
    assert f"dataset '{name}' not found" in message
    assert f"put its unzipped TU files into '{tmp_path / name / 'raw'}'" in message
    assert f"{TU_URL}/{name}.zip" in message


class _Payload:
    """A pickle that creates ``marker`` when it is unpickled (what a planted file would run)."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_planted_pickles_in_the_tu_cache_never_run(tmp_path, monkeypatch):
    import hashlib
    import os
    import tempfile

    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    write_tu(tmp_path / "chem", "Mutagenicity", [2, 1])
    marker = tmp_path / "payload-ran"
    # where the parse was cached before: a predictable folder in the shared temp folder
    key = hashlib.sha256(str((tmp_path / "chem").resolve()).encode()).hexdigest()[:12]
    old = Path(tempfile.gettempdir()) / f"wdn_explain_tu_{os.getuid()}" / key
    for name in ("data.pt", "pre_transform.pt", "pre_filter.pt"):
        (old / "Mutagenicity" / "processed").mkdir(parents=True, exist_ok=True)
        torch.save(_Payload(marker), old / "Mutagenicity" / "processed" / name)
    first = load_dataset("Mutagenicity", tmp_path / "chem", download=False)
    # the cache entry of this very content replaced by a payload: refused, parsed again
    assert not marker.exists()
    cache = tmp_path / "cache" / "tu"
    (entry,) = cache.glob("Mutagenicity_*.pt")
    torch.save(_Payload(marker), entry)
    again = load_dataset("Mutagenicity", tmp_path / "chem", download=False)
    assert not marker.exists()
    assert again.labels.tolist() == first.labels.tolist() == [1, 0]
    assert torch.equal(again.graphs[1].x, first.graphs[1].x)
    # an edited raw file is parsed again, never answered from the stale cache entry
    raw = tmp_path / "chem" / "Mutagenicity" / "raw"
    (raw / "Mutagenicity_graph_labels.txt").write_text("1\n2\n")
    assert load_dataset("Mutagenicity", tmp_path / "chem", download=False).labels.tolist() == [
        0,
        1,
    ]
    assert len(list(cache.glob("Mutagenicity_*.pt"))) == 2


def test_a_cache_folder_others_may_write_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "tu").mkdir(parents=True)
    (tmp_path / "cache" / "tu").chmod(0o777)
    write_tu(tmp_path / "chem", "Mutagenicity", [2, 1])
    with pytest.raises(
        DataError, match=r"cache folder '.*tu' is not private \(owner uid \d+, mode 777\)"
    ):
        load_dataset("Mutagenicity", tmp_path / "chem", download=False)


def test_a_pickled_or_incomplete_paper_version_is_one_line(tmp_path):
    import numpy as np

    from wdn_explain.chem.datasets import load_paper_version

    folder = tmp_path / "AlkaneCarbonyl"
    folder.mkdir()
    np.savez(folder / "paper_version.npz", y=np.array([{"payload": 1}], dtype=object))
    with pytest.raises(DataError, match=r"paper_version.npz cannot be read as plain arrays"):
        load_paper_version("AlkaneCarbonyl", tmp_path)
    np.savez(folder / "paper_version.npz", y=np.zeros(2))
    with pytest.raises(DataError, match=r"arrays edge_features, edge_index, .* are missing"):
        load_paper_version("AlkaneCarbonyl", tmp_path)
