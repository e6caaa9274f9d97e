"""Water networks: node and pipe tables, PyG connectivity and GIS frames.

A :class:`Network` is read from an EPANET .inp file, either by name (``hanoi``, read from
the copy that ships inside the ``epyt`` package, so nothing is downloaded) or by path.
Edges are stored in both directions: edge ``e < n_links`` runs from a link's start node to
its end node (the direction EPANET counts as positive flow), edge ``e + n_links`` runs back.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import ConfigError, DataError

if TYPE_CHECKING:
    import geopandas
    import torch


def builtin_root() -> Path:
    """The folder of the networks that ship inside the ``epyt`` package (found without
    importing it: ``import epyt`` takes 1-2 s)."""
    from importlib.util import find_spec

    spec = find_spec("epyt")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the 'epyt' package, whose networks wdn-explain reads, is not installed")
    return Path(spec.submodule_search_locations[0]) / "networks"


def builtin_networks() -> dict[str, Path]:
    """Every network that ships inside the ``epyt`` package, by the name users type: the
    file stem in lower case (``hanoi``, ``net1``, ``net3``, ``ky8``, ``l-town``, ...)."""
    return {p.stem.lower(): p for p in sorted(builtin_root().rglob("*.inp"))}


def builtin_network_path(name: str) -> Path:
    """Return the path of a network that ships inside ``epyt`` (e.g. ``hanoi``)."""
    known = builtin_networks()
    key = name.lower()
    if key not in known:
        raise ConfigError(
            f"unknown network '{name}' (built-in: {', '.join(known)}; "
            "or give the path of an EPANET .inp file)"
        )
    return known[key]


def resolve_network_path(network: str | Path) -> Path:
    """Return the .inp path of a built-in network name or an existing .inp path."""
    text = str(network)
    path = Path(text)
    if path.suffix.lower() != ".inp":
        return builtin_network_path(text)  # raises with the list of known names
    if not path.is_file():
        raise ConfigError(f"network file '{path}' does not exist")
    return path


@dataclass(frozen=True)
class NetworkProperties:
    """What the .inp says about each node and link, in SI units (NaN where a kind has no
    such property: a pump's length, a tank's demand).

    Attributes:
        node_elevation_m: Junction and tank elevation, a reservoir's head, in m, (n_nodes,).
        node_base_demand_lps: Junction base demand in L/s (of its first demand), (n_nodes,).
        link_diameter_mm: Pipe and valve diameter in mm, shape (n_links,).
        link_length_m: Pipe length in m, shape (n_links,).
        node_initial_quality_mg_l: The ``[QUALITY]`` section's initial concentration in mg/L
            (WNTR converts a chemical's to kg/m3; with no quality option the values are kept as
            written), 0 where it names no value, (n_nodes,).
    """

    node_elevation_m: np.ndarray
    node_base_demand_lps: np.ndarray
    link_diameter_mm: np.ndarray
    link_length_m: np.ndarray
    node_initial_quality_mg_l: np.ndarray


KAMADA_KAWAI_MAX_NODES = 300  # larger networks get the (faster) seeded spring layout


@dataclass(frozen=True)
class Network:
    """A water distribution network as the rest of the pipeline needs it.

    Attributes:
        name: Network name (file stem for a path, lower case).
        inp_path: The EPANET .inp file it was read from.
        node_ids: EPANET node ids, in EPANET order, shape (n_nodes,).
        node_roles: ``junction``, ``reservoir`` or ``tank`` per node.
        link_ids: EPANET link ids, shape (n_links,).
        link_nodes: Start and end node index per link, shape (n_links, 2).
        link_types: ``pipe``, ``pump`` or ``valve`` per link.
        coordinates: Node map coordinates (x, y) in the .inp's units, shape (n_nodes, 2);
            NaN for a node the .inp gives no coordinates (see :attr:`map_coordinates`).
    """

    name: str
    inp_path: Path
    node_ids: tuple[str, ...]
    node_roles: tuple[str, ...]
    link_ids: tuple[str, ...]
    link_nodes: np.ndarray
    link_types: tuple[str, ...]
    coordinates: np.ndarray
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(self.node_ids)})

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_links(self) -> int:
        return len(self.link_ids)

    @property
    def reservoirs(self) -> tuple[str, ...]:
        """Ids of the reservoir nodes."""
        return tuple(n for n, r in zip(self.node_ids, self.node_roles) if r == "reservoir")

    @property
    def junctions(self) -> tuple[str, ...]:
        """Ids of the junction nodes (where a booster may inject)."""
        return tuple(n for n, r in zip(self.node_ids, self.node_roles) if r == "junction")

    @property
    def consumers(self) -> np.ndarray:
        """Which nodes are customer nodes (junctions), shape (n_nodes,) bool: where the
        minimum residual applies. A reservoir is a source and a tank storage, not a tap: the
        compliance counts, the risk map and the at-risk table leave them out."""
        return np.array([r == "junction" for r in self.node_roles], dtype=bool)

    def node_index(self, node_id: str) -> int:
        """Return the position of ``node_id``; raise a ConfigError naming the network if unknown."""
        try:
            return self._index[str(node_id)]
        except KeyError:
            shown = ", ".join(self.node_ids[:40]) + (" ..." if self.n_nodes > 40 else "")
            raise ConfigError(
                f"node '{node_id}' is not in network '{self.name}' (nodes: {shown})"
            ) from None

    @cached_property
    def edge_index(self) -> torch.Tensor:
        """Directed edges, both directions per link, shape (2, 2 * n_links), dtype long
        (torch is imported here: reading a network and drawing it need numpy only)."""
        import torch

        fwd = torch.as_tensor(self.link_nodes.T, dtype=torch.long)
        return torch.cat([fwd, fwd.flip(0)], dim=1)

    @cached_property
    def file_sha256(self) -> str:
        """SHA-256 of the .inp file, recorded in manifests."""
        return hashlib.sha256(self.inp_path.read_bytes()).hexdigest()

    @property
    def has_coordinates(self) -> bool:
        """Whether the .inp places every node, and not all at one point."""
        xy = self.coordinates
        return bool(np.isfinite(xy).all() and np.ptp(xy, axis=0).max() > 0)

    @cached_property
    def map_coordinates(self) -> np.ndarray:
        """Where maps draw the nodes, shape (n_nodes, 2): the .inp's coordinates, or for a
        network without them (:attr:`has_coordinates`) a seeded networkx layout, computed
        once per network: Kamada-Kawai up to :data:`KAMADA_KAWAI_MAX_NODES` nodes, a spring
        layout beyond."""
        if self.has_coordinates:
            return self.coordinates
        import networkx as nx

        graph = self.to_networkx()
        if self.n_nodes <= KAMADA_KAWAI_MAX_NODES:
            pos = nx.kamada_kawai_layout(graph)
        else:
            pos = nx.spring_layout(graph, seed=0)
        return np.array([pos[n] for n in self.node_ids], dtype=float)

    @cached_property
    def unsupplied_nodes(self) -> tuple[str, ...]:
        """Nodes joined by no path of links to a reservoir or tank (a file cut short, a
        missing pipe): EPANET cannot give them a head."""
        import networkx as nx

        graph = self.to_networkx()
        sources = [n for n, r in zip(self.node_ids, self.node_roles) if r != "junction"]
        supplied = set().union(*(nx.node_connected_component(graph, s) for s in sources))
        return tuple(n for n in self.node_ids if n not in supplied)

    def check_connected(self) -> None:
        """ConfigError naming the nodes no reservoir or tank can supply (the simulator would
        run and store meaningless numbers for them)."""
        bad = self.unsupplied_nodes
        if bad:
            shown = ", ".join(bad[:20]) + (" ..." if len(bad) > 20 else "")
            raise ConfigError(
                f"network '{self.name}' ({self.inp_path}) has {len(bad)} of {self.n_nodes} "
                f"nodes connected to no reservoir or tank: {shown} (check its [PIPES], "
                "[PUMPS] and [VALVES] sections)"
            )

    @cached_property
    def properties(self) -> NetworkProperties:
        """Elevations, base demands, diameters, lengths and initial quality of the original
        .inp, read once by WNTR (which converts the file's units to SI) and kept with the
        network for the next process (:mod:`~wdn_explain.network_snapshot`)."""
        import pandas as pd
        import wntr

        wn = self.wntr_model()

        def per(names, *series: pd.Series) -> np.ndarray:
            return pd.concat(series).reindex(list(names)).to_numpy(dtype=float)

        properties = NetworkProperties(
            node_elevation_m=per(
                self.node_ids,
                wn.query_node_attribute("elevation"),
                wn.query_node_attribute("base_head", node_type=wntr.network.Reservoir),
            ),
            node_base_demand_lps=1000 * per(self.node_ids, wn.query_node_attribute("base_demand")),
            link_diameter_mm=1000 * per(self.link_ids, wn.query_link_attribute("diameter")),
            link_length_m=per(self.link_ids, wn.query_link_attribute("length")),
            node_initial_quality_mg_l=per(self.node_ids, wn.query_node_attribute("initial_quality"))
            * (1000 if wn.options.quality.parameter.upper() == "CHEMICAL" else 1),
        )
        _keep(self, properties)
        return properties

    @cached_property
    def link_volume_l(self) -> np.ndarray:
        """Each link's volume in litres from the .inp's diameter and length, 0 for a link
        without both (a pump, a valve: water passes at once), shape (n_links,)."""
        p = self.properties
        volume = np.pi * (p.link_diameter_mm / 2000) ** 2 * p.link_length_m * 1000
        return np.nan_to_num(volume, nan=0.0)

    def wntr_model(self):
        """WNTR's ``WaterNetworkModel`` of the original .inp (WNTR cannot read the files
        EPyT-Flow writes).

        Raises:
            ConfigError: in one line with WNTR's reason, for a file EPANET reads but WNTR
                does not (an option WNTR does not know, such as ``Quality Chemical TIME``).
        """
        import wntr

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return wntr.network.WaterNetworkModel(str(self.inp_path))
        except Exception as exc:  # WNTR's reader raises many types, the reason in the cause
            cause = exc.__cause__ or exc
            reason = " ".join(str(cause).split()) or type(cause).__name__
            raise ConfigError(
                f"network file '{self.inp_path}' cannot be read by WNTR, which reads its "
                f"properties and map: {reason}"
            ) from None

    def to_networkx(self):
        """Undirected networkx graph over node ids (link ids on the edges)."""
        import networkx as nx

        graph = nx.Graph(name=self.name)
        graph.add_nodes_from(self.node_ids)
        for link, (u, v) in zip(self.link_ids, self.link_nodes):
            graph.add_edge(self.node_ids[u], self.node_ids[v], link=link)
        return graph

    def geodataframes(self) -> tuple[geopandas.GeoDataFrame, geopandas.GeoDataFrame]:
        """Nodes and links as GeoDataFrames (WNTR's GIS export of the original .inp)."""
        import pandas as pd

        gis = self.wntr_model().to_gis()
        nodes = pd.concat([gis.junctions, gis.tanks, gis.reservoirs])
        links = pd.concat([gis.pipes, gis.pumps, gis.valves])
        return nodes, links


def _unplaced_to_nan(api) -> None:
    """Give every node the .inp does not place NaN coordinates (EPANET refuses to report
    the topology of a file without them)."""
    for node in range(1, api.getcount(0) + 1):  # 0: EN_NODECOUNT
        try:
            api.getcoord(node)
        except RuntimeError:
            api.setcoord(node, np.nan, np.nan)


@contextmanager
def scenario_simulator(inp_path: str | Path, **kwargs) -> Iterator:
    """EPyT-Flow's ``ScenarioSimulator`` of ``inp_path`` with EPANET's report file in a
    private temporary folder, removed afterwards (EPyT-Flow's default is one ``<random>.rpt``
    per process in the system temp folder, never deleted, whose name two processes may draw
    alike)."""
    from epyt_flow.simulation import ScenarioSimulator

    with tempfile.TemporaryDirectory(prefix="wdn-explain-epanet-") as folder:
        report = os.path.join(folder, "epanet.rpt")
        with ScenarioSimulator(f_inp_in=str(inp_path), rpt_file_out=report, **kwargs) as sim:
            yield sim


_EPANET_OPENS = r"""
import os, sys, tempfile
sys.path.insert(0, sys.argv[1])
import epanet
code, project = epanet.EN_createproject()
with tempfile.TemporaryDirectory() as folder:
    print(epanet.EN_open(project, sys.argv[2], os.path.join(folder, "epanet.rpt"), "")[0])
"""
"""What the child of :func:`check_epanet_opens` runs: EPANET's own reader on the file
(``python -I -S`` with only the folder of EPyT-Flow's ``epanet`` module on the path: no
site start-up, no package imports)."""
EPANET_CHECK_TIMEOUT_S = 120
_OPENS: set[str] = set()  # SHA-256 of the files EPANET has read in a child


def check_epanet_opens(path: str | Path) -> None:
    """Let EPANET read ``path`` in a child process before it reads it in this one: a file
    that crashes EPANET's reader (an over-long line, binary junk after a section header)
    kills the child, not the CLI or the app's server. The verdict is kept per file content
    for the life of the process; the networks that ship in ``epyt`` are not checked.

    Raises:
        ConfigError: in one line, when EPANET's reader crashes or hangs on the file.
    """
    import subprocess
    import sys

    import epanet

    path = Path(path)
    if path.resolve().is_relative_to(builtin_root().resolve()):
        return  # shipped with epyt
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest in _OPENS:
        return
    command = [sys.executable, "-I", "-S", "-c", _EPANET_OPENS]
    command += [str(Path(epanet.__file__).parent), str(path)]
    try:
        child = subprocess.run(command, capture_output=True, timeout=EPANET_CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"cannot read network file '{path}': EPANET's reader did not finish within "
            f"{EPANET_CHECK_TIMEOUT_S} s"
        ) from None
    if child.returncode < 0:
        import signal

        raise ConfigError(
            f"cannot read network file '{path}': it crashes EPANET's reader "
            f"({signal.Signals(-child.returncode).name}); look for an over-long line or "
            "binary content in it"
        )
    _OPENS.add(digest)  # EPANET's own errors (codes) are reported by the real read


def load_network(network: str | Path = "hanoi") -> Network:
    """Read a network by built-in name (``hanoi``) or from an EPANET .inp path (checked in
    a child process first: :func:`check_epanet_opens`), or from the snapshot an earlier read
    of the same content left in the user cache (:mod:`~wdn_explain.network_snapshot`).

    Raises:
        ConfigError: unknown name, missing file, or a file EPANET cannot read.
    """
    from .network_snapshot import read_snapshot

    path = resolve_network_path(network)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"cannot read network file '{path}' ({exc.strerror or exc})") from None
    name = path.stem.lower()
    kept = read_snapshot(digest, _TABLES + _PROPERTIES)
    if kept is not None:
        return _kept_network(kept, path, name, digest)
    read = _read_network(path, name)
    read.__dict__["file_sha256"] = digest  # the bytes just read (cached property)
    return read


