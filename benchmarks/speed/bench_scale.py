"""Exact explanations at utility scale (issue 12): one figure per line, one table row a line.

Usage: python benchmarks/speed/bench_scale.py [--device cpu|cuda] [--threads 2]
       [--networks hanoi net3 ky8 l-town] [--layers 1 2 3] [--memory-gb G]
       [--max-states 2e8] [--timeout 900]

For every network and L: n, |I| (or the flagged Thm. 3.7 bound), node states of the state
graph, time of the first and of a warm ``method="local"`` explanation, peak host memory
(``VmHWM`` of a fresh process per case) and peak GPU memory (CUDA only), with a
``ChlorineGNN`` of L layers, random weights and random inputs (seed 0), as in the issue.
A case whose node states exceed ``--max-states`` is skipped with the reason printed;
one that runs past ``--timeout`` seconds is reported as such. ``--memory-gb`` is passed to
``GraphSHAPIQ(memory_budget_gb=...)``; left out, the engine's default is used (and the
script also runs unchanged against an engine without the option, for before/after figures).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

HIDDEN = 32


def node_states(edge_index, n_nodes: int, n_layers: int) -> int:
    """Sum over layers l = 0..L of sum_j 2^|N_j^(l)| (layer 0: masked / present)."""
    from wdn_explain.explain import receptive_fields

    fields = receptive_fields(edge_index, n_nodes, n_layers)
    return 2 * n_nodes + sum(2 ** len(f) for layer in fields[1:] for f in layer)


def peak_host_gb() -> float:
    """Peak resident memory of this process in GB: ``VmHWM`` on Linux (``ru_maxrss`` there
    keeps the parent's peak across fork and exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_case(network: str, layers: int, device: str, threads: int, memory_gb: float | None):
    """Explain one random input twice in this process; timings and peaks as a dict."""
    import torch
    from torch_geometric.data import Data

    from wdn_explain.explain import GraphSHAPIQ
    from wdn_explain.model import ChlorineGNN
    from wdn_explain.network import load_network

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = load_network(network)
    model = ChlorineGNN(num_layers=layers, hidden_channels=HIDDEN).eval().to(device)
    n, n_edges = net.n_nodes, net.edge_index.shape[1]
    data = Data(x=torch.rand(n, 1), edge_index=net.edge_index, edge_attr=torch.randn(n_edges, 1))
    options = {} if memory_gb is None else {"memory_budget_gb": memory_gb}
    explainer = GraphSHAPIQ(model, method="local", max_interactions=10**12, **options)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        e = explainer.explain(data)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    gpu = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None
    return {
        "first_s": times[0],
        "warm_s": times[1],
        "node_states": e.n_node_states,
        "host_gb": peak_host_gb(),
        "gpu_gb": gpu,
        "sv_sum": float(e.node_values("SV").sum()),
    }


def child(args: argparse.Namespace, network: str, layers: int) -> dict | str:
    """Run one case in a fresh process (its own peak memory); a reason string on failure."""
    cmd = [sys.executable, __file__, "--child", network, str(layers), "--device", args.device]
    cmd += ["--threads", str(args.threads)]
    if args.memory_gb is not None:
        cmd += ["--memory-gb", str(args.memory_gb)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return f"skipped: over the {args.timeout:.0f} s time limit"
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines() or [f"exit {out.returncode}"]
        return f"failed: {lines[-1]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--networks", nargs="+", default=["hanoi", "net3", "ky8", "l-town"])
    parser.add_argument("--layers", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--memory-gb", type=float, default=None)
    parser.add_argument("--max-states", type=float, default=2e8)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        network, layers = args.child
        result = run_case(network, int(layers), args.device, args.threads, args.memory_gb)
        print(json.dumps(result))
        return
    from wdn_explain.explain import complexity
    from wdn_explain.network import load_network

    sys.stdout.reconfigure(line_buffering=True)
    budget = "engine default" if args.memory_gb is None else f"{args.memory_gb:g} GB"
    print(f"device {args.device}, {args.threads} threads, memory budget {budget}")
    print("network n L |I| states first_s warm_s host_GB gpu_GB")
    for name in args.networks:
        net = load_network(name)
        for layers in args.layers:
            c = complexity(net.edge_index, net.n_nodes, layers)
            size = f"{c.n_interactions}" if c.exact else f"<={c.n_interactions:.3g}(bound)"
            states = node_states(net.edge_index, net.n_nodes, layers)
            head = f"{name} {net.n_nodes} {layers} {size} {states}"
            if states > args.max_states:
                print(f"{head} skipped: {states:.3g} node states over --max-states")
                continue
            r = child(args, name, layers)
            if isinstance(r, str):
                print(f"{head} {r}")
                continue
            gpu = "-" if r["gpu_gb"] is None else f"{r['gpu_gb']:.2f}"
            print(
                f"{head} {r['first_s']:.2f} {r['warm_s']:.2f} {r['host_gb']:.2f} {gpu}",
            )


if __name__ == "__main__":
    main()
