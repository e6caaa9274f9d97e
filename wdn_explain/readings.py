"""Sensor readings a utility measures, read from a file for a replay (:mod:`.replay`), and the
rules that mark a bad reading.

Two file kinds:

* **CSV**, one row per report, one column per chlorine sensor, units in the header::

      time_s,chlorine_mg_l@3,chlorine_mg_l@10,chlorine_mg_l@16,chlorine_mg_l@30
      0,0.0,0.0,0.0,0.0
      300,0.12,0.0,,0.0

  ``time_s`` is the scenario time in seconds (strictly increasing, on the scenario's report
  grid); each sensor column is ``chlorine_mg_l@<node id>`` (free chlorine in mg/L at that
  node). An empty cell or text that is not a number is a missing reading. A last line without
  its newline is a row still being written (a growing file) and is left for the next read.
* **EPyT-Flow ScadaData** (``.epytflow_scada_data``, written by ``ScadaData.save_to_file``):
  the node-quality sensors' readings (faults applied) at its reading times. EPyT-Flow stores
  it as MessagePack with NumPy arrays as raw buffers (no pickle).

A file that cannot be read as readings of the model's sensors -- an unknown or missing sensor
column, another unit, times that are not numbers, repeated or going back -- is refused in one
line (:class:`~wdn_explain.errors.DataError`) before anything is written. A bad *reading* is
never refused: :func:`reading_flags` marks it and the replay goes on without it.

Bad-reading rules (:data:`FLAGS`), each a reading at report t of one sensor:

* ``missing``: no number.
* ``out_of_range``: below 0 or above the highest chlorine anything puts into the network (the
  scenario's setpoint or initial quality, :func:`~wdn_explain.features.scenario_range`) by more
  than :data:`~wdn_explain.features.RANGE_TOLERANCE`: no physical reading does that.
* ``stuck`` (EPyT-Flow's ``SensorFaultStuckZero``/``SensorFaultConstant``): the same value, to
  :data:`STUCK_TOLERANCE_MG_L`, over the last :data:`STUCK_REPORTS` readings, and either that
  value is not a level water rests at (none: below :data:`RESOLUTION_MG_L`, where stagnant water
  with a trace sits still; a setpoint of the dosing schedule; the initial quality: a node fully
  flushed or never reached reads one of them, exactly, for long stretches) or every one of those readings lies outside the interval of the forecast made for
  its report (the model saw chlorine move where the sensor shows none; its interval misses the
  truth 10 % of the time, four times in a row rarely). A model's forecast spread alone is not
  enough: next to an intermittent booster the truth sits at the setpoint while the model,
  unsure of the switch, moves.
* ``drift`` (``SensorFaultDrift``, ``SensorFaultPercentage`` that grows): the reading lies
  outside the interval of the forecast made for its report (by more than
  :data:`RESOLUTION_MG_L`), on the same side, for the last
  :data:`DRIFT_REPORTS` readings, its distance to the interval growing at every one. A model's
  error crosses its interval now and then (10 % of the time at 90 % coverage) and comes back;
  a drift walks away steadily.

Stuck and drift need the forecasts made ``horizon`` reports earlier: a replay applies them
from the reports those exist for.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import DataError
from .features import RANGE_TOLERANCE

TIME_COLUMN = "time_s"
CHLORINE_UNIT = "chlorine_mg_l"
"""The sensor columns' quantity and unit: ``chlorine_mg_l@<node id>``."""
SCADA_SUFFIX = ".epytflow_scada_data"
FLAGS = ("ok", "missing", "out_of_range", "stuck", "drift")
"""What :func:`reading_flags` says of a reading, by code (0: ok)."""
OK, MISSING, OUT_OF_RANGE, STUCK, DRIFT = range(len(FLAGS))
IN_HISTORY = "bad reading in its history"
"""Why a reading marked ``ok`` was left out: a model that reads the chlorine history leaves a
sensor out while a bad reading lies among the horizon's previous reports."""


def left_out(sensors: Sequence[str], flags: np.ndarray, used: np.ndarray) -> list[str]:
    """Each sensor left out of a report's forecast with the reason, ``"<sensor>: <why>"``:
    its mark (:data:`FLAGS`), or :data:`IN_HISTORY` for a good reading left out."""
    return [
        f"{s}: {FLAGS[f] if f != OK else IN_HISTORY}"
        for s, f, u in zip(sensors, flags, used)
        if f != OK or not u
    ]


