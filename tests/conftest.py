"""Shared fixtures: Hanoi, a tiny WAQ folder, small seeded graphs and models."""

from __future__ import annotations

import itertools
import json
import math
import shutil
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from wdn_explain.scenario import parse_config

ROOT = Path(__file__).resolve().parents[1]
CHEM = ROOT.parent / "shared" / "datasets" / "chem"

# A tiny WAQ design: 6 scenarios of 1 h at 5-minute reports (13 states each).
TINY = {
    "n_scenarios": 6,
    "seed": 1,
    "scenario": {"network": "hanoi", "duration_s": 3600, "reporting_step_s": 300},
}

# A tiny monitoring design: 60 one-hour scenarios with drawn injection site, strength, start,
# schedule, demand level and decay.
TINY_MONITORING = {
    "n_scenarios": 60,
    "seed": 4,
    "scenario": {
        "network": "hanoi",
        "duration_s": 3600,
        "reporting_step_s": 300,
        "pattern_step_s": 300,
    },
    "design": {
        "injection_nodes": ["2", "3", "12", "20", "28"],
        "reservoir_share": 0.4,
        "injection_modes": ["constant", "intermittent"],
        "injection_strength_mg_l": [0.5, 2.0],
        "injection_start_s": [0, 900],
        "intermittent_on_s": [600, 1200],
        "intermittent_off_s": [300, 900],
        "demand_scale": [0.8, 1.2],
        "bulk_decay_share": 0.5,
        "bulk_decay_per_day": [1, 3],
    },
}


@pytest.fixture(autouse=True)
def _quiet_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


@pytest.fixture(autouse=True)
def _warm_up_ends_with_its_test():
    """The app's warm-up thread (started by a test's first page) ends with that test: on
    CPython 3.11.7 two threads parsing source into ASTs at once fail ("AST constructor
    recursion depth mismatch"), e.g. pytest rewriting a plugin module it imports late (the
    session summary imports hypothesis) while the warm-up imports libraries."""
    yield
    for thread in threading.enumerate():
        if thread.name == "wdn-explain-warm-up":
            thread.join(timeout=600)


@pytest.fixture(autouse=True)
def _main_module_restored():
    """A page run by Streamlit's AppTest becomes ``sys.modules["__main__"]``; a Dask worker
    process started later (spawn) would re-run that page and die on its app-relative
    imports. Each test ends with pytest's own ``__main__`` back."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


@pytest.fixture(autouse=True, scope="session")
def _user_cache_of_the_session(tmp_path_factory):
    """One user cache for the whole session (its processes and their children), never the
    user's own ``~/.cache/wdn-explain``: what a test reads was written in this session (the
    networks as read, the app's timelines); a test that needs an empty one sets its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path_factory.mktemp("user-cache")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _each_tree_fitted_once():
    """The strong tree's fit (``tree._tuned_forecast``) is a pure function of its arrays and
    seed; the node model's tests score the same data again and again (train, calibrate,
    train-risk: 32 trees each, ~20 s). Each distinct fit runs once per session; the tree
    itself is checked against scikit-learn directly in ``test_tree.py``."""
    import hashlib

    from wdn_explain import tree

    fit = tree._tuned_forecast
    fitted: dict[str, np.ndarray] = {}

    def once(*arrays_and_seed):
        *arrays, seed = arrays_and_seed
        digest = hashlib.blake2b(repr(seed).encode())
        for a in arrays:
            digest.update(repr((a.shape, a.dtype.str)).encode())
            digest.update(np.ascontiguousarray(a).tobytes())
        key = digest.hexdigest()
        if key not in fitted:
            fitted[key] = fit(*arrays, seed)
        return fitted[key].copy()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tree, "_tuned_forecast", once)
        yield


@pytest.fixture
def full_disk_under(monkeypatch):
    """``full_disk_under(folder)``: torch's writer fails under ``folder`` as it does on a full
    disk -- the very RuntimeError (not OSError) it raises writing to /dev/full, a device
    that is always full; elsewhere it writes."""
    save = torch.save

    def under(folder: Path) -> None:
        def into_a_full_disk(obj, path, *args, **kwargs):
            if str(path).startswith(str(folder)):
                return save(obj, "/dev/full", *args, **kwargs)  # raises RuntimeError
            return save(obj, path, *args, **kwargs)

        monkeypatch.setattr(torch, "save", into_a_full_disk)

    return under


@pytest.fixture(scope="session")
def hanoi():
    from wdn_explain.network import load_network

    return load_network("hanoi")


@pytest.fixture(scope="session")
def tiny_config():
    return parse_config(TINY)


@pytest.fixture(scope="session")
def waq_dir(tmp_path_factory, tiny_config):
    from wdn_explain.waq import generate_waq

    folder = tmp_path_factory.mktemp("waq")
    generate_waq(tiny_config, folder, n_workers=2)
    return folder


@pytest.fixture(scope="session")
def monitoring_dir(tmp_path_factory):
    from wdn_explain.waq import generate_waq

    folder = tmp_path_factory.mktemp("monitoring")
    generate_waq(parse_config(TINY_MONITORING), folder, n_workers=2)
    return folder


