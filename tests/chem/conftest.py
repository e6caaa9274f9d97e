"""Fixtures of the chemistry tests: the offline dataset copies beside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

CHEM = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "chem"


@pytest.fixture(scope="session")
def chem_root() -> Path:
    if not (CHEM / "MUTAG" / "raw").is_dir():
        pytest.skip(f"offline chemistry datasets not found at {CHEM} (see its README)")
    return CHEM


@pytest.fixture(scope="session")
def mutag(chem_root):
    from wdn_explain.chem.datasets import load_dataset

    return load_dataset("MUTAG", chem_root, download=False)


@pytest.fixture(scope="session")
def benzene(chem_root):
    from wdn_explain.chem.datasets import load_dataset

    return load_dataset("Benzene", chem_root, download=False)


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
