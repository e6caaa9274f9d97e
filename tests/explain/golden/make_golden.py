"""Regenerate default_step12.json: step 12 of the shipped default timeline, explained exactly.

Usage: python tests/explain/golden/make_golden.py

Stores the model inputs of that step (so the test needs no simulation) and the values the
engine computed from them with the shipped model: prediction, nu(empty), |I|, the SVs and
every k-SII value of order 2. Rerun only after a deliberate change of the shipped model or
of the engine's numbers, and say why in the commit message.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.model_folder import load_model
from wdn_explain.network import load_network
from wdn_explain.pipeline import scenario_graphs
from wdn_explain.scenario import load_config
from wdn_explain.shipped import DEFAULT_MODEL, DEFAULT_SCENARIO
from wdn_explain.simulation import simulate

STEP = 12
OUT = Path(__file__).with_name("default_step12.json")


def main() -> None:
    torch.set_num_threads(1)
    model, card = load_model(DEFAULT_MODEL)
    network = load_network()
    result = simulate(load_config(DEFAULT_SCENARIO).scenario_config(0), network)
    data = scenario_graphs(result, network, card.input_spec)[STEP]
    e = GraphSHAPIQ(model).explain(data)
    ksii = e.interaction_values("k-SII", 2)
    golden = {
        "step": STEP,
        "model": "models/default",
        "x": data.x.tolist(),
        "edge_index": data.edge_index.tolist(),
        "edge_attr": data.edge_attr.tolist(),
        "method": e.method,
        "prediction": e.prediction,
        "empty_prediction": e.empty_prediction,
        "n_interactions": e.n_interactions,
        "sv": e.node_values("SV").tolist(),
        "k_sii_2": [[list(k), v] for k, v in sorted(ksii.dict_values.items())],
    }
    lines = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items() if k != "k_sii_2"]
    pairs = ",\n".join(f"  {json.dumps(item)}" for item in golden["k_sii_2"])
    OUT.write_text("{\n" + ",\n".join([*lines, f' "k_sii_2": [\n{pairs}\n ]']) + "\n}\n")
    print(f"wrote {OUT} ({e.n_interactions} interactions, prediction {e.prediction:.6f})")


if __name__ == "__main__":
    main()
