import numpy as np
import pytest

from wdn_explain.errors import ConfigError
from wdn_explain.network import load_network


def test_hanoi_has_published_size(hanoi):
    assert hanoi.n_nodes == 32
    assert hanoi.n_links == 34
    assert hanoi.reservoirs == ("1",)
    assert hanoi.node_roles.count("junction") == 31
    assert hanoi.coordinates.shape == (32, 2)


def test_edge_index_holds_both_directions(hanoi):
    ei = hanoi.edge_index
    assert ei.shape == (2, 68)
    fwd, back = ei[:, :34], ei[:, 34:]
    assert (fwd.flip(0) == back).all()
    assert {tuple(p) for p in hanoi.link_nodes.tolist()} == {tuple(p) for p in fwd.T.tolist()}


def test_load_by_path_equals_builtin(hanoi):
    other = load_network(hanoi.inp_path)
    assert other.node_ids == hanoi.node_ids
    np.testing.assert_array_equal(other.link_nodes, hanoi.link_nodes)


def test_geodataframes(hanoi):
    nodes, links = hanoi.geodataframes()
    assert len(nodes) == 32 and len(links) == 34
    assert nodes.geometry.geom_type.eq("Point").all()
    assert links.geometry.geom_type.eq("LineString").all()


def test_networkx_view_is_connected(hanoi):
    import networkx as nx

    assert nx.is_connected(hanoi.to_networkx())


@pytest.mark.parametrize(
    ("name", "match"),
    [("atlantis", "unknown network 'atlantis'"), ("missing.inp", "does not exist")],
)
def test_bad_network_names(name, match):
    with pytest.raises(ConfigError, match=match):
        load_network(name)


def test_unreadable_inp(tmp_path):
    bad = tmp_path / "bad.inp"
    bad.write_text("[JUNCTIONS]\n this is not epanet\n")
    with pytest.raises(ConfigError, match="cannot read network file"):
        load_network(bad)


def test_unknown_node_is_named(hanoi):
    with pytest.raises(ConfigError, match="node '99' is not in network 'hanoi'"):
        hanoi.node_index("99")


@pytest.mark.parametrize(
    ("name", "n_nodes", "n_links"),
    [("net1", 11, 13), ("NET1", 11, 13), ("ky1", 859, 985)],
)
def test_every_epyt_network_by_name(name, n_nodes, n_links):
    """Each network shipped in epyt loads by its lower-case file stem; sizes counted from the
    .inp's own [JUNCTIONS]/[RESERVOIRS]/[TANKS] and [PIPES]/[PUMPS]/[VALVES] sections."""
    net = load_network(name)
    sections: dict[str, int] = {}
    current = None
    for line in net.inp_path.read_text(errors="replace").splitlines():
        line = line.split(";")[0].strip()
        if line.startswith("["):
            current = line.upper()
        elif line and current:
            sections[current] = sections.get(current, 0) + 1
    nodes = sum(sections.get(s, 0) for s in ("[JUNCTIONS]", "[RESERVOIRS]", "[TANKS]"))
    links = sum(sections.get(s, 0) for s in ("[PIPES]", "[PUMPS]", "[VALVES]"))
    assert (net.n_nodes, net.n_links) == (nodes, links) == (n_nodes, n_links)
    assert net.name == name.lower()
