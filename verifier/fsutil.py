"""Writing output files atomically: the one way ctxproof puts a file on disk.

A file is written to a fresh temporary file in the target folder (created with
``O_EXCL``, so a symlink planted under a predictable name is never followed),
flushed to disk, renamed over the target, and the folder is synced. A reader
sees the old file or the new one, never a part. The new file's mode follows the
umask, as for any file a program creates. When anything fails the temporary
file is removed and :class:`~verifier.errors.OutputError` names the path and
the reason.

While a file is staged, the folder it goes to is locked (``flock`` on the
folder itself, so no lock file is left behind): a writer that finds the lock
free knows that every temporary file of ours in that folder is a stray of a
run that was killed, and removes it (:func:`remove_strays`).

Writing can be split in two steps, so that a caller can stage the file, do
something else that may fail (commit spills to a store), and only then put the
file in place:

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with stage(folder / "out.txt", "hello\\n") as staged:
...     _ = staged.commit()
>>> (folder / "out.txt").read_text()
'hello\\n'
>>> sorted(p.name for p in folder.iterdir())
['out.txt']
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from verifier.errors import OutputError

try:
    import fcntl
except ImportError:  # pragma: no cover - a system without flock: no folder locks
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "Staged",
    "StagedText",
    "atomic_write",
    "atomic_write_all",
    "folder_lock",
    "make_folder",
    "remove_strays",
    "stage",
    "stage_text",
    "write_set",
]

TEMPORARY = re.compile(r"\..{1,32}\.[a-z0-9_]{8}\.ctxproof\.tmp", re.DOTALL)
"""The name of a temporary file :class:`Staged` writes: ``.NAME.XXXXXXXX.ctxproof.tmp``
(distinct enough that no other program's file in a shared folder is taken for one)."""

# errors of fsync on a folder that only say the file system cannot do it
_NO_DIR_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES, errno.EISDIR}


def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no other portable way to read it
    os.umask(mask)
    return mask


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _failure(path: Path, exc: OSError) -> OutputError:
    err = OutputError(
        f"{path}: cannot write: {_reason(exc)}; check that the folder exists, is writable"
        " and has free space, or choose another path"
    )
    err.errno = exc.errno
    return err


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        if exc.errno in _NO_DIR_SYNC:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


_locks_guard = threading.RLock()
_held: dict[tuple[int, int], list[int]] = {}
"""Folders this process holds locked: (device, inode) -> [folder fd, how many holders]."""


