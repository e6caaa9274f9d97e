import json
import shutil

import numpy as np
import pytest
import torch

from wdn_explain.dataset import WaqDataset
from wdn_explain.errors import ConfigError, DataError
from wdn_explain.model import ModelConfig
from wdn_explain.training import (
    TrainConfig,
    evaluate,
    load_model,
    predict,
    resolve_device,
    save_model,
    train,
)

SMALL = ModelConfig(hidden_channels=8, num_layers=2)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, waq_dir):
    out = tmp_path_factory.mktemp("model")
    card = train(
        waq_dir,
        out,
        model_config=SMALL,
        train_config=TrainConfig(epochs=6, batch_size=8, patience=10),
        device="cpu",
    )
    return out, card


def test_tiny_training_lowers_the_loss(trained):
    _, card = trained
    history = card["history"]
    assert len(history) == 6
    assert history[-1]["train_mae"] < history[0]["train_mae"]
    assert card["device"] == "cpu"
    assert card["model"] == {**SMALL.to_dict(), "in_channels": 2}  # chlorine and source
    assert card["data"]["network"]["name"] == "hanoi"


def test_save_load_gives_identical_predictions(trained, waq_dir):
    out, card = trained
    model, loaded_card = load_model(out)
    assert loaded_card == json.loads((out / "card.json").read_text())
    ds = WaqDataset(waq_dir, "all", horizon=card["train"]["horizon"])
    first = predict(model, ds)
    model2, _ = load_model(out)
    np.testing.assert_array_equal(first, predict(model2, ds))


def test_evaluation_reports_persistence(trained, waq_dir):
    model, card = load_model(trained[0])
    res = evaluate(model, WaqDataset(waq_dir, "all"))
    assert {"mae", "rmse", "r2", "persistence_mae", "climatology_mae"} <= set(res)
    assert len(res["per_step"]) == 13 - 4
    assert res["n_samples"] == 6 * 9


def test_checkpoint_of_another_architecture(trained, tmp_path):
    out, card = trained
    other = tmp_path / "other"
    shutil.copytree(out, other)
    card = json.loads((other / "card.json").read_text())
    card["model"]["num_layers"] = 3
    card["model"]["hidden_channels"] = 16
    (other / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match="missing convs.2.*shape mismatch"):
        load_model(other)


def test_missing_model_and_data(tmp_path, waq_dir):
    with pytest.raises(DataError, match="is not a model folder"):
        load_model(tmp_path)
    with pytest.raises(DataError, match="does not exist"):
        train(tmp_path / "none", tmp_path / "m", device="cpu")
    with pytest.raises(DataError, match="simulated on network 'hanoi', not 'net3'"):
        train(waq_dir, tmp_path / "m", network="net3", device="cpu")


def test_devices():
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(ConfigError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA GPU is available"):
            resolve_device("cuda")
    with pytest.raises(ConfigError, match="epochs must be >= 1"):
        TrainConfig(epochs=0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_and_cpu_predictions_agree(trained, waq_dir):
    model, _ = load_model(trained[0])
    ds = WaqDataset(waq_dir, "all")
    np.testing.assert_allclose(
        predict(model, ds, "cpu"), predict(model.cuda(), ds, "cuda"), atol=1e-4
    )


def test_save_model_is_atomic(tmp_path):
    from wdn_explain.model import ChlorineGNN

    save_model(ChlorineGNN(SMALL), {"model": SMALL.to_dict()}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.json", "model.pt"]


def test_data_of_another_network_is_refused(trained, waq_dir, tmp_path):
    from wdn_explain.dataset import load_waq_arrays
    from wdn_explain.training import check_data_matches

    _, card = trained
    manifest = load_waq_arrays(waq_dir).manifest
    other = {**manifest, "network": {**manifest["network"], "name": "net3", "sha256": "0" * 64}}
    with pytest.raises(DataError, match="simulated on network 'net3'.*the model on 'hanoi'"):
        check_data_matches(card, other, "elsewhere")
    check_data_matches(card, manifest, waq_dir)  # the model's own data passes


def test_interruption_keeps_the_best_epoch(waq_dir, tmp_path):
    def interrupt(epoch, total):
        if epoch == 2:
            raise KeyboardInterrupt

    config = TrainConfig(epochs=5, batch_size=8)
    card = train(
        waq_dir,
        tmp_path / "m",
        model_config=SMALL,
        train_config=config,
        device="cpu",
        progress=interrupt,
    )
    assert card["interrupted"] and len(card["history"]) == 2
    _, saved = load_model(tmp_path / "m")
    assert saved["interrupted"] and saved["history"] == card["history"]
