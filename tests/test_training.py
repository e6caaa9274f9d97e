import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch

from wdn_explain.dataset import WaqDataset
from wdn_explain.errors import ConfigError, DataError
from wdn_explain.model import ModelConfig
from wdn_explain.model_folder import load_model, resolve_device, save_model
from wdn_explain.training import TrainConfig, evaluate, predict, train

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
    # the recipe's inputs: chlorine, source, the plan over the 4 steps ahead and chlorine at
    # the 4 previous reports; flow and pipe flushes along each edge
    assert card["model"] == {**SMALL.to_dict(), "in_channels": 10, "edge_channels": 2}
    assert card["data"]["network"]["name"] == "hanoi"


def test_save_load_gives_identical_predictions(trained, waq_dir):
    out, _ = trained
    model, loaded_card = load_model(out)
    assert loaded_card.to_json() == json.loads((out / "card.json").read_text())
    ds = WaqDataset.for_card(loaded_card, waq_dir, "all")
    first = predict(model, ds)
    model2, _ = load_model(out)
    np.testing.assert_array_equal(first, predict(model2, ds))


def test_evaluation_reports_persistence(trained, waq_dir):
    model, card = load_model(trained[0])
    res = evaluate(model, WaqDataset.for_card(card, waq_dir, "all"))
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
    model, card = load_model(trained[0])
    ds = WaqDataset.for_card(card, waq_dir, "all")
    np.testing.assert_allclose(
        predict(model, ds, "cpu"), predict(model.cuda(), ds, "cuda"), atol=1e-4
    )


