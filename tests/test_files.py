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
