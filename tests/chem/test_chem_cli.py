"""``wdn-explain chem``: train, explain, complexity; bad input gives one line and exit 1."""

from __future__ import annotations

import csv

import pytest
from shapiq import InteractionValues
from typer.testing import CliRunner

from wdn_explain.chem.datasets import ATOM_TYPES
from wdn_explain.chem.models import MoleculeGNN
from wdn_explain.chem.training import load_classifier, save_classifier
from wdn_explain.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["chem", *[str(a) for a in args]])


@pytest.fixture(scope="module")
def model_dir(chem_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "mutag-gcn2"
    result = run(
        "train", "--dataset", "MUTAG", "--root", chem_root, "--out", out, "--model", "GCN",
        "--layers", "2", "--hidden", "16", "--epochs", "5", "--device", "cpu",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "GCN-2 on MUTAG: test accuracy" in result.output
    return out


def test_explain_writes_drawing_and_values(model_dir, chem_root, tmp_path):
    png, js = tmp_path / "m.png", tmp_path / "m.json"
    result = run(
        "explain", "--model", model_dir, "--root", chem_root, "--index", "0",
        "--png", png, "--json", js, "--top", "4",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "MUTAG #0 (label 1): 17 atoms" in result.output
    assert len([line for line in result.output.splitlines() if "k-SII" in line]) == 4
    assert png.read_bytes()[:4] == b"\x89PNG"
    values = InteractionValues.load(js)
    assert values.index == "k-SII" and values.n_players == 17


def test_explain_shipped_model_from_another_directory(chem_root, tmp_path, monkeypatch):
    """`--model models/chem/mutag-gin3` names the shipped model from any directory."""
    monkeypatch.chdir(tmp_path)
    result = run("explain", "--model", "models/chem/mutag-gin3", "--smiles", "c1ccccc1", "--top", 1)
    assert result.exit_code == 0, result.output
    assert "6 atoms" in result.output


def test_explain_names_moebius_as_people_write_it(model_dir):
    result = run("explain", "--model", model_dir, "--smiles", "c1ccccc1", "--si-index", "Möbius")
    assert result.exit_code == 0, result.output
    rows = [line.split()[0] for line in result.output.splitlines() if line.startswith("  ")]
    assert rows and set(rows) == {"Möbius"}


def test_explain_pasted_smiles(model_dir):
    result = run("explain", "--model", model_dir, "--smiles", "O=[N+]([O-])c1ccccc1")
    assert result.exit_code == 0, result.output
    assert "9 atoms" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dataset", "Benzene"], "trained on 'MUTAG' with 7 node features"),
        (["--index", "188"], "index 188 is outside 0..187 of MUTAG"),
        (["--smiles", "C1CC("], "unparsable SMILES 'C1CC('"),
        (["--smiles", "CCS"], "atom 'S' of SMILES 'CCS'"),
        (["--si-index", "XYZ"], "unknown index 'XYZ'"),
    ],
)
def test_explain_bad_input(model_dir, chem_root, args, message):
    result = run("explain", "--model", model_dir, "--root", chem_root, *args)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_model_of_the_earlier_featurisation_refused(model_dir, chem_root, tmp_path):
    """A Benzene model of the atom-type-only SMILES features (before the descriptors)."""
    _, card = load_classifier(model_dir)
    config = card.model.model_copy(update={"in_channels": len(ATOM_TYPES)})
    update = {"dataset": "Benzene", "feature_names": list(ATOM_TYPES), "model": config}
    save_classifier(MoleculeGNN(config).eval(), card.model_copy(update=update), tmp_path / "old")
    result = run("explain", "--model", tmp_path / "old", "--root", chem_root, "--index", "0")
    assert result.exit_code == 1
    assert "the featurisation changed since: retrain" in result.output
    assert "Traceback" not in result.output
    # a pasted SMILES gets the model's atom-type features (those of the paper's data version)
    result = run("explain", "--model", tmp_path / "old", "--smiles", "c1ccccc1")
    assert result.exit_code == 0 and "6 atoms" in result.output


def test_missing_dataset_folder(tmp_path):
    out = tmp_path / "m"
    result = run("train", "--dataset", "FluorideCarbonyl", "--root", tmp_path, "--out", out)
    assert result.exit_code == 1
    assert "dataset 'FluorideCarbonyl' not found" in result.output
    assert "fluoride_carbonyl_smiles.csv" in result.output and not out.exists()


def test_bad_architecture(chem_root, tmp_path):
    result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", tmp_path / "m",
                 "--model", "MLP")  # fmt: skip
    assert result.exit_code == 1 and "architecture" in result.output and "'MLP'" in result.output


def test_complexity_csv_per_layer(chem_root, tmp_path):
    result = run("complexity", "--dataset", "MUTAG", "--layers", "1", "--layers", "2",
                 "--root", chem_root, "--out", tmp_path)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "MUTAG L=1: 188 graphs" in result.output
    for layers in (1, 2):
        with open(tmp_path / f"MUTAG_L{layers}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == 188 and all(r["layers"] == str(layers) for r in rows)
    assert (tmp_path / "MUTAG_complexity.png").is_file()