def _lock(folder: Path) -> tuple[int, int] | None:
    """Lock folder for this process (re-entrant); the key to unlock it with, or None when
    the folder cannot be locked (no flock here, a file system without it)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None  # a missing folder: writing into it fails and says so
    with _locks_guard:
        try:
            st = os.fstat(fd)
            key = (st.st_dev, st.st_ino)
            held = _held.get(key)
            if held is not None:
                held[1] += 1
                os.close(fd)
                return key
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return None
        _held[key] = [fd, 1]
    # the lock is new: nothing of ours is staged in this folder, by us or by anyone
    remove_strays(folder)
    return key


def _unlock(key: tuple[int, int] | None) -> None:
    if key is None:
        return
    with _locks_guard:
        held = _held.get(key)
        if held is None:
            return
        held[1] -= 1
        if held[1] == 0:
            del _held[key]
            os.close(held[0])  # closing the last descriptor releases the flock


@contextlib.contextmanager
def folder_lock(folder: str | Path) -> Iterator[None]:
    """Hold folder locked against other ctxproof writers while the block runs.

    Taking the lock removes the temporaries a killed run left there
    (:func:`remove_strays`). Where folders cannot be locked, nothing is locked
    and nothing removed.
    """
    key = _lock(Path(folder))
    try:
        yield
    finally:
        _unlock(key)


def remove_strays(folder: str | Path) -> list[str]:
    """Remove the temporary files of ours (:data:`TEMPORARY`, regular files) in
    folder; return their names. Links and anything else of that name are left alone.

    Call it only with the folder locked (:func:`folder_lock`): another writer's
    temporaries are then not there.
    """
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not TEMPORARY.fullmatch(name):
            continue
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
                removed.append(name)
    return removed


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _replaceable(path: Path) -> None:
    """Refuse a target that is not a file: renaming over a device, a pipe or a socket
    (``--out /dev/null``, ``--out /dev/stdout``: a link to one) would replace it."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(path)  # a link is replaced, not followed: unless it names a device
    except OSError:
        return  # nothing there (or a dangling link): the new file takes the name
    if stat.S_ISREG(st.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
    raise OutputError(
        f"{path}: is {kind}, which ctxproof does not replace; give the path of a file"
    )


class Staged:
    """A file written to a temporary name beside its target, not yet in place.

    :meth:`commit` renames it over the target; :meth:`discard` (or leaving the
    ``with`` block without committing) removes it. The folder stays locked
    (:func:`folder_lock`) until then.
    """

    def __init__(self, path: str | Path, data: str | bytes) -> None:
        self.path = Path(path)
        self.tmp: Path | None = None
        self._lock: tuple[int, int] | None = None
        payload = data.encode("utf-8") if isinstance(data, str) else data
        folder = self.path.parent
        _replaceable(self.path)
        self._lock = _lock(folder)
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{self.path.name[:32]}.", suffix=".ctxproof.tmp", dir=folder
            )
        except OSError as exc:
            _unlock(self._lock)
            self._lock = None
            raise _failure(self.path, exc) from exc
        self.tmp = Path(name)
        try:
            try:
                os.fchmod(fd, 0o666 & ~_umask())
                view = memoryview(payload)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            self.discard()
            raise _failure(self.path, exc) from exc
        except BaseException:
            self.discard()
            raise

    def commit(self) -> Path:
        """Put the file in place (rename over the target) and sync the folder."""
        if self.tmp is None:
            raise OutputError(f"{self.path}: nothing staged to commit")
        try:
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise _failure(self.path, exc) from exc
        self.tmp = None
        try:
            _sync_folder(self.path.parent)
        except OSError as exc:
            raise _failure(self.path, exc) from exc
        finally:
            self._release()
        return self.path

    def discard(self) -> None:
        """Remove the temporary file, if it is still there."""
        if self.tmp is not None:
            # a failure here changes nothing: the error that led here is the one to report
            with contextlib.suppress(OSError):
                self.tmp.unlink()
            self.tmp = None
        self._release()

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        _unlock(lock)

    def __enter__(self) -> Staged:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.discard()


class StagedText(Staged):
    """A text file (UTF-8) written piece by piece to a temporary name beside its target.

    For output made as it is computed (an import written event by event): the
    pieces go to the temporary file as they come, :meth:`commit` flushes and
    syncs it and puts it in place, :meth:`discard` (or leaving the ``with``
    block without committing) removes it. A write that fails removes it too and
    raises :class:`~verifier.errors.OutputError`. ``tell``, ``seek`` and
    ``truncate`` let the writer take back what it wrote.
    """

    def __init__(self, path: str | Path) -> None:  # not Staged's: nothing is written yet
        self.path = Path(path)
        self.tmp = None
        self._lock = None
        self._file: IO[str] | None = None
        folder = self.path.parent
        _replaceable(self.path)
        self._lock = _lock(folder)  # held until commit or discard, as Staged holds it
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{self.path.name[:32]}.", suffix=".ctxproof.tmp", dir=folder
            )
        except OSError as exc:
            self._release()
            raise _failure(self.path, exc) from exc
        self.tmp = Path(name)
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            self._file = os.fdopen(fd, "w", encoding="utf-8", newline="")
        except OSError as exc:
            os.close(fd)
            self.discard()
            raise _failure(self.path, exc) from exc

    def _open(self) -> IO[str]:
        if self._file is None:
            raise OutputError(f"{self.path}: the staged file is closed")
        return self._file

    def write(self, text: str) -> int:
        try:
            return self._open().write(text)
        except OSError as exc:
            self.discard()
            raise _failure(self.path, exc) from exc

    def tell(self) -> int:
        return self._open().tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._open().seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        try:
            return self._open().truncate(size)
        except OSError as exc:
            self.discard()
            raise _failure(self.path, exc) from exc

    def commit(self) -> Path:
        """Flush and sync the file, then put it in place as :meth:`Staged.commit` does."""
        handle = self._open()
        try:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        except OSError as exc:
            self.discard()
            raise _failure(self.path, exc) from exc
        self._file = None
        return super().commit()

    def discard(self) -> None:
        """Close and remove the temporary file, if it is still there."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        super().discard()

    def __enter__(self) -> StagedText:
        return self


def stage_text(path: str | Path) -> StagedText:
    """A text file staged beside path, to be written piece by piece; commit puts it in place.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with stage_text(folder / "out.txt") as staged:
    ...     _ = staged.write("hel"), staged.write("lo\\n")
    ...     _ = staged.commit()
    >>> (folder / "out.txt").read_text()
    'hello\\n'

    Raises:
        OutputError: the folder is missing or read-only (nothing is left).
    """
    return StagedText(path)


def make_folder(path: str | Path, what: str = "output folder") -> Path:
    """Make a folder (and its parents); a place that refuses it is an OutputError."""
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{folder}: cannot make the {what}: {_reason(exc)}; choose another path"
        ) from exc
    return folder


def stage(path: str | Path, data: str | bytes) -> Staged:
    """Write data to a temporary file beside path; :meth:`Staged.commit` puts it in place.

    Raises:
        OutputError: the folder is missing or read-only, or the disk is full
            (the temporary file is removed).
    """
    return Staged(path, data)


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write data (text is UTF-8) to path atomically; return the path.

    Raises:
        OutputError: the file could not be written; nothing partial is left.
    """
    with stage(path, data) as staged:
        return staged.commit()