STUCK_REPORTS = 4
"""Readings (20 min at the 5-minute report step) a value must stay put to be ``stuck``."""
STUCK_TOLERANCE_MG_L = 1e-6
"""Readings closer than this (mg/L) count as the same value."""
RESOLUTION_MG_L = 0.01
"""About an analyser's resolution (mg/L): below it a reading is none for ``stuck`` (the
simulation holds a stagnant node at 3e-4 mg/L for 20 minutes), and a reading must leave a
forecast's interval by more to lie outside it (intervals of a forecast of 0 have width 0)."""
DRIFT_REPORTS = 6
"""Readings (30 min) in a row outside the forecast's interval, farther each time, for ``drift``."""


@dataclass(frozen=True)
class Readings:
    """Chlorine readings of a set of sensors over time.

    Attributes:
        times_s: Report times in seconds, strictly increasing, shape (T,).
        sensors: The node id of each sensor, shape (S,).
        chlorine_mg_l: Free chlorine in mg/L, NaN where missing, shape (T, S).
        source: The file read (named in messages).
    """

    times_s: np.ndarray
    sensors: tuple[str, ...]
    chlorine_mg_l: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return len(self.times_s)


MAX_READINGS_BYTES = 1_000_000_000
"""The largest readings file read (1 GB; it is read whole): a year of 1-minute reports of 24
sensors is about 0.1 GB as CSV."""


def load_readings(path: str | Path, sensors: Sequence[str]) -> Readings:
    """The readings in ``path`` (a CSV, or an EPyT-Flow ScadaData file by its suffix
    :data:`SCADA_SUFFIX`), columns in the order of the model's ``sensors``.

    Raises:
        DataError: in one line naming the file and what is wrong (see the module docstring),
            or a file above :data:`MAX_READINGS_BYTES`, before it is read.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"readings file '{path}' does not exist")
    size = path.stat().st_size
    if size > MAX_READINGS_BYTES:
        raise DataError(
            f"readings file '{path}' holds {size / 1e9:.1f} GB, more than the "
            f"{MAX_READINGS_BYTES / 1e9:.0f} GB a replay reads: export a shorter period"
        )
    if path.name.endswith(SCADA_SUFFIX):
        times, found, values = _scada_columns(path)
    else:
        times, found, values = _csv_columns(path)
    return _checked(path, times, found, values, [str(s) for s in sensors])


def readings_csv(readings: Readings) -> list[str]:
    """The lines of ``readings`` as the CSV :func:`load_readings` reads (header first, each
    value as its exact float text, an empty cell where missing): e.g. the readings a sensor
    set gives in a simulated scenario, to replay or to play in the app."""
    header = ",".join([TIME_COLUMN, *(f"{CHLORINE_UNIT}@{s}" for s in readings.sensors)])
    rows = [
        ",".join([repr(float(t)), *("" if np.isnan(v) else repr(float(v)) for v in values)])
        for t, values in zip(readings.times_s, readings.chlorine_mg_l)
    ]
    return [header, *rows]


def _csv_columns(path: Path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(times, sensor ids, values (T, S)) of a readings CSV (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"readings file '{path}' cannot be read as text ({exc})") from None
    if text and not text.endswith("\n"):  # a row still being written
        text = text[: text.rfind("\n") + 1]
    rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    if not rows:
        raise DataError(f"readings file '{path}' is empty (expected a header '{TIME_COLUMN},...')")
    header = [cell.strip() for cell in rows[0]]
    if header[0] != TIME_COLUMN:
        raise DataError(
            f"readings file '{path}': the first column must be '{TIME_COLUMN}' (time in "
            f"seconds; got '{header[0]}')"
        )
    sensors = []
    for name in header[1:]:
        quantity, at, node = name.partition("@")
        if not at or not node:
            raise DataError(
                f"readings file '{path}': column '{name}' is not '{CHLORINE_UNIT}@<node id>'"
            )
        if quantity != CHLORINE_UNIT:
            raise DataError(
                f"readings file '{path}': column '{name}' is in '{quantity}'; readings must be "
                f"free chlorine in mg/L ('{CHLORINE_UNIT}@{node}')"
            )
        sensors.append(node)
    times, values = [], []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise DataError(
                f"readings file '{path}', line {line}: {len(row)} cells, the header has "
                f"{len(header)}"
            )
        try:
            times.append(float(row[0]))
        except ValueError:
            raise DataError(
                f"readings file '{path}', line {line}: time '{row[0]}' is not a number of seconds"
            ) from None
        values.append([_number(cell) for cell in row[1:]])
    shape = (len(times), len(sensors))
    return np.array(times), sensors, np.array(values, dtype=float).reshape(shape)


def _number(cell: str) -> float:
    """A reading in a CSV cell, NaN when the cell holds no number (a missing reading)."""
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _scada_columns(path: Path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(times, sensor ids, values (T, S)) of the node-quality sensors of an EPyT-Flow
    ScadaData file."""
    from epyt_flow.simulation.scada.scada_data import ScadaData

    try:
        scada = ScadaData.load_from_file(str(path))
        sensors = list(scada.sensor_config.quality_node_sensors)
        values = scada.get_data_nodes_quality() if sensors else np.zeros((0, 0))
        times = np.asarray(scada.sensor_readings_time, dtype=float)
    except Exception as exc:  # any decoding failure of a foreign file
        raise DataError(
            f"readings file '{path}' is not a readable EPyT-Flow ScadaData file ({exc})"
        ) from None
    if not isinstance(scada, ScadaData):
        raise DataError(f"readings file '{path}' holds no EPyT-Flow ScadaData")
    return times, [str(s) for s in sensors], np.asarray(values, dtype=float)


