"""The ``wdn-explain`` command: parse, build a config, call one library function, show.

One module per group of commands, registered on :data:`app` in the order ``--help`` lists
them: :mod:`.data` (simulate, data-stats), :mod:`.models` (train, evaluate, calibrate),
:mod:`.explaining` (complexity, explain), :mod:`.replaying` (replay), :mod:`.outputs` (report,
export), :mod:`.networks` (network onboard) and :mod:`.sensors` (sensors place); :mod:`.common`
holds the apps and what the commands share.
"""

from __future__ import annotations

from .common import _scenario_from as _scenario_from
from .common import app, network_app

# isort: off
# The commands register on import, in the order --help lists them.
from . import data, models, explaining, replaying, outputs, networks, sensors
# isort: on

__all__ = [
    "app",
    "network_app",
    "data",
    "models",
    "explaining",
    "replaying",
    "outputs",
    "networks",
    "sensors",
]