def atomic_write_all(files: Sequence[tuple[str | Path, str | bytes]]) -> list[Path]:
    """Write several files: all are staged first, then all put in place.

    A failure while staging (a full disk) leaves none of them changed.

    Raises:
        OutputError: a file could not be written.
    """
    staged: list[Staged] = []
    try:
        for path, data in files:
            staged.append(stage(path, data))
        return [s.commit() for s in staged]
    finally:
        for s in staged:
            s.discard()


def _real_folder(folder: Path, name: str) -> Path:
    """folder/name as a folder of its own (made if missing); a link there is refused."""
    path = folder / name
    try:
        path.mkdir(exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot make the folder: {_reason(exc)}; choose another path"
        ) from exc
    if not stat.S_ISDIR(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
        raise OutputError(
            f"{path}: is {what}, which ctxproof does not write through; remove it or"
            " choose another output folder"
        )
    return path


def _remove_stale(folder: Path, sub: str, stale: Callable[[str], bool], keep: set[str]) -> None:
    """Remove the files of folder/sub that stale() names and keep does not, through a
    descriptor of that folder opened without following a link (a link put in its place
    is never followed)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        top = os.open(folder, flags)
    except OSError:
        return
    try:
        fd = top
        if sub:
            try:
                fd = os.open(sub, flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=top)
            except OSError:
                return  # missing, or a link: nothing of ours to clean there
        try:
            for name in os.listdir(fd):
                if name in keep or not stale(name):
                    continue
                with contextlib.suppress(OSError):
                    if not stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode):
                        os.unlink(name, dir_fd=fd)  # a link is removed, never followed
        finally:
            if fd != top:
                os.close(fd)
    finally:
        os.close(top)


def write_set(
    folder: str | Path,
    files: Mapping[str, str | bytes],
    *,
    stale: Mapping[str, Callable[[str], bool]] | None = None,
    what: str = "output folder",
) -> list[Path]:
    """Write a set of files into folder as one, and remove what an earlier set left.

    ``files`` maps names relative to folder (``name`` or ``sub/name``, one
    level) to their data. The folder is made when missing (a link the caller
    named is followed); a subfolder must be a folder of its own (a link there
    is an :class:`OutputError`). Every file is written and synced under a
    temporary name before any is put in place, so a full disk or a refused
    write leaves the earlier set as it was; the renames that follow cannot fail
    for lack of space. ``stale`` maps a subfolder (``""``: folder itself) to a
    test of file names: the files it names that this set does not write are
    removed afterwards, without following links.

    Raises:
        OutputError: a folder cannot be made or a file cannot be written.
    """
    out = make_folder(folder, what)
    subs = sorted({name.split("/", 1)[0] for name in files if "/" in name})
    for sub in subs:
        _real_folder(out, sub)
    paths = atomic_write_all([(out / name, data) for name, data in files.items()])
    for sub, test in (stale or {}).items():
        keep = {
            name.split("/", 1)[-1]
            for name in files
            if (name.split("/", 1)[0] if "/" in name else "") == sub
        }
        with folder_lock(out):
            _remove_stale(out, sub, test, keep)
    return paths
