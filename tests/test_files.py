"""Atomic writes under concurrency and failure, and the up-front output checks."""

import errno
import os
import threading

import pytest

from wdn_explain import files
from wdn_explain.errors import DataError
from wdn_explain.files import atomic_write, check_output, remove_stray_temporaries


def test_threads_writing_one_file_never_collide(tmp_path):
    target = tmp_path / "shared.txt"
    n = 16
    barrier = threading.Barrier(n)
    errors = []

    def write(k: int) -> None:
        try:
            with atomic_write(target) as tmp:
                tmp.write_text(str(k) * 1000)
                barrier.wait(timeout=10)  # every thread holds its temporary file at once
        except Exception as exc:  # collected: an assertion in a thread would be lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    text = target.read_text()
    assert text in {str(k) * 1000 for k in range(n)}  # one complete write won
    assert os.listdir(tmp_path) == ["shared.txt"]


def test_failed_write_leaves_nothing_and_keeps_the_original(tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("original")
    with pytest.raises(RuntimeError, match="boom"), atomic_write(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "original"
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_read_only_file_system_gives_one_error(tmp_path, monkeypatch):
    """The rename fails and so does the clean-up: one DataError naming the file."""

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(files.os, "replace", refuse)
    monkeypatch.setattr(files.Path, "unlink", refuse)
    with pytest.raises(DataError, match=r"cannot write '.*out\.txt' \(Read-only file system\)"):
        with atomic_write(tmp_path / "out.txt") as tmp:
            tmp.write_text("x")


def test_stray_temporaries_of_ended_writers_are_removed(tmp_path):
    dead = 4194305  # above Linux's largest pid_max: no such process
    (tmp_path / f".scenario_00001.npz.{dead}.456.abcd.tmp").write_text("x")
    live = tmp_path / f".scenario_00002.npz.{os.getpid()}.456.abcd.tmp"  # a writer at work
    live.write_text("x")
    (tmp_path / "scenario_00001.npz").write_text("kept")
    assert remove_stray_temporaries(tmp_path, "scenario_*") == 1
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, "scenario_00001.npz"])


@pytest.mark.parametrize(
    ("make", "kwargs", "message"),
    [
        (lambda p: p.mkdir(), {}, "is a directory, expected a file"),
        (lambda p: p.write_text("x"), {"kind": "dir"}, "is a file, expected a folder"),
        (
            lambda p: p.write_text("my notes"),
            {"is_output": lambda p: p.suffix == ".npz"},
            "exists and is not a result file; choose another path",
        ),
        (lambda p: p.write_text("x"), {"overwrite": False}, "use --overwrite to replace it"),
    ],
)
def test_check_output_refuses(tmp_path, make, kwargs, message):
    path = tmp_path / "out"
    make(path)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(DataError, match=message):
        check_output(path, **kwargs)
    assert sorted(os.listdir(tmp_path)) == before


def test_check_output_accepts_new_and_replaceable_paths(tmp_path):
    assert (
        check_output(tmp_path / "new" / "deeper" / "x.csv") == tmp_path / "new" / "deeper" / "x.csv"
    )
    assert not (tmp_path / "new").exists()  # checking creates nothing
    (tmp_path / "old.csv").write_text("a")
    check_output(tmp_path / "old.csv", is_output=lambda p: p.suffix == ".csv")


def test_check_output_below_a_file(tmp_path):
    (tmp_path / "plain").write_text("x")
    with pytest.raises(DataError, match="'.*plain' is a file"):
        check_output(tmp_path / "plain" / "sub" / "out.csv")


def test_check_output_unwritable_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "_writable", lambda folder: False)
    with pytest.raises(DataError, match=r"cannot write timeline file .* is not writable"):
        check_output(tmp_path / "t.npz", what="timeline file")


def _bomb(path, *, shape, zeros):
    """A timeline-looking .npz whose 'steps' member header asks for ``shape`` float64 and
    holds ``zeros`` zero bytes (zeros deflate ~1 000x)."""
    import json
    import zipfile

    import numpy as np

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("meta.npy", "w") as member:
            np.lib.format.write_array(member, np.array(json.dumps({"version": 1})))
        with archive.open("steps.npy", "w", force_zip64=True) as member:
            header = {"descr": "<f8", "fortran_order": False, "shape": shape}
            np.lib.format.write_array_header_1_0(member, header)
            member.write(bytes(zeros))
    return path


def test_decompression_bomb_timeline_is_refused_before_it_inflates(tmp_path, monkeypatch):
    """A timeline whose members inflate far beyond the file (here 40 MB from ~40 kB, with a
    1 MB floor standing in for the real 256 MB) is refused in one line, and nothing of it is
    inflated: numpy never opens it (issue 33 item 7)."""
    import numpy as np

    from wdn_explain.timeline import Timeline

    path = _bomb(tmp_path / "t.npz", shape=(5_000_000,), zeros=40_000_000)
    monkeypatch.setattr(files, "INFLATION_FLOOR", 1e6)
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("inflated"))
    size = path.stat().st_size
    with pytest.raises(DataError) as info:
        Timeline.load(path)
    assert str(info.value) == (
        f"'{path}' would inflate to 40 MB from {size / 1e6:.2f} MB (over 200x): refused unread"
    )


def test_array_header_asking_for_more_than_its_member_is_refused(tmp_path):
    """An .npy header asking for 8e15 bytes over 800 bytes: numpy would allocate what the
    header asks (MemoryError, a traceback); refused by name instead."""
    from wdn_explain.timeline import Timeline

    path = _bomb(tmp_path / "t.npz", shape=(10**15,), zeros=800)
    with pytest.raises(DataError, match=r"array 'steps.npy' asks for 8000000000000000 bytes"):
        Timeline.load(path)


def test_one_member_is_read_alone_with_the_same_checks(tmp_path, monkeypatch):
    """A timeline's metadata is read without touching its other arrays (the app reads it on
    every full rerun: a shipped timeline holds ~1 500 arrays), and the checks still hold for
    the member read: a member that would inflate too far, or whose header asks for more
    than it holds, is refused by name; a missing one is a KeyError."""
    import json

    import numpy as np

    from wdn_explain.files import load_npz_member
    from wdn_explain.timeline_file import read_meta

    path = _bomb(tmp_path / "t.npz", shape=(10**15,), zeros=800)  # a bad 'steps' member
    monkeypatch.setattr(np, "load", lambda *a, **k: pytest.fail("np.load read every member"))
    assert json.loads(str(load_npz_member(path, "meta"))) == {"version": 1}
    assert read_meta(path) == {"version": 1}
    with pytest.raises(DataError, match=r"array 'steps.npy' asks for 8000000000000000 bytes"):
        load_npz_member(path, "steps")
    with pytest.raises(KeyError):
        load_npz_member(path, "nothing")
    big = _bomb(tmp_path / "big.npz", shape=(5_000_000,), zeros=40_000_000)
    monkeypatch.setattr(files, "INFLATION_FLOOR", 1e6)
    with pytest.raises(DataError, match="would inflate to 40 MB"):
        load_npz_member(big, "steps")
