import json

import numpy as np
import pytest

from wdn_explain.errors import ConfigError, DataError
from wdn_explain.scenario import parse_config
from wdn_explain.simulation import SimulationResult
from wdn_explain.waq import generate_waq, read_manifest, scenario_path

from conftest import TINY


def test_folder_layout_and_manifest(waq_dir, hanoi, tiny_config):
    manifest = read_manifest(waq_dir)
    assert manifest.config_hash == tiny_config.config_hash()
    assert manifest.network.sha256 == hanoi.file_sha256
    assert manifest.network.node_ids == list(hanoi.node_ids)
    assert {"epyt-flow", "numpy"} <= set(manifest.versions)
    assert sorted(p.name for p in waq_dir.glob("scenario_*.npz")) == [
        f"scenario_{i:05d}.npz" for i in range(6)
    ]


def test_deterministic_across_runs_and_workers(tmp_path, waq_dir, tiny_config):
    generate_waq(tiny_config, tmp_path / "again", n_workers=1)
    for i in range(tiny_config.n_scenarios):
        a = SimulationResult.load(scenario_path(waq_dir, i))
        b = SimulationResult.load(scenario_path(tmp_path / "again", i))
        np.testing.assert_array_equal(a.node_chlorine_mg_l, b.node_chlorine_mg_l)
        np.testing.assert_array_equal(a.link_flow_lps, b.link_flow_lps)


def test_resume_keeps_finished_files(tmp_path, tiny_config):
    out = tmp_path / "resume"
    generate_waq(tiny_config, out, n_workers=1)
    kept = scenario_path(out, 0).stat().st_mtime_ns
    scenario_path(out, 3).unlink()  # as if interrupted before scenario 3 was written
    (out / ".scenario_00003.npz.123.tmp").write_bytes(b"half")  # a leftover partial write
    calls = []
    generate_waq(tiny_config, out, n_workers=1, progress=lambda d, t: calls.append((d, t)))
    assert scenario_path(out, 0).stat().st_mtime_ns == kept
    assert scenario_path(out, 3).exists()
    assert calls[0] == (5, 6) and calls[-1] == (6, 6)


def test_refuses_other_config_unless_overwrite(tmp_path, tiny_config):
    out = tmp_path / "clash"
    generate_waq(tiny_config, out, n_workers=1)
    other = parse_config({**TINY, "n_scenarios": 2, "seed": 99})
    with pytest.raises(DataError, match="holds a WAQ set of another config.*--overwrite"):
        generate_waq(other, out, n_workers=1)
    generate_waq(other, out, n_workers=1, overwrite=True)
    assert read_manifest(out).config_hash == other.config_hash()
    assert len(list(out.glob("scenario_*.npz"))) == 2


def test_refuses_foreign_files(tmp_path, tiny_config):
    out = tmp_path / "foreign"
    out.mkdir()
    (out / "scenario_00000.npz").write_bytes(b"x")
    with pytest.raises(DataError, match="holds scenario files but no manifest"):
        generate_waq(tiny_config, out, n_workers=1)


def test_bad_injection_node_touches_nothing(tmp_path):
    cfg = parse_config({**TINY, "scenario": {**TINY["scenario"], "injection_node": "77"}})
    with pytest.raises(ConfigError, match="node '77' is not in network 'hanoi'"):
        generate_waq(cfg, tmp_path / "never", n_workers=1)
    assert not (tmp_path / "never").exists()


def test_corrupt_manifest(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(DataError, match="manifest .* is corrupt"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(DataError, match="has format 'other'"):
        read_manifest(tmp_path)
