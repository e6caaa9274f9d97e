"""The app under faults: every failure is a message, never a traceback, and the installed
package is never written."""

import json
import shutil

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from wdn_explain import shipped as shipped_module
from wdn_explain import timeline as timeline_module
from wdn_explain.model_folder import model_hash
from wdn_explain.timeline import Timeline, read_meta

from conftest import ROOT, widget

APP = str(ROOT / "app" / "main.py")


@pytest.fixture
def env(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("WDN_EXPLAIN_CACHE", str(cache))
    monkeypatch.delenv("WDN_EXPLAIN_MODEL", raising=False)
    return cache


def start():
    return AppTest.from_file(APP, default_timeout=180).run()


def test_damaged_cached_scenario_is_not_offered(env, tiny_model_dir, monkeypatch):
    """A cache file too damaged to say what it holds is not offered (nor an error): the
    picker lists what the files' metadata says, never what their names suggest."""
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(tiny_model_dir))
    assert not start().exception  # computes the default scenario into the cache
    (default,) = env.glob("timeline_*.npz")
    bad = env / "timeline_0123456789abcdef.npz"
    bad.write_bytes(default.read_bytes()[:5000])
    at = start()
    assert not at.exception and not at.error
    options = widget(at, "selectbox", "scenario").options
    assert len(options) == 1 and not any("unreadable" in o for o in options)


def test_missing_model_folder_is_a_message(env, tmp_path, monkeypatch):
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(tmp_path / "nowhere"))
    at = start()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"'{tmp_path / 'nowhere'}' is not a model folder (needs model.pt and card.json)"
    ]


def test_truncated_default_timeline_of_another_model_is_recomputed(
    env, tmp_path, tiny_model_dir, monkeypatch
):
    monkeypatch.setenv("WDN_EXPLAIN_MODEL", str(tiny_model_dir))
    assert not start().exception  # computes the default scenario into the cache
    (cached,) = env.glob("timeline_*.npz")
    cached.write_bytes(cached.read_bytes()[:4000])
    at = start()
    assert not at.exception and not at.error
    assert len(Timeline.load(cached)) > 0


def test_stale_shipped_timeline_is_never_rewritten(env, tmp_path, tiny_model_dir, monkeypatch):
    """A package whose default timeline is stale: the app computes into the user cache."""
    package = tmp_path / "package" / "default"
    shutil.copytree(tiny_model_dir, package)
    shipped = package / "default_timeline.npz"
    meta = {"format": timeline_module.FORMAT, "model_hash": "another model"}
    np.savez(shipped, meta=np.array(json.dumps(meta)), steps=np.arange(3))
    before = shipped.read_bytes()
    monkeypatch.setattr(shipped_module, "DEFAULT_MODEL", package)
    monkeypatch.setattr(shipped_module, "DEFAULT_TIMELINE", shipped)
    package.chmod(0o555)  # read-only for ordinary users (root ignores it; the bytes are checked)
    try:
        at = start()
    finally:
        package.chmod(0o755)
    assert not at.exception and not at.error
    assert shipped.read_bytes() == before
    assert sorted(p.name for p in package.iterdir()) == [
        "card.json",
        "default_timeline.npz",
        "model.pt",
    ]
    assert [read_meta(p)["model_hash"] for p in env.glob("timeline_*.npz")] == [model_hash(package)]


def test_a_failed_warm_up_is_one_log_line_without_a_traceback(monkeypatch, caplog):
    """The server's warm-up thread meets a broken model folder: one warning line naming the
    failure, no thread traceback in the server's log (issue 33 item 10)."""
    import logging

    monkeypatch.syspath_prepend(str(ROOT / "app"))
    from water import cache

    def broken():
        raise RuntimeError("card.json unreadable")

    monkeypatch.setattr(cache, "water_models", broken)
    monkeypatch.setattr(cache, "WARM_MODULES", ())
    monkeypatch.setattr(cache.gc, "freeze", lambda: None)
    with caplog.at_level(logging.WARNING, logger=cache.logger.name):
        cache._warm()
    (record,) = [r for r in caplog.records if r.name == cache.logger.name]
    assert record.getMessage() == (
        "warming up failed (RuntimeError: card.json unreadable); a page that needs it says why"
    )
    assert record.exc_info is None