def test_save_model_is_atomic_and_checks_the_card(tmp_path, trained):
    from wdn_explain.model import ChlorineGNN

    _, card = trained
    with pytest.raises(DataError, match="card.json' is corrupt: it lacks train, data"):
        save_model(ChlorineGNN(SMALL), {"model": SMALL.to_dict()}, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()  # refused before anything is written
    save_model(ChlorineGNN(ModelConfig(**card["model"])), card, tmp_path / "ok")
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == ["card.json", "model.pt"]


def test_data_of_another_network_is_refused(trained, waq_dir, tmp_path):
    from wdn_explain.dataset import load_waq_arrays
    from wdn_explain.training import check_data_matches

    card = load_model(trained[0])[1]
    manifest = load_waq_arrays(waq_dir).manifest
    net3 = manifest.network.model_copy(update={"name": "net3", "sha256": "0" * 64})
    other = manifest.model_copy(update={"network": net3})
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
    assert saved.interrupted and saved.history == card["history"]


def _splits(waq_dir):
    from wdn_explain.dataset import load_waq_arrays

    arrays = load_waq_arrays(waq_dir)
    return {s: WaqDataset(waq_dir, s, arrays=arrays) for s in ("train", "val")}


def _model(seed: int = 0, device: str = "cpu"):
    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(seed)
    return ChlorineGNN(replace(SMALL, in_channels=6)).to(device)


def _loss_and_grads(model, x, edge_index, edge_attr, batch, y):
    model.zero_grad()
    loss = torch.nn.functional.l1_loss(model(x, edge_index, edge_attr, batch), y)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def test_stacked_batches_give_the_dataloader_loss_and_gradients(waq_dir):
    """Same samples in the same order: loss and gradients of the device-side batches equal
    those of batches collated by PyG's DataLoader, the last partial batch included."""
    from torch_geometric.loader import DataLoader

    ds = _splits(waq_dir)["train"]
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(3))
    ours = list(ds.stacked().batches(8, order))
    theirs = list(DataLoader([ds[int(i)] for i in order], batch_size=8))
    assert len(ours) == len(theirs) == -(-len(ds) // 8)
    assert len(ours[-1].y) == len(ds) % 8 or len(ds) % 8 == 0
    model = _model()
    for a, b in zip(ours, theirs):
        loss_a, grads_a = _loss_and_grads(model, a.x, a.edge_index, a.edge_attr, a.batch, a.y)
        loss_b, grads_b = _loss_and_grads(model, b.x, b.edge_index, b.edge_attr, b.batch, b.y)
        torch.testing.assert_close(loss_a, loss_b)
        for ga, gb in zip(grads_a, grads_b):
            torch.testing.assert_close(ga, gb)


@pytest.mark.parametrize(
    ("warmup_epochs", "schedule", "ema_decay"),
    [(0, "plateau", None), (1, "plateau", None), (0, "cosine", 0.9), (1, "cosine", 0.9)],
)
def test_fit_equals_a_plain_loop_over_dataloader_batches(
    waq_dir, warmup_epochs, schedule, ema_decay
):
    """fit() trains exactly like a plain Adam loop over DataLoader batches drawn with the
    same seeded permutation per epoch, with the documented linear warm-up, the cosine decay
    written out, and the weights' moving average kept by hand."""
    import math

    from torch_geometric.loader import DataLoader

    from wdn_explain.training import fit

    sets = _splits(waq_dir)
    config = TrainConfig(
        epochs=2,
        batch_size=8,
        lr=1e-2,
        warmup_epochs=warmup_epochs,
        schedule=schedule,
        final_lr_fraction=0.1,
        ema_decay=ema_decay,
    )
    model = _model()
    result = fit(model, sets["train"].stacked(), sets["val"].stacked(), config, torch.device("cpu"))

    oracle = _model()
    average = _model()
    optimiser = torch.optim.Adam(oracle.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(config.seed)
    n_batches = -(-len(sets["train"]) // 8)
    warmup, cosine_steps = warmup_epochs * n_batches, (2 - warmup_epochs) * n_batches
    step = 0
    for _ in range(2):
        order = torch.randperm(len(sets["train"]), generator=generator)
        for b in DataLoader([sets["train"][int(i)] for i in order], batch_size=8):
            if step < warmup:
                optimiser.param_groups[0]["lr"] = 1e-2 * (step + 1) / warmup
            elif schedule == "cosine":
                k = step - warmup
                optimiser.param_groups[0]["lr"] = (
                    1e-3 + 9e-3 * (1 + math.cos(math.pi * k / cosine_steps)) / 2
                )
            step += 1
            _loss_and_grads(oracle, b.x, b.edge_index, b.edge_attr, b.batch, b.y)
            optimiser.step()
            with torch.no_grad():
                # the decay rises as min(decay, k / (9 + k)) at the k-th update; the first copies
                decay = 0.0 if ema_decay is None else min(ema_decay, step / (9 + step))
                for a, p in zip(average.parameters(), oracle.parameters()):
                    a.copy_(p if step == 1 else decay * a + (1 - decay) * p)
    for p, q in zip(model.parameters(), oracle.parameters()):
        torch.testing.assert_close(p, q)
    # the validation MAE of the last epoch is the plain MAE of the kept model's predictions
    val_mae = np.abs(predict(average, sets["val"]) - sets["val"].targets()).mean()
    assert result.history[-1]["val_mae"] == pytest.approx(val_mae, rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_moving_average_equals_a_plain_per_tensor_ema(dtype):
    """The weights' moving average fit() keeps (``AveragedModel`` with ``training._ema``)
    equals an EMA written here tensor by tensor -- the first update copies, the k-th
    blends with decay min(0.9, k / (9 + k)) -- over parameters and batch-norm buffers,
    the integer count included."""
    from torch.optim import swa_utils

    from wdn_explain.training import _ema

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1)
    ).to(dtype)
    kept = swa_utils.AveragedModel(model, multi_avg_fn=_ema(0.9), use_buffers=True)
    plain = {}
    for k in range(1, 31):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
            model(torch.randn(16, 4, dtype=dtype))  # training mode: moves the buffers
        kept.update_parameters(model)
        decay = min(0.9, k / (9 + k))
        for name, value in model.state_dict().items():
            value = value.detach().clone()
            if k == 1:
                plain[name] = value
            elif value.is_floating_point():
                plain[name] = decay * plain[name] + (1 - decay) * value
            else:  # the count: blended, then truncated like the buffer it is copied into
                plain[name] = torch.tensor(int(plain[name] + (1 - decay) * (value - plain[name])))
    averaged = kept.module.state_dict()
    assert averaged.keys() == plain.keys()
    for name, value in plain.items():
        if value.is_floating_point():
            tolerance = dict(rtol=0, atol=1e-7) if dtype == torch.float64 else {}
            torch.testing.assert_close(averaged[name], value, **tolerance)
        else:  # a float32 weight against a float64 one may truncate one count apart
            assert abs(int(averaged[name]) - int(value)) <= 1 and int(value) > 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_moving_average_weight_keeps_its_precision_in_half_types(dtype):
    """After 5000 updates the decay is min(0.999, 5001 / 5010) = 0.999: an average at 0
    blended with weights at 1 moves to 1 - 0.999 = 0.001 in every dtype (computed in
    bfloat16 the weight is 0, in float16 0.0015)."""
    from wdn_explain.training import _ema

    averaged, current = [torch.zeros(4, dtype=dtype)], [torch.ones(4, dtype=dtype)]
    _ema(0.999)(averaged, current, torch.tensor(5000))
    expected = torch.full((4,), 1 - min(0.999, 5001 / 5010), dtype=dtype)
    torch.testing.assert_close(averaged[0], expected, rtol=1e-2, atol=0)


def test_tiny_training_is_deterministic(waq_dir):
    from wdn_explain.training import fit

    sets = _splits(waq_dir)
    config = TrainConfig(epochs=3, batch_size=16, warmup_epochs=1).for_device(torch.device("cpu"))
    runs = []
    for _ in range(2):
        result = fit(_model(), sets["train"].stacked(), sets["val"].stacked(), config, "cpu")
        runs.append(result)
    strip = [[{k: v for k, v in h.items() if k != "seconds"} for h in r.history] for r in runs]
    assert strip[0] == strip[1]
    for key, value in runs[0].best_state.items():
        assert torch.equal(value, runs[1].best_state[key]), key


def test_auto_batch_size_learning_rate_and_warmup():
    from wdn_explain.training import AUTO_BATCH_SIZE

    cpu = TrainConfig().for_device(torch.device("cpu"))
    assert (cpu.batch_size, cpu.lr, cpu.warmup_epochs) == (AUTO_BATCH_SIZE["cpu"], 3e-3, 0)
    gpu = TrainConfig().for_device(torch.device("cuda"))
    assert gpu.batch_size == AUTO_BATCH_SIZE["cuda"]
    assert gpu.lr == pytest.approx(3e-3 * (AUTO_BATCH_SIZE["cuda"] / 64) ** 0.5)
    assert gpu.warmup_epochs == 2
    big = TrainConfig(batch_size=256).for_device(torch.device("cpu"))
    assert (big.lr, big.warmup_epochs) == (pytest.approx(6e-3), 2)
    fixed = TrainConfig(batch_size=256, lr=1e-3, warmup_epochs=0)
    assert fixed.for_device(torch.device("cuda")) == fixed
    with pytest.raises(ConfigError, match="warmup_epochs must be >= 0 \\(got -1\\)"):
        TrainConfig(warmup_epochs=-1)
    with pytest.raises(ConfigError, match="batch_size must be >= 1 \\(got 0\\)"):
        TrainConfig(batch_size=0)
    with pytest.raises(
        ConfigError, match="schedule must be one of cosine, plateau \\(got 'step'\\)"
    ):
        TrainConfig(schedule="step")
    with pytest.raises(ConfigError, match="ema_decay must be between 0 and 1.*\\(got 1.0\\)"):
        TrainConfig(ema_decay=1.0)


def test_fit_refuses_an_unresolved_config(waq_dir):
    from wdn_explain.training import fit

    sets = _splits(waq_dir)
    with pytest.raises(ConfigError, match="resolved TrainConfig"):
        fit(_model(), sets["train"].stacked(), sets["val"].stacked(), TrainConfig(), "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("stream", [False, True])
def test_cpu_and_gpu_training_agree(waq_dir, monkeypatch, stream):
    """Same seed, same batches: GPU training (resident or streamed from the host) ends
    with the CPU's weights and losses within float tolerance."""
    from wdn_explain import evaluation, training

    if stream:  # no split fits: batches are copied from the host
        monkeypatch.setattr(evaluation, "RESIDENT_FRACTION", 0.0)
    sets = _splits(waq_dir)
    config = TrainConfig(epochs=3, batch_size=16, warmup_epochs=1).for_device(torch.device("cpu"))
    runs = {}
    for device in ("cpu", "cuda"):
        model = _model(device=device)
        runs[device] = (
            training.fit(
                model, sets["train"].stacked(), sets["val"].stacked(), config, torch.device(device)
            ),
            model.cpu(),
        )
    (cpu, cpu_model), (gpu, gpu_model) = runs["cpu"], runs["cuda"]
    for h, g in zip(cpu.history, gpu.history):
        assert g["train_mae"] == pytest.approx(h["train_mae"], abs=1e-5)
        assert g["val_mae"] == pytest.approx(h["val_mae"], abs=1e-5)
    for p, q in zip(cpu_model.parameters(), gpu_model.parameters()):
        torch.testing.assert_close(p, q, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--batch-size", "big"], "batch size must be 'auto' or an integer (got 'big')"),
        (["--batch-size", "0"], "batch_size must be >= 1 (got 0)"),
        (["--lr", "fast"], "lr must be 'auto' or a number (got 'fast')"),
        (["--warmup-epochs", "-1"], "warmup_epochs must be >= 0 (got -1)"),
        (["--device", "gpu0"], "unknown device 'gpu0' (use auto, cpu, cuda or cuda:N)"),
        (
            ["--edge-features", "flow,speed"],
            "edge features must be a non-empty list of flow, pipe_flushes, each once (got "
            "['flow', 'speed'])",
        ),
        (  # a feature twice made two equal input columns without a word (outside cases)
            ["--edge-features", "flow,flow"],
            "edge features must be a non-empty list of flow, pipe_flushes, each once (got "
            "['flow', 'flow'])",
        ),
        (
            ["--features", "chlorine_mg_l,chlorine_mg_l"],
            "node features must be a non-empty list of chlorine_mg_l, source_mg_l, "
            "chlorine_fraction, source_plan_mg_l, chlorine_history_mg_l, source_arrival_mg_l, "
            "each once (got ['chlorine_mg_l', 'chlorine_mg_l'])",
        ),
    ],
)
def test_bad_train_options_are_one_line_errors(tmp_path, waq_dir, option, message):
    from typer.testing import CliRunner

    from wdn_explain.cli import app

    args = ["train", "--data", str(waq_dir), "--out", str(tmp_path / "m"), *option]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.output.strip() == f"error: {message}"
    assert not (tmp_path / "m").exists()


def test_cli_trains_with_auto_batch_size_on_cpu(tmp_path, waq_dir):
    from typer.testing import CliRunner

    from wdn_explain.cli import app
    from wdn_explain.training import AUTO_BATCH_SIZE

    out = tmp_path / "m"
    args = ["train", "--data", str(waq_dir), "--out", str(out), "--epochs", "1", "--hidden", "4"]
    result = CliRunner().invoke(app, [*args, "--device", "cpu"])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert card["train"]["batch_size"] == AUTO_BATCH_SIZE["cpu"]
    assert card["train"]["lr"] == pytest.approx(3e-3 * (AUTO_BATCH_SIZE["cpu"] / 64) ** 0.5)
    assert card["train"]["warmup_epochs"] == (2 if AUTO_BATCH_SIZE["cpu"] > 64 else 0)


@pytest.mark.parametrize("arrival", [False, True])
def test_history_and_pipe_flush_model_is_served_what_it_trained_on(
    tmp_path, waq_dir, hanoi, arrival
):
    """A model on chlorine history and pipe flushes (and the source's arrival): its card
    keeps the link volumes and the report step, and a scenario's graphs built for serving
    from the card alone equal the dataset's samples (same inputs at every step)."""
    from wdn_explain.model_folder import load_model
    from wdn_explain.pipeline import scenario_graphs
    from wdn_explain.simulation import SimulationResult
    from wdn_explain.waq import scenario_path

    features = ("chlorine_mg_l", "source_mg_l", "source_plan_mg_l", "chlorine_history_mg_l")
    features += ("source_arrival_mg_l",) * arrival
    card = train(
        waq_dir,
        tmp_path / "m",
        model_config=SMALL,
        train_config=TrainConfig(
            epochs=2, batch_size=8, node_features=features, edge_features=("flow", "pipe_flushes")
        ),
        device="cpu",
    )
    in_channels = 10 + 2 * arrival
    assert card["model"] == {**SMALL.to_dict(), "in_channels": in_channels, "edge_channels": 2}
    _, loaded = load_model(tmp_path / "m")
    spec = loaded.input_spec
    assert spec.edge_features == ("flow", "pipe_flushes") and spec.report_step_s == 300
    assert spec.link_volume_l == pytest.approx(tuple(hanoi.link_volume_l))
    ds = WaqDataset.for_card(loaded, waq_dir, "all")
    graphs = scenario_graphs(SimulationResult.load(scenario_path(waq_dir, 4)), hanoi, spec)
    for t in range(ds.n_times):
        torch.testing.assert_close(graphs[t].x, ds.graph(4, t).x)
        torch.testing.assert_close(graphs[t].edge_attr, ds.graph(4, t).edge_attr)


def _outcome_splits(waq_dir):
    """The training and validation samples labelled 1 where the share lies above the training
    median: an outcome for the log loss."""
    sets = _splits(waq_dir)
    train_set, val_set = (sets[s].stacked() for s in ("train", "val"))
    cut = float(train_set.y.median())
    return sets, *(replace(s, y=(s.y > cut).float()) for s in (train_set, val_set))


def test_a_logistic_fit_reports_the_validation_brier_score_of_its_weights(waq_dir):
    """Each epoch of a fit with the log loss reports the Brier score of the weights it ends
    with: the mean squared gap of sigmoid(output) to the outcome, computed here."""
    from scipy.special import expit

    from wdn_explain.training import fit

    sets, train_set, val_set = _outcome_splits(waq_dir)
    config = TrainConfig(epochs=2, batch_size=8, lr=1e-2, ema_decay=None, warmup_epochs=0)
    model = _model()
    result = fit(model, train_set, val_set, config, "cpu", loss="logistic")
    p = expit(predict(model.eval(), sets["val"]).ravel())
    brier = ((p - val_set.y.numpy().ravel()) ** 2).mean()
    assert result.history[-1]["val_brier"] == pytest.approx(brier, rel=1e-5)


def test_a_logistic_fit_keeps_and_stops_on_the_validation_brier_score(waq_dir, monkeypatch):
    """With the log loss, fit() keeps the epoch of the lowest validation Brier score and
    stops ``patience`` epochs after it, whatever the log loss does: scripted scores lowest
    at epoch 2 keep the weights a 2-epoch fit ends with (fitted here), and a patience of 2
    stops the fit after epoch 4."""
    import wdn_explain.training as training

    _, train_set, val_set = _outcome_splits(waq_dir)
    scores = iter([0.3, 0.1, 0.2, 0.15, 0.05, 0.01])
    scripted = ("brier", lambda logit, outcome: torch.tensor(next(scores)))
    monkeypatch.setitem(training.SELECTED_BY, "logistic", scripted)
    config = TrainConfig(
        epochs=6, batch_size=8, lr=1e-2, ema_decay=None, warmup_epochs=0, schedule="plateau"
    )
    config = replace(config, patience=2)
    result = training.fit(_model(), train_set, val_set, config, "cpu", loss="logistic")
    assert [row["val_brier"] for row in result.history] == pytest.approx([0.3, 0.1, 0.2, 0.15])
    assert np.argmin([row["val_logistic"] for row in result.history]) != 1
    two = _model()
    training.fit(two, train_set, val_set, replace(config, epochs=2), "cpu", loss="logistic")
    for name, value in two.state_dict().items():
        torch.testing.assert_close(result.best_state[name], value)
