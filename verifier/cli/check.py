"""``ctxproof check BEFORE AFTER``: one rewrite of one window file into another.

Calls :func:`verifier.check.check_rewrite` (docs/api.md, "Checking one rewrite");
findings point at the line of their first item in AFTER, and ``--repair`` writes
the repaired window once its spills are committed to the store.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from verifier.audit import TraceReport, exit_code_for
from verifier.batch import close_store
from verifier.check import RewriteResult, check_rewrite
from verifier.cli.common import (
    EPILOG,
    Out,
    budget_options,
    format_option,
    mode_option,
    text_lines,
    undecided_lines,
)
from verifier.cli.inputs import load_window, open_store
from verifier.errors import InputError
from verifier.findings import Finding
from verifier.io import (
    _id_lines,
    check_references,
    forget_reads,
    window_to_json,
)
from verifier.store import SqliteStore
from verifier.window import Item

__all__ = ["check"]


@click.command(epilog=EPILOG)
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@mode_option
@click.option(
    "--repair",
    "repair_out",
    type=click.Path(dir_okay=False),
    help="Write the repaired window here (spills go to --store first).",
)
@click.option(
    "--claimed",
    "claimed",
    multiple=True,
    help="An id the rewriter claims it preserved (repeatable).",
)
@budget_options
@format_option
@click.pass_obj
def check(
    obj: Out,
    before: str,
    after: str,
    store_path: str | None,
    mode: str,
    repair_out: str | None,
    claimed: tuple[str, ...],
    fmt: str,
) -> int:
    """Check one rewrite: BEFORE and AFTER are window files."""
    if repair_out is not None:
        for what, path in (("the --store file", store_path), ("BEFORE", before), ("AFTER", after)):
            if path is not None and _same_file(repair_out, path):
                raise click.UsageError(
                    f"--repair {repair_out} is {what}: the repaired window would replace it;"
                    " write it to a file of its own"
                )
    # the store is only read here; a repair that spills opens it for writing (creating
    # it) once everything is checked and OUT is staged
    creating = repair_out is not None and store_path is not None and not Path(store_path).exists()
    store = None if creating else open_store(store_path)
    w_before = load_window(before, "check")
    w_after = load_window(after, "check")
    forget_reads()  # the process reads no other window: the after window's text goes

    def known(item_id: str) -> bool:
        return store is not None and store.has_id(item_id)

    before_by_id = w_before.by_id()
    defined = set(before_by_id)
    defined.update(it.id for it in w_after.items)
    check_references(w_before.items, defined, known, before)
    # an item read as the very item of the window before was checked there, alike
    check_references(w_after.items, defined, known, after, checked=before_by_id)
    for cid in claimed:
        if cid not in defined and not known(cid):
            raise InputError(
                f"--claimed names {cid!r}, which neither window defines",
                file=after,
                fix="claim only ids of the windows",
            )
    # the domain knowledge is BEFORE's: a rewrite cannot add to it, so what AFTER's
    # background adds is no premise of any check (docs/formats.md, "Windows"); each
    # window's background was found satisfiable as it was read
    background = tuple(w_before.background)
    result = check_rewrite(
        w_before,
        w_after,
        store=store,
        background=background,
        mode=mode,
        claimed_preserved=tuple(dict.fromkeys(claimed)) or None,  # an id given twice: once
        line=None,
    )
    close_store(store)  # only read; a spill opens it for writing
    result = _with_lines(result, after)
    # the repair is written before anything is printed: a failure there (exit 2) leaves
    # no output that promises another exit code
    note = None
    if repair_out is not None:
        note = _write_repair(result, repair_out, store_path, background, w_after.items)
    if fmt == "json":
        payload = _report_json(after, [result], list(result.findings))
        if result.repair is not None:
            payload["repair"] = {
                "verdict": result.repair.verdict,
                "spill": [it.id for it in result.repair.spill],
                "actions": list(result.repair.actions),
                "claimed_preserved": list(result.repair.claimed_preserved),
            }
        obj.line(json.dumps(payload, ensure_ascii=False))
    else:
        for text in text_lines(after, [f.to_json() for f in result.findings]):
            obj.line(text)
        for text in undecided_lines(after, _report_json(after, [result], [])):
            obj.note(text)
    obj.progress(f"{after}: verdict {result.verdict}, {len(result.findings)} finding(s)")
    if note is not None:
        obj.note(note)
    code = exit_code_for([TraceReport(after, (result,), result.findings)])
    return code


def _same_file(a: str, b: str) -> bool:
    """Do two paths name one file (the same path, or links to one file)?"""
    if os.path.realpath(a) == os.path.realpath(b):  # never raises, a link loop included
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


_STRING_AT_QUOTE = re.compile(r'"[^"]*(?=")')
"""From a quote to the next one (left out, so the next match starts there)."""


def _first_lines(text: str, needles: set[str]) -> dict[str, int]:
    """The line of the first occurrence of each needle (a JSON string) in text.

    One pass, whatever the number of needles: an occurrence of a needle with no
    quote inside starts at a quote and ends at the next one, so every quote and
    the text up to the next quote is looked up once. A needle with a quote inside
    (an escaped one) is looked for on its own.
    """
    first: dict[str, int] = {}
    plain = {n for n in needles if '"' not in n[1:-1]}
    if plain:
        left = len(plain)
        for m in _STRING_AT_QUOTE.finditer(text):
            candidate = m.group() + '"'
            if candidate in plain and candidate not in first:
                first[candidate] = m.start()
                left -= 1
                if not left:
                    break
    for needle in needles - plain:
        pos = text.find(needle)
        if pos >= 0:
            first[needle] = pos
    if not first:
        return {}  # nothing found: no line to count
    breaks = [m.start() for m in re.finditer("\n", text)]
    return {needle: bisect.bisect_left(breaks, pos) + 1 for needle, pos in first.items()}


def _with_lines(result: RewriteResult, path: str) -> RewriteResult:
    """Findings of a window check point at the line of their first item in the file."""
    if not result.findings:  # no line to find: the file is not read again
        return dataclasses.replace(result, line=1)
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, ValueError):  # gone or changed since it was read: lines stay 1
        return result
    items = _id_lines(text)  # the line of each item's id: where the item is
    # an item not in AFTER (dropped): the first line that names it, else the first line
    named = {
        json.dumps(f.items[0], ensure_ascii=False)
        for f in result.findings
        if f.items and f.items[0] not in items
    }
    lines = _first_lines(text, named)

    def line_of(f: Finding) -> int:
        if not f.items:
            return 1
        first = f.items[0]
        if first in items:
            return items[first]
        return lines.get(json.dumps(first, ensure_ascii=False), 1)

    fixed = [dataclasses.replace(f, line=line_of(f)) for f in result.findings]
    return RewriteResult(
        result.pass_,
        1,
        result.policy,
        result.verdict,
        tuple(fixed),
        result.undecided,
        result.demoted,
        result.repair,
    )


def _write_repair(
    result: RewriteResult,
    out: str,
    store_path: str | None,
    background: Sequence[str],
    after_items: Sequence[Item],
) -> str:
    """Spill what the repair spills, then write OUT; return the note to show.

    OUT is staged (written beside its place, synced) before the store is
    touched, so a missing folder or a full disk fails before any spill is
    committed; it is put in place once the spill is committed. A repair that
    spills needs ``--store`` (usage error, nothing written, without it); one that
    spills nothing (it demotes, reverts or removes) needs no store.
    """
    from verifier.fsutil import stage  # only --repair writes a file

    repair = result.repair
    if repair is not None and repair.spill and store_path is None:
        ids = ", ".join(repr(it.id) for it in repair.spill[:5])
        more = f" and {len(repair.spill) - 5} more" if len(repair.spill) > 5 else ""
        raise click.UsageError(
            f"--repair spills {ids}{more} to the store before it writes {out}: give --store DB"
            " (a new file is created)"
        )
    items = after_items if repair is None else repair.window
    payload = window_to_json(items, background)
    with stage(out, json.dumps(payload, ensure_ascii=False, indent=2) + "\n") as staged:
        if repair is not None and repair.spill and store_path is not None:
            target = SqliteStore(store_path, readonly=False)
            try:
                target.spill(list(repair.spill))  # commits before returning
            finally:
                target.close()
        staged.commit()
    if repair is None:
        # nothing to repair: OUT is the window the rewrite produced, as it is
        return f"{out}: nothing to repair; the rewritten window is written as it is"
    return (
        f"{out}: repaired window written ({len(repair.spill)} item(s) spilled;"
        f" repaired rewrite: {repair.verdict})"
    )


def _report_json(
    name: str, rewrites: Sequence[RewriteResult], findings: Sequence[Finding]
) -> dict[str, Any]:
    report = TraceReport(name, tuple(rewrites), tuple(findings))
    return report.to_json()
