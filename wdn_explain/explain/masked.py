"""The masked-graph methods' work: the coalitions of the receptive fields' power sets
evaluated as batched masked graphs and their Möbius transforms per target (``masked``), and
the lambda-approximation that evaluates the small ones only (``approximate``, the paper's
Algorithm 3)."""

from __future__ import annotations

import numpy as np

from .blocks import MoebiusBlocks
from .game import GraphGame
from .hypercube import (
    global_keys,
    keys_to_members,
    moebius_transform,
    popcounts,
    set_key,
    unique_keys,
)
from .neighbourhoods import (
    approximation_calls,
    group_by_size,
    maximal_fields,
)
from .outcome import Outcome

MAX_MASKED_INTERACTIONS = 10_000_000  # default limit on |I| for the masked method (model calls)


def target_fields(game: GraphGame, fields: list[np.ndarray]) -> list[list[np.ndarray]]:
    """The receptive fields whose power sets hold each target's MIs: all fields for the
    graph, the target's own field for a node."""
    return [fields] if game.nodes is None else [[fields[v]] for v in game.nodes]


def union_fields(game: GraphGame, fields: list[np.ndarray]) -> list[np.ndarray]:
    """The fields of all targets together (their power sets: the coalitions to evaluate)."""
    return [f for target in target_fields(game, fields) for f in target]


def masked_blocks(game: GraphGame, target_fields: list[list[np.ndarray]], cb) -> Outcome:
    """The MIs of every target from its coalitions in I, each evaluated once for all."""
    groups = [group_by_size(maximal_fields(fields)) for fields in target_fields]
    keys = [global_keys(nodes, game.n_players) for g in groups for nodes in g.values()]
    uniq, _, inverse = unique_keys(np.concatenate(keys))
    values = _evaluate_keys(game, uniq, cb)
    blocks, start = [], 0
    for t, target_groups in enumerate(groups):
        size = sum(len(nodes) * 2**k for k, nodes in target_groups.items())
        owner = np.zeros(size, dtype=bool)  # each MI counted by the block that holds it first
        owner[np.unique(inverse[start : start + size], return_index=True)[1]] = True
        out, offset = {}, 0
        for k, nodes in target_groups.items():
            stop = offset + len(nodes) * 2**k
            inv = inverse[start + offset : start + stop]
            mi = moebius_transform(values[inv, t].reshape(len(nodes), 2**k))
            out[k] = (nodes, np.where(owner[offset:stop].reshape(mi.shape), mi, 0.0))
            offset = stop
        blocks.append(MoebiusBlocks(game.n_players, out))
        start += size
    return Outcome(blocks, len(uniq), 0, True)


