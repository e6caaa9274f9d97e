"""Does the monitoring design keep the WAQ design's generation throughput? (one figure a line)

Usage: python benchmarks/speed/bench_design.py [N_SCENARIOS] [ROUNDS]

Generates N scenarios (default 300) of `simulations/waq.yaml` and of
`simulations/monitoring.yaml` with 2 workers, alternating, ROUNDS times (default 2), so both
see the same machine load; prints each time and the load average.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from wdn_explain.scenario import load_config
from wdn_explain.waq import generate_waq

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for _ in range(rounds):
        for name in ("waq.yaml", "monitoring.yaml"):
            config = load_config(ROOT / "simulations" / name)
            config = config.model_copy(update={"n_scenarios": n})
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                generate_waq(config, Path(tmp) / "out", n_workers=2)
                seconds = time.perf_counter() - start
            print(
                f"{name}: {n} scenarios, 2 workers: {seconds:.1f} s "
                f"({seconds / n * 1000:.0f} s per 1000; load average {os.getloadavg()[0]:.1f})"
            )


if __name__ == "__main__":
    main()
