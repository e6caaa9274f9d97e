"""The recipe of app/vendor/plotly-basic.min.js: plotly.js's own partial bundle of the trace
types the app's charts use (``scatter``, ``bar``; ``pie`` comes with it), ~1.2 MB against the
full bundle's 4.8 MB, at the plotly.js version the installed ``plotly`` package ships (a new
browser compiles it in a fifth of the time). It is the npm package
``plotly.js-basic-dist-min``, built by plotly.js's ``partial_bundle`` task; this script fetches
it with ``npm pack`` and writes the file and its licence into app/vendor (neither is in the
repository: it holds only what this project wrote). Optional: without it, or while its version
differs from the installed ``plotly``'s, the app loads the full bundle (app/live_chart.py):

    python scripts/plotly_basic.py
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from plotly.offline import get_plotlyjs_version

VENDOR = Path(__file__).resolve().parents[1] / "app" / "vendor"


def main() -> None:
    version = get_plotlyjs_version()
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            ["npm", "pack", f"plotly.js-basic-dist-min@{version}", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            check=True,
        )
        with tarfile.open(Path(tmp) / done.stdout.split()[-1]) as packed:
            packed.extractall(tmp, filter="data")
        script = Path(tmp) / "package" / "plotly-basic.min.js"
        if f" v{version}\n" not in script.read_text(encoding="utf-8")[:200]:
            raise SystemExit(f"{script.name} does not say plotly.js v{version}")
        shutil.copyfile(script, VENDOR / "plotly-basic.min.js")
        shutil.copyfile(Path(tmp) / "package" / "LICENSE", VENDOR / "LICENSE-plotly.js")
    print(f"app/vendor/plotly-basic.min.js: plotly.js v{version} (basic)")


if __name__ == "__main__":
    main()
