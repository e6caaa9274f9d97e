"""The training recipe's defaults: architecture and optimisation of the shipped model.

One home for the numbers that :class:`~wdn_explain.model.ModelConfig`,
:class:`~wdn_explain.training.TrainConfig` and the ``train`` command share, importable
without torch (the command line shows them before loading the model stack).
"""

from __future__ import annotations

HIDDEN_CHANNELS = 32
NUM_LAYERS = 3
EPOCHS = 80
SCHEDULE = "cosine"
"""Learning-rate schedule after the warm-up (see :data:`~wdn_explain.training.SCHEDULES`)."""
EMA_DECAY: float | None = 0.999
"""Per-step decay of the weights' moving average that is validated and saved (None: the raw
weights); 0.999 averages over about 1000 steps, three epochs of the default data at batch 64
(the decay rises to it over the first steps, see :func:`~wdn_explain.training.fit`)."""