def _checked(
    path: Path, times: np.ndarray, found: list[str], values: np.ndarray, expected: list[str]
) -> Readings:
    """The readings with columns in ``expected`` order; DataError for unknown, repeated or
    missing sensors and for times that are not finite or not strictly increasing."""
    repeated = sorted({s for s in found if found.count(s) > 1})
    if repeated:
        raise DataError(f"readings file '{path}': sensor '{repeated[0]}' has more than one column")
    unknown = [s for s in found if s not in expected]
    if unknown:
        raise DataError(
            f"readings file '{path}': unknown sensor '{unknown[0]}' (the model reads "
            f"chlorine at {', '.join(expected)})"
        )
    missing = [s for s in expected if s not in found]
    if missing:
        raise DataError(
            f"readings file '{path}': no column for sensor '{missing[0]}' (expected "
            f"{', '.join(f'{CHLORINE_UNIT}@{s}' for s in expected)})"
        )
    if not np.isfinite(times).all():
        raise DataError(
            f"readings file '{path}': time {times[~np.isfinite(times)][0]} is not finite"
        )
    back = np.flatnonzero(np.diff(times) <= 0)
    if len(back):
        i = int(back[0])
        what = "repeated" if times[i + 1] == times[i] else "goes back"
        raise DataError(
            f"readings file '{path}': time {times[i + 1]:g} s at row {i + 2} {what} (after "
            f"{times[i]:g} s; times must strictly increase)"
        )
    order = [found.index(s) for s in expected]
    return Readings(times, tuple(expected), values[:, order], str(path))


def reading_flags(
    reading: np.ndarray,
    high_mg_l: float,
    rest_mg_l: np.ndarray,
    recent: np.ndarray,
    expected: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> np.ndarray:
    """The :data:`FLAGS` code of each sensor's reading at one report (see the module
    docstring), shape (S,) int.

    Args:
        reading: The readings now, mg/L (NaN: missing), shape (S,).
        high_mg_l: The highest physical chlorine of the scenario, mg/L.
        rest_mg_l: The levels water rests at in the scenario, mg/L (see ``stuck``).
        recent: The readings at the reports before, oldest first, shape (R, S) (NaN: missing
            or not read).
        expected: The forecasts made for those reports and this one, at each sensor's node,
            aligned with ``recent`` and ``reading`` stacked, shape (R + 1, S) (NaN: none made).
        lower: The lower bounds of those forecasts' intervals, shape (R + 1, S).
        upper: Their upper bounds, shape (R + 1, S).
    """
    flags = np.full(reading.shape, OK)
    with np.errstate(invalid="ignore"):
        flags[(reading < -RANGE_TOLERANCE) | (reading > high_mg_l + RANGE_TOLERANCE)] = OUT_OF_RANGE
    series = np.vstack([recent, reading[None]])
    last = series[-STUCK_REPORTS:]
    if len(last) == STUCK_REPORTS:
        with np.errstate(invalid="ignore"):
            constant = np.ptp(last, axis=0) <= STUCK_TOLERANCE_MG_L
            level = np.abs(last[-1][:, None] - np.ravel(rest_mg_l))
            resting = (level <= STUCK_TOLERANCE_MG_L).any(axis=1) | (last[-1] < RESOLUTION_MG_L)
            at = slice(-STUCK_REPORTS, None)
            missed = (
                (last < lower[at] - RESOLUTION_MG_L) | (last > upper[at] + RESOLUTION_MG_L)
            ).all(axis=0)
        flags[(flags == OK) & constant & (~resting | missed)] = STUCK
    window = slice(-DRIFT_REPORTS, None)
    if len(series) >= DRIFT_REPORTS:
        above = series[window] - upper[window] - RESOLUTION_MG_L
        below = lower[window] - series[window] - RESOLUTION_MG_L
        with np.errstate(invalid="ignore"):
            drifting = [
                (gap > 0).all(axis=0) & (np.diff(gap, axis=0) > 0).all(axis=0)
                for gap in (above, below)
            ]
        flags[(flags == OK) & (drifting[0] | drifting[1])] = DRIFT
    flags[np.isnan(reading)] = MISSING
    return flags
