"""``wdn-explain chem`` under bad input and faults (issue 22): outputs checked before the
work, models never replaced by accident, damaged files and odd molecules named in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from shapiq import InteractionValues
from typer.testing import CliRunner

from wdn_explain import files
from wdn_explain.chem import explain as chem_explain
from wdn_explain.chem import training as chem_training
from wdn_explain.chem.datasets import SMILES_FEATURES
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.chem.training import ChemCard, ChemTrainConfig, save_classifier
from wdn_explain.cli import app
from wdn_explain.model_folder import file_sha256

from conftest import ROOT

runner = CliRunner()
SHIPPED = ROOT / "models" / "chem" / "mutag-gin3"


def run(*args):
    return runner.invoke(app, ["chem", *[str(a) for a in args]])


def _model_folder(folder, feature_names, dataset):
    """A seeded, untrained 2-layer GCN folder (what training writes, without training)."""
    config = ChemModelConfig(
        architecture="GCN", in_channels=len(feature_names), hidden=8, num_layers=2
    )
    card = ChemCard(
        dataset=dataset,
        feature_names=list(feature_names),
        model=config,
        train=ChemTrainConfig(),
        split_sizes={"train": 0, "val": 0, "test": 0},
        accuracy={"train": 0.5, "val": 0.5, "test": 0.5},
        best_epoch=0,
        epochs_run=0,
        seconds=0.0,
        device="cpu",
        history=[],
        torch_version=torch.__version__,
        date="2026-11-26T00:00:00+00:00",
    )
    torch.manual_seed(0)
    save_classifier(MoleculeGNN(config).eval(), card, folder)
    return folder


@pytest.fixture
def model_dir(mutag, tmp_path):
    return _model_folder(tmp_path / "mutag-gcn2", mutag.feature_names, "MUTAG")


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if training starts: the refusal must come before any work."""

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(chem_training, "_fit", never)


def _bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("where", ["shipped", "copy", "file"])
def test_train_never_replaces_a_model_or_file(where, model_dir, chem_root, tmp_path, no_training):
    out = {"shipped": SHIPPED, "copy": model_dir, "file": tmp_path / "notes.txt"}[where]
    if where == "file":
        out.write_text("my notes")
    before = out.read_bytes() if out.is_file() else _bytes(out)
    result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", out)
    assert result.exit_code == 1
    message = (
        f"error: model folder '{out}' is a file, expected a folder"
        if where == "file"
        else f"error: model folder '{out}' holds a model; use --overwrite to replace it"
    )
    assert result.output.strip() == message
    assert (out.read_bytes() if out.is_file() else _bytes(out)) == before


def test_train_overwrite_replaces_the_model(model_dir, chem_root):
    before = (model_dir / "model.pt").read_bytes()
    result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", model_dir,
                 "--overwrite", "--model", "GCN", "--hidden", "8", "--epochs", "1",
                 "--max-graphs", "40", "--device", "cpu")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (model_dir / "model.pt").read_bytes() != before
    assert sorted(p.name for p in model_dir.iterdir()) == ["card.json", "model.pt"]


def test_second_train_into_a_claimed_folder_is_refused(chem_root, tmp_path, no_training):
    """Another process holds the folder (its claim file names a live process): refused at
    once, the claim left alone; a claim of a process that is gone is taken over."""
    out = tmp_path / "m"
    out.mkdir()
    holder = subprocess.Popen(["sleep", "60"])
    try:
        (out / files.LOCK).write_text(str(holder.pid))
        result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", out)
        assert result.exit_code == 1
        assert result.output.strip() == (
            f"error: model folder '{out}' is being written by another process (pid "
            f"{holder.pid}, claim file {out / files.LOCK}); wait for it or choose another folder"
        )
        assert (out / files.LOCK).read_text() == str(holder.pid)
    finally:
        holder.kill()
        holder.wait()
    result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", out)
    assert "training started" in str(result.exception)  # the dead holder's claim taken over
    assert not (out / files.LOCK).exists()


@pytest.mark.parametrize("option", ["--png", "--json"])
def test_explain_refuses_an_unwritable_output_before_the_work(
    option, model_dir, chem_root, tmp_path, monkeypatch
):
    def never(*args, **kwargs):
        raise AssertionError("explaining started")

    monkeypatch.setattr(chem_explain, "explain_molecule", never)
    monkeypatch.setattr(files, "_writable", lambda folder: False)  # a read-only folder
    target = tmp_path / "ro" / ("m.png" if option == "--png" else "m.json")
    result = run("explain", "--model", model_dir, "--root", chem_root, option, target)
    assert result.exit_code == 1
    what = "PNG file" if option == "--png" else "JSON file"
    assert result.output.strip() == (
        f"error: cannot write {what} '{target}': '{tmp_path}' is not writable"
    )
    assert not (tmp_path / "ro").exists()


def test_explain_writes_exactly_the_named_files(model_dir, chem_root, tmp_path):
    """A missing folder is made; ``--json notes.txt`` writes notes.txt (shapiq alone would
    write notes.json) and the message names it."""
    png, notes = tmp_path / "new" / "deeper" / "m.png", tmp_path / "notes.txt"
    result = run("explain", "--model", model_dir, "--root", chem_root, "--png", png,
                 "--json", notes, "--top", "1")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"wrote {png}" in result.output and f"wrote {notes}" in result.output
    assert png.read_bytes()[:4] == b"\x89PNG"
    shutil.copy(notes, tmp_path / "copy.json")  # shapiq reads .json names only
    assert InteractionValues.from_json_file(tmp_path / "copy.json").n_players == 17
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "copy.json", "mutag-gcn2", "new", "notes.txt"
    ]  # fmt: skip


