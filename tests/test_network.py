import numpy as np
import pytest

from wdn_explain.errors import ConfigError
from wdn_explain.network import load_network

from conftest import inp_table


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


def test_properties_are_the_inp_values_in_si(hanoi):
    """Hanoi's .inp is in LPS (demand L/s, diameter mm, length m, elevation m): the
    properties equal its numbers as written; the reservoir's elevation is its head."""
    props = hanoi.properties
    junctions = inp_table(hanoi.inp_path, "JUNCTIONS")
    reservoirs = inp_table(hanoi.inp_path, "RESERVOIRS")
    pipes = inp_table(hanoi.inp_path, "PIPES")
    for i, node in enumerate(hanoi.node_ids):
        if node in junctions:
            elevation, demand = map(float, junctions[node][:2])
            assert props.node_base_demand_lps[i] == pytest.approx(demand)
        else:
            elevation = float(reservoirs[node][0])
            assert np.isnan(props.node_base_demand_lps[i])
        assert props.node_elevation_m[i] == pytest.approx(elevation)
    for k, link in enumerate(hanoi.link_ids):
        length, diameter = map(float, pipes[link][2:4])
        assert props.link_length_m[k] == pytest.approx(length)
        assert props.link_diameter_mm[k] == pytest.approx(diameter)


def test_initial_quality_is_the_inp_quality_section(tmp_path, hanoi):
    """The [QUALITY] values written into a copy of Hanoi come back per node in mg/L, 0 for
    the nodes the section does not name (WNTR reads them in kg/m3)."""
    text = hanoi.inp_path.read_text().replace("[QUALITY]", "[QUALITY]\n 5  0.8\n 12  1.25", 1)
    assert text != hanoi.inp_path.read_text()
    path = tmp_path / "hanoi_quality.inp"
    path.write_text(text)
    quality = load_network(path).properties.node_initial_quality_mg_l
    expected = {"5": 0.8, "12": 1.25}
    for i, node in enumerate(hanoi.node_ids):
        assert quality[i] == pytest.approx(expected.get(node, 0.0))


def test_initial_quality_of_a_chlorine_network_is_in_mg_l():
    """Net1 simulates chlorine in mg/L: its [QUALITY] numbers as written (WNTR's kg/m3 back)."""
    net1 = load_network("net1")
    written = inp_table(net1.inp_path, "QUALITY")
    assert written
    for i, node in enumerate(net1.node_ids):
        value = float(written[node][0]) if node in written else 0.0
        assert net1.properties.node_initial_quality_mg_l[i] == pytest.approx(value)


def test_properties_convert_us_units():
    """Net3 is in GPM with feet and inches: converted to m, mm and L/s."""
    net3 = load_network("net3")
    pipes = inp_table(net3.inp_path, "PIPES")
    k = net3.link_ids.index("20")
    length_ft, diameter_in = map(float, pipes["20"][2:4])
    assert net3.properties.link_length_m[k] == pytest.approx(length_ft * 0.3048)
    assert net3.properties.link_diameter_mm[k] == pytest.approx(diameter_in * 25.4)
    demands = inp_table(net3.inp_path, "JUNCTIONS")
    node = next(n for n, f in demands.items() if len(f) > 1 and float(f[1]) > 0)
    gpm = float(demands[node][1])
    i = net3.node_ids.index(node)
    assert net3.properties.node_base_demand_lps[i] == pytest.approx(gpm * 3.785411784 / 60)
