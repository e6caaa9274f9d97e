"""The "Molecules" page, driven with AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parents[2] / "app" / "pages" / "1_Molecules.py")


@pytest.fixture
def page(chem_root, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_CHEM_DATA", str(chem_root))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    models = at.sidebar.selectbox[0].options
    return at.sidebar.selectbox[0].select_index(models.index("mutag-gin3")).run()


def test_renders_a_mutag_molecule(page):
    assert not page.exception and not page.error
    assert "MUTAG #0" in page.markdown[0].value
    calls = [m for m in page.metric if m.label == "model calls (|I|)"]
    assert int(calls[0].value) > 0
    assert page.dataframe[0].value.shape[0] > 0


def test_pasted_smiles_and_bad_smiles(page):
    page.sidebar.text_input[1].input("O=[N+]([O-])c1ccccc1").run()
    assert not page.exception and not page.error
    assert "2^9" in page.caption[0].value
    page.sidebar.text_input[1].input("C1CC(").run()
    assert "unparsable SMILES 'C1CC('" in page.error[0].value


def test_other_molecule_and_index(page):
    page.number_input[0].set_value(3).run()
    page.sidebar.selectbox[2].select("SV").run()
    assert not page.exception and not page.error
    assert "MUTAG #3" in page.markdown[0].value
    assert list(page.dataframe[0].value.columns) == ["atoms", "SV"]


def test_opens_on_mutag_and_says_what_masked_atoms_are(chem_root, monkeypatch):
    """The first view: the small MUTAG model and molecule (the 12 000 Benzene molecules are
    not read), and the reading guide says masked atoms are all-zero features."""
    from wdn_explain.chem import datasets

    read, load = [], datasets.load_dataset
    monkeypatch.setattr(
        datasets, "load_dataset", lambda name, root, **kw: read.append(name) or load(name, root)
    )
    monkeypatch.setenv("WDN_EXPLAIN_CHEM_DATA", str(chem_root))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception and not at.error
    assert at.sidebar.selectbox[0].value.name == "mutag-gin3"
    assert "MUTAG #0" in at.markdown[0].value and "Benzene" not in read
    guide = " ".join(at.markdown[-1].value.split())
    assert "a masked atom has all its features 0" in guide and "not an average atom" in guide


def test_paper_version_model_shows_its_task(page):
    """The shipped model of the paper's AlkaneCarbonyl opens on its own data version."""
    models = page.sidebar.selectbox[0].options
    at = page.sidebar.selectbox[0].select_index(models.index("alkanecarbonyl-paper-gcn3")).run()
    assert not at.exception and not at.error
    assert at.sidebar.selectbox[1].value == ("AlkaneCarbonyl", "paper")
    assert "AlkaneCarbonyl #0" in at.markdown[0].value
    assert any("Label 1 means: a fluoride AND a carbonyl" in c.value for c in at.caption)
    assert at.dataframe[0].value.shape[0] > 0