def approximate_blocks(game: GraphGame, fields: list[np.ndarray], lam: int, cb) -> Outcome:
    """Algorithm 3 for a game of one target whose MIs live on the power sets of ``fields``."""
    maximal = maximal_fields(fields)
    largest = max(len(f) for f in maximal)
    if lam >= largest:
        return masked_blocks(game, [fields], cb)
    groups = group_by_size(maximal)
    incomplete = sorted({tuple(f.tolist()) for f in fields if len(f) > lam}, key=len)
    small_keys, low_masks = [], {}
    for k, nodes in groups.items():
        low_masks[k] = np.flatnonzero(popcounts(k) <= lam)
        small_keys.append(
            global_keys(nodes, game.n_players)
            .reshape(len(nodes), 2**k, -1)[:, low_masks[k]]
            .reshape(-1, _words(game.n_players))
        )
    big_keys = [set_key(f, game.n_players) for f in incomplete]
    uniq, first, inverse = unique_keys(np.concatenate(small_keys + big_keys))
    coalitions = _coalition_matrix(uniq, game.n_players)
    if not coalitions.all(axis=1).any():  # nu(N) is needed for efficiency
        coalitions = np.concatenate([coalitions, np.ones((1, game.n_players), bool)])
    values = game.evaluate(coalitions, progress=cb)
    nu_full = values[np.flatnonzero(coalitions.all(axis=1))[0]]
    # exact MIs up to size lambda, each owned by one maximal block
    out, start = {}, 0
    for k, nodes in groups.items():
        n_low = len(low_masks[k])
        stop = start + len(nodes) * n_low
        inv = inverse[start:stop]
        table = np.zeros((len(nodes), 2**k))
        table[:, low_masks[k]] = values[inv].reshape(len(nodes), n_low)
        mi = moebius_transform(table)
        owned = np.zeros_like(mi, dtype=bool)
        owned[:, low_masks[k]] = (first[inv] == np.arange(start, stop)).reshape(len(nodes), n_low)
        out[k] = (nodes, np.where(owned, mi, 0.0))
        start = stop
    # one gap term per incomplete field, smallest first (Algorithm 3)
    gaps: list[tuple[frozenset[int], float]] = []
    blocks = MoebiusBlocks(game.n_players, out)
    low_total = _sum_below(blocks, incomplete, lam)
    for i, f in enumerate(incomplete):
        members = frozenset(f)
        nu_f = values[inverse[start + i]]
        gap = nu_f - low_total[i] - sum(g for s, g in gaps if s < members)
        gaps.append((members, gap))
    # efficiency: spread the remaining gap to nu(N) over the maximal incomplete fields
    top = [i for i, (s, _) in enumerate(gaps) if not any(s < t for t, _ in gaps)]
    residual = nu_full - blocks.total() - sum(g for _, g in gaps)
    for i in top:
        gaps[i] = (gaps[i][0], gaps[i][1] + residual / len(top))
    for members, gap in gaps:
        k = len(members)
        nodes = np.array([sorted(members)], dtype=np.int64)
        mi = np.zeros((1, 2**k))
        mi[0, -1] = gap
        old_nodes, old_mi = out.get(k, (np.zeros((0, k), np.int64), np.zeros((0, 2**k))))
        out[k] = (np.concatenate([old_nodes, nodes]), np.concatenate([old_mi, mi]))
    blocks = MoebiusBlocks(game.n_players, dict(sorted(out.items())))
    return Outcome([blocks], len(coalitions), 0, lam >= largest - 1)


def budget_hint(fields: list[np.ndarray], max_calls: int) -> str:
    """The largest lambda whose approximation stays within ``max_calls`` model calls, as
    advice naming the Python argument (the CLI names its own option); empty when none does."""
    maximal = maximal_fields(fields)
    for lam in range(max(len(f) for f in maximal) - 1, 0, -1):
        calls = approximation_calls(maximal, lam)
        if calls <= max_calls:
            return f"; try the lambda-approximation with budget={lam} (about {calls} model calls)"
    return ""


def _words(n_players: int) -> int:
    return max(1, -(-n_players // 64))


def _evaluate_keys(game: GraphGame, keys: np.ndarray, progress) -> np.ndarray:
    """nu of every target for every keyed coalition, (keys, targets), building the boolean
    masks chunk by chunk (memory)."""
    chunk = max(1, game.max_batch_nodes // max(game.n_players, 1)) * 2
    values = np.empty((len(keys), game.n_targets))
    for start in range(0, len(keys), chunk):
        stop = min(start + chunk, len(keys))
        coalitions = _coalition_matrix(keys[start:stop], game.n_players)
        values[start:stop] = game.evaluate_targets(coalitions)
        if progress:
            progress(stop, len(keys))
    return values


def _coalition_matrix(keys: np.ndarray, n_players: int) -> np.ndarray:
    """Boolean (m, n) membership matrix of keyed sets."""
    rows, cols = keys_to_members(keys)
    out = np.zeros((len(keys), n_players), dtype=bool)
    out[rows, cols] = True
    return out


def _sum_below(blocks: MoebiusBlocks, sets: list[tuple[int, ...]], lam: int) -> np.ndarray:
    """For each set F: the sum of the held MIs of all S ⊆ F with |S| <= lam."""
    keys, values = blocks.moebius()
    rows, cols = keys_to_members(keys)
    sizes = np.bincount(rows, minlength=len(keys))
    member = np.zeros((len(keys), blocks.n_players), dtype=bool)
    member[rows, cols] = True
    out = np.zeros(len(sets))
    for i, f in enumerate(sets):
        outside = np.ones(blocks.n_players, dtype=bool)
        outside[list(f)] = False
        inside = ~member[:, outside].any(axis=1) & (sizes <= lam)
        out[i] = values[inside].sum()
    return out
