"""``ctxproof import FORMAT FILE...``: a real agent history as a trace.

Calls :func:`verifier.importers.import_history` (docs/importers.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from verifier.cli.common import EXIT_OK, Out, format_option
from verifier.fsutil import atomic_write
from verifier.importers import FORMATS as IMPORT_FORMATS

__all__ = ["import_cmd"]


@click.command(name="import")
@click.argument(
    "history_format", metavar="FORMAT", type=click.Choice((*IMPORT_FORMATS, "auto"))
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
    to stdout; with -o it is written atomically and a summary line (text or
    JSON) goes to stdout. See docs/importers.md.
    """
    from verifier.importers import import_session

    imported = import_session(
        history_format,
        [Path(f) for f in files],
        Path(annotations) if annotations else None,
        sample=sample,
        extract=extract,
    )
    if out is None:
        obj.stdout.write(imported.trace)
        return EXIT_OK
    atomic_write(out, imported.trace)
    if fmt == "json":
        obj.line(json.dumps({"out": out, "format": imported.format, **imported.coverage.to_json()}))
    else:
        obj.line(imported.coverage.line(out))
    return EXIT_OK
