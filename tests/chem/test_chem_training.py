"""A small classifier trains above chance; split, round trip and feature checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from wdn_explain.chem.datasets import (
    ATOM_TYPES,
    SMILES_FEATURES,
    load_dataset,
    smiles_graph_for,
)
from wdn_explain.chem.models import ChemModelConfig, MoleculeGNN
from wdn_explain.chem.training import (
    ChemTrainConfig,
    balanced_weights,
    check_features,
    load_classifier,
    stratified_split,
    train_classifier,
)
from wdn_explain.errors import ConfigError, DataError


def test_stratified_split():
    labels = np.array([0] * 300 + [1] * 100)
    split = stratified_split(labels, seed=3)
    assert [len(split[k]) for k in ("train", "val", "test")] == [320, 40, 40]
    assert len(np.unique(np.concatenate(list(split.values())))) == 400
    for part in split.values():
        assert labels[part].mean() == pytest.approx(0.25)
    assert all(np.array_equal(split[k], stratified_split(labels, seed=3)[k]) for k in split)


@pytest.fixture(scope="module")
def trained(benzene, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "benzene-gin2"
    config = ChemModelConfig(
        architecture="GIN", in_channels=len(SMILES_FEATURES), hidden=16, num_layers=2
    )
    train = ChemTrainConfig(epochs=12, patience=12, max_graphs=1000, seed=0)
    model, card = train_classifier(benzene, config, train, out, device="cpu")
    return model, card, out


def test_small_model_above_chance(trained):
    _, card, _ = trained
    assert card.split_sizes == {"train": 800, "val": 100, "test": 100}
    assert card.accuracy["test"] > 0.7  # balanced labels: chance is 0.5
    assert 1 <= card.best_epoch <= card.epochs_run <= 12
    assert len(card.history) == card.epochs_run


def test_model_folder_round_trip(trained, benzene):
    model, card, out = trained
    loaded, loaded_card = load_classifier(out)
    assert loaded_card == card
    assert json.loads((out / "card.json").read_text())["dataset"] == "Benzene"
    batch = benzene.graphs[:5]
    for g in batch:
        assert torch.allclose(model(g.x, g.edge_index), loaded(g.x, g.edge_index))


def test_other_dataset_features_refused(trained, mutag):
    _, card, _ = trained
    with pytest.raises(
        DataError, match="trained on 'Benzene' with 31 node features .*'MUTAG' has 7 \\[C, N"
    ):
        check_features(card, mutag)
    config = ChemModelConfig(architecture="GCN", in_channels=31, num_layers=1)
    with pytest.raises(ConfigError, match="in_channels 31 does not match the 7 node features"):
        train_classifier(mutag, config, ChemTrainConfig(epochs=1))


def test_model_of_the_atom_type_featurisation_refused(trained, benzene):
    """A card of the earlier SMILES featurisation (atom types only) names both lists and asks
    for retraining on the dataset; a pasted SMILES gets its atom types (the paper version's
    featurisation); features of no known featurisation are refused."""
    _, card, _ = trained
    old = card.model_copy(update={"feature_names": list(ATOM_TYPES)})
    with pytest.raises(DataError) as err:
        check_features(old, benzene)
    message = str(err.value)
    assert f"trained on 'Benzene' with {len(ATOM_TYPES)} node features [C, N, O" in message
    assert f"'Benzene' has {len(SMILES_FEATURES)} [C, N" in message
    assert message.endswith("the featurisation changed since: retrain the model")
    graph, _ = smiles_graph_for("c1ccccc1", old.feature_names)
    assert graph.x.tolist() == [[1.0] + [0.0] * (len(ATOM_TYPES) - 1)] * 6
    with pytest.raises(DataError, match="earlier featurisation must be retrained"):
        smiles_graph_for("c1ccccc1", [*ATOM_TYPES, "degree 0"])


def test_not_a_molecule_model(tmp_path):
    with pytest.raises(DataError, match="is not a model folder"):
        load_classifier(tmp_path)
    (tmp_path / "card.json").write_text('{"model": {"hidden": 32}}')
    (tmp_path / "model.pt").write_bytes(b"")
    with pytest.raises(DataError, match="is not a molecule model card"):
        load_classifier(tmp_path)


def test_batch_norm_readout_is_linear():
    """In eval mode the graph output is a sum of per-node terms: doubling a graph (two
    disjoint copies) doubles the logits minus the bias."""
    torch.manual_seed(0)
    model = MoleculeGNN(ChemModelConfig(architecture="GAT", in_channels=3, num_layers=2)).eval()
    x = torch.randn(4, 3)
    ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    one = model(x, ei)
    two = model(torch.cat([x, x]), torch.cat([ei, ei + 4], dim=1))
    bias = model.head.bias
    assert torch.allclose(two - bias, 2 * (one - bias), atol=1e-5)


SHIPPED = Path(__file__).resolve().parents[2] / "models" / "chem"


@pytest.mark.parametrize("name", sorted(p.parent.name for p in SHIPPED.glob("*/card.json")))
def test_shipped_models_fit_their_dataset(name, chem_root):
    """Every shipped model takes its dataset's current features and classifies it."""
    model, card = load_classifier(SHIPPED / name)
    data = load_dataset(card.dataset, chem_root, download=False, version=card.data_version)
    check_features(card, data)
    graphs = data.graphs[:200]
    with torch.no_grad():
        right = sum(int(model(g.x, g.edge_index).argmax()) == int(g.y) for g in graphs)
    assert right / len(graphs) > 0.8