@pytest.fixture(scope="session")
def monitoring_model(tmp_path_factory, monitoring_dir):
    """A small model trained on the tiny monitoring design (seeded, about 10 s on one core)."""
    from wdn_explain.model import ModelConfig
    from wdn_explain.training import TrainConfig, train

    out = tmp_path_factory.mktemp("monitoring_model")
    card = train(
        monitoring_dir,
        out,
        model_config=ModelConfig(hidden_channels=16, num_layers=2),
        train_config=TrainConfig(epochs=60, batch_size=16, lr=1e-2, patience=60),
        device="cpu",
    )
    return out, card


def path_graph(
    n: int, *, seed: int = 0, features: int = 1, edge_features: int | None = 1, extra=()
):
    """A path 0-1-...-(n-1) with optional extra undirected edges, both directions."""
    pairs = [(i, i + 1) for i in range(n - 1)] + list(extra)
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    gen = torch.Generator().manual_seed(seed)
    data = Data(
        x=torch.randn(n, features, generator=gen, dtype=torch.float64),
        edge_index=torch.tensor([src, dst]),
    )
    if edge_features:
        data.edge_attr = torch.randn(len(src), edge_features, generator=gen, dtype=torch.float64)
    return data


@pytest.fixture
def small_graph():
    """10 nodes, a path with two chords: receptive fields overlap but differ."""
    return path_graph(10, seed=3, extra=[(0, 4), (5, 9)])


@pytest.fixture
def wdn_model():
    from wdn_explain.model import ChlorineGNN

    torch.manual_seed(0)
    return ChlorineGNN(num_layers=2, hidden_channels=8).double()


def brute_force_shapley(game, n: int) -> np.ndarray:
    """Shapley values of ``game`` (a function of a frozenset of players 0..n-1) by plain
    enumeration of all 2^n coalitions and the Shapley weights: the tests' independent oracle."""
    values = {
        frozenset(c): game(frozenset(c))
        for k in range(n + 1)
        for c in itertools.combinations(range(n), k)
    }
    shapley = np.zeros(n)
    for i in range(n):
        for coalition, value in values.items():
            if i not in coalition:
                k = len(coalition)
                weight = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
                shapley[i] += weight * (values[coalition | {i}] - value)
    return shapley


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, waq_dir):
    """A small model trained for two epochs on the tiny WAQ folder."""
    from wdn_explain.model import ModelConfig
    from wdn_explain.training import TrainConfig, train

    out = tmp_path_factory.mktemp("tiny_model")
    train(
        waq_dir,
        out,
        model_config=ModelConfig(hidden_channels=8, num_layers=2),
        train_config=TrainConfig(epochs=2, batch_size=16),
        device="cpu",
    )
    return out


def damaged_without_hash(tiny_model_dir: Path, out: Path) -> Path:
    """The model with its readout scaled 100-fold and no weight hash in its card (as the
    shipped waq-paper card): nothing at load can tell."""
    shutil.copytree(tiny_model_dir, out)
    state = torch.load(out / "model.pt", weights_only=True)
    head = [k for k in state if k.endswith("weight")][-1]
    state[head] = state[head] * 100
    torch.save(state, out / "model.pt")
    card = json.loads((out / "card.json").read_text())
    del card["weights_sha256"]
    (out / "card.json").write_text(json.dumps(card))
    return out


def inp_table(path: Path, section: str) -> dict[str, list[str]]:
    """The rows of one section of an .inp file by id, comments dropped: an oracle for what
    the network readers return."""
    rows, inside = {}, False
    for line in Path(path).read_text().splitlines():
        text = line.split(";")[0].strip()
        if text.startswith("["):
            inside = text.upper() == f"[{section}]"
        elif inside and text:
            fields = text.split()
            rows[fields[0]] = fields[1:]
    return rows


def widget(at, kind: str, name: str):
    """The app's ``kind`` widget keyed ``name``, or ``name@...`` where the app keys it by
    the model or scenario shown (see ``keyed`` in app/main.py)."""
    return next(w for w in getattr(at, kind) if (w.key or "").partition("@")[0] == name)


def chart_figures(at) -> dict[str, dict]:
    """Every chart of an AppTest run, in page order, by its key: the Plotly figure (JSON)
    that the app's chart component (``app/live_chart.py``) was handed."""
    figures = {}
    for element in at.get("component_instance"):
        args = json.loads(element.proto.json_args)
        figures[args["key"]] = json.loads(args["spec"])
    return figures


def markdown_tables(at) -> list[list[dict[str, str]]]:
    """Every Markdown table of an AppTest run (the drivers and at-risk tables), in page order:
    its rows as {header: cell text}, read from the lines starting with "|"."""
    tables = []
    for element in at.markdown:
        lines = [line for line in element.value.splitlines() if line.startswith("|")]
        if len(lines) < 3:
            continue
        cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
        tables.append([dict(zip(cells[0], row)) for row in cells[2:]])
    return tables
