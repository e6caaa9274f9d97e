"""The app's upload of a utility's own network (issue 20): an unusable file is refused in one
message with nothing written; Net1's .inp becomes a model (8 scenarios) that the app
chooses and draws."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from test_networks_pipeline import inp_node_ids

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


def upload(at, name: str, content: bytes, n_scenarios: int = 8):
    widget(at, "file_uploader", "own_inp").set_value((name, content, "text/plain"))
    at.run()
    widget(at, "number_input", "own_scenarios").set_value(n_scenarios)
    return widget(at, "button", "own_build").click().run()


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
    inp = builtin_network_path("net1")
    at = upload(app, "Mytown.inp", inp.read_bytes())
    assert not at.exception and not at.sidebar.error
    folder = tmp_path / "mine" / "mytown"
    assert (folder / "card.json").is_file() and (folder / "default_timeline.npz").is_file()
    assert widget(at, "selectbox", "model").value == "mytown"
    assert any("network mytown: 11 nodes, 13 links" in c.value for c in at.sidebar.caption)
    # the evaluation's warnings beside the model: one when it does not beat persistence
    rows = [line.split() for line in (folder / "evaluation.txt").read_text().splitlines()]
    mae = {row[0]: float(row[1]) for row in rows if row[:1] in (["model"], ["persistence"])}
    warned = any("no better than persistence" in w.value for w in at.sidebar.warning)
    assert warned == (mae["model"] >= mae["persistence"])
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