def test_balanced_weights_equalise_the_classes():
    labels = np.array([0] * 30 + [1] * 10 + [2] * 5)
    weights = balanced_weights(labels, 4).numpy()
    totals = weights[:3] * np.bincount(labels)
    np.testing.assert_allclose(totals, len(labels) / 4)  # each class weighs n / C in total
    assert weights[1] == pytest.approx(3 * weights[0])


@pytest.mark.parametrize("schedule", ["cosine", "plateau"])
def test_learning_rate_schedules(benzene, schedule):
    config = ChemModelConfig(architecture="GCN", in_channels=len(SMILES_FEATURES), hidden=8)
    train = ChemTrainConfig(
        epochs=6, patience=8, lr=0.01, max_graphs=200, schedule=schedule, balanced=True
    )
    _, card = train_classifier(benzene, config, train, device="cpu")
    lrs = [h["lr"] for h in card.history]
    if schedule == "cosine":  # lr of epoch e: lr0 (1 + cos(pi (e - 1) / epochs)) / 2
        expected = [0.005 * (1 + np.cos(np.pi * e / 6)) for e in range(6)]
        np.testing.assert_allclose(lrs, expected, rtol=1e-6)
    else:  # halved at most once per patience // 4 = 2 epochs, never raised
        assert lrs[0] == 0.01
        assert all(b in (a, a / 2) for a, b in zip(lrs, lrs[1:]))


def test_damaged_weights_of_a_shipped_model_are_refused(tmp_path):
    """Molecule models record their weight hash as water models do: one flipped byte in the
    weights is refused by name, not loaded."""
    import shutil

    folder = tmp_path / "mutag"
    shutil.copytree(SHIPPED / "mutag-gin3", folder)
    weights = bytearray((folder / "model.pt").read_bytes())
    weights[-100] ^= 0xFF
    (folder / "model.pt").write_bytes(bytes(weights))
    with pytest.raises(DataError, match=r"model.pt' do not match the SHA-256 recorded in its card"):
        load_classifier(folder)


def _mutag_gcn(mutag, seed: int = 1, **train) -> tuple[MoleculeGNN, object]:
    config = ChemModelConfig(architecture="GCN", in_channels=len(mutag.feature_names), hidden=4)
    return train_classifier(mutag, config, ChemTrainConfig(seed=seed, **train), device="cpu")


def test_ties_keep_the_later_or_the_lower_loss_epoch(mutag):
    """Among epochs of equal best validation accuracy, ``ties`` picks the later one (the
    paper's ``val_acc >= best``) or the lowest validation loss; the kept weights are that
    epoch's (their validation accuracy is the recorded one)."""
    cards = {
        ties: _mutag_gcn(mutag, 5, epochs=10, patience=10, ties=ties)[1]
        for ties in ("later", "lower_loss")
    }
    history = cards["later"].history
    assert history == cards["lower_loss"].history  # same training, another choice only
    best = max(h["val_acc"] for h in history)
    tied = [h for h in history if h["val_acc"] == best]
    assert len(tied) > 1
    later = tied[-1]["epoch"]
    lowest = min(tied, key=lambda h: h["val_loss"])["epoch"]
    assert later != lowest
    assert (cards["later"].best_epoch, cards["lower_loss"].best_epoch) == (later, lowest)
    for card in cards.values():
        assert card.accuracy["val"] == best


