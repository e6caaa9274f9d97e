"""The training recipe's defaults: architecture and optimisation of the shipped model, and
the size of an onboarded network's design and training.

One home for the numbers that :class:`~wdn_explain.model.ModelConfig`,
:class:`~wdn_explain.training.TrainConfig`, :func:`~wdn_explain.onboard.onboard` and the
``train`` and ``network onboard`` commands share, importable without torch (the command
line shows them before loading the model stack).
"""

from __future__ import annotations

NODE_FEATURES: tuple[str, ...] = (
    "chlorine_mg_l",
    "source_mg_l",
    "source_plan_mg_l",
    "chlorine_history_mg_l",
)
"""Node features of a trained model (see :mod:`~wdn_explain.features`): chlorine and source
now, the dosing plan over the horizon and chlorine at the horizon's previous reports."""
EDGE_FEATURES: tuple[str, ...] = ("flow", "pipe_flushes")
"""Edge features of a trained model: signed flow and signed pipe flushes per report step
(the pipe's inverse travel time)."""
HIDDEN_CHANNELS = 64
"""Hidden channels of the shipped Hanoi share and node models: 64 forecast 11-13 % better than
32 on fresh scenarios for the same explanation cost per step (docs, forecasting)."""
NUM_LAYERS = 3
EPOCHS = 80
SCHEDULE = "cosine"
"""Learning-rate schedule after the warm-up (see :data:`~wdn_explain.training.SCHEDULES`)."""
EMA_DECAY: float | None = 0.999
"""Per-step decay of the weights' moving average that is validated and saved (None: the raw
weights); 0.999 averages over about 1000 steps, three epochs of the default data at batch 64
(the decay rises to it over the first steps, see :func:`~wdn_explain.training.fit`)."""
RISK_EPOCHS = 30
"""Maximum epochs of a node model's risk model (:mod:`~wdn_explain.risk_model`; early
stopping on the validation Brier score). It starts from the forecaster's weights."""
RISK_ADDED_LAYERS = 1
"""Message-passing layers the risk model adds to its forecaster's by default: Hanoi's node 18
lies 4 pipes from the reservoir, whose switch reaches it within the horizon (4 layers: fresh
Brier at every 4th node 0.00318 against 0.00341 for 3, the tree classifier's 0.00295; docs,
forecasting)."""
RISK_MEMBERS = 2
"""Risk models trained with seeds apart and served side by side as one GNN whose logit is
their mean (:func:`~wdn_explain.model.side_by_side`; exact to explain, a model of the same
family): two 4-layer runs scored 0.00318 and 0.00302 at every 4th node of Hanoi's fresh
scenarios, their mean 0.00293 (the tree classifier's 0.00295; docs, forecasting)."""

ONBOARD_SCENARIOS = 40
"""Scenarios of an onboarded network's default design: trains in minutes on 2 cores, up to
networks of hundreds of nodes (README, "Your own network")."""
ONBOARD_MIN_SCENARIOS = 8
"""The fewest scenarios that leave one each for calibration, validation and test."""
ONBOARD_HIDDEN_CHANNELS = 32
"""Hidden channels of an onboarded network's model: its 40 scenarios train at 32 in minutes
(64 doubles the weights for a design that small)."""
ONBOARD_EPOCHS = 30
"""Maximum training epochs of an onboarded network's model (early stopping on validation)."""
