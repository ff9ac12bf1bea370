"""Writing output files atomically: the one way ctxproof puts a file on disk.

A file is written to a fresh temporary file in the target folder (created with
``O_EXCL``, so a symlink planted under a predictable name is never followed),
flushed to disk, renamed over the target, and the folder is synced. A reader
sees the old file or the new one, never a part. The new file's mode follows the
umask, as for any file a program creates. When anything fails the temporary
file is removed and :class:`~verifier.errors.OutputError` names the path and
the reason.

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
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

from verifier.errors import OutputError

__all__ = [
    "Staged",
    "StagedText",
    "atomic_write",
    "atomic_write_all",
    "make_folder",
    "stage",
    "stage_text",
]

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


class Staged:
    """A file written to a temporary name beside its target, not yet in place.

    :meth:`commit` renames it over the target; :meth:`discard` (or leaving the
    ``with`` block without committing) removes it.
    """

    def __init__(self, path: str | Path, data: str | bytes) -> None:
        self.path = Path(path)
        self.tmp: Path | None = None
        payload = data.encode("utf-8") if isinstance(data, str) else data
        folder = self.path.parent
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{self.path.name[:32]}.", suffix=".tmp", dir=folder
            )
        except OSError as exc:
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
        return self.path

    def discard(self) -> None:
        """Remove the temporary file, if it is still there."""
        if self.tmp is not None:
            # a failure here changes nothing: the error that led here is the one to report
            with contextlib.suppress(OSError):
                self.tmp.unlink()
            self.tmp = None

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
        self._file: IO[str] | None = None
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{self.path.name[:32]}.", suffix=".tmp", dir=self.path.parent
            )
        except OSError as exc:
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
