"""The network snapshot: a network read once is read again without EPyT-Flow and WNTR, equal
to a fresh read, and never served for another file content or from a damaged file; the
snapshots the package ships are current and equal to a fresh read."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from wdn_explain import network_snapshot
from wdn_explain.network import builtin_networks, load_network, resolve_network_path
from wdn_explain.network_snapshot import readers, snapshot_name, snapshot_path
from wdn_explain.shipped import SHIPPED_ROOT

SHIPPED = network_snapshot.SHIPPED

FIELDS = ("node_ids", "node_roles", "link_ids", "link_types")
ARRAYS = ("link_nodes", "coordinates")
PROPERTIES = (
    "node_elevation_m",
    "node_base_demand_lps",
    "link_diameter_mm",
    "link_length_m",
    "node_initial_quality_mg_l",
)


def _without_shipped(monkeypatch, folder) -> None:
    """Snapshots read from the user cache (``folder``) only, not from the package."""
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(folder))
    monkeypatch.setattr(network_snapshot, "SHIPPED", folder / "no-shipped-snapshots")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    _without_shipped(monkeypatch, folder)
    return folder


@pytest.fixture(scope="module")
def hanoi(tmp_path_factory):
    """Hanoi read from its .inp by EPyT-Flow and WNTR (no snapshot anywhere): the oracle."""
    with pytest.MonkeyPatch.context() as patch:
        _without_shipped(patch, tmp_path_factory.mktemp("fresh-read"))
        network = load_network("hanoi")
        assert "properties" not in network.__dict__
        _ = network.properties
    return network


def _same(a, b) -> None:
    for name in FIELDS:
        assert getattr(a, name) == getattr(b, name), name
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in PROPERTIES:
        np.testing.assert_array_equal(
            getattr(a.properties, name), getattr(b.properties, name), err_msg=name
        )


def test_a_second_process_reads_the_network_without_epyt_flow_or_wntr(cache, hanoi):
    """Once Hanoi's properties are read, another process gets the same tables and properties
    (compared with the session's own read, made before any snapshot) with neither EPyT-Flow
    nor WNTR imported: what the app's first page after a server start waited for."""
    first = load_network("hanoi")
    _ = first.properties  # read by WNTR: the snapshot is written now
    assert snapshot_path(first.file_sha256).is_file()
    child = (
        "import json, sys; from wdn_explain.network import load_network\n"
        "n = load_network('hanoi'); p = n.properties\n"
        "print(json.dumps({'imported': sorted(m for m in ('epyt', 'epyt_flow', 'wntr') "
        "if m in sys.modules), 'nodes': list(n.node_ids), 'links': n.link_nodes.tolist(), "
        "'elevation': p.node_elevation_m.tolist(), 'length': p.link_length_m.tolist()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=os.environ, check=True
    )
    read = json.loads(done.stdout)
    assert read["imported"] == []
    assert read["nodes"] == list(hanoi.node_ids)
    assert read["links"] == hanoi.link_nodes.tolist()
    assert read["elevation"] == pytest.approx(hanoi.properties.node_elevation_m.tolist())
    assert read["length"] == pytest.approx(hanoi.properties.link_length_m.tolist())


def test_the_snapshot_equals_a_fresh_read(cache, hanoi):
    first = load_network("hanoi")
    _ = first.properties
    kept = load_network("hanoi")
    assert "properties" in kept.__dict__  # came with the snapshot, WNTR not asked
    _same(kept, hanoi)


def test_changed_content_is_read_again(cache, tmp_path, hanoi):
    """A copy of Hanoi read once, then a pipe made longer in the file: the new length is
    served, not the snapshot of the old content; the name follows the file, not the content."""
    path = tmp_path / "mine.inp"
    text = hanoi.inp_path.read_text()
    path.write_text(text)
    before = load_network(path)
    assert before.name == "mine"
    k = 0
    old = before.properties.link_length_m[k]
    link = before.link_ids[k]
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.strip().startswith("[PIPES]")))
    for i in range(start + 1, len(lines)):
        fields = lines[i].split()
        if fields and fields[0] == link:
            fields[3] = str(float(fields[3]) + 250)
            lines[i] = "  ".join(fields)
            break
    path.write_text("\n".join(lines) + "\n")
    after = load_network(path)
    assert after.properties.link_length_m[k] == pytest.approx(old + 250)
    renamed = tmp_path / "other.inp"
    renamed.write_text(path.read_text())
    assert load_network(renamed).name == "other"


