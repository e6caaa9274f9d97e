"""wdn-explain: exact Shapley-interaction explanations of GNNs on water distribution networks.

Data flows one way: network -> simulation -> dataset -> model -> explain engine -> timeline
-> app. Public names are imported on first use, so the CLI starts fast and heavy
dependencies (torch_geometric, shapiq, EPyT-Flow) load only where needed.
"""

from __future__ import annotations

import logging

from .errors import ConfigError, DataError, ExplainError, WdnExplainError
from .lazy import lazy_getattr

logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

_LAZY = {
    # network and simulation
    "Network": "network",
    "load_network": "network",
    "ScenarioConfig": "scenario",
    "SimulationConfig": "scenario",
    "load_config": "scenario",
    "parse_config": "scenario",
    "SimulationResult": "simulation",
    "simulate": "simulation",
    "generate_waq": "waq",
    # data and model
    "WaqDataset": "dataset",
    "load_waq_arrays": "dataset",
    "split_scenarios": "dataset",
    "ChlorineGNN": "model",
    "NodeChlorineGNN": "model",
    "ModelConfig": "model",
    "TrainConfig": "training",
    "train": "training",
    "evaluate": "training",
    "load_model": "model_folder",
    # explanation
    "GraphSHAPIQ": "explain",
    "Explanation": "explain",
    "check_linear_readout": "explain",
    "complexity": "explain",
    "Timeline": "timeline",
    "explain_scenario": "pipeline",
}

__all__ = ["WdnExplainError", "ConfigError", "DataError", "ExplainError", *_LAZY]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
