"""The one way ctxproof writes a file: a fresh temporary file, fsync, rename, folder fsync."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from verifier import fsutil
from verifier.errors import OutputError
from verifier.fsutil import atomic_write, atomic_write_all, stage, stage_text


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    os.umask(old)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


def full_disk(monkeypatch: pytest.MonkeyPatch, after: int = 0) -> None:
    """os.write fails with ENOSPC once `after` bytes were written."""
    real = os.write
    written = [0]

    def write(fd: int, data: Any) -> int:
        if written[0] + len(data) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written[0] += len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_writes_the_data_and_leaves_only_the_file(tmp_path: Path) -> None:
    out = atomic_write(tmp_path / "a.json", "ünïcødé\n")
    assert out == tmp_path / "a.json"
    assert out.read_bytes() == "ünïcødé\n".encode()
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    atomic_write(out, b"\x00\x01")
    assert out.read_bytes() == b"\x00\x01"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_symlink_planted_at_the_old_temporary_name_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious", "utf-8")
    for name in ("out.json.tmp", ".out.json.tmp"):
        (tmp_path / name).symlink_to(victim)
    atomic_write(tmp_path / "out.json", "new")
    assert victim.read_text("utf-8") == "precious"
    assert (tmp_path / "out.json").read_text("utf-8") == "new"
    assert not (tmp_path / "out.json").is_symlink()


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_mode_follows_the_umask(
    tmp_path: Path, umask: Callable[[int], None], mask: int, mode: int
) -> None:
    umask(mask)
    out = atomic_write(tmp_path / "a.txt", "x")
    assert out.stat().st_mode & 0o777 == mode


def test_a_full_disk_leaves_nothing_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "a.json"
    out.write_text("old", "utf-8")
    full_disk(monkeypatch, after=10)
    with pytest.raises(OutputError) as caught:
        atomic_write(out, "x" * 100)
    assert str(out) in str(caught.value) and "No space left on device" in str(caught.value)
    assert caught.value.errno == errno.ENOSPC
    assert isinstance(caught.value, OSError)
    assert out.read_text("utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_missing_folder_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory"):
        atomic_write(tmp_path / "nope" / "a.json", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_an_output_error(
    tmp_path: Path, make_readonly: Callable[[Path], None]
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    make_readonly(folder)
    with pytest.raises(OutputError, match=r"Read-only file system|Permission denied"):
        atomic_write(folder / "a.json", "x")
    assert list(folder.iterdir()) == []


def test_a_failed_rename_removes_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(_src: Any, _dst: Any) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputError, match="cross-device"):
        atomic_write(tmp_path / "a.json", "x")
    assert list(tmp_path.iterdir()) == []


def test_a_staged_file_not_committed_is_removed(tmp_path: Path) -> None:
    with stage(tmp_path / "a.json", "x") as staged:
        assert staged.tmp is not None and staged.tmp.exists()
        assert not (tmp_path / "a.json").exists()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), stage(tmp_path / "a.json", "x"):
        raise RuntimeError("the work between staging and commit failed")
    assert list(tmp_path.iterdir()) == []


def test_all_files_are_staged_before_any_is_put_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one").write_text("old one", "utf-8")
    (tmp_path / "two").write_text("old two", "utf-8")
    full_disk(monkeypatch, after=5)  # the first fits, the second does not
    with pytest.raises(OutputError, match="two"):
        atomic_write_all([(tmp_path / "one", "new 1"), (tmp_path / "two", "new two, longer")])
    assert (tmp_path / "one").read_text("utf-8") == "old one"
    assert (tmp_path / "two").read_text("utf-8") == "old two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]


def test_the_file_and_its_folder_are_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if Path("/proc/self/fd").exists() else "")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    atomic_write(tmp_path / "a.json", "x")
    assert len(synced) == 2
    if synced[0]:
        assert synced[0].endswith(".tmp") and synced[1] == str(tmp_path)


def test_the_umask_is_read_without_being_changed(umask: Callable[[int], None]) -> None:
    umask(0o027)
    assert fsutil._umask() == 0o027
    assert os.umask(0o027) == 0o027


def test_a_staged_text_is_written_piece_by_piece_and_put_in_place(
    tmp_path: Path, umask: Callable[[int], None]
) -> None:
    umask(0o077)
    out = tmp_path / "t.jsonl"
    out.write_text("old", "utf-8")
    with stage_text(out) as staged:
        staged.write("ünï")
        mark = staged.tell()
        staged.write("taken back")
        staged.seek(mark)
        staged.truncate()
        staged.write("cødé\n")
        assert out.read_text("utf-8") == "old"  # nothing in place before the commit
        assert staged.commit() == out
    assert out.read_bytes() == "ünïcødé\n".encode()
    assert out.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


def test_a_staged_text_not_committed_is_removed(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), stage_text(tmp_path / "t.jsonl") as staged:
        staged.write("part of a trace")
        raise RuntimeError("the import failed half way")
    assert list(tmp_path.iterdir()) == []


class _FullFile:
    """A text file on a full disk: every write and flush fails."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, _text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self.real.close()


@pytest.mark.parametrize("when", ["write", "commit"])
def test_a_staged_text_on_a_full_disk_leaves_nothing(tmp_path: Path, when: str) -> None:
    out = tmp_path / "t.jsonl"
    out.write_text("old", "utf-8")
    staged = stage_text(out)
    staged.write("fits")
    staged._file = _FullFile(staged._file)  # type: ignore[assignment]
    with pytest.raises(OutputError, match="No space left on device") as caught:
        if when == "write":
            staged.write("does not fit")
        else:
            staged.commit()
    assert str(out) in str(caught.value)
    assert out.read_text("utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]


def test_a_staged_text_in_a_missing_folder_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="No such file or directory"):
        stage_text(tmp_path / "nope" / "t.jsonl")
    assert list(tmp_path.iterdir()) == []
