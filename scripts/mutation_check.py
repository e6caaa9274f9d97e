"""Hand-made mutants of the explain engine: does tests/explain catch each one?

Usage: python scripts/mutation_check.py [--only NAME ...]

Each mutant is one textual change to a copy of wdn_explain/explain/ (wrong output, wrong
baseline, wrong L, wrong index weights, a dropped block, a missing label...). The tests under
tests/explain run against the mutated copy; a mutant survives when they all still pass.
Prints one line per mutant ("killed" / "SURVIVED") and the survivors at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
E = "wdn_explain/explain/"

# (name, file, original text, mutated text): each original must occur in the file
MUTANTS = [
    ("output 0 in masked games", E + "game.py", "y[:, output_index]", "y[:, 0]"),
    ("output 0 in node games", E + "local.py", "w = weight[output_index]", "w = weight[0]"),
    ("zero baseline for mean", E + "game.py", "return x.mean(dim=0)", "return 0 * x.mean(dim=0)"),
    (
        "one layer fewer (L - 1)",
        E + "graphshapiq.py",
        "fields = receptive_fields(game.edge_index, game.n_players, self.n_layers)",
        "fields = receptive_fields(game.edge_index, game.n_players, max(1, self.n_layers - 1))",
    ),
    ("SII weight 1/(u-s+2)", E + "indices.py", "w = 1.0 / (u - s + 1)", "w = 1.0 / (u - s + 2)"),
    ("k-SII |Bernoulli|", E + "indices.py", "term = bern[j] *", "term = abs(bern[j]) *"),
    ("STII top weight", E + "indices.py", "(s == k) / comb(u, k)", "(s == k) / comb(u, k - 1)"),
    ("FSII sign", E + "indices.py", "(-1.0) ** (k - s)\n", "(-1.0) ** (k - s + 1)\n"),
    ("FBII half power", E + "indices.py", "0.5 ** (u - s) * comb", "0.5 ** (u - s + 1) * comb"),
    (
        "largest block dropped from indices",
        E + "blocks.py",
        "            if k < size:\n",
        "            if k < size or k == self.max_size:\n",
    ),
    (
        "MIs counted by every block (masked)",
        E + "masked.py",
        "out[k] = (nodes, np.where(owner[offset:stop].reshape(mi.shape), mi, 0.0))",
        "out[k] = (nodes, mi)",
    ),
    ("mean pooling scale 1/(n+1)", E + "local.py", '"mean": 1.0 / n', '"mean": 1.0 / (n + 1)'),
    ("readout bias dropped", E + "blocks.py", "summed[0] += self.constant", "pass"),
    ("readout check off", E + "readout.py", "if excess[row, target] <= 1:", "if True:"),
    (
        "readout tolerance 1e4",
        E + "readout.py",
        "scale = 1.0 + np.maximum(np.abs(actual).max(axis=0)[None, :], magnitude)",
        "scale = 1e4 * np.ones_like(magnitude)",
    ),
    ("batches accepted", E + "inputs.py", "int(batch.max()) > 0", "int(batch.max()) > 9"),
    (
        "approximation labelled exact",
        E + "explanation.py",
        "budget = None if self.exact else max(self.n_graph_evaluations, 1)",
        "budget = None",
    ),
    ("cached values shared", E + "blocks.py", "values=values.copy(),", "values=values,"),
    (
        "local allowed with other inputs",
        E + "graphshapiq.py",
        'if not set(game.call.inputs) <= {"edge_attr"}:',
        "if False:",
    ),
    (
        "extra inputs not repeated per copy",
        E + "inputs.py",
        "    if n_copies == 1:\n        return value\n    if dim is None:",
        "    if n_copies == 1 or not increment:\n        return value\n    if dim is None:",
    ),
    (
        "no field coalitions in the readout check",
        E + "readout.py",
        "MAX_FIELD_CHECKS = 8",
        "MAX_FIELD_CHECKS = 0",
    ),
    (
        "one graph per model call",
        E + "inputs.py",
        "takes_batch = var_keyword or",
        "takes_batch = False and",
    ),
    (
        "state graph cached by depth only",
        E + "graphshapiq.py",
        "key = (len(fields), len(fields[0]), edge_index.detach().cpu().numpy().tobytes(), nodes)",
        "key = (len(fields), nodes)",
    ),
    (
        "node targets read at node 0",
        E + "game.py",
        "y if nodes is None else y[:, list(nodes)]",
        "y if nodes is None else y[:, [0] * len(nodes)]",
    ),
    (
        "target states without their in-neighbours",
        E + "graphshapiq.py",
        "needed[np.concatenate([fields[1][j] for j in np.flatnonzero(needed)])] = True",
        "pass",
    ),
    (
        "target games not Möbius-transformed",
        E + "blocks.py",
        "moebius_transform(self._tables[v][None, :])",
        "self._tables[v][None, :]",
    ),
    ("node-level scale 1/n", E + "local.py", "None: 1.0}", "None: 1.0 / n}"),
    (
        "node approximation without its gap",
        E + "masked.py",
        "        mi[0, -1] = gap\n",
        "        mi[0, -1] = 0.0\n",
    ),
    (
        "k-SII empty set 0",
        E + "blocks.py",
        "np.array([self.empty_value()])",
        "np.array([0.0])",
    ),
]


def run_mutant(name: str, path: str, old: str, new: str) -> bool:
    """True when the tests fail on the mutant (killed); an empty ``old`` runs the original."""
    with tempfile.TemporaryDirectory() as tmp:
        for part in (
            "wdn_explain",
            "tests",
            "models",
            "simulations",
            "pyproject.toml",
            "README.md",
        ):
            src = ROOT / part
            (shutil.copytree if src.is_dir() else shutil.copy)(src, Path(tmp) / part)
        target = Path(tmp) / path
        text = target.read_text()
        if old not in text:
            raise SystemExit(f"mutant '{name}': text not found in {path}")
        target.write_text(text.replace(old, new, 1))
        env = {**os.environ, "PYTHONPATH": tmp, "OMP_NUM_THREADS": "1"}
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests/explain"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        return result.returncode != 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="mutant names to run (default: all)")
    args = parser.parse_args()
    if run_mutant("original", MUTANTS[0][1], "", ""):
        raise SystemExit("the tests fail on the unmutated copy: fix that first")
    survivors = []
    for name, path, old, new in MUTANTS:
        if args.only and name not in args.only:
            continue
        killed = run_mutant(name, path, old, new)
        print(f"{name}: {'killed' if killed else 'SURVIVED'}", flush=True)
        if not killed:
            survivors.append(name)
    print(f"survivors: {', '.join(survivors) or 'none'}")


if __name__ == "__main__":
    main()
