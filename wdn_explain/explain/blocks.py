"""Möbius interactions held as hypercube blocks, and their conversion to any index.

The MIs of a graph game are a sum of blocks: block b lives on the power set of a small
sorted node list (a receptive field) and holds 2**k values. Node games give one block per
distinct field (:class:`NodeGameSum`; their sum is the graph game's MIs); the masked path
gives one block per maximal field, each MI owned by exactly one block; the game of one
target node is one block on its own field (:class:`TargetGames`). Both are exact inputs to the linear conversions
of :mod:`.indices`, done per block by a superset-sum transform (k * 2**k work).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ExplainError
from .hypercube import (
    global_keys,
    keys_to_members,
    masks_of_size,
    moebius_transform,
    popcounts,
    superset_sum,
    unique_keys,
)
from .indices import check_index, weights

if TYPE_CHECKING:
    from shapiq import InteractionValues


def preload_shapiq() -> None:
    """Import shapiq (about a second: scipy, numba) in a daemon thread, once per process, so
    that the first :meth:`MoebiusBlocks.interaction_values` call does not wait for it; the
    explainer calls this when it starts, the app's warm-up after the first page."""
    global _preloading
    if _preloading is None:
        _preloading = threading.Thread(target=_import_shapiq, name="preload-shapiq", daemon=True)
        _preloading.start()


def _import_shapiq() -> None:
    import shapiq  # noqa: F401


_preloading: threading.Thread | None = None