def test_early_stopping_counts_from_the_later_tie(mutag):
    _, card = _mutag_gcn(mutag, epochs=40, patience=3, ties="later")
    accs = [h["val_acc"] for h in card.history]
    assert card.epochs_run - card.best_epoch == 3 < 40 - card.best_epoch
    assert card.best_epoch == max(e for e, a in enumerate(accs, 1) if a == max(accs))


def test_patience_on_loss_also_waits_on_new_validation_loss_lows(mutag):
    """With ``patience_on_loss`` training stops ``patience`` epochs after the later of the kept
    epoch and the lowest validation loss (the paper's EarlyStopper); without, after the kept
    epoch; both read off the history."""
    runs = {
        on: _mutag_gcn(mutag, epochs=40, patience=3, patience_on_loss=on)[1] for on in (False, True)
    }
    history = runs[True].history
    lowest = min(history, key=lambda h: h["val_loss"])["epoch"]
    assert lowest > runs[True].best_epoch  # the loss kept falling after the kept epoch
    assert runs[True].epochs_run == lowest + 3
    assert runs[False].epochs_run == runs[False].best_epoch + 3 < runs[True].epochs_run
    assert runs[False].history == history[: runs[False].epochs_run]


@pytest.mark.parametrize(("threshold", "min_lr"), [(1e-4, 0.0), (1e-3, 1e-3)])
def test_plateau_patience_sets_when_the_learning_rate_halves(mutag, threshold, min_lr):
    """The learning rates of the history against ReduceLROnPlateau's rule written out: halve
    after more than ``plateau_patience`` epochs without a validation loss below the best
    by the relative ``plateau_threshold``, never below ``min_lr`` (the paper: 1e-3, 1e-5)."""
    _, card = _mutag_gcn(
        mutag,
        epochs=30,
        patience=30,
        schedule="plateau",
        plateau_patience=1,
        plateau_threshold=threshold,
        min_lr=min_lr,
    )
    expected, lr, best, bad = [], 3e-3, np.inf, 0
    for h in card.history:
        expected.append(lr)
        if h["val_loss"] < best * (1 - threshold):
            best, bad = h["val_loss"], 0
        else:
            bad += 1
        if bad > 1:
            lr, bad = max(lr / 2, min_lr), 0
    np.testing.assert_allclose([h["lr"] for h in card.history], expected)
    assert expected[-1] < 3e-3  # the rule fired at least once
    if min_lr:
        assert expected.count(min_lr) > 1  # and reached the floor, where it stays


def test_keep_last_keeps_the_last_epochs_weights(mutag):
    """``keep="last"``: the model's validation accuracy is the last epoch's in the history,
    not the best one's (the same training otherwise)."""
    cards = {
        keep: _mutag_gcn(mutag, 1, epochs=12, patience=12, keep=keep)[1]
        for keep in ("best", "last")
    }
    history = cards["last"].history
    assert history == cards["best"].history
    accs = [h["val_acc"] for h in history]
    assert accs[-1] < max(accs)  # the two choices differ on this run
    assert (cards["last"].best_epoch, cards["last"].accuracy["val"]) == (12, accs[-1])
    assert cards["best"].accuracy["val"] == max(accs)


def test_torch_seed_sets_initial_weights_batches_and_dropout(mutag):
    """With ``paper_split`` and no sampled negatives nothing else depends on ``seed``: a run
    with seed 7 and ``torch_seed=3`` is the run with seed 3; another torch seed differs."""
    config = ChemModelConfig(architecture="GCN", in_channels=7, hidden=8, dropout=0.3)
    runs = {
        key: train_classifier(
            mutag,
            config,
            ChemTrainConfig(
                epochs=3, patience=3, seed=seed, torch_seed=torch_seed, paper_split=True
            ),
            device="cpu",
        )
        for key, (seed, torch_seed) in {"a": (3, None), "b": (7, 3), "c": (3, 4)}.items()
    }
    weights = {key: model.state_dict() for key, (model, _) in runs.items()}
    assert runs["a"][1].history == runs["b"][1].history
    assert all(torch.equal(weights["a"][k], weights["b"][k]) for k in weights["a"])
    assert not all(torch.equal(weights["a"][k], weights["c"][k]) for k in weights["a"])
