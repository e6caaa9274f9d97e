"""Every record the water pipeline reads back (model card, WAQ manifest, timeline metadata)
is typed: a missing, extra or mistyped field, or a record of another version, is one line
naming the file, the field and the value, through the real readers."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from wdn_explain.errors import DataError
from wdn_explain.model_folder import read_card
from wdn_explain.timeline import Timeline
from wdn_explain.waq import read_manifest

CHANGES = {
    "missing": (lambda r, f: {k: v for k, v in r.items() if k != f}, "it lacks {field}"),
    "extra": (lambda r, f: {**r, "colour": "red"}, "colour is not a known field \\(got 'red'\\)"),
    "mistyped": (lambda r, f: {**r, f: "many"}, "{field}: .* \\(got 'many'\\)"),
    "version": (lambda r, f: {**r, "version": 2}, "is version 2; this wdn-explain reads version 1"),
}


def _apply(kind: str, record: dict, field: str) -> tuple[dict, str]:
    change, message = CHANGES[kind]
    return change(record, field), message.replace("{field}", field)


@pytest.mark.parametrize("kind", list(CHANGES))
def test_model_card(tmp_path, tiny_model_dir, kind):
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    card = json.loads((folder / "card.json").read_text())
    field = "n_scenarios" if kind == "mistyped" else "data"
    if kind == "mistyped":  # a nested field: named with its path
        card["data"]["n_scenarios"] = "many"
        changed, message = card, r"data\.n_scenarios: .* \(got 'many'\)"
    else:
        changed, message = _apply(kind, card, field)
    (folder / "card.json").write_text(json.dumps(changed))
    with pytest.raises(DataError, match=rf"^model card '{folder}/card.json' .*{message}") as err:
        read_card(folder)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", list(CHANGES))
def test_waq_manifest(tmp_path, waq_dir, kind):
    folder = tmp_path / "waq"
    shutil.copytree(waq_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    changed, message = _apply(kind, manifest, "n_scenarios")
    (folder / "manifest.json").write_text(json.dumps(changed))
    with pytest.raises(DataError, match=rf"^manifest '{folder}/manifest.json' .*{message}") as err:
        read_manifest(folder)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", list(CHANGES))
def test_timeline_meta(tmp_path, kind):
    from wdn_explain.shipped import DEFAULT_TIMELINE

    with np.load(DEFAULT_TIMELINE, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    changed, message = _apply(kind, json.loads(str(arrays["meta"])), "horizon")
    path = tmp_path / "t.npz"
    np.savez(path, **(arrays | {"meta": np.array(json.dumps(changed))}))
    with pytest.raises(DataError, match=rf"^timeline file '{path}' .*{message}") as err:
        Timeline.load(path)
    assert "\n" not in str(err.value)


MALFORMED = {  # the cases of a damaged card that once ended `explain` in long tracebacks
    "an extra key in inputs": (
        lambda c: c["inputs"].update(colour="red"),
        "inputs.colour: Unexpected keyword argument",
    ),
    "inputs as a list": (lambda c: c.update(inputs=[1, 2]), "inputs: Input should be"),
    "a string horizon": (lambda c: c["inputs"].update(horizon="four"), "inputs.horizon: "),
    "a range of an unknown factor": (
        lambda c: c["design"]["ranges"].update(wind_speed=[0, 1]),
        "ranges of unknown factors wind_speed",
    ),
    "3 features for a 10-channel model": (
        lambda c: c["inputs"].update(
            node_features=["chlorine_mg_l", "source_mg_l", "chlorine_fraction"]
        ),
        "inputs make 3 input channels .* the model takes in_channels=10",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_card_fields_end_explain_in_one_line(tmp_path, tiny_model_dir, case):
    from typer.testing import CliRunner

    from wdn_explain.cli import app

    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder)
    card = json.loads((folder / "card.json").read_text())
    change, message = MALFORMED[case]
    change(card)
    (folder / "card.json").write_text(json.dumps(card))
    out = tmp_path / "t.npz"
    args = [
        "explain",
        "--scenario",
        "{duration_s: 2400}",
        "--model",
        str(folder),
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith(f"error: model card '{folder}/card.json' is corrupt: ")
    assert re.search(message, result.output), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # nothing half-written


def test_a_wrong_molecule_card_is_one_line(tmp_path):
    from wdn_explain.chem.training import load_classifier
    from wdn_explain.shipped import SHIPPED_ROOT

    folder = tmp_path / "mutag"
    shutil.copytree(SHIPPED_ROOT / "models" / "chem" / "mutag-gin3", folder)
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**card, "accuracy": "high"}))
    with pytest.raises(DataError, match=r"not a molecule model card \(accuracy: .*'high'\)\)$"):
        load_classifier(folder)


def test_card_dataset_is_deprecated_for_the_dataset_s_own_constructor(tiny_model_dir, waq_dir):
    """A record does not build a dataset: ``WaqDataset.for_card`` does, and the deprecated
    ``ModelCard.dataset`` says so and returns the same split."""
    from wdn_explain.dataset import WaqDataset

    card = read_card(tiny_model_dir)
    new = WaqDataset.for_card(card, waq_dir, "all")
    with pytest.warns(DeprecationWarning, match=r"use wdn_explain\.dataset\.WaqDataset\.for_card"):
        old = card.dataset(waq_dir, "all")
    assert len(old) == len(new) > 0
    assert old.inputs == new.inputs == card.input_spec
    assert np.array_equal(old[0].x.numpy(), new[0].x.numpy())
    assert np.array_equal(old[len(old) - 1].y.numpy(), new[len(new) - 1].y.numpy())
