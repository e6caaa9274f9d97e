"""Every record the water pipeline reads back (model card, WAQ manifest, timeline metadata)
is typed: a missing, extra or mistyped field, or a record of another version, is one line
naming the file, the field and the value, through the real readers."""

from __future__ import annotations

import json
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
