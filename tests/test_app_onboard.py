"""The app's upload of a utility's own network (issue 20): an unusable file is refused in one
message with nothing written; Net1's .inp becomes a model (8 scenarios) that the app
chooses and draws, shown beside persistence and the tree, with the remedy when it is no
better than the tree (issue 31)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from test_networks_pipeline import inp_node_ids

from wdn_explain.model_folder import read_card
from wdn_explain.network import builtin_network_path

from conftest import ROOT, chart_figures, widget

APP = str(ROOT / "app" / "main.py")


@pytest.fixture
def app(tmp_path, monkeypatch):
    """The app on the shipped default model, with an empty user models folder."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WDN_EXPLAIN_MODELS", str(tmp_path / "mine"))
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    at = AppTest.from_file(APP, default_timeout=300).run()
    assert not at.exception
    return at


def upload(at, name: str, content: bytes, n_scenarios: int = 8, epochs: int = 30):
    widget(at, "file_uploader", "own_inp").set_value((name, content, "text/plain"))
    at.run()
    widget(at, "number_input", "own_scenarios").set_value(n_scenarios)
    widget(at, "number_input", "own_epochs").set_value(epochs)
    return widget(at, "button", "own_build").click().run()


def evaluation_mae(folder) -> dict[str, float]:
    """The MAE column of the folder's evaluation.txt: the model's and the baselines'."""
    rows = [line.split() for line in (folder / "evaluation.txt").read_text().splitlines()]
    names = ("model", "persistence", "climatology", "tree")
    return {row[0]: float(row[1]) for row in rows if row and row[0] in names}


def test_unusable_upload_refused_in_one_message(app, tmp_path):
    at = upload(app, "pumps.inp", b"[TITLE]\nnot a network at all\n")
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert errors == [
        "network file 'pumps.inp' is not an EPANET network: it has no [JUNCTIONS], "
        "[RESERVOIRS], [TANKS] section"
    ]
    assert not (tmp_path / "mine").exists()  # nothing written
    assert widget(at, "selectbox", "model").value == "default"  # the page goes on
    widget(at, "text_input", "own_name").set_value("../elsewhere")
    at = widget(at, "button", "own_build").click().run()
    assert [e.value for e in at.sidebar.error] == [
        "model name '../elsewhere' must start with a letter or digit and hold only letters, "
        "digits, '.', '-' and '_' (at most 100 characters)"
    ]
    assert not (tmp_path / "mine").exists() and not (tmp_path / "elsewhere").exists()


def test_uploaded_net1_becomes_the_chosen_model(app, tmp_path):
    """One epoch: a model no better than the tree, which the app says beside its figures,
    with a button that builds it again as the remedy says."""
    inp = builtin_network_path("net1")
    at = upload(app, "Mytown.inp", inp.read_bytes(), epochs=1)
    assert not at.exception and not at.sidebar.error
    folder = tmp_path / "mine" / "mytown"
    assert (folder / "card.json").is_file() and (folder / "default_timeline.npz").is_file()
    assert widget(at, "selectbox", "model").value == "mytown"
    assert any("network mytown: 11 nodes, 13 links" in c.value for c in at.sidebar.caption)
    # the test figures beside persistence and the tree, as evaluation.txt has them
    mae = evaluation_mae(folder)
    assert mae["model"] >= mae["tree"]  # the premise: one epoch does not beat the tree
    shown = (
        f"test MAE {mae['model']:.4f} (persistence {mae['persistence']:.4f}, climatology "
        f"{mae['climatology']:.4f}, tree {mae['tree']:.4f})"
    )
    assert any(c.value.startswith(shown) for c in at.sidebar.caption)
    # the build's verdict, the warnings beside the model and the remedy's button
    assert [i.value for i in at.sidebar.info if "was built" in i.value] == [
        f"**mytown** was built: its model is NO BETTER THAN THE TREE on the test scenarios "
        f"(MAE {mae['model']:.4f} against {mae['tree']:.4f}): simulate more scenarios and "
        "train more epochs (run again with --scenarios 16 --epochs 2 --overwrite)."
    ]
    warned = any("no better than persistence" in w.value for w in at.sidebar.warning)
    assert warned == (mae["model"] >= mae["persistence"])
    assert any("no better than a gradient-boosted tree" in w.value for w in at.sidebar.warning)
    rebuild = widget(at, "button", "own_remedy")
    assert rebuild.label == "build again with 16 scenarios and 2 epochs"
    si = next(iter(chart_figures(at).values()))
    nodes = next(tr for tr in si["data"] if tr.get("name") == "nodes")
    shown = {h.split("</b>")[0].removeprefix("<b>node ") for h in nodes["hovertext"]}
    assert shown == set(inp_node_ids(inp))  # the map draws Net1's nodes


def test_an_upload_that_crashes_epanet_leaves_the_server_running(app, tmp_path):
    """AppTest runs the script in this process: EPANET reading the file here would kill it."""
    text = builtin_network_path("net1").read_text()
    crash = text.replace("[JUNCTIONS]", "[JUNCTIONS]\n" + "A" * 5000, 1)
    at = upload(app, "crash.inp", crash.encode())
    assert not at.exception
    assert [e.value for e in at.sidebar.error] == [
        "cannot read network file 'crash.inp': it crashes EPANET's reader (SIGSEGV); look for "
        "an over-long line or binary content in it"
    ]
    assert not (tmp_path / "mine").exists()
    assert widget(at, "selectbox", "model").value == "default"  # the page goes on


def test_a_300_character_file_name_gets_a_clear_message(app, tmp_path):
    """An upload named with 300 characters (beyond the file system's 255): the default model
    name is cut to 100 characters and the file's own problem is said, not "unexpected error";
    a typed 300-character model name is refused by the name rule (issue 33 item 10)."""
    at = upload(app, "a" * 300 + ".inp", b"[TITLE]\nnot a network at all\n")
    assert not at.exception
    assert [e.value for e in at.error] == [  # the only message on the page
        f"network file '{'a' * 100}.inp' is not an EPANET network: it has no [JUNCTIONS], "
        "[RESERVOIRS], [TANKS] section"
    ]
    widget(at, "text_input", "own_name").set_value("b" * 300)
    at = widget(at, "button", "own_build").click().run()
    assert [e.value for e in at.sidebar.error] == [
        f"model name '{'b' * 60}... (300 characters)' must start with a letter or digit and "
        "hold only letters, digits, '.', '-' and '_' (at most 100 characters)"
    ]
    assert not (tmp_path / "mine").exists()


@pytest.mark.slow
def test_the_remedy_button_builds_the_model_again_larger(app, tmp_path):
    """The button under a model no better than the tree rebuilds it from its own copy of the
    network with twice the scenarios and epochs; the verdict shown is the new model's."""
    at = upload(app, "Mytown.inp", builtin_network_path("net1").read_bytes(), epochs=1)
    at = widget(at, "button", "own_remedy").click().run()
    assert not at.exception and not at.sidebar.error
    folder = tmp_path / "mine" / "mytown"
    card = read_card(folder)
    assert card.data.n_scenarios == 16 and card.train["epochs"] == 2
    assert len(list((folder / "data").glob("scenario_*.npz"))) == 16
    assert widget(at, "selectbox", "model").value == "mytown"
    mae = evaluation_mae(folder)
    verdict = next(i.value for i in at.sidebar.info if "was built" in i.value)
    assert f"(MAE {mae['model']:.4f} against {mae['tree']:.4f})" in verdict