_TABLES = ("node_ids", "node_roles", "link_ids", "link_nodes", "link_types", "coordinates")
_PROPERTIES = tuple(NetworkProperties.__dataclass_fields__)


def write_network_snapshot(network: str | Path, folder: Path) -> Path:
    """Read ``network`` (a built-in name or an .inp path) from its file, with EPyT-Flow and
    WNTR and no snapshot, and write its snapshot into ``folder``: how the package's own
    (:data:`~wdn_explain.network_snapshot.SHIPPED`) are made. The file written.

    Raises:
        ConfigError: as :func:`load_network`. DataError: the snapshot cannot be written.
    """
    path = resolve_network_path(network)
    read = _read_network(path, path.stem.lower())
    written = _keep(read, read.properties, folder)
    if written is None:
        raise DataError(f"cannot write the snapshot of '{network}' into '{folder}'")
    return written


def _keep(
    network: Network, properties: NetworkProperties, folder: Path | None = None
) -> Path | None:
    """Keep ``network`` with its ``properties`` (just read by WNTR) for the next process, in
    the user cache or ``folder``; the file written, or None."""
    from .network_snapshot import write_snapshot

    arrays = {name: np.asarray(getattr(network, name)) for name in _TABLES}
    arrays |= {name: getattr(properties, name) for name in _PROPERTIES}
    return write_snapshot(network.file_sha256, arrays, folder)


