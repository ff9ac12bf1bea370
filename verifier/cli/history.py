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
    from verifier.importers import import_history

    text = import_history(
        history_format,
        [Path(f) for f in files],
        Path(annotations) if annotations else None,
        sample=sample,
        extract=extract,
    )
    if out is None:
        obj.stdout.write(text)
        return EXIT_OK
    atomic_write(out, text)
    counts = _event_counts(text)
    if fmt == "json":
        obj.line(json.dumps({"out": out, **counts}))
    else:
        obj.line(
            f"{out}: {counts['appends']} append(s), {counts['rewrites']} rewrite(s),"
            f" {counts['items']} item(s)"
        )
    return EXIT_OK


def _event_counts(text: str) -> dict[str, int]:
    counts = {"appends": 0, "rewrites": 0, "items": 0}
    for line in text.splitlines()[1:]:
        event = json.loads(line)
        if event["event"] == "append":
            counts["appends"] += 1
            counts["items"] += len(event["items"])
        elif event["event"] == "rewrite":
            counts["rewrites"] += 1
    return counts
