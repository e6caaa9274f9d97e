"""Write the sample readings shipped beside ``models/hanoi-sensors`` (``sample_readings.csv``,
:data:`wdn_explain.shipped.SAMPLE_READINGS`): the chlorine its four sensors read in the app's
default scenario (``simulations/default_scenario.yaml``), every report, with three faults a
replay marks -- sensor 9 missing at 25 min, sensor 19 reading 7.5 mg/L at 30 min (out of
range), sensor 23 stuck at 0.7 mg/L from 40 to 90 min. The app's Replay page replays it on a
click; ``docs/guide/replay.md`` runs it. Run again after the model's sensors or the default
scenario change (``tests/test_replay.py`` says when):

    python scripts/sample_readings.py
"""

from __future__ import annotations

import numpy as np

from wdn_explain.model_folder import read_card
from wdn_explain.network import load_network
from wdn_explain.readings import Readings, readings_csv
from wdn_explain.scenario import load_config
from wdn_explain.shipped import DEFAULT_SCENARIO, SAMPLE_READINGS
from wdn_explain.simulation import simulate

MISSING = ("9", 1500)  # sensor, time (s)
OUT_OF_RANGE = ("19", 1800, 7.5)  # sensor, time (s), mg/L
STUCK = ("23", 2400, 5400, 0.7)  # sensor, from, to (s, both included), mg/L


def sample_readings() -> Readings:
    """The default scenario's simulated chlorine at the sensor model's sensors, the faults
    applied."""
    sensors = read_card(SAMPLE_READINGS.parent).input_spec.quality_node_sensors
    scenario = load_config(DEFAULT_SCENARIO).scenario_config(0)
    network = load_network(scenario.network)
    result = simulate(scenario, network)
    times = np.asarray(result.times_s)
    chlorine = result.node_chlorine_mg_l[:, [network.node_index(s) for s in sensors]].astype(float)
    column = {s: j for j, s in enumerate(sensors)}
    chlorine[times == MISSING[1], column[MISSING[0]]] = np.nan
    chlorine[times == OUT_OF_RANGE[1], column[OUT_OF_RANGE[0]]] = OUT_OF_RANGE[2]
    stuck = (times >= STUCK[1]) & (times <= STUCK[2])
    chlorine[stuck, column[STUCK[0]]] = STUCK[3]
    return Readings(times, tuple(sensors), chlorine)


def main() -> None:
    SAMPLE_READINGS.write_text("\n".join(readings_csv(sample_readings())) + "\n")
    print(f"wrote {SAMPLE_READINGS} ({SAMPLE_READINGS.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