@pytest.mark.parametrize("damage", [b"", b"not a zip file", b"PK\x03\x04 cut short"])
def test_a_damaged_snapshot_is_read_again(cache, hanoi, damage):
    first = load_network("hanoi")
    _ = first.properties
    snapshot_path(first.file_sha256).write_bytes(damage)
    again = load_network("hanoi")
    assert "properties" not in again.__dict__  # read from the .inp, not the damaged file
    _same(again, hanoi)  # and the snapshot written anew on the way
    assert "properties" in load_network("hanoi").__dict__


def test_a_cache_that_is_not_private_is_left_alone(cache, hanoi):
    """A cache folder others may write is never read from or written to; the network is
    read from the .inp."""
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)
    net = load_network("hanoi")
    _same(net, hanoi)
    assert not (cache / "networks").exists() or not any((cache / "networks").iterdir())


def _shipped_model_networks() -> list[str]:
    """The built-in networks of the shipped models, from their cards' JSON."""
    names = set()
    for card in (SHIPPED_ROOT / "models").glob("*/card.json"):
        data = json.loads(card.read_text(encoding="utf-8")).get("data") or {}
        names.add((data.get("network") or {}).get("name"))
    return sorted(names & set(builtin_networks()))


def test_the_package_ships_a_current_snapshot_of_each_shipped_models_network(tmp_path):
    """Named for today's readers and code, exactly one per network, each equal to the network
    read from its .inp; made again by `python scripts/network_snapshots.py`."""
    shipped = sorted(SHIPPED.glob("*.npz"))
    networks = _shipped_model_networks()
    assert "hanoi" in networks and len(shipped) == len(networks)
    with np.load(shipped[0], allow_pickle=False) as arrays:
        made_with = str(arrays["readers"])
    if made_with != readers():
        pytest.skip(f"the shipped snapshots serve {made_with}, not the installed {readers()}")
    for name in networks:
        digest = hashlib.sha256(resolve_network_path(name).read_bytes()).hexdigest()
        path = SHIPPED / snapshot_name(digest)
        assert path.is_file(), f"{name}: not current, run python scripts/network_snapshots.py"
        with pytest.MonkeyPatch.context() as patch:
            _without_shipped(patch, tmp_path / name)
            read = load_network(name)
            patch.setattr(network_snapshot, "SHIPPED", path.parent)
            patch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / f"{name}-empty"))
            kept = load_network(name)
        assert "properties" in kept.__dict__  # came with the package's snapshot
        _same(kept, read)


def test_a_machines_first_read_of_hanoi_needs_neither_epyt_flow_nor_wntr(tmp_path, hanoi):
    """An empty user cache (a machine's very first app page): Hanoi comes from the package's
    snapshot, equal to the .inp's, with neither reader imported."""
    child = (
        "import json, sys; from wdn_explain.network import load_network\n"
        "n = load_network('hanoi'); p = n.properties\n"
        "print(json.dumps({'imported': sorted(m for m in ('epyt', 'epyt_flow', 'wntr') "
        "if m in sys.modules), 'nodes': list(n.node_ids), 'links': n.link_nodes.tolist(), "
        "'demand': p.node_base_demand_lps.tolist(), 'diameter': p.link_diameter_mm.tolist()}))"
    )
    env = {**os.environ, "WDN_EXPLAIN_CACHE": str(tmp_path / "empty")}
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=env, check=True
    )
    read = json.loads(done.stdout)
    assert read["imported"] == []
    assert read["nodes"] == list(hanoi.node_ids)
    assert read["links"] == hanoi.link_nodes.tolist()
    assert read["demand"] == pytest.approx(
        hanoi.properties.node_base_demand_lps.tolist(), nan_ok=True
    )
    assert read["diameter"] == pytest.approx(hanoi.properties.link_diameter_mm.tolist())


def test_a_damaged_shipped_snapshot_is_passed_over(tmp_path, monkeypatch, hanoi):
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(network_snapshot, "SHIPPED", tmp_path)
    (tmp_path / snapshot_name(hanoi.file_sha256)).write_bytes(b"PK\x03\x04 cut short")
    again = load_network("hanoi")
    assert "properties" not in again.__dict__  # read from the .inp
    _same(again, hanoi)