def test_explain_refuses_a_non_json_file_in_the_way(model_dir, chem_root, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    result = run("explain", "--model", model_dir, "--root", chem_root, "--json", notes)
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == f"error: '{notes}' exists and is not a JSON file; choose another path"
    )
    assert notes.read_text() == "keep me"


def _record_weights(model_dir: Path) -> None:
    """Make the card record the SHA-256 of the weights now in the folder."""
    card = json.loads((model_dir / "card.json").read_text())
    card["weights_sha256"] = file_sha256(model_dir / "model.pt")
    (model_dir / "card.json").write_text(json.dumps(card))


def test_malicious_weights_refused_in_one_line(model_dir, chem_root, tmp_path):
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"w": Payload()}, model_dir / "model.pt")
    _record_weights(model_dir)  # whoever planted it also rewrote the card's hash
    result = run("explain", "--model", model_dir, "--root", chem_root)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: weights '{model_dir / 'model.pt'}' hold Python objects that a safe load "
        "refuses (Trying to load unsupported GLOBAL posix.system whose module posix is "
        "blocked); the file is damaged or not a plain state_dict"
    )
    assert "weights_only" not in result.output and not marker.exists()


def test_nan_weight_is_named(model_dir, chem_root):
    state = torch.load(model_dir / "model.pt", weights_only=True)
    name = next(k for k in state if k.endswith("weight"))
    state[name][0, 0] = float("nan")
    torch.save(state, model_dir / "model.pt")
    _record_weights(model_dir)  # a model trained into NaN records its own weights
    result = run("explain", "--model", model_dir, "--root", chem_root)
    assert result.exit_code == 1
    assert "the model's output is nan on the whole graph (efficiency gap): NaN or infinite" in (
        result.output
    )
    lines = [line for line in result.output.splitlines() if line.startswith("error")]
    assert "linear readout" not in result.output and len(lines) == 1  # (beside a progress bar)
    assert "Traceback" not in result.output


@pytest.mark.parametrize("cut", ["A", "graph_indicator", "node_labels", "graph_labels"])
def test_truncated_tu_file_is_one_line(cut, chem_root, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(chem_root / "MUTAG" / "raw", root / "MUTAG" / "raw")
    path = root / "MUTAG" / "raw" / f"MUTAG_{cut}.txt"
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])
    result = run("complexity", "--dataset", "MUTAG", "--root", root, "--out", tmp_path / "c")
    assert result.exit_code == 1
    assert result.output.startswith(
        f"error: dataset 'MUTAG' in '{root / 'MUTAG' / 'raw'}' is truncated or corrupt: "
        "its TU files disagree ("
    )
    assert len(result.output.splitlines()) == 1
    assert not (tmp_path / "c").exists()


def test_smiles_outside_the_vocabulary_is_warned(tmp_path):
    model = _model_folder(tmp_path / "smiles-gcn2", SMILES_FEATURES, "Benzene")
    result = run("explain", "--model", model, "--smiles", "C[Se]C[Si]C", "--top", "1")
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.output.splitlines() if line.startswith("warning:"))
    assert warning.endswith("featurised as 'other': Se x1, Si x1")
    assert "C[Se]C[Si]C: 5 atoms" in result.output


def test_complexity_output_checked_before_the_work(chem_root, tmp_path):
    out = tmp_path / "c"
    out.write_text("a file")
    result = run("complexity", "--dataset", "MUTAG", "--root", chem_root, "--out", out)
    assert result.exit_code == 1
    assert result.output.strip() == f"error: complexity folder '{out}' is a file, expected a folder"


def test_a_valid_400_atom_molecule_is_explained(mutag):
    """A 400-carbon chain: float32 rounding of the 400-term pooling once exceeded the
    readout tolerance and the molecule was refused as "not a linear readout". Exactness is
    checked by efficiency against the model's own outputs (the oracle)."""
    from wdn_explain.chem.datasets import smiles_graph_for

    torch.manual_seed(0)
    config = ChemModelConfig(
        architecture="GCN", in_channels=len(mutag.feature_names), hidden=8, num_layers=2
    )
    net = MoleculeGNN(config).eval()
    graph, _ = smiles_graph_for("C" * 400, mutag.feature_names)
    result = chem_explain.explain_molecule(net, graph)
    values = result.interaction_values("SV", 1)
    assert graph.num_nodes == 400
    total = sum(v for k, v in values.dict_values.items() if len(k) == 1)  # efficiency
    assert total == pytest.approx(result.prediction - result.empty_prediction, abs=1e-3)
    assert abs(result.prediction - result.empty_prediction) > 0.1


def test_train_on_a_full_disk_keeps_the_trained_classifier(chem_root, tmp_path, full_disk_under):
    """torch's writer fails as it does on /dev/full: one line naming the temporary folder the
    trained classifier was saved to instead (as water `train` does), and no half folder
    (issue 33 item 9)."""
    from wdn_explain.chem.training import load_classifier

    out = tmp_path / "m"
    full_disk_under(out)
    result = run("train", "--dataset", "MUTAG", "--root", chem_root, "--out", out,
                 "--model", "GCN", "--hidden", "8", "--epochs", "1", "--max-graphs", "40",
                 "--device", "cpu")  # fmt: skip
    assert result.exit_code == 1
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"error: cannot write '{out / 'model.pt'}' (torch's writer failed: ")
    rescue = Path(line.split("the trained model was saved to '")[1].split("'")[0])
    assert load_classifier(rescue)[1].model.hidden == 8
    assert "Traceback" not in result.output
    assert not out.exists()
    shutil.rmtree(rescue)