@dataclass
class MoebiusBlocks:
    """MIs as blocks grouped by size: ``groups[k] = (nodes (B, k), mi (B, 2**k))``.

    Attributes:
        n_players: Number of players (graph nodes).
        groups: Blocks by field size; ``mi[b, mask]`` is the MI of the set of
            ``nodes[b, bits of mask]`` carried by block b.
        constant: Added to m(∅) (e.g. the readout bias).
    """

    n_players: int
    groups: dict[int, tuple[np.ndarray, np.ndarray]]
    constant: float = 0.0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def max_size(self) -> int:
        return max(self.groups, default=0)

    def total(self) -> float:
        """Sum of all MIs = nu(N) (efficiency)."""
        return float(sum(mi.sum() for _, mi in self.groups.values()) + self.constant)

    def empty_value(self) -> float:
        """m(∅) = nu(∅)."""
        return float(sum(mi[:, 0].sum() for _, mi in self.groups.values()) + self.constant)

    def held(self, nodes: np.ndarray | list[int]) -> MoebiusBlocks:
        """The MIs of the game in which ``nodes`` are always present (held at their observed
        features) and the others play: m'(S) = sum over R subset of ``nodes`` of m(S ∪ R)
        (every MI folded onto its part outside ``nodes``). Same players; the held nodes
        become dummies (value 0 in every index). The game explained by ``players=`` with
        ``hold="observed"``, from MIs over every node (for instance ``local``'s)."""
        groups, constant = dict(self.groups), self.constant
        for h in np.unique(np.asarray(nodes, dtype=np.int64)):
            folded: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
            for k, (members, mi) in groups.items():
                where = members == h
                has = where.any(axis=1)
                folded.setdefault(k, []).append((members[~has], mi[~has]))
                position = where.argmax(axis=1)
                for p in np.unique(position[has]):
                    rows = has & (position == p)
                    # bit p of the local mask is node h: add its half onto the other half
                    mi_p = mi[rows].reshape(-1, 2 ** (k - 1 - p), 2, 2**p).sum(axis=2)
                    folded.setdefault(k - 1, []).append(
                        (np.delete(members[rows], p, axis=1), mi_p.reshape(-1, 2 ** (k - 1)))
                    )
            empty = folded.pop(0, [])
            constant += float(sum(mi.sum() for _, mi in empty))
            groups = {
                k: (np.concatenate([m for m, _ in parts]), np.concatenate([v for _, v in parts]))
                for k, parts in sorted(folded.items())
                if sum(len(m) for m, _ in parts)
            }
        return MoebiusBlocks(self.n_players, groups, constant)

    def moebius(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct MI sets as key rows (see :func:`.hypercube.global_keys`) and their MIs."""
        if "moebius" not in self._cache:
            keys = np.concatenate([global_keys(n, self.n_players) for n, _ in self.groups.values()])
            values = np.concatenate([mi.ravel() for _, mi in self.groups.values()])
            uniq, _, inverse = unique_keys(keys)
            summed = np.bincount(inverse, weights=values, minlength=len(uniq))
            summed[0] += self.constant  # the empty set has key 0, which sorts first
            self._cache["moebius"] = (uniq, summed)
        return self._cache["moebius"]

    def index_values(
        self, index: str, order: int | None = None, size: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """Values of ``index`` at ``order`` for all explained sets of ``size`` players.

        The validated path used by timelines, plots and the CLI (see
        :func:`.indices.check_index`: SV and BV need no order).

        Returns:
            (members (m, size) sorted node ids, values (m,)), both fresh arrays.

        Raises:
            ExplainError: unknown index, bad order, or ``size`` outside 0..order.
        """
        base, order = check_index(index, order, self.max_size)
        if (
            isinstance(size, bool)
            or not isinstance(size, int | np.integer)
            or not 0 <= size <= order
        ):
            raise ExplainError(
                f"set size must be an integer in 0..{order} for {index} of order {order} "
                f"(got {size!r})"
            )
        key = ("of size", base, order, int(size))  # an app redraws a step several times
        if key not in self._cache:
            self._cache[key] = self._index_of_size(base, order, int(size))
        members, values = self._cache[key]
        return members.copy(), values.copy()

    def _index_of_size(self, index: str, order: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`index_values` of a validated base index and order."""
        if size == 0 and index == "k-SII":
            # shapiq's convention: k-SII puts nu(∅) on the empty set, the others their formula
            return np.zeros((1, 0), dtype=np.int64), np.array([self.empty_value()])
        w = weights(index, order, max(self.max_size, order))
        sets, vals = [], []
        for k, (nodes, mi) in self.groups.items():
            if k < size:
                continue
            scaled = mi * w[popcounts(k), size][None, :]
            superset_sum(scaled)
            masks, positions = masks_of_size(k, size)
            vals.append(scaled[:, masks].ravel())
            sets.append(nodes[:, positions].reshape(len(nodes) * len(masks), size))
        if not sets:
            return np.zeros((0, size), dtype=np.int64), np.zeros(0)
        sets_all, vals_all = np.concatenate(sets), np.concatenate(vals)
        if size == 0:
            return np.zeros((1, 0), dtype=np.int64), np.array([vals_all.sum() + self.constant])
        if self.n_players**size < 2**62:  # one integer per set: a fast 1-D unique
            codes = sets_all @ (self.n_players ** np.arange(size, dtype=np.int64))
            _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
            uniq = sets_all[first]
        else:
            uniq, inverse = np.unique(sets_all, axis=0, return_inverse=True)
        return uniq, np.bincount(inverse.ravel(), weights=vals_all, minlength=len(uniq))

    def interaction_values(
        self,
        index: str = "k-SII",
        order: int | None = None,
        *,
        estimation_budget: int | None = None,
    ) -> InteractionValues:
        """``index`` of order ``order`` as shapiq ``InteractionValues`` (the caller's own copy).

        ``index`` is one of SV, SII, k-SII, STII, FSII, BV, BII, FBII or Moebius (all MIs);
        SV and BV need no order, the others default to order 2. ``estimation_budget``
        (model calls) marks the values as estimated (a budget-limited approximation).
        """
        from shapiq import InteractionValues  # imported here: loading it takes seconds

        base, order = check_index(index, order, self.max_size)
        key = (index, order)
        if key not in self._cache:
            self._cache[key] = self._index_table(index, base, order)
        label, max_order, lookup, values, baseline = self._cache[key]
        return InteractionValues(
            values=values.copy(),
            index=label,
            max_order=max_order,
            min_order=0,
            n_players=self.n_players,
            interaction_lookup=dict(lookup),
            estimated=estimation_budget is not None,
            estimation_budget=estimation_budget,
            baseline_value=baseline,
        )

    def _index_table(self, index: str, base: str, order: int) -> tuple:
        """(shapiq index label, max order, lookup, values, baseline value) of a valid index."""
        if base == "Moebius":
            keys, values = self.moebius()
            rows, cols = keys_to_members(keys)
            sizes = np.bincount(rows, minlength=len(keys))
            members = np.split(cols, np.cumsum(sizes)[:-1])
            kept = np.flatnonzero(sizes <= order)
            lookup = {tuple(members[i].tolist()): j for j, i in enumerate(kept)}
            return "Moebius", max(order, 1), lookup, values[kept], float(values[0])
        lookup, values = {}, []
        for size in range(order + 1):
            members, vals = self._index_of_size(base, order, size)
            for m, v in zip(members.tolist(), vals.tolist()):
                lookup[tuple(m)] = len(values)
                values.append(v)
        label = index if index in ("SV", "BV") else base
        baseline = float(values[0]) if base == "FBII" else self.empty_value()
        return label, order, lookup, np.array(values), baseline


class NodeGameSum:
    """Node games summed per distinct field in float64, written range by range.

    Node j's game on its field's local masks ``lo..hi`` is added with :meth:`add` (nodes
    with identical fields share one row); :meth:`blocks` transforms the rows in place into
    the graph game's MIs. Holds exactly the result: 8 bytes per mask of every distinct field.
    """

    def __init__(self, n_players: int, fields: list[np.ndarray]) -> None:
        rows: dict[tuple[int, ...], int] = {}
        by_size: dict[int, list[tuple[int, ...]]] = {}
        self.n_players = n_players
        self._where: list[tuple[int, int]] = []
        for f in fields:
            key = tuple(f.tolist())
            if key not in rows:
                rows[key] = len(by_size.setdefault(len(key), []))
                by_size[len(key)].append(key)
            self._where.append((len(key), rows[key]))
        self._nodes = {
            k: np.array(keys, dtype=np.int64).reshape(len(keys), k)
            for k, keys in sorted(by_size.items())
        }
        self._tables: dict[int, np.ndarray] = {}

    @staticmethod
    def result_bytes(fields: list[np.ndarray]) -> int:
        """Bytes the sum of node games over ``fields`` will hold."""
        return 8 * sum(2 ** len(f) for f in {tuple(f.tolist()) for f in fields})

    def add(self, node: int, lo: int, hi: int, values: np.ndarray) -> None:
        """Add node ``node``'s game values on local masks ``lo..hi``."""
        k, row = self._where[node]
        if k not in self._tables:
            self._tables[k] = np.zeros((len(self._nodes[k]), 2**k))
        self._tables[k][row, lo:hi] += values

    def blocks(self, constant: float) -> MoebiusBlocks:
        """The MIs (Möbius transform of every row, in place) as :class:`MoebiusBlocks`."""
        groups = {}
        for k, nodes in self._nodes.items():
            table = self._tables.pop(k, None)
            table = np.zeros((len(nodes), 2**k)) if table is None else table
            groups[k] = (nodes, moebius_transform(table))
        return MoebiusBlocks(self.n_players, groups, constant)


class TargetGames:
    """The games of target nodes, one float64 row each, written range by range.

    Target v's game on its field's local masks ``lo..hi`` is written with :meth:`add` (other
    nodes are ignored); :meth:`blocks` turns each row into that target's MIs: one block on
    its field, over all ``n_players`` (every node outside the field is a dummy).
    """

    def __init__(self, n_players: int, targets: tuple[int, ...], fields: list[np.ndarray]):
        self.n_players = n_players
        self._fields = {v: fields[v] for v in targets}
        self._tables = {v: np.zeros(2 ** len(fields[v])) for v in targets}

    @staticmethod
    def result_bytes(targets: tuple[int, ...], fields: list[np.ndarray]) -> int:
        """Bytes the games of ``targets`` will hold."""
        return 8 * sum(2 ** len(fields[v]) for v in set(targets))

    def add(self, node: int, lo: int, hi: int, values: np.ndarray) -> None:
        """Write node ``node``'s game values on local masks ``lo..hi`` (if it is a target)."""
        if node in self._tables:
            self._tables[node][lo:hi] = values

    def blocks(self, constant: float) -> dict[int, MoebiusBlocks]:
        """The MIs of every target (Möbius transform of its row, in place)."""
        return {
            v: MoebiusBlocks(
                self.n_players,
                {len(field): (field[None, :], moebius_transform(self._tables[v][None, :]))},
                constant,
            )
            for v, field in self._fields.items()
        }
