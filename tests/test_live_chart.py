"""The chart component's folder (app/live_chart.py): written once, with the installed
Plotly.js (gzipped) and the project's page."""

from __future__ import annotations

import gzip
import sys

import plotly
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))  # the app's folder is not a package
from live_chart import asset_dir, static_script


def test_asset_dir_holds_the_installed_plotly_js_and_the_page(tmp_path):
    folder = asset_dir(tmp_path)
    assert folder.parent == tmp_path and plotly.__version__ in folder.name
    script = gzip.decompress((folder / "plotly.min.js.gz").read_bytes()).decode("utf-8")
    assert script == get_plotlyjs()  # the installed package's bundle, byte for byte
    assert f"plotly.js v{get_plotlyjs_version()}" in script[:200]
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page == (ROOT / "app" / "live_chart.html").read_text(encoding="utf-8")
    assert '"plotly.min.js.gz"' in page and 'DecompressionStream("gzip")' in page
    assert "Plotly.react" in page and "streamlit:componentReady" in page


def test_asset_dir_is_written_once_and_repaired(tmp_path):
    folder = asset_dir(tmp_path)
    script, page = folder / "plotly.min.js.gz", folder / "index.html"
    stamps = script.stat().st_mtime_ns, page.stat().st_mtime_ns
    assert asset_dir(tmp_path) == folder
    assert (script.stat().st_mtime_ns, page.stat().st_mtime_ns) == stamps  # not rewritten
    page.write_text("an older page")
    script.unlink()
    asset_dir(tmp_path)
    assert page.read_text(encoding="utf-8") == (ROOT / "app" / "live_chart.html").read_text()
    assert gzip.decompress(script.read_bytes()).decode("utf-8") == get_plotlyjs()
    assert sorted(p.name for p in folder.iterdir()) == ["index.html", "plotly.min.js.gz"]


def test_static_script_is_the_installed_plotly_js_named_by_version(tmp_path):
    """What the page loads first (app/static/, served by Streamlit): the installed
    plotly.min.js byte for byte under a versioned name, written again when damaged."""
    name = static_script(tmp_path / "static")
    script = tmp_path / "static" / name
    assert name == f"plotly-{plotly.__version__}.min.js"
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    stamp = script.stat().st_mtime_ns
    assert static_script(tmp_path / "static") == name and script.stat().st_mtime_ns == stamp
    script.write_text("cut short")
    static_script(tmp_path / "static")
    assert script.read_text(encoding="utf-8") == get_plotlyjs()


def _damaged(data: bytes) -> bytes:
    """``data`` with one byte in its middle changed: the same size, other content."""
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :]


def test_same_size_damaged_copies_are_repaired(tmp_path):
    """A copy damaged without changing its size (a flipped byte) is written again: the
    static script and the component's gzipped one."""
    script = tmp_path / "static" / static_script(tmp_path / "static")
    script.write_bytes(_damaged(script.read_bytes()))
    assert script.read_text(encoding="utf-8") != get_plotlyjs()
    static_script(tmp_path / "static")
    assert script.read_text(encoding="utf-8") == get_plotlyjs()
    packed = asset_dir(tmp_path) / "plotly.min.js.gz"
    for damaged in (
        _damaged(packed.read_bytes()),  # a flipped byte in the compressed stream
        gzip.compress(_damaged(get_plotlyjs().encode("utf-8")), mtime=0),  # valid gzip
    ):
        packed.write_bytes(damaged)
        asset_dir(tmp_path)
        assert gzip.decompress(packed.read_bytes()).decode("utf-8") == get_plotlyjs()


def test_the_app_serves_its_static_folder():
    """The page's first URL for Plotly.js works only with Streamlit's static serving on
    (read by `streamlit run app/main.py` from the repository root)."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["enableStaticServing"] is True
    page = (ROOT / "app" / "live_chart.html").read_text(encoding="utf-8")
    assert "../../app/static/${name}" in page
