"""Commands that read one trace (or window file) and show a part of it: ``why``, ``window``,
``ref`` and ``graph``.

They call the audit (:class:`verifier.audit.Auditor`, :func:`verifier.audit.audit_trace`)
and the justification graph (:mod:`verifier.graph`: ``why``, ``export``);
docs/api.md, "The command line".
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from verifier.audit import audit_trace
from verifier.batch import close_store, read_trace
from verifier.cli.common import EXIT_FINDINGS, EXIT_OK, Out, budget_options, format_option
from verifier.cli.inputs import load_window, open_store, read_trace_file
from verifier.errors import InputError, suggestion
from verifier.fsutil import atomic_write
from verifier.io import read_input, sniff_kind, window_to_json
from verifier.window import Event, Item, Rewrite

__all__ = ["graph_cmd", "ref_cmd", "why_cmd", "window_cmd"]


@click.command(name="why")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.argument("item")
@click.option(
    "--pass",
    "pass_no",
    type=click.IntRange(min=0),
    help="Answer as of this pass (default: the end of the trace).",
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@budget_options
@format_option
@click.pass_obj
def why_cmd(
    obj: Out, trace: str, item: str, pass_no: int | None, store_path: str | None, fmt: str
) -> int:
    """How do you know ITEM? The chain to primitives, or where it broke.

    Exit 0 when a chain to a retained primitive exists, 1 when it does not.
    """
    from verifier.graph import JustificationGraph, why
    from verifier.report import render_why

    loaded, store = read_trace_file(trace, store_path, "why")
    passes = sum(1 for ev in loaded.events if isinstance(ev, Rewrite))
    if pass_no is not None and pass_no > passes:
        raise InputError(
            f"--pass {pass_no}: the trace has {passes} pass(es)",
            file=trace,
            fix=f"give a pass from 0 to {passes}",
        )
    graph = JustificationGraph()
    audit_trace(loaded, store=store, graph=graph, until_pass=pass_no)
    close_store(store)
    try:
        answer = why(graph, item)
    except KeyError:
        ids = {it.id for ev in loaded.events for it in _event_items(ev)}
        raise InputError(
            f"item {item!r} does not appear in the trace"
            + (f" by pass {pass_no}" if pass_no is not None else ""),
            file=trace,
            fix=suggestion(item, ids) or "name an id the trace defines",
        ) from None
    if fmt == "json":
        obj.line(json.dumps({"trace": trace, **answer.to_json(graph)}, ensure_ascii=False))
    else:
        for text in render_why(graph, answer):
            obj.line(text)
    return EXIT_OK if answer.chain is not None else EXIT_FINDINGS


@click.command(name="window")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "--pass",
    "pass_no",
    required=True,
    type=click.IntRange(min=0),
    help="The window as of the end of this pass (0: before the first rewrite).",
)
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Write the window file here (atomically) instead of to stdout.",
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@format_option
@click.pass_obj
def window_cmd(
    obj: Out, trace: str, pass_no: int, out: str | None, store_path: str | None, fmt: str
) -> int:
    """Write the window of TRACE as of the end of pass N, as a window file.

    That is the window rewrite N+1 starts from: give it to `check` as BEFORE and
    that rewrite's window as AFTER. Stubs for items the trace itself spills stand
    for items no store holds yet, and a window file keeps no record of items
    dropped earlier that its items still cite: both are named on stderr.
    """
    from verifier.audit import Auditor

    loaded, store = read_trace_file(trace, store_path, "window")
    try:
        passes = sum(1 for ev in loaded.events if isinstance(ev, Rewrite))
        if pass_no > passes:
            raise InputError(
                f"--pass {pass_no}: the trace has {passes} pass(es)",
                file=trace,
                fix=f"give a pass from 0 to {passes}",
            )
        auditor = Auditor(loaded.header.background, name=loaded.name, store=store)
        for ev in loaded.events:
            if isinstance(ev, Rewrite) and auditor.pass_no >= pass_no:
                break
            auditor.feed(ev)
        window = auditor.window
        in_trace = [
            it.id
            for it in window
            if it.kind == "stub"
            and it.stub_ref is not None
            and auditor.store.top._body(it.stub_ref) is not None
            and (store is None or store._body(it.stub_ref) is None)
        ]
        held = {it.id for it in window}
        dangling = sorted(
            {
                ref
                for it in window
                for _, ref in it.citations
                if ref not in held and not auditor.store.has_id(ref)
            }
        )
    finally:
        close_store(store)
    text = json.dumps(window_to_json(window, loaded.header.background), ensure_ascii=False)
    if out is None:
        obj.line(text)
    else:
        path = atomic_write(out, text + "\n")
        if fmt == "json":
            payload = {"trace": trace, "pass": pass_no, "out": str(path), "items": len(window)}
            obj.line(json.dumps(payload, ensure_ascii=False))
        else:
            obj.line(f"{path}: the window of {trace} as of pass {pass_no} ({len(window)} items)")
    if in_trace:
        obj.note(
            f"ctxproof: stubs {', '.join(map(repr, in_trace))} stand for items {trace} spills;"
            " to check against this window, put them in a store first"
        )
    if dangling:
        obj.note(
            f"ctxproof: items of this window cite {', '.join(map(repr, dangling))}, dropped"
            " earlier and in no store; `check` reads such a window only when BEFORE or the"
            " store defines them"
        )
    return EXIT_OK


@click.command(name="ref")
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("item")
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@format_option
@click.pass_obj
def ref_cmd(obj: Out, file: str, item: str, store_path: str | None, fmt: str) -> int:
    """Print the ref of ITEM: sha256 of its canonical JSON, what its stub's "ref" must be.

    FILE is a window file or a trace; in a trace, the latest version of ITEM
    that an event writes (append, spill or rewrite). A stub stands for its item:
    when the file holds only a stub of ITEM, its ref is the stub's. Canonical
    JSON: keys sorted, no whitespace, UTF-8 as is (see docs/formats.md).
    """
    data = read_input(file)
    found: Item | None = None
    line: int | None = None
    ids: set[str] = set()
    if sniff_kind(data) == "window":
        window = load_window(file, "ref")
        found = window.by_id().get(item)
        ids = set(window.by_id())
    else:
        loaded, store = read_trace(file, data, open_store(store_path), "ref")
        close_store(store)
        for ev in loaded.events:
            for it in _event_items(ev):
                ids.add(it.id)
                if it.id == item and (it.kind != "stub" or found is None or found.kind == "stub"):
                    found, line = it, ev.line
    if found is None:
        raise InputError(
            f"no item {item!r} in the file",
            file=file,
            fix=suggestion(item, ids) or "name an id the file defines",
        )
    ref = found.stub_ref if found.kind == "stub" and found.stub_ref else found.ref
    if fmt == "json":
        stub = {"id": item, "kind": "stub", "ref": ref}
        payload = {"file": file, "item": item, "line": line, "ref": ref, "stub": stub}
        obj.line(json.dumps(payload, ensure_ascii=False))
    else:
        obj.line(ref)
    return EXIT_OK


@click.command(name="graph")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="FILE.graphml, FILE.json (node-link) or FILE.dot",
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@budget_options
@format_option
@click.pass_obj
def graph_cmd(obj: Out, trace: str, out: str, store_path: str | None, fmt: str) -> int:
    """Export the justification graph of a trace."""
    from verifier.graph import JustificationGraph, export

    if Path(out).suffix.lower() not in (".graphml", ".json", ".dot"):
        raise click.UsageError("--out must end in .graphml, .json or .dot")
    loaded, store = read_trace_file(trace, store_path, "graph")
    graph = JustificationGraph()
    audit_trace(loaded, store=store, graph=graph)
    close_store(store)
    path = export(graph, out)
    summary = {
        "trace": trace,
        "out": str(path),
        "nodes": graph.g.number_of_nodes(),
        "edges": graph.g.number_of_edges(),
    }
    if fmt == "json":
        obj.line(json.dumps(summary))
    else:
        obj.line(f"{path}: {summary['nodes']} nodes, {summary['edges']} edges")
    return EXIT_OK


def _event_items(ev: Event) -> tuple[Item, ...]:
    """The items an event of a trace writes (a rewrite's window, or its diff's puts)."""
    if isinstance(ev, Rewrite):
        return ev.window if ev.window is not None else ev.put
    return ev.items
