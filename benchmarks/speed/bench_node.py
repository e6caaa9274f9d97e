"""Speed of node-level explanations (issue 19). One figure per line.

Usage: python benchmarks/speed/bench_node.py [--layers 3] [--skip-masked]

Explains every node of Hanoi (32 targets) for a node-level 3-layer ChlorineGNN with random
weights and a head on every node (``pooling = None``), random node and edge inputs:
* wdn-explain ``explain_nodes`` on one shared state graph (``local``), cold and warm, with
  SV and k-SII(2) of every target;
* the same targets by masked graphs (``masked``, coalitions shared between targets);
* a straightforward implementation written here: for each target on its own, one masked
  copy of the graph per coalition of its receptive field (batched), the output read at the
  target, a fast Möbius transform; checked to agree.
The state graph is timed with 1 and 2 torch threads, the rest with 1.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from torch_geometric.data import Data

INDICES = [("SV", None), ("k-SII", 2)]


def node_model(layers: int) -> torch.nn.Module:
    """A ChlorineGNN with its head on every node (a node-level LocalMessagePassing model)."""
    from wdn_explain.model import ChlorineGNN

    class NodeChlorine(ChlorineGNN):
        pooling = None

        def forward(self, x, edge_index, edge_attr, batch=None):
            return self.readout(self.node_embeddings(x, edge_index, edge_attr)).squeeze(-1)

    torch.manual_seed(0)
    return NodeChlorine(num_layers=layers, hidden_channels=32).eval()


def hanoi_graph() -> Data:
    from wdn_explain.network import load_network

    net = load_network("hanoi")
    gen = torch.Generator().manual_seed(1)
    n, e = net.edge_index.max().item() + 1, net.edge_index.shape[1]
    return Data(
        x=torch.rand(n, 1, generator=gen),
        edge_index=net.edge_index,
        edge_attr=torch.rand(e, 1, generator=gen),
    )


def explain_every_node(model, data, method: str) -> tuple[float, list]:
    from wdn_explain.explain import GraphSHAPIQ

    start = time.perf_counter()
    explanations = GraphSHAPIQ(model, method=method).explain_nodes(data)
    for e in explanations:
        for index, order in INDICES:
            e.index_values(index, order, 1)
    return time.perf_counter() - start, explanations


def straightforward(model, data, layers: int, chunk: int = 2048) -> tuple[float, list]:
    """Per target: masked copies for every coalition of its field, the output at the target,
    Möbius by Yates' transform, SV = sum over S containing i of m(S)/|S|."""
    from torch_geometric.utils import k_hop_subgraph

    start = time.perf_counter()
    n = data.num_nodes
    baseline = data.x.mean(dim=0)
    svs = []
    for v in range(n):
        field = k_hop_subgraph(v, layers, data.edge_index, num_nodes=n)[0].sort().values
        k = len(field)
        masks = torch.arange(2**k)
        bits = (masks[:, None] >> torch.arange(k)[None, :]) & 1 == 1  # (2^k, k)
        values = torch.empty(2**k, dtype=torch.float64)
        for lo in range(0, 2**k, chunk):
            b = bits[lo : lo + chunk]
            keep = torch.zeros(len(b), n, dtype=torch.bool)
            keep[:, field] = b
            xs = torch.where(keep[:, :, None], data.x[None], baseline).reshape(-1, data.x.shape[1])
            offsets = (torch.arange(len(b)) * n).repeat_interleave(data.edge_index.shape[1])
            edge_index = data.edge_index.repeat(1, len(b)) + offsets
            with torch.inference_mode():
                y = model(xs, edge_index, data.edge_attr.repeat(len(b), 1))
            values[lo : lo + len(b)] = y.reshape(len(b), n)[:, v].double()
        m = values.numpy().copy()
        step = 1
        while step < 2**k:  # Möbius transform, one pass per bit
            view = m.reshape(-1, 2, step)
            view[:, 1, :] -= view[:, 0, :]
            step *= 2
        sizes = bits.sum(dim=1).numpy()
        sv = np.zeros(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(sizes > 0, m / sizes, 0.0)
        sv[field.numpy()] = bits.numpy().T.astype(float) @ share
        svs.append(sv)
    return time.perf_counter() - start, svs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--skip-masked", action="store_true")
    args = parser.parse_args()
    import shapiq  # noqa: F401  (imports take ~1 s: outside the timed regions)

    from wdn_explain.explain import GraphSHAPIQ

    model, data = node_model(args.layers), hanoi_graph()
    L = args.layers
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    first = None
    for threads in (1, 2):
        torch.set_num_threads(threads)
        cold, local = explain_every_node(model, data, "local")
        warm, local = explain_every_node(model, data, "local")
        first = first or cold
        what = f"hanoi L={L} every node (32 targets) state graph + SV, k-SII(2), {threads} thread"
        print(f"{what}, cold: {cold:.3f} s")
        print(f"{what}, warm: {warm:.3f} s")
    torch.set_num_threads(1)
    print(f"hanoi L={L} node states evaluated for all targets: {local[0].n_node_states}")
    print(f"hanoi L={L} MIs held over all targets: {sum(e.n_interactions for e in local)}")
    start = time.perf_counter()
    one = GraphSHAPIQ(model).explain(data, node=0)
    print(
        f"hanoi L={L} one target (node 0), state graph, 1 thread: "
        f"{time.perf_counter() - start:.3f} s, {one.n_node_states} node states"
    )
    if not args.skip_masked:
        masked_s, masked = explain_every_node(model, data, "masked")
        diff = max(
            np.abs(a.node_values("SV") - b.node_values("SV")).max() for a, b in zip(local, masked)
        )
        print(
            f"hanoi L={L} every node by masked graphs (shared coalitions), 1 thread: "
            f"{masked_s:.2f} s, {masked[0].n_graph_evaluations} masked graphs"
        )
        print(f"hanoi L={L} SV max |diff| state graph vs masked: {diff:.2e}")
    plain_s, plain = straightforward(model, data, L)
    diff = max(np.abs(e.node_values("SV") - sv).max() for e, sv in zip(local, plain))
    print(
        f"hanoi L={L} every node straightforward (per target, masked copies), 1 thread: {plain_s:.2f} s"
    )
    print(f"hanoi L={L} SV max |diff| state graph vs straightforward: {diff:.2e}")
    print(f"hanoi L={L} speed-up over straightforward (cold, 1 thread): {plain_s / first:.0f}x")
    print(f"load average (1 min) at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
