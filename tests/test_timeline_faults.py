"""Damaged timeline caches: refused with the file's name when read, recomputed by `explain`;
concurrent sessions computing one scenario; outputs that must not be replaced."""

import json
import shutil
import threading
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from wdn_explain import files
from wdn_explain.cli import app
from wdn_explain.errors import DataError
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.pipeline import explain_scenario
from wdn_explain.scenario import ScenarioConfig
from wdn_explain.timeline import REFERENCES, Timeline

from conftest import damaged_without_hash

SPEC = ScenarioConfig(duration_s=2400, reporting_step_s=300, seed=7)
INLINE = "{duration_s: 2400, seed: 7}"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def good(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("good") / "t.npz"
    explain_scenario(SPEC, tiny_model_dir, out=out)
    return out


def _rewrite(src, dst, change):
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    with open(dst, "wb") as handle:
        np.savez(handle, **arrays)


def _set_meta(update):
    def change(arrays):
        meta = json.loads(str(arrays["meta"]))
        arrays["meta"] = np.array(json.dumps(update(meta)))

    return change


def _bad_node(arrays):
    key = next(k for k in arrays if k.startswith("s0_nodes_"))  # node blocks of step 0
    nodes = arrays[key].copy()
    nodes[0, 0] = 99
    arrays[key] = nodes


DAMAGE = {
    "truncated": lambda src, dst: dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2]),
    "empty": lambda src, dst: dst.write_bytes(b""),
    "meta is a list": lambda src, dst: _rewrite(src, dst, _set_meta(lambda m: [m])),
    "no scenario": lambda src, dst: _rewrite(
        src, dst, _set_meta(lambda m: {k: v for k, v in m.items() if k != "scenario"})
    ),
    "node out of range": lambda src, dst: _rewrite(src, dst, _bad_node),
    "short forecast": lambda src, dst: _rewrite(
        src, dst, lambda a: a.update(forecast=a["forecast"][:-1])
    ),
}
MESSAGES = {
    "truncated": "is truncated or corrupt",
    "empty": "is truncated or corrupt",
    "meta is a list": "is corrupt: a list, not a mapping",
    "no scenario": "is corrupt: it lacks scenario",
    "node out of range": "step 0 refers to nodes outside 0..31",
    "short forecast": r"forecast has shape \(4,\), expected \(5,\)",
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request, good, tmp_path):
    path = tmp_path / "t.npz"
    DAMAGE[request.param](good, path)
    return path, MESSAGES[request.param]


def test_load_names_the_file_and_the_damage(damaged):
    path, message = damaged
    with pytest.raises(DataError, match=rf"timeline file '{path}'.*{message}") as info:
        Timeline.load(path)
    assert str(info.value).count(str(path)) == 1  # one line, not a message inside a message


@pytest.mark.parametrize("value", [np.nan, 1.5, -0.5])
def test_a_risk_that_is_no_probability_is_refused(tmp_path, value):
    """A planted node_risk outside 0..1 (or NaN) was exported to the risk CSV as it stood."""
    from conftest import ROOT

    path = tmp_path / "planted.npz"

    def plant(arrays):
        arrays["node_risk"] = arrays["node_risk"].copy()
        arrays["node_risk"][0, 0] = value

    _rewrite(ROOT / "models" / "hanoi-nodes" / "default_timeline.npz", path, plant)
    result = run("export", "--timeline", path, "--risk-csv", tmp_path / "risk.csv")
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: timeline file '{path}' is corrupt: node_risk holds values that are not "
        "probabilities (each must lie in 0..1)"
    )
    assert not (tmp_path / "risk.csv").exists()


def test_load_refuses_a_plain_npy_in_one_line(tmp_path):
    """A lone array saved as .npz (np.load returns an array, not an archive)."""
    path = tmp_path / "t.npz"
    with open(path, "wb") as handle:  # np.save would add .npy to the name
        np.save(handle, np.arange(3))
    with pytest.raises(DataError, match=rf"^timeline file '{path}' is truncated or corrupt"):
        Timeline.load(path)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--out", "r.html"],
        ["export", "--csv", "v.csv", "--json-dir", "iv"],
    ],
)
def test_report_and_export_refuse_a_damaged_timeline(damaged, command, monkeypatch):
    path, message = damaged
    monkeypatch.chdir(path.parent)
    result = run(command[0], "--timeline", path, *command[1:])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: timeline file '{path}'")
    assert len(result.output.strip().splitlines()) == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.npz"]  # nothing written


