"""App responsiveness with Streamlit's AppTest (one figure per line).

First render on the defaults (imports and the shipped timeline included), then switching
index and order (the figure for a new choice is built once, then cached). The baseline in
the same run is a rerun without any change (the cost of the script itself).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    at = AppTest.from_file(APP, default_timeout=300)
    print(f"first render on defaults: {timed(at.run):.2f} s")
    print(f"rerun without change (baseline): {timed(at.run):.2f} s")
    print(
        f"switch index k-SII -> FSII: {timed(lambda: at.selectbox(key='index').set_value('FSII').run()):.2f} s"
    )
    print(f"switch order 2 -> 3: {timed(lambda: at.slider(key='order').set_value(3).run()):.2f} s")
    print(
        f"switch index FSII -> STII: {timed(lambda: at.selectbox(key='index').set_value('STII').run()):.2f} s"
    )
    print(
        f"switch back to FSII (cached figure): {timed(lambda: at.selectbox(key='index').set_value('FSII').run()):.2f} s"
    )
    assert not at.exception


if __name__ == "__main__":
    main()
