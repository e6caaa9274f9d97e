"""`train` and model folders under bad input: refused up front, never overwritten by
accident, damaged weights and cards named on load."""

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wdn_explain import files, training
from wdn_explain.cli import app
from wdn_explain.errors import DataError
from wdn_explain.model_folder import file_sha256, load_model

from conftest import ROOT, damaged_without_hash

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if training starts: the refusal must come before any work."""

    def never(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(training, "forecaster", never)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--layers", 0], "num_layers must be an integer >= 1 (got 0)"),
        (["--hidden", 0], "hidden_channels must be an integer >= 1 (got 0)"),
        (["--lr", "nan"], "lr must be a positive finite number (got nan)"),
        (["--lr", "inf"], "lr must be a positive finite number (got inf)"),
        (  # 4h^2 + 2h per layer, 3 layers: 1.2e17 parameters (issue 33 item 7)
            ["--hidden", 10**8],
            "hidden_channels 100000000 and num_layers 3 make 1.2e+17 parameters, "
            "1,920,000,018 GB to train (limit 16 GB); choose a smaller model",
        ),
        (["--layers", 10**7, "--hidden", 32], "hidden_channels 32 and num_layers 10000000 make"),
    ],
)
def test_bad_training_options(tmp_path, waq_dir, option, message, no_training):
    result = run("train", "--data", waq_dir, "--out", tmp_path / "m", *option)
    assert result.exit_code == 1
    assert result.output.strip().startswith(f"error: {message}")
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("x"), "model folder '{out}' is a file, expected a folder"),
        (lambda p: (p.mkdir(), (p / "model.pt").mkdir()), "is a directory, expected a file"),
    ],
)
def test_wrong_kind_of_output_is_refused_before_training(
    tmp_path, waq_dir, make, message, no_training
):
    out = tmp_path / "m"
    make(out)
    result = run("train", "--data", waq_dir, "--out", out)
    assert result.exit_code == 1 and message.format(out=out) in result.output


def test_unwritable_output_is_refused_before_training(tmp_path, waq_dir, no_training, monkeypatch):
    monkeypatch.setattr(files, "_writable", lambda folder: False)
    result = run("train", "--data", waq_dir, "--out", tmp_path / "m")
    assert result.exit_code == 1
    assert f"cannot write model folder '{tmp_path / 'm'}'" in result.output
    assert "is not writable" in result.output


def test_existing_model_needs_overwrite(tmp_path, waq_dir, tiny_model_dir):
    out = tmp_path / "m"
    shutil.copytree(tiny_model_dir, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    args = ("train", "--data", waq_dir, "--out", out, "--epochs", 1, "--hidden", 4)
    result = run(*args)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: model folder '{out}' holds a model; use --overwrite to replace it"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    result = run(*args, "--overwrite")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "card.json").read_text())["model"]["hidden_channels"] == 4


def test_smoke_set_without_test_split_trains_and_says_so(tmp_path, waq_dir):
    result = run("train", "--data", waq_dir, "--out", tmp_path / "m", "--epochs", 1)
    assert result.exit_code == 0, result.output
    assert "no test scenarios to score" in result.output
    load_model(tmp_path / "m")


def test_card_records_the_weight_hash(tiny_model_dir):
    card = json.loads((tiny_model_dir / "card.json").read_text())
    assert card["weights_sha256"] == file_sha256(tiny_model_dir / "model.pt")


def test_flipped_weights_are_refused(tmp_path, tiny_model_dir):
    out = tmp_path / "m"
    shutil.copytree(tiny_model_dir, out)
    weights = bytearray((out / "model.pt").read_bytes())
    middle = len(weights) // 2
    weights[middle : middle + 64] = bytes(b ^ 0xFF for b in weights[middle : middle + 64])
    (out / "model.pt").write_bytes(bytes(weights))
    with pytest.raises(DataError, match=r"weights '.*model\.pt' do not match the SHA-256"):
        load_model(out)
    result = run(
        "explain", "--scenario", "{duration_s: 2400}", "--model", out, "--out", tmp_path / "t.npz"
    )
    assert result.exit_code == 1 and "do not match the SHA-256" in result.output
    assert not (tmp_path / "t.npz").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda card: [card], "a list, not a mapping"),
        (  # the uncertainty notice used to fail as a KeyError at explain (outside cases)
            lambda card: {**card, "notice": {}},
            r"notice: coefficients must be a mapping of features to numbers \(got \{\}\)",
        ),
        (
            lambda card: {**card, "notice": {"coefficients": {"a": 1.0}, "intercept": "x"}},
            r"notice: intercept must be a finite number, not 'x' \(got ",
        ),
        (lambda card: {k: v for k, v in card.items() if k != "data"}, "it lacks data"),
        (lambda card: {k: v for k, v in card.items() if k != "train"}, "it lacks train"),
        (
            lambda card: {**card, "train": {"horizon": 4}},
            "train lacks threshold, split_seed",
        ),
    ],
)
def test_malformed_card_is_one_line(tmp_path, tiny_model_dir, change, message):
    out = tmp_path / "m"
    shutil.copytree(tiny_model_dir, out)
    card = json.loads((out / "card.json").read_text())
    (out / "card.json").write_text(json.dumps(change(card)))
    with pytest.raises(DataError, match=rf"model card '.*card\.json' is corrupt: {message}"):
        load_model(out)


def test_late_write_error_keeps_the_trained_model(tmp_path, waq_dir, monkeypatch):
    import errno

    import torch

    out = tmp_path / "m"
    save = torch.save

    def disk_full_in_out(obj, path, *args, **kwargs):
        if str(path).startswith(str(out)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return save(obj, path, *args, **kwargs)

    monkeypatch.setattr(torch, "save", disk_full_in_out)
    result = run("train", "--data", waq_dir, "--out", out, "--epochs", 1, "--hidden", 4)
    assert result.exit_code == 1
    line = result.output.strip().splitlines()[-1].split("\r")[-1]  # after the progress bar
    assert line.startswith(f"error: cannot write '{out / 'model.pt'}' (No space left on device)")
    rescue = line.split("the trained model was saved to '")[1].split("'")[0]
    model, card = load_model(rescue)
    assert card.model["hidden_channels"] == 4
    shutil.rmtree(rescue)


def test_shipped_default_model_records_its_weight_hash():
    folder = ROOT / "models" / "default"
    card = json.loads((folder / "card.json").read_text())
    assert card["weights_sha256"] == file_sha256(folder / "model.pt")
    load_model(folder)  # the check at load passes


def test_full_disk_raising_torchs_runtime_error_keeps_the_trained_model(
    tmp_path, waq_dir, full_disk_under
):
    """torch's zip writer reports a full disk as RuntimeError, not OSError: the very error
    it raises writing to /dev/full (a device that is always full) still ends in the rescue
    folder, in one line."""

    out = tmp_path / "m"
    full_disk_under(out)
    result = run("train", "--data", waq_dir, "--out", out, "--epochs", 1, "--hidden", 4)
    assert result.exit_code == 1
    line = result.output.strip().splitlines()[-1].split("\r")[-1]  # after the progress bar
    assert line.startswith(f"error: cannot write '{out / 'model.pt'}' (torch's writer failed: ")
    assert "is the disk full?); the trained model was saved to '" in line
    rescue = line.split("the trained model was saved to '")[1].split("'")[0]
    assert load_model(rescue)[1].model["hidden_channels"] == 4
    assert "Traceback" not in result.output
    assert not out.exists()  # no half-written weights, no claim: the folder made is removed
    shutil.rmtree(rescue)


def test_second_train_into_a_claimed_folder_is_refused(tmp_path, waq_dir, no_training):
    import subprocess

    out = tmp_path / "m"
    out.mkdir()
    holder = subprocess.Popen(["sleep", "60"])  # the first `train`, still running
    try:
        (out / files.LOCK).write_text(str(holder.pid))
        result = run("train", "--data", waq_dir, "--out", out)
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: model folder '{out}' is being written by another process (pid {holder.pid}, "
        f"claim file {out / files.LOCK}); wait for it or choose another folder"
    )
    assert sorted(p.name for p in out.iterdir()) == [files.LOCK]  # its claim is left alone


def test_claim_is_atomic_between_threads(tmp_path):
    """Many writers claiming one folder at once: exactly one holds it at a time."""
    import threading

    barrier, held, refused = threading.Barrier(8), [], []

    def claim():
        barrier.wait()
        try:
            with files.claimed(tmp_path / "m"):
                held.append(1)
                barrier_done.wait()
        except DataError:
            refused.append(1)
            barrier_done.wait()

    barrier_done = threading.Barrier(8)
    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(held), len(refused)) == (1, 7)
    assert not (tmp_path / "m" / files.LOCK).exists()  # released


def test_malicious_weights_refused_in_one_line(tmp_path, tiny_model_dir):
    import os

    import torch

    out, marker = tmp_path / "m", tmp_path / "pwned"
    shutil.copytree(tiny_model_dir, out)

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    torch.save({"w": Payload()}, out / "model.pt")
    card = json.loads((out / "card.json").read_text())
    del card["weights_sha256"]  # as in a card older than the hash
    (out / "card.json").write_text(json.dumps(card))
    result = run("evaluate", "--model", out, "--data", tmp_path)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"warning: the card of '{out}' records no weights_sha256: a damaged or replaced "
        "model.pt cannot be told from the trained one (save the model again to record it)",
        f"error: weights '{out / 'model.pt'}' hold Python objects that a safe load refuses "
        "(Trying to load unsupported GLOBAL posix.system whose module posix is blocked); the "
        "file is damaged or not a plain state_dict",
    ]
    assert not marker.exists()


def test_raw_pickle_weights_refused_without_torchs_warning(tmp_path, tiny_model_dir):
    """A model.pt that is a raw pickle (protocol 4, not torch's format), loaded by the real
    command: our two lines (the card's missing hash, the refusal) and nothing of torch's
    before them (issue 33 item 10)."""
    import pickle
    import subprocess
    import sys

    out = tmp_path / "m"
    shutil.copytree(tiny_model_dir, out)
    (out / "model.pt").write_bytes(pickle.dumps({"w": [1.0]}, protocol=4))
    card = json.loads((out / "card.json").read_text())
    del card["weights_sha256"]
    (out / "card.json").write_text(json.dumps(card))
    result = subprocess.run(
        [sys.executable, "-m", "wdn_explain", "evaluate", "--model", str(out), "--data", "."],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["warning", "error"], result.stderr
    assert lines[1].startswith(f"error: weights '{out / 'model.pt'}' hold Python objects")


def test_evaluate_without_test_scenarios_is_one_line(waq_dir, tiny_model_dir):
    result = run("evaluate", "--model", tiny_model_dir, "--data", waq_dir)  # 6: none in test
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: data folder '{waq_dir}' has no test scenarios (its 6 scenarios are split by "
        "scenario into train, val and test); choose another --split, or simulate more scenarios"
    )


def test_evaluate_flags_forecasts_outside_the_share_range(tmp_path, waq_dir, tiny_model_dir):
    out = damaged_without_hash(tiny_model_dir, tmp_path / "m")
    result = run("evaluate", "--model", out, "--data", waq_dir, "--split", "train")
    assert result.exit_code == 0, result.output
    warning = next(line for line in result.output.splitlines() if "forecasts lie" in line)
    assert warning.startswith("warning: ")
    assert "forecasts lie outside [0, 1], the range of a share of nodes" in warning
    assert "the model's weights may be damaged" in warning


@pytest.mark.parametrize(
    ("forecast", "flagged"),
    [
        ([0.0, 0.5, 1.0], None),
        ([-0.05, 1.05], None),  # a linear head overshoots a little near the bounds
        ([0.2, 4.8, -0.3], "2 of 3 forecasts lie outside [0, 1]"),
        ([0.2, float("nan")], "1 of 2 forecasts lie outside [0, 1]"),
    ],
)
def test_range_warning_of_a_share(forecast, flagged):
    from wdn_explain.features import InputSpec

    warning = InputSpec().range_warning(forecast)
    assert warning == flagged if flagged is None else warning.startswith(flagged)


def test_physical_forecasts_move_a_small_overshoot_onto_the_bound_and_keep_far_ones():
    """What the pipeline serves: -8.7e-5 mg/L is 0 mg/L and a share of 1.03 is 1; a share of
    4.8 or -0.3 stays as it is, for the range warning to name (both targets)."""
    from wdn_explain.features import InputSpec

    share = InputSpec().physical(np.array([-0.04, 0.0, 0.5, 1.03, 4.8, -0.3], dtype=np.float32))
    np.testing.assert_array_equal(share, np.array([0, 0, 0.5, 1, 4.8, -0.3], dtype=np.float32))
    assert share.dtype == np.float32
    node = InputSpec(target="node_chlorine_mg_l").physical(np.array([-8.7e-5, 0.9, 7.0, -4.0]))
    np.testing.assert_array_equal(node, [0.0, 0.9, 7.0, -4.0])  # no upper bound on mg/L
    # a scenario whose highest concentration is 1.5 mg/L: nothing is served above it
    node = InputSpec(target="node_chlorine_mg_l").physical(
        np.array([-8.7e-5, 1.2, 1.51, 1.62, 7.0, -4.0], dtype=np.float32), high=1.5
    )
    np.testing.assert_array_equal(node, np.array([0, 1.2, 1.5, 1.5, 1.5, -4.0], dtype=np.float32))


def test_a_rare_small_overshoot_is_not_called_damage():
    """3 of 1000 node forecasts at -0.18 mg/L read as a regression's error near 0; 3 of 100,
    or one at -4 mg/L, still point at damaged weights."""
    from wdn_explain.features import InputSpec

    spec = InputSpec(target="node_chlorine_mg_l")
    rare = np.r_[np.full(3, -0.18), np.full(997, 0.5)]
    assert spec.range_warning(rare) == (  # chlorine's one bound said plainly: no "[0, inf]"
        "3 of 1000 forecasts lie below 0 mg/L, where chlorine cannot be (all forecasts: -0.18 to 0.5): "
        "a regression's error near the bound (charts and tables show them at the bound)"
    )
    often = np.r_[np.full(3, -0.18), np.full(97, 0.5)]
    far = np.r_[-4.0, np.full(999, 0.5)]
    for forecast in (often, far):
        assert "weights may be damaged" in spec.range_warning(forecast)


def test_weights_without_a_hash_and_negative_half_widths_are_not_silent(tmp_path, tiny_model_dir):
    from wdn_explain.errors import WdnExplainWarning

    out = damaged_without_hash(tiny_model_dir, tmp_path / "m")
    with pytest.warns(WdnExplainWarning, match="records no weights_sha256: a damaged or replaced"):
        load_model(out)
    card = json.loads((out / "card.json").read_text())
    card["conformal"] = {"half_width": {"0": -0.2}, "pooled_half_width": 0.1}
    (out / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=r"half-width of group '0' must be a finite number >= 0 "):
        load_model(out)


def test_train_on_negative_pressures_says_so_in_one_line(tmp_path):
    from wdn_explain.scenario import parse_config
    from wdn_explain.waq import generate_waq

    # Hanoi at three times its demand: pressures go negative (demand-driven hydraulics)
    config = parse_config(
        {
            "n_scenarios": 6,
            "scenario": {"duration_s": 1800, "demand_scale": 3, "demand_model": "DDA"},
        }
    )
    generate_waq(config, tmp_path / "data", n_workers=1)
    result = run(
        "train", "--data", tmp_path / "data", "--out", tmp_path / "m", "--epochs", 1,
        "--hidden", 4, "--layers", 1, "--device", "cpu",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = f"warning: training data '{tmp_path / 'data'}': "
    warnings = [line for line in result.output.splitlines() if line.startswith(data)]
    assert len(warnings) == 1  # (the card's verdicts on a one-epoch model may follow)
    assert warnings[0].startswith(f"{data}negative pressure in 6 of 6 scenarios")


def test_a_deeply_nested_card_or_manifest_is_one_line(tmp_path, tiny_model_dir, waq_dir):
    from wdn_explain.model_folder import read_card
    from wdn_explain.waq import read_manifest

    bomb = "[" * 100_000 + "]" * 100_000
    model, data = tmp_path / "m", tmp_path / "d"
    shutil.copytree(tiny_model_dir, model)
    shutil.copytree(waq_dir, data)
    (model / "card.json").write_text(bomb)
    (data / "manifest.json").write_text(bomb)
    with pytest.raises(DataError, match=r"model card '.*card.json' is corrupt \(nested too deeply"):
        read_card(model)
    with pytest.raises(DataError, match=r"manifest '.*manifest.json' is corrupt \(nested too deep"):
        read_manifest(data)


def test_full_disk_after_the_weights_leaves_no_half_model_folder(tmp_path, monkeypatch):
    """The card cannot be written after model.pt was: neither file appears in the folder (a
    model.pt without its card, or beside an old card, is a half model), and the error names
    the card and the folder the model was saved to instead (issue 33 item 9)."""
    import errno

    from wdn_explain.model import ChlorineGNN, ModelConfig
    from wdn_explain.model_folder import save_folder

    out = tmp_path / "m"
    out.mkdir()
    (out / "notes.txt").write_text("kept")
    write_text = Path.write_text

    def disk_full_for_the_card(path, *args, **kwargs):
        if path.parent == out:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", disk_full_for_the_card)
    model = ChlorineGNN(ModelConfig(hidden_channels=4))
    with pytest.raises(DataError) as info:
        save_folder(model, {"model": {"hidden_channels": 4}}, out)
    monkeypatch.undo()
    assert str(info.value).startswith(
        f"cannot write '{out / 'card.json'}' (No space left on device); the trained model "
        "was saved to '"
    )
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    rescue = Path(str(info.value).split("saved to '")[1].split("'")[0])
    assert json.loads((rescue / "card.json").read_text())["weights_sha256"] == file_sha256(
        rescue / "model.pt"
    )
    shutil.rmtree(rescue)


def test_ctrl_c_while_scoring_keeps_the_trained_model(tmp_path, waq_dir, monkeypatch):
    """The model is saved before the held-out work (a node model's test split is scored
    against one tree per node, minutes): Ctrl-C there keeps it, its card says what is
    missing, and `calibrate` adds it. Before, the whole run was lost."""
    out = tmp_path / "m"

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "conformal_record", interrupt)  # the first held-out step
    result = run("train", "--data", waq_dir, "--out", out, "--epochs", 2, "--hidden", 8)
    assert result.exit_code == 130
    assert result.output.rstrip().endswith(  # the line after the progress bar's
        f"interrupted after training: the model is saved in {out} without its intervals and "
        f"test scores; `wdn-explain calibrate --model {out} --data {waq_dir}` adds them"
    )
    _, card = load_model(out)
    assert card.unscored and card.conformal is None and len(card.history) == 2
    monkeypatch.undo()
    result = run("calibrate", "--model", out, "--data", waq_dir)
    assert result.exit_code == 0, result.output
    _, calibrated = load_model(out)
    assert not calibrated.unscored and calibrated.conformal is not None


def test_ctrl_c_before_the_first_epoch_is_one_line(tmp_path, waq_dir, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "fit", interrupt)
    out = tmp_path / "m"
    result = run("train", "--data", waq_dir, "--out", out)
    assert result.exit_code == 130
    assert result.output.strip() == "interrupted: nothing is saved (the first epoch had not ended)"
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (  # read as flow only (cards before pipe flushes): a shape error at explain
            lambda card: card["inputs"].pop("edge_features"),
            "inputs make 1 edge channels (flow), the model takes edge_channels=2",
        ),
        (  # the onboarding verdict compares it with the tree's: a TypeError
            lambda card: card["metrics"].update(mae="0.01"),
            "score mae must be a number (got '0.01')",
        ),
    ],
)
def test_a_card_that_does_not_fit_its_model_is_corrupt(tmp_path, change, message):
    folder = tmp_path / "m"
    shutil.copytree(ROOT / "models" / "default", folder)
    card = json.loads((folder / "card.json").read_text())
    change(card)
    (folder / "card.json").write_text(json.dumps(card))
    with pytest.raises(DataError, match=f"model card '.*' is corrupt: .*{re.escape(message)}"):
        load_model(folder)