def _kept_network(arrays: dict[str, np.ndarray], path: Path, name: str, digest: str) -> Network:
    """The network ``name`` of ``path`` (content ``digest``) from what :func:`_keep` kept,
    its properties with it."""
    network = Network(
        name=name,
        inp_path=path,
        **{key: tuple(arrays[key].tolist()) for key in ("node_ids", "node_roles", "link_ids")},
        link_nodes=arrays["link_nodes"].astype(np.int64),
        link_types=tuple(arrays["link_types"].tolist()),
        coordinates=arrays["coordinates"].astype(float),
    )
    properties = NetworkProperties(**{key: arrays[key].astype(float) for key in _PROPERTIES})
    network.__dict__.update(properties=properties, file_sha256=digest)  # cached properties
    return network


def _read_network(path: Path, name: str) -> Network:
    """The network ``name`` of the .inp ``path`` as EPyT-Flow reads it."""
    check_epanet_opens(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with scenario_simulator(path, raise_exception_on_error=True) as sim:
                _unplaced_to_nan(sim.epanet_api)
                topo = sim.get_topology()
    except Exception as exc:  # EPANET reports unreadable files in many ways
        raise ConfigError(f"cannot read network file '{path}': {exc}") from exc
    node_ids = tuple(topo.get_all_nodes())
    roles = {n: "junction" for n in topo.get_all_junctions()}
    roles.update({n: "reservoir" for n in topo.get_all_reservoirs()})
    roles.update({n: "tank" for n in topo.get_all_tanks()})
    index = {n: i for i, n in enumerate(node_ids)}
    links = topo.get_all_links()
    pumps, valves = set(topo.get_all_pumps()), set(topo.get_all_valves())
    return Network(
        name=name,
        inp_path=path,
        node_ids=node_ids,
        node_roles=tuple(roles[n] for n in node_ids),
        link_ids=tuple(link for link, _ in links),
        link_nodes=np.array([[index[u], index[v]] for _, (u, v) in links], dtype=np.int64),
        link_types=tuple(
            "pump" if link in pumps else "valve" if link in valves else "pipe" for link, _ in links
        ),
        coordinates=np.array([topo.get_node_info(n)["coord"] for n in node_ids], dtype=float),
    )
