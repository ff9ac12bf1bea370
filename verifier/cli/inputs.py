"""Reading the files a command is given: a store, a window file, a trace file.

A file of another kind than the command reads is named as such (``wrong_kind``,
shared with the batch worker, which reads traces the same way).
"""

from __future__ import annotations

from pathlib import Path

from verifier.batch import close_store, read_trace, wrong_kind
from verifier.errors import InputError
from verifier.io import SNIFF_BYTES, decode_input, parse_window_text, read_input
from verifier.store import SqliteStore, Store
from verifier.window import Trace, Window

__all__ = ["load_window", "open_store", "read_trace_file"]


def open_store(path: str | None, *, writable: bool = False) -> Store | None:
    """The store of ``--store`` (None without it); a missing one is bad input."""
    if path is None:
        return None
    if not writable and not Path(path).exists():
        raise InputError("store does not exist", file=path, fix="check the path, or drop --store")
    return SqliteStore(path, readonly=not writable)  # a StoreError names the path: exit 2


def load_window(path: str, command: str) -> Window:
    """A window file, validated; a file of another kind is named as such."""
    data = read_input(path)
    head = data[:SNIFF_BYTES]  # all a message about a file of another kind reads
    try:
        text = decode_input(data, path)
        del data  # not held beside its text while the window is read
        return parse_window_text(text, path)
    except InputError as exc:
        raise wrong_kind(exc, path, head, command, "window") from None


def read_trace_file(
    trace_path: str, store_path: str | None, command: str = "audit"
) -> tuple[Trace, Store | None]:
    """A trace file and the store it is read with (``--store``, else its header's)."""
    given = open_store(store_path)
    try:
        return read_trace(trace_path, read_input(trace_path), given, command)
    except BaseException:
        close_store(given)
        raise
