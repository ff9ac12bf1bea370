"""``ctxproof import FORMAT FILE...``: a real agent history as a trace.

Calls :func:`verifier.importers.import_into` (docs/importers.md): the trace is
written as the history is read, to a file staged beside ``-o`` (put in place
once the import succeeded) or to a temporary file copied to stdout, so that
bad input leaves no file and prints no part of a trace.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import IO, NoReturn

import click

from verifier.cli.common import EXIT_OK, Choice, Out, format_option
from verifier.errors import OutputError
from verifier.fsutil import stage_text
from verifier.importers import FORMATS as IMPORT_FORMATS
from verifier.importers.coverage import Coverage

__all__ = ["import_cmd"]


class _Held:
    """The trace held in an anonymous temporary file until it goes to stdout whole;
    a failure of that file (a full disk) is an OutputError."""

    def __init__(self) -> None:
        try:
            self.file: IO[str] = tempfile.TemporaryFile(  # noqa: SIM115 (the caller closes it)
                "w+", encoding="utf-8", newline=""
            )
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> NoReturn:
        raise OutputError(
            f"cannot hold the trace in a temporary file: {exc.strerror or exc}; free space in"
            f" {tempfile.gettempdir()} or write the trace with -o"
        ) from exc

    def write(self, text: str) -> int:
        try:
            return self.file.write(text)
        except OSError as exc:
            self._fail(exc)

    def tell(self) -> int:
        return self.file.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def truncate(self, size: int | None = None) -> int:
        return self.file.truncate(size)

    def copy_to(self, out: IO[str]) -> None:
        try:
            self.file.seek(0)
        except OSError as exc:
            self._fail(exc)
        shutil.copyfileobj(self.file, out)


@click.command(name="import")
@click.argument(
    "history_format", metavar="FORMAT", type=Choice((*IMPORT_FORMATS, "auto"))
)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Write the trace here (atomically) instead of to stdout.",
)
@click.option(
    "--annotations",
    "annotations",
    type=click.Path(dir_okay=False),
    help='JSONL of {"after": ID, "items": [...]}: commitments and claims to add.',
)
@click.option("--sample", "sample", help="inspect: the sample to import (ID or ID:EPOCH).")
@click.option(
    "--extract",
    "extract",
    metavar="MODULE:FUNCTION",
    help="An extractor, extract(message, context), giving commitments and claims"
    " (MODULE:FUNCTION or path.py:function).",
)
@format_option
@click.pass_obj
def import_cmd(
    obj: Out,
    history_format: str,
    files: tuple[str, ...],
    out: str | None,
    annotations: str | None,
    sample: str | None,
    extract: str | None,
    fmt: str,
) -> int:
    """Import a real agent history (FILE... in order) as a trace.

    FORMAT auto picks the format from the content. Without -o the trace goes
    to stdout and a summary line (text or JSON) to stderr; with -o the trace is
    written atomically and the summary line goes to stdout. See
    docs/importers.md.
    """
    from verifier.importers import import_into

    inputs = [Path(f) for f in files]
    notes = Path(annotations) if annotations else None
    if out is None:
        held = _Held()
        with held.file:
            read, counted = import_into(
                history_format, inputs, held, notes, sample=sample, extract=extract
            )
            held.copy_to(obj.stdout)
        # the trace is stdout: the summary goes to stderr, so what the import leaves
        # unchecked is said wherever the trace goes
        obj.note(_summary(fmt, None, read, counted))
        return EXIT_OK
    with stage_text(out) as staged:
        read, counted = import_into(
            history_format, inputs, staged, notes, sample=sample, extract=extract
        )
        staged.commit()
    obj.line(_summary(fmt, out, read, counted))
    return EXIT_OK


def _summary(fmt: str, out: str | None, read: str, counted: Coverage) -> str:
    """The summary line: text, or one JSON object (``out`` null for stdout)."""
    if fmt == "json":
        return json.dumps({"out": out, "format": read, **counted.to_json()})
    return counted.line(out if out is not None else "<stdout>")