def test_explain_recomputes_a_damaged_timeline(damaged, tiny_model_dir, good):
    path, message = damaged
    result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", path)
    assert result.exit_code == 0, result.output
    assert "recomputed: timeline file" in result.output
    fresh, reference = Timeline.load(path), Timeline.load(good)
    np.testing.assert_array_equal(fresh.forecast, reference.forecast)


def test_two_sessions_computing_one_scenario(tiny_model_dir, tmp_path):
    """Two app sessions (threads of one process) explain the same scenario into one cache."""
    out = tmp_path / "shared.npz"
    results, errors = [], []

    def session() -> None:
        try:
            results.append(explain_scenario(SPEC, tiny_model_dir, out=out)[0])
        except Exception as exc:  # an assertion in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=session) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    np.testing.assert_array_equal(results[0].forecast, results[1].forecast)
    np.testing.assert_array_equal(Timeline.load(out).forecast, results[0].forecast)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.npz"]


@pytest.mark.parametrize(
    ("existing", "message"),
    [
        ("notes.txt", "'{out}' exists and is not a timeline file; choose another path"),
        ("folder.npz/", "timeline file '{out}' is a directory, expected a file"),
        ("scenario.npz", "'{out}' exists and is not a timeline file; choose another path"),
        ("other.npz", "timeline file '{out}' holds another scenario"),
    ],
)
def test_explain_never_replaces_what_it_did_not_make(
    existing, message, tmp_path, tiny_model_dir, good
):
    out = tmp_path / existing.rstrip("/")
    if existing.endswith("/"):
        out.mkdir()
    elif existing == "notes.txt":
        out.write_text("my notes")
    elif existing == "scenario.npz":
        np.savez(out, times_s=np.arange(3))
    else:
        shutil.copy(good, out)
    before = out.read_bytes() if out.is_file() else None
    other = "{duration_s: 2400, seed: 8}"
    result = run("explain", "--scenario", other, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message.format(out=out) in result.output
    assert len(result.output.strip().splitlines()) == 1
    if before is not None:
        assert out.read_bytes() == before


def test_explain_overwrite_replaces_another_scenario(tmp_path, tiny_model_dir, good):
    out = tmp_path / "t.npz"
    shutil.copy(good, out)
    other = "{duration_s: 2400, seed: 8}"
    args = ("explain", "--scenario", other, "--model", tiny_model_dir, "--out", out)
    result = run(*args, "--overwrite")
    assert result.exit_code == 0, result.output
    assert Timeline.load(out).scenario.seed == 8


def test_an_interrupt_waits_for_no_step_in_flight(tmp_path, tiny_model_dir, monkeypatch):
    """References explained side by side: an interrupt returns while the other reference's
    step is still being explained (that step is dropped), and the store keeps exactly the
    steps reported."""
    release, finished = threading.Event(), []
    explain = GraphSHAPIQ.explain

    def held(self, data, **kwargs):
        if self.baseline == "zeros":  # the second reference's first step never ends in time
            release.wait(120)
            finished.append(True)
        return explain(self, data, **kwargs)

    def stop(done, total):
        raise KeyboardInterrupt

    monkeypatch.setattr(GraphSHAPIQ, "explain", held)
    monkeypatch.setattr("wdn_explain.pipeline.usable_cores", lambda: 2)
    out = tmp_path / "t.npz"
    with pytest.raises(KeyboardInterrupt):
        explain_scenario(SPEC, tiny_model_dir, out=out, progress=stop)
    assert finished == []  # returned with the held step still in flight
    release.set()
    assert len(list((tmp_path / ".t.npz.partial").glob("step_*.npz"))) == 1


def test_an_interrupt_stops_the_step_in_flight_at_its_next_chunk(
    tmp_path, tiny_model_dir, monkeypatch
):
    """A slow model (the engine's last layer in chunks of 4 node states): Ctrl-C in the
    main thread while the other reference's step is in flight. That step gives up at its
    next chunk (the one it was in: <= 1 of the step's ~1000 chunks after the interrupt), no
    other step starts, the worker threads end; a resumed run gives the timeline of an
    uninterrupted one bit for bit."""
    from collections import Counter

    from wdn_explain.explain import local

    monkeypatch.setattr(local, "MIN_CHUNK_STATES", 1)
    monkeypatch.setattr(local, "CPU_CHUNK_BYTES", 4 * 8 * 4)  # 4 states of 8 float32
    monkeypatch.setattr("wdn_explain.pipeline.usable_cores", lambda: 2)
    uninterrupted, _ = explain_scenario(SPEC, tiny_model_dir, out=tmp_path / "whole.npz")

    other = threading.local()  # set in the thread explaining the other reference
    returned = threading.Event()  # the interrupted call has returned
    chunks, started = Counter(), Counter()  # after the interrupt: last-layer chunks, steps
    explain, layer = GraphSHAPIQ.explain, local._layer

    def marked(self, data, **kwargs):
        other.held = self.baseline == "zeros"
        started["after" if returned.is_set() else "before"] += 1
        return explain(self, data, **kwargs)

    def slow(model, i, h, edge_feat, state_graph, device):
        apply = layer(model, i, h, edge_feat, state_graph, device)

        def chunk(wiring):
            if i == state_graph.n_layers - 1 and getattr(other, "held", False):
                returned.wait(60)  # in flight until the interrupted call has returned
                chunks["total"] += 1
            return apply(wiring)

        return chunk

    def interrupt(done, total):
        raise KeyboardInterrupt

    monkeypatch.setattr(GraphSHAPIQ, "explain", marked)
    monkeypatch.setattr(local, "_layer", slow)
    out = tmp_path / "t.npz"
    with pytest.raises(KeyboardInterrupt):
        explain_scenario(SPEC, tiny_model_dir, out=out, progress=interrupt)
    returned.set()
    workers = [t for t in threading.enumerate() if t.name.startswith("wdn-explain-reference")]
    for thread in workers:
        thread.join(60)
    assert not any(thread.is_alive() for thread in workers)
    assert chunks["total"] <= 1 and started["after"] == 0
    monkeypatch.setattr(local, "_layer", layer)
    timeline, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    assert status.startswith("computed (resumed: 1 of ")
    for reference in REFERENCES:
        whole, resumed = uninterrupted.relative_to(reference), timeline.relative_to(reference)
        np.testing.assert_array_equal(
            resumed.node_values("k-SII", 2), whole.node_values("k-SII", 2)
        )
    assert Path(out).read_bytes() == (tmp_path / "whole.npz").read_bytes()


def test_interrupted_explain_resumes_from_its_steps(tmp_path, tiny_model_dir, good, monkeypatch):
    out = tmp_path / "t.npz"

    def stop_after_three(done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        explain_scenario(SPEC, tiny_model_dir, out=out, progress=stop_after_three)
    partial = tmp_path / ".t.npz.partial"
    assert not out.exists() and len(list(partial.glob("step_*.npz"))) == 3
    calls = []
    explain = GraphSHAPIQ.explain
    monkeypatch.setattr(
        GraphSHAPIQ,
        "explain",
        lambda self, data, **kw: calls.append(1) or explain(self, data, **kw),
    )
    timeline, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    assert status == "computed (resumed: 3 of 10 steps kept from an interrupted run)"
    assert len(calls) == len(timeline) * len(REFERENCES) - 3
    np.testing.assert_array_equal(
        Timeline.load(out).node_values("k-SII", 2), Timeline.load(good).node_values("k-SII", 2)
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.npz"]  # the steps are removed


def test_ctrl_c_in_explain_says_what_it_kept(tmp_path, tiny_model_dir, monkeypatch):
    """One line naming the steps kept: none before the first step (it said they were kept)."""
    out = tmp_path / "t.npz"

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("wdn_explain.pipeline.explain_scenario", interrupt)
    result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 130
    assert result.output.strip() == (
        "interrupted: no step was explained yet, nothing is kept; run again to start over"
    )
    monkeypatch.undo()

    def stop_after_two(done, total):
        if done == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(
        "wdn_explain.pipeline.progress_callback", lambda progress, name: nullcontext(stop_after_two)
    )
    result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 130
    assert result.output.strip().splitlines()[-1] == (
        f"interrupted: 2 explained steps are kept beside {out}; run again to resume"
    )


def test_an_interrupt_before_the_first_step_leaves_nothing(
    tmp_path, tiny_model_dir, good, monkeypatch
):
    out = tmp_path / "t.npz"

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("wdn_explain.pipeline.simulate", interrupt)  # Ctrl-C while simulating
    with pytest.raises(KeyboardInterrupt):
        explain_scenario(SPEC, tiny_model_dir, out=out)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    timeline, status = explain_scenario(SPEC, tiny_model_dir, out=out)
    assert status == "computed"
    np.testing.assert_array_equal(timeline.forecast, Timeline.load(good).forecast)


def test_a_second_process_explaining_into_the_file_is_refused(tmp_path, tiny_model_dir, good):
    """Two `explain` runs into one file at once: the second is refused in one line (it
    counted the first's fresh steps as kept from an interrupted run); the first's steps stay."""
    import subprocess

    out = tmp_path / "t.npz"
    partial = tmp_path / ".t.npz.partial"
    partial.mkdir()
    (partial / "step_000000.npz").write_bytes(b"the first run's step")
    holder = subprocess.Popen(["sleep", "60"])  # the first `explain`, still running
    try:
        (partial / files.LOCK).write_text(str(holder.pid))
        result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: timeline '{out}' is being written by another process (pid {holder.pid}, "
        f"claim file {partial / files.LOCK}); wait for it or choose another file"
    )
    assert (partial / "step_000000.npz").read_bytes() == b"the first run's step"
    assert not out.exists()


def test_a_decade_explain_is_refused_up_front(tmp_path, tiny_model_dir):
    out = tmp_path / "decade.npz"
    decade = "{duration_s: 315360000}"  # 1 051 201 reports
    result = run("explain", "--scenario", decade, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 1
    assert result.output.startswith("error: this would take about ")
    assert "GB of memory" in result.output and "--yes to proceed" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "target", "message"),
    [
        (["report", "--out"], "notes.txt", "exists and is not a report file"),
        (["report", "--gif"], "notes.txt", "exists and is not a GIF file"),
        (["export", "--csv"], "notes.txt", "exists and is not a CSV file"),
        (["export", "--json-dir"], "notes.txt", "JSON folder '{p}' is a file, expected a folder"),
        (["export", "--csv"], "folder/", "CSV file '{p}' is a directory, expected a file"),
        (["complexity", "--layers", "1", "--csv"], "notes.txt", "exists and is not a CSV file"),
    ],
)
def test_outputs_of_other_kinds_are_refused_and_kept(good, tmp_path, command, target, message):
    path = tmp_path / target.rstrip("/")
    if target.endswith("/"):
        path.mkdir()
    else:
        path.write_text("my notes")
    source = [] if command[0] == "complexity" else ["--timeline", good]
    result = run(command[0], *source, *command[1:], path)
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message.format(p=path) in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert path.is_dir() if target.endswith("/") else path.read_text() == "my notes"


def test_unwritable_timeline_output_is_refused_before_work(tmp_path, tiny_model_dir, monkeypatch):
    from wdn_explain import files

    monkeypatch.setattr(files, "_writable", lambda folder: False)
    monkeypatch.setattr(GraphSHAPIQ, "explain", lambda *a, **k: pytest.fail("explained"))
    out = tmp_path / "t.npz"
    result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 1
    assert (
        result.output.strip()
        == f"error: cannot write timeline file '{out}': '{tmp_path}' is not writable"
    )


def test_full_disk_at_the_end_keeps_the_explained_steps(tmp_path, tiny_model_dir, monkeypatch):
    import errno

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    out = tmp_path / "t.npz"
    with monkeypatch.context() as patch:
        patch.setattr("wdn_explain.timeline.write_npz", disk_full)  # the timeline, not the steps
        result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 1  # after the progress bar, shown when a loaded machine is slow
    assert result.output.strip().splitlines()[-1] == (
        f"error: cannot write '{out}' (No space left on device)"
    )
    calls = []
    explain = GraphSHAPIQ.explain
    monkeypatch.setattr(
        GraphSHAPIQ, "explain", lambda self, data: calls.append(1) or explain(self, data)
    )
    result = run("explain", "--scenario", INLINE, "--model", tiny_model_dir, "--out", out)
    assert result.exit_code == 0 and calls == []  # every step came from the kept ones
    assert "(resumed: 10 of 10 steps kept from an interrupted run)" in result.output  # 2 references
    assert len(Timeline.load(out)) == 5


EXPORTS = {
    "export csv": lambda good, path: ["export", "--timeline", good, "--csv", path],
    "complexity csv": lambda good, path: ["complexity", "--layers", "1", "--csv", path],
    "report gif": lambda good, path: ["report", "--timeline", good, "--out",
                                      path.with_suffix(".html"), "--gif", path],
}  # fmt: skip
SUFFIX = {"export csv": ".csv", "complexity csv": ".csv", "report gif": ".gif"}


@pytest.mark.parametrize("command", list(EXPORTS))
def test_output_into_a_missing_folder_is_made(good, tmp_path, command):
    path = tmp_path / "new" / f"t{SUFFIX[command]}"
    result = run(*EXPORTS[command](good, path))
    assert result.exit_code == 0, result.output
    assert path.is_file() and path.stat().st_size > 0


@pytest.mark.parametrize("command", list(EXPORTS))
def test_output_through_a_link_to_another_file_is_refused(good, tmp_path, command):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    link = tmp_path / f"t{SUFFIX[command]}"
    link.symlink_to(notes)
    result = run(*EXPORTS[command](good, link))
    assert result.exit_code == 1
    assert "exists and is not a" in result.output and len(result.output.splitlines()) == 1
    assert notes.read_text() == "my notes" and link.is_symlink()


@pytest.mark.parametrize("command", ["export csv", "complexity csv"])
def test_full_disk_leaves_no_half_written_output(good, tmp_path, command, monkeypatch):
    """The writer puts half the bytes down, then the disk is full: the output never appears,
    its temporary file is removed, one line names the file."""
    import builtins
    import errno

    real_open = builtins.open

    class FullDisk:
        def __init__(self, handle):
            self.handle, self.written = handle, 0

        def write(self, data):
            if self.written:
                raise OSError(errno.ENOSPC, "No space left on device")
            self.written = self.handle.write(data[: max(1, len(data) // 2)])
            return len(data)

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    def open_on_a_full_disk(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        temporary = str(file).endswith(".tmp") and "t." in str(file)
        return FullDisk(handle) if temporary and "w" in mode else handle

    path = tmp_path / f"t{SUFFIX[command]}"
    args = EXPORTS[command](good, path)
    monkeypatch.setattr(builtins, "open", open_on_a_full_disk)
    result = run(*args)
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines()[-1] == (
        f"error: cannot write '{path}' (No space left on device)"
    )
    assert not path.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".t.")] == []


def test_damaged_weights_without_a_hash_are_flagged(tmp_path, tiny_model_dir):
    """As the shipped waq-paper card, which records no weight hash: forecasts far outside a
    share's range [0, 1] give a warning line and stay in the timeline's meta."""
    out = damaged_without_hash(tiny_model_dir, tmp_path / "m")
    result = run("explain", "--scenario", INLINE, "--model", out, "--out", tmp_path / "t.npz")
    assert result.exit_code == 0, result.output
    tl = Timeline.load(tmp_path / "t.npz")
    outside = int(((tl.forecast < -0.05) | (tl.forecast > 1.05)).sum())  # the oracle
    assert outside > 0
    assert tl.meta["forecast_warning"].startswith(
        f"{outside} of {len(tl)} forecasts lie outside [0, 1], the range of a share of nodes"
    )
    assert f"warning: {tl.meta['forecast_warning']}" in result.output.splitlines()
