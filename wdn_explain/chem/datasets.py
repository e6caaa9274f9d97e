"""Molecule datasets: the TU collection through PyG's ``TUDataset`` and SMILES CSVs via RDKit.

Every loader returns a :class:`MoleculeDataset`: PyG graphs with one-hot node features
``x`` (n, F), both directions of every bond in ``edge_index`` and the bond type one-hot in
``edge_attr`` (E, 4: single, double, triple, aromatic), class labels ``y`` (0/1) and, for
molecules, the atom symbol of every node (``symbols``) for drawing. The node features are
the node labels of a TU set; for a SMILES molecule, the atom type followed by the
:data:`ATOM_DESCRIPTORS` (degree, hydrogens, charge, aromaticity, ring membership: what
tells C=O from C-OH and a chain CH2 from an aromatic CH, since GCN/GIN/GAT ignore bonds).

AlkaneCarbonyl and FluorideCarbonyl come in two data versions: ``csv`` (the CSV ``label``
column, RDKit featurisation) and ``paper`` (``paper_version.npz``: the graphs and labels the
GraphSHAP-IQ paper trained on, from GraphXAI's files, 14 atom-type one-hots). The two label
sets encode different tasks (:data:`TASKS`): GraphXAI's labels are swapped between the two
folders, so the paper's "AlkaneCarbonyl" is the fluoride-and-carbonyl task.

Real users get the files from the standard download paths; offline, point ``root`` at a
folder that holds them (``root/MUTAG/raw/MUTAG_A.txt``, ``root/Benzene/benzene_smiles.csv``,
``root/AlkaneCarbonyl/paper_version.npz``) -- the error for a missing folder says exactly where.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch_geometric.data import Data, InMemoryDataset

from ..errors import DataError
from ..files import load_npz, load_torch, private_cache_dir, save_torch

TU_URL = "https://www.chrsmrrs.com/graphkerneldatasets"
SMILES_URL = "https://github.com/google-research/graph-attribution/raw/main/data"

#: TU sets of the paper; atom symbols of their node labels where the set is molecular.
TU_DATASETS: dict[str, tuple[str, ...] | None] = {
    "MUTAG": ("C", "N", "O", "F", "I", "Cl", "Br"),
    "Mutagenicity": ("C", "O", "Cl", "H", "N", "F", "Br", "S", "P", "I", "Na", "K", "Li", "Ca"),
    "BZR": None,
    "COX2": None,
    "PROTEINS": None,
    "ENZYMES": None,
}
#: SMILES sets: dataset name -> (file name, folder of the download path).
SMILES_DATASETS = {
    "Benzene": ("benzene_smiles.csv", "benzene"),
    "FluorideCarbonyl": ("fluoride_carbonyl_smiles.csv", "fluoride_carbonyl"),
    "AlkaneCarbonyl": ("alkane_carbonyl_smiles.csv", "alkane_carbonyl"),
}
DATASETS = (*TU_DATASETS, *SMILES_DATASETS)
#: Data versions: ``csv`` (the CSV ``label`` column) or ``paper`` (the paper's GraphXAI copy).
DataVersion = Literal["csv", "paper"]
VERSIONS = ("csv", "paper")
#: The file of the paper's data version inside ``root/NAME/`` (sets that have one).
PAPER_VERSION_FILE = "paper_version.npz"
PAPER_DATASETS = ("AlkaneCarbonyl", "FluorideCarbonyl")
#: What each label set encodes: (dataset, version) -> task and where its labels come from.
TASKS = {
    ("MUTAG", "csv"): "mutagenic or not (TU collection labels)",
    ("Benzene", "csv"): "contains a benzene ring (CSV label column)",
    ("AlkaneCarbonyl", "csv"): (
        "an unbranched alkane and a carbonyl group (CSV label column, 1 098 of 4 326 positive)"
    ),
    ("FluorideCarbonyl", "csv"): (
        "described as a fluoride and a carbonyl group, but the CSV label column agrees with "
        "that rule on 67.6 % of molecules only (1 072 of 8 671 positive)"
    ),
    ("AlkaneCarbonyl", "paper"): (
        "a fluoride AND a carbonyl group (GraphXAI's AlkaneCarbonyl labels, which the paper "
        "trained on: 375 of 4 326 positive; the folders' labels are swapped)"
    ),
    ("FluorideCarbonyl", "paper"): (
        "an unbranched alkane AND a carbonyl group (GraphXAI's FluorideCarbonyl labels, which "
        "the paper trained on: 1 527 of 8 671 positive; the folders' labels are swapped)"
    ),
}
#: Atom types of the SMILES featurisation (the papers' list); anything else is ``other``.
ATOM_TYPES = ("C", "N", "O", "S", "F", "P", "Cl", "Br", "Na", "Ca", "I", "B", "H", "other")
#: One-hot atom descriptors after the atom type: (name, lowest value, bin labels); a value
#: outside the bins falls into the nearest end bin.
ATOM_DESCRIPTORS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("degree", 0, ("0", "1", "2", "3", "4", "5+")),
    ("H", 0, ("0", "1", "2", "3+")),
    ("charge", -1, ("-", "0", "+")),
    ("aromatic", 0, ("no", "yes")),
    ("ring", 0, ("no", "yes")),
)
#: Node features of the SMILES sets (recorded in a model's card as ``feature_names``).
SMILES_FEATURES = (
    *ATOM_TYPES,
    *(f"{name} {label}" for name, _, labels in ATOM_DESCRIPTORS for label in labels),
)
_TU_ATOMS = {atom for atoms in TU_DATASETS.values() if atoms for atom in atoms}
#: Bond types, in the order of the edge feature one-hot (MUTAG's edge labels are reordered).
BOND_TYPES = ("single", "double", "triple", "aromatic")
_MUTAG_BONDS = (3, 0, 1, 2)  # MUTAG edge label (aromatic, single, double, triple) -> BOND_TYPES


@dataclass
class MoleculeDataset:
    """Graphs of one dataset and what is needed to draw and check them.

    Attributes:
        name: Dataset name (one of :data:`DATASETS`).
        graphs: PyG ``Data`` with ``x``, ``edge_index``, ``edge_attr`` (or None), ``y`` (1,).
        feature_names: Meaning of each node feature column (atom types for molecules).
        symbols: Atom symbol per node of every graph, or None for non-molecular sets.
        ids: Molecule identifiers (``mol_id`` of the CSV, graph number for TU sets).
        smiles: SMILES per graph (SMILES sets only).
        version: Data version (``csv``, or ``paper`` for the paper's GraphXAI copy).
    """

    name: str
    graphs: list[Data]
    feature_names: list[str]
    symbols: list[list[str]] | None
    ids: list[str]
    smiles: list[str] | None = None
    version: DataVersion = "csv"

    @property
    def description(self) -> str:
        """The task its labels encode and where they come from (see :data:`TASKS`)."""
        return TASKS.get((self.name, self.version), "")

    def __len__(self) -> int:
        return len(self.graphs)

    @property
    def labels(self) -> torch.Tensor:
        return torch.cat([g.y for g in self.graphs])

    @property
    def n_classes(self) -> int:
        return int(self.labels.max()) + 1


def default_root() -> Path:
    """``$WDN_EXPLAIN_CHEM_DATA``, else ``~/.cache/wdn_explain/chem`` (downloads go there)."""
    env = os.environ.get("WDN_EXPLAIN_CHEM_DATA")
    return Path(env) if env else Path.home() / ".cache" / "wdn_explain" / "chem"


def load_dataset(
    name: str,
    root: str | Path | None = None,
    *,
    download: bool = True,
    version: DataVersion = "csv",
) -> MoleculeDataset:
    """Load a dataset by name from ``root`` (downloading what is missing when allowed).

    ``version="paper"`` loads the paper's data version of AlkaneCarbonyl or FluorideCarbonyl
    (:func:`load_paper_version`; never downloaded).

    Raises:
        DataError: unknown name or version, files missing (offline), malformed CSV row or
            SMILES.
    """
    root = Path(root) if root is not None else default_root()
    if version == "paper":
        return load_paper_version(name, root)
    if version != "csv":
        raise DataError(f"unknown data version '{version}' (choose from {', '.join(VERSIONS)})")
    if name in TU_DATASETS:
        return load_tu(name, root, download=download)
    if name in SMILES_DATASETS:
        return load_smiles(name, root, download=download)
    raise DataError(f"unknown dataset '{name}' (choose from {', '.join(DATASETS)})")


def load_tu(name: str, root: str | Path, *, download: bool = True) -> MoleculeDataset:
    """A TU dataset from ``root/NAME/raw`` (downloaded from the TU collection when allowed)."""
    root = Path(root)
    raw = root / name / "raw"
    url = f"{TU_URL}/{name}.zip"
    if not (raw / f"{name}_A.txt").is_file():
        if not download:
            raise DataError(_missing(name, raw, url, "its unzipped TU files"))
        try:
            _download_tu(url, raw)
        except OSError as exc:  # URLError is an OSError: offline or unreachable
            raise DataError(_missing(name, raw, url, "its unzipped TU files", exc)) from None
    try:
        data, slices, sizes = _tu_graphs(name, raw)
        tu = InMemoryDataset()
        tu.data, tu.slices = data, slices
        samples = list(tu)  # PyG slices each graph out here: a cut label file fails now
    except OSError as exc:
        raise DataError(_missing(name, raw, url, "its unzipped TU files", exc)) from None
    except _CUT_FILE_ERRORS as exc:
        raise _corrupt(name, raw, exc) from None
    atoms = TU_DATASETS[name]
    n_labels = sizes["num_node_labels"]
    feature_names = list(atoms[:n_labels]) if atoms else [f"label {i}" for i in range(n_labels)]
    graphs, symbols = [], [] if atoms else None
    for sample in samples:
        edge_attr = sample.edge_attr
        if name == "MUTAG" and edge_attr is not None:
            edge_attr = edge_attr[:, list(_MUTAG_BONDS)]
        graphs.append(
            Data(x=sample.x, edge_index=sample.edge_index, edge_attr=edge_attr, y=sample.y)
        )
        if atoms:
            symbols.append([atoms[i] for i in sample.x[:, :n_labels].argmax(dim=1).tolist()])
    ids = [str(i) for i in range(len(graphs))]
    return MoleculeDataset(name, graphs, feature_names, symbols, ids)


def _tu_graphs(name: str, raw: Path) -> tuple[Data, dict, dict]:
    """PyG's parse of the TU files in ``raw`` (node labels as ``x``, edge labels as
    ``edge_attr``: the continuous attributes are left out), the slices of every graph and
    the sizes, through a cache of the parse.

    The cache lives in this user's private cache folder (:func:`private_cache_dir`), is
    named for the content of the raw files (an edited file is parsed again) and is read with
    ``weights_only=True`` only (never PyG's ``fs.torch_load``, which retries unsafely); a
    cache file that fails that load is parsed again and replaced.
    """
    from torch_geometric.io import read_tu_data

    digest = hashlib.sha256(name.encode())
    for path in sorted(raw.glob(f"{name}_*.txt")):
        digest.update(f"\0{path.name}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    cache = private_cache_dir("tu") / f"{name}_{digest.hexdigest()[:24]}.pt"
    parsed = None
    if cache.is_file():
        with contextlib.suppress(DataError):
            parsed = load_torch(cache)
    if not _parsed_tu(parsed):
        data, slices, sizes = read_tu_data(str(raw), name)
        parsed = (data.to_dict(), slices, sizes)
        with contextlib.suppress(DataError):  # a full disk costs the next parse only
            save_torch(parsed, cache)
    fields, slices, sizes = parsed
    data = Data.from_dict(fields)
    if data.x is not None:
        data.x = data.x[:, sizes["num_node_attributes"] :]
    if data.edge_attr is not None:
        data.edge_attr = data.edge_attr[:, sizes["num_edge_attributes"] :]
    return data, slices, sizes


def _parsed_tu(parsed: object) -> bool:
    """Whether a loaded cache entry has the shape :func:`_tu_graphs` stores."""
    return (
        isinstance(parsed, tuple)
        and len(parsed) == 3
        and all(isinstance(part, dict) for part in parsed)
        and {"num_node_labels", "num_node_attributes", "num_edge_attributes"} <= set(parsed[2])
    )


def _download_tu(url: str, raw: Path) -> None:
    """Download and unzip a TU set into ``raw`` (its files directly inside)."""
    from torch_geometric.data import download_url, extract_zip

    raw.mkdir(parents=True, exist_ok=True)
    archive = Path(download_url(url, str(raw), log=False))
    extract_zip(str(archive), str(raw), log=False)
    archive.unlink()
    folder = raw / archive.stem
    if folder.is_dir():
        for path in folder.iterdir():
            path.replace(raw / path.name)
        folder.rmdir()


_CUT_FILE_ERRORS = (IndexError, ValueError, RuntimeError)
"""What PyG's TU reader raises when its files disagree (one was cut or edited)."""


def _corrupt(name: str, raw: Path, exc: Exception) -> DataError:
    """One line naming a TU dataset whose files disagree, with PyG's reason."""
    return DataError(
        f"dataset '{name}' in '{raw}' is truncated or corrupt: its TU files disagree "
        f"({type(exc).__name__}: {' '.join(str(exc).split())})"
    )


def load_smiles(name: str, root: str | Path, *, download: bool = True) -> MoleculeDataset:
    """A SMILES CSV dataset (``mol_id,smiles,label``) from ``root/NAME/``."""
    filename, folder = SMILES_DATASETS[name]
    path = Path(root) / name / filename
    url = f"{SMILES_URL}/{folder}/{filename}"
    if not path.is_file():
        if not download:
            raise DataError(_missing(name, path.parent, url, filename))
        from torch_geometric.data import download_url

        try:
            download_url(url, str(path.parent), log=False)
        except OSError as exc:
            raise DataError(_missing(name, path.parent, url, filename, exc)) from None
    return read_smiles_csv(path, name)


def load_paper_version(name: str, root: str | Path) -> MoleculeDataset:
    """The paper's data version of a set from ``root/NAME/paper_version.npz`` (no pickles).

    Graphs and atom order are the CSV molecules row for row; node features are the 14
    atom-type one-hots (:data:`ATOM_TYPES`, the file's ``*`` is ``other``); the file's 5
    bond one-hots (single, double, triple, aromatic, other) become :data:`BOND_TYPES` with
    other as single (as :func:`smiles_to_graph` does); its edges (receiver, sender) are
    turned into PyG's (source, target). The paper's downsampling and split sizes are
    training options (:data:`wdn_explain.chem.training.PAPER_TRAINING`).

    Raises:
        DataError: a name without a paper version, a missing file, or arrays that do not
            fit together.
    """
    if name not in PAPER_DATASETS:
        raise DataError(
            f"dataset '{name}' has no paper data version (choose from {', '.join(PAPER_DATASETS)})"
        )
    path = Path(root) / name / PAPER_VERSION_FILE
    if not path.is_file():
        raise DataError(
            f"paper data version of '{name}' not found: put {PAPER_VERSION_FILE} into "
            f"'{path.parent}' (the GraphSHAP-IQ paper's GraphXAI files converted to arrays), "
            f"or pass the folder that holds '{name}/' as root"
        )
    try:
        with load_npz(path) as arrays:
            z = {key: arrays[key] for key in arrays.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # pickles are refused
        raise DataError(f"{path} cannot be read as plain arrays ({exc})") from None
    needed = {"node_offsets", "edge_offsets", "node_features", "edge_features", "edge_index"}
    missing = sorted((needed | {"y", "smiles", "mol_id"}) - set(z))
    if missing:
        raise DataError(f"{path}: arrays {', '.join(missing)} are missing")
    nodes, edges = z["node_offsets"], z["edge_offsets"]
    n_graphs = len(z["y"])
    if len(nodes) != n_graphs + 1 or len(edges) != n_graphs + 1 or len(z["smiles"]) != n_graphs:
        raise DataError(f"{path}: node_offsets, edge_offsets, smiles and y do not fit together")
    if z["node_features"].shape[1] != len(ATOM_TYPES):
        raise DataError(
            f"{path}: node_features has {z['node_features'].shape[1]} columns, "
            f"{len(ATOM_TYPES)} atom types expected"
        )
    x_all = torch.from_numpy(z["node_features"].astype(np.float32))
    bonds = z["edge_features"].astype(np.float32)
    bonds = np.concatenate(
        [bonds[:, :1] + bonds[:, 4:].sum(axis=1, keepdims=True), bonds[:, 1:4]], 1
    )
    attr_all = torch.from_numpy(bonds)
    index_all = torch.from_numpy(z["edge_index"][::-1].astype(np.int64))
    graphs, symbols = [], []
    for i in range(n_graphs):
        x = x_all[nodes[i] : nodes[i + 1]]
        graphs.append(
            Data(
                x=x,
                edge_index=index_all[:, edges[i] : edges[i + 1]].contiguous(),
                edge_attr=attr_all[edges[i] : edges[i + 1]],
                y=torch.tensor([int(z["y"][i])]),
            )
        )
        symbols.append([ATOM_TYPES[t] for t in x.argmax(dim=1).tolist()])
    return MoleculeDataset(
        name,
        graphs,
        list(ATOM_TYPES),
        symbols,
        [str(m) for m in z["mol_id"]],
        [str(s) for s in z["smiles"]],
        version="paper",
    )


def read_smiles_csv(path: str | Path, name: str | None = None) -> MoleculeDataset:
    """Parse a ``mol_id,smiles,label`` CSV into molecule graphs.

    Atoms outside :data:`ATOM_TYPES` become ``other`` (counted in one warning).

    Raises:
        DataError: a row without three fields or a non-numeric label (its line number), an
            unparsable SMILES (its ``mol_id`` and line).
    """
    path = Path(path)
    graphs, symbols, ids, smiles, other = [], [], [], [], Counter()
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header != ["mol_id", "smiles", "label"]:
            raise DataError(
                f"{path}: line 1 must be the header 'mol_id,smiles,label' (got {header})"
            )
        for row in reader:
            line = reader.line_num
            if len(row) != 3:
                raise DataError(f"{path}: line {line} is malformed: 3 fields expected (got {row})")
            mol_id, smi, label = row
            try:
                y = int(float(label))
            except ValueError:
                raise DataError(
                    f"{path}: line {line} is malformed: label '{label}' is not a number"
                ) from None
            graph, atoms = smiles_to_graph(smi, ATOM_TYPES, other)
            if graph is None:
                raise DataError(f"{path}: line {line}: unparsable SMILES '{smi}' of '{mol_id}'")
            graph.y = torch.tensor([y])
            graphs.append(graph)
            symbols.append(atoms)
            ids.append(mol_id)
            smiles.append(smi)
    if other:
        listed = ", ".join(f"{s} x{c}" for s, c in sorted(other.items()))
        warnings.warn(
            f"{path}: {sum(other.values())} atoms outside the featurisation mapped to 'other' "
            f"({listed})",
            stacklevel=2,
        )
    return MoleculeDataset(name or path.stem, graphs, list(SMILES_FEATURES), symbols, ids, smiles)


def atom_types_only(dataset: MoleculeDataset) -> MoleculeDataset:
    """A SMILES set with only the 14 atom-type one-hots of :data:`SMILES_FEATURES` as node
    features: the featurisation of the paper and of :func:`load_paper_version`."""
    if dataset.feature_names[: len(ATOM_TYPES)] != list(ATOM_TYPES):
        raise DataError(f"'{dataset.name}' has no atom-type features (it is not a SMILES set)")
    graphs = [
        Data(x=g.x[:, : len(ATOM_TYPES)], edge_index=g.edge_index, edge_attr=g.edge_attr, y=g.y)
        for g in dataset.graphs
    ]
    return replace(dataset, graphs=graphs, feature_names=list(ATOM_TYPES))


def smiles_to_graph(
    smiles: str,
    atom_types: tuple[str, ...] | list[str] = ATOM_TYPES,
    other: Counter | None = None,
    *,
    descriptors: bool = True,
) -> tuple[Data | None, list[str]]:
    """One molecule graph from SMILES (None if RDKit cannot parse it) and its atom symbols.

    Node features one-hot encode ``atom_types`` (a symbol outside them becomes ``other``,
    counted in ``other``, when ``other`` is one of the types, else it is refused), followed
    by the :data:`ATOM_DESCRIPTORS` one-hots when ``descriptors`` is set.

    Raises:
        DataError: an atom outside ``atom_types`` when there is no ``other`` type.
    """
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles) if smiles.strip() else None
    if mol is None or mol.GetNumAtoms() == 0:
        return None, []
    atoms = [a.GetSymbol() for a in mol.GetAtoms()]
    types = []
    for symbol in atoms:
        if symbol in atom_types and symbol != "other":
            types.append(atom_types.index(symbol))
        elif "other" in atom_types:
            types.append(atom_types.index("other"))
            if other is not None:
                other[symbol] += 1
        else:
            raise DataError(
                f"atom '{symbol}' of SMILES '{smiles}' is not one of the atom types "
                f"[{', '.join(atom_types)}]"
            )
    x = torch.nn.functional.one_hot(torch.tensor(types), len(atom_types)).float()
    if descriptors:
        x = torch.cat([x, _descriptor_one_hots(mol)], dim=1)
    src, dst, kinds = [], [], []
    for bond in mol.GetBonds():
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        kind = _bond_kind(bond)
        src += [i, j]
        dst += [j, i]
        kinds += [kind, kind]
    edge_index = torch.tensor([src, dst], dtype=torch.long).reshape(2, -1)
    edge_attr = torch.nn.functional.one_hot(
        torch.tensor(kinds, dtype=torch.long), len(BOND_TYPES)
    ).float()
    return Data(x=x, edge_index=edge_index, edge_attr=edge_attr.reshape(-1, len(BOND_TYPES))), atoms


def smiles_graph_for(smiles: str, feature_names: list[str]) -> tuple[Data, list[str]]:
    """A pasted SMILES featurised the way a model was trained (its card's ``feature_names``).

    :data:`SMILES_FEATURES` get the full SMILES featurisation; :data:`ATOM_TYPES` (the
    paper's data version) and the atom types of a TU molecule set (MUTAG, Mutagenicity) get
    atom-type one-hots.

    Atoms outside the model's vocabulary that become ``other`` are named in one warning:
    the model saw few of them, if any.

    Raises:
        DataError: unparsable SMILES, an atom the model has no feature for, or features that
            are neither of the two.
    """
    other: Counter = Counter()
    if list(feature_names) == list(SMILES_FEATURES):
        graph, symbols = smiles_to_graph(smiles, ATOM_TYPES, other, descriptors=True)
    elif list(feature_names) == list(ATOM_TYPES):  # the paper's data version
        graph, symbols = smiles_to_graph(smiles, ATOM_TYPES, other, descriptors=False)
    elif all(name in _TU_ATOMS for name in feature_names):
        graph, symbols = smiles_to_graph(smiles, feature_names, descriptors=False)
    else:
        raise DataError(
            f"a SMILES cannot be featurised for a model with the {len(feature_names)} node "
            f"features [{', '.join(feature_names)}]: expected the {len(SMILES_FEATURES)} "
            f"features of the SMILES sets, the {len(ATOM_TYPES)} atom types of the paper's data "
            f"version or the atom types of a TU set (a model trained on "
            f"an earlier featurisation must be retrained)"
        )
    if graph is None:
        raise DataError(f"unparsable SMILES '{smiles}'")
    if other:
        listed = ", ".join(f"{s} x{c}" for s, c in sorted(other.items()))
        warnings.warn(
            f"SMILES '{smiles}' has atoms outside the model's vocabulary "
            f"[{', '.join(t for t in ATOM_TYPES if t != 'other')}], featurised as 'other': "
            f"{listed}",
            stacklevel=2,
        )
    return graph, symbols


def _descriptor_one_hots(mol) -> torch.Tensor:
    """(n, D) one-hots of :data:`ATOM_DESCRIPTORS` for every atom of an RDKit molecule."""
    values = {
        "degree": lambda a: a.GetDegree(),
        "H": lambda a: a.GetTotalNumHs(),
        "charge": lambda a: a.GetFormalCharge(),
        "aromatic": lambda a: int(a.GetIsAromatic()),
        "ring": lambda a: int(a.IsInRing()),
    }
    blocks = []
    for name, low, labels in ATOM_DESCRIPTORS:
        bins = [min(max(values[name](a) - low, 0), len(labels) - 1) for a in mol.GetAtoms()]
        blocks.append(torch.nn.functional.one_hot(torch.tensor(bins), len(labels)).float())
    return torch.cat(blocks, dim=1)


def _bond_kind(bond) -> int:
    from rdkit import Chem

    kinds = {
        Chem.BondType.SINGLE: 0,
        Chem.BondType.DOUBLE: 1,
        Chem.BondType.TRIPLE: 2,
        Chem.BondType.AROMATIC: 3,
    }
    return kinds.get(bond.GetBondType(), 0)  # dative and other rare bonds count as single


def _missing(name: str, folder: Path, url: str, what: str, error: Exception | None = None) -> str:
    failed = f"; the download failed ({error})" if error else ""
    return (
        f"dataset '{name}' not found: put {what} into '{folder}' "
        f"(download path: {url}), or pass the folder that holds '{name}/' as root{failed}"
    )
