"""The ``ctxproof`` command line (its output and exit codes: docs/formats.md).

Output: one finding a line, ``TRACE:LINE: pass N: CODE name [ID,...]: message``,
or with ``--format json`` one JSON object per trace per line.

Exit codes: 0 every rewrite accepted and no finding; 1 at least one finding;
2 bad input or usage; 3 undecided (solver unknown or budget) and no finding;
4 internal error.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import click

from verifier import prove as prove_api
from verifier.audit import TraceReport, audit_trace, exit_code_for
from verifier.batch import (
    Job,
    audit_job,
    close_store,
    error_from_json,
    error_json,
    read_trace,
    run_jobs,
    summarize,
    summary_line,
    write_repairs,
    wrong_kind,
)
from verifier.check import RewriteResult, check_rewrite
from verifier.errors import CtxproofError, InputError, InternalError, OutputError, StoreError
from verifier.findings import Finding, cause_item
from verifier.fsutil import atomic_write, make_folder, stage
from verifier.importers import FORMATS as IMPORT_FORMATS
from verifier.io import (
    SNIFF_BYTES,
    check_background,
    check_references,
    decode_input,
    forget_reads,
    parse_window_text,
    read_input,
    sniff_kind,
    window_to_json,
)
from verifier.store import SqliteStore, Store
from verifier.window import Item, Rewrite, Trace, Window

__all__ = ["entry", "main"]

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_UNDECIDED, EXIT_INTERNAL = 0, 1, 2, 3, 4

_EPILOG = """\b
Text output: one finding a line,
  TRACE:LINE: pass N: CODE name [ID,...]: message
JSON output (--format json): one object per trace per line.
\b
Exit codes: 0 all rewrites accepted and no finding; 1 at least one finding;
2 bad input or usage; 3 undecided (solver unknown or budget) and no finding;
4 internal error.
"""


class _Out:
    """Where results go: stdout for results, stderr for progress and summaries."""

    def __init__(self, stdout: IO[str], stderr: IO[str]) -> None:
        self.stdout = stdout
        self.stderr = stderr

    def line(self, text: str) -> None:
        self.stdout.write(text + "\n")

    def note(self, text: str) -> None:
        """An error or usage message: always shown."""
        self.stderr.write(text + "\n")

    def progress(self, text: str) -> None:
        """A summary or progress line: shown only when stderr is a terminal."""
        if self.stderr.isatty():
            self.stderr.write(text + "\n")


def _format_finding(name: str, f: Finding, related: Sequence[str] = ()) -> str:
    line = f.line if f.line is not None else 1
    text = f"{name}:{line}: pass {f.pass_}: {f.code} {f.name} [{','.join(f.items)}]: {f.message}"
    if f.counterexample:
        shown = ", ".join(f"{k}={'true' if v else 'false'}" for k, v in f.counterexample)
        text += f" (counterexample: {shown})"
    if related:
        text += f" [related: {', '.join(related)}]"
    return text


def _text_lines(name: str, findings: Sequence[dict[str, Any]]) -> list[str]:
    """One line per primary finding; the findings related to it are listed by code on its
    line (the JSON output keeps each of them, with ``related_to``). A related finding
    whose primary is not among these (none should be) gets a line of its own."""

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f["pass"], f["line"], cause_item(f["code"], f["items"]))

    primaries = {
        (key(f), f["code"]): i for i, f in enumerate(findings) if f.get("related_to") is None
    }
    related: dict[int, list[str]] = {}
    shown: list[int] = []
    for i, f in enumerate(findings):
        p = primaries.get((key(f), f.get("related_to"))) if f.get("related_to") else None
        if p is None:
            shown.append(i)
        else:
            related.setdefault(p, []).append(f["code"])
    return [
        _format_json_finding(name, findings[i], sorted(related.get(i, ()))) for i in shown
    ]


def _open_store(path: str | None, *, writable: bool = False) -> Store | None:
    if path is None:
        return None
    if not writable and not Path(path).exists():
        raise InputError("store does not exist", file=path, fix="check the path, or drop --store")
    return SqliteStore(path, readonly=not writable)  # a StoreError names the path: exit 2


def _format_option(f: Any) -> Any:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format.",
    )(f)


_SOLVER_ENV = {
    "rlimit": "CTXPROOF_RLIMIT",
    "timeout": "CTXPROOF_TIMEOUT",
    "cross_check": "CTXPROOF_CROSS_CHECK",
}


def _set_budget(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Solver options go to the environment, so worker processes get them too."""
    if value is not None and param.name in _SOLVER_ENV:
        os.environ[_SOLVER_ENV[param.name]] = str(value)
    return value


def _budget_options(f: Any) -> Any:
    f = click.option(
        "--cross-check",
        "cross_check",
        type=click.Choice(["cvc5"]),
        callback=_set_budget,
        expose_value=False,
        help="Ask every solver query of a second solver too (extra 'cvc5'); a disagreement"
        " is an internal error naming the query.",
    )(f)
    f = click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        callback=_set_budget,
        expose_value=False,
        help="Seconds per solver query (default: none; env CTXPROOF_TIMEOUT).",
    )(f)
    return click.option(
        "--rlimit",
        type=click.IntRange(min=1),
        callback=_set_budget,
        expose_value=False,
        help="Solver resource limit per query (default 3000000; env CTXPROOF_RLIMIT);"
        " a query past it is undecided.",
    )(f)


def _check_ray_address(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A trace or a policy given after --ray was meant as input, not as the cluster."""
    if isinstance(value, str) and (
        value.endswith((".jsonl", ".py", ".toml")) or ".py:" in value or _exists(value)
    ):
        raise click.BadParameter(
            f"{value!r} is an input, taken as the Ray address; put --ray after the inputs"
            " or write --ray=ADDRESS",
            ctx=ctx,
            param=param,
        )
    return value


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # a NUL byte, a name too long
        return False


def _ray_option(f: Any) -> Any:
    return click.option(
        "--ray",
        "ray_address",
        is_flag=False,
        flag_value="default",
        default=None,
        metavar="[ADDRESS]",
        callback=_check_ray_address,
        help="Run on Ray (extra 'ray'): the cluster at ADDRESS, else RAY_ADDRESS, else one"
        " running here, else a new local one. Same output as --jobs 1. See docs/distributed.md.",
    )(f)


def _mode_option(f: Any) -> Any:
    return click.option(
        "--witness-mode",
        "mode",
        type=click.Choice(["support", "count"]),
        default="support",
        show_default=True,
        help="support: surviving witnesses must still support; count: none may leave.",
    )(f)


@click.group(epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ctxproof")
def cli() -> None:
    """Formal verification harness for self-editing context windows."""


@cli.command(epilog=_EPILOG)
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@_mode_option
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
@_budget_options
@_format_option
@click.pass_obj
def check(
    obj: _Out,
    before: str,
    after: str,
    store_path: str | None,
    mode: str,
    repair_out: str | None,
    claimed: tuple[str, ...],
    fmt: str,
) -> int:
    """Check one rewrite: BEFORE and AFTER are window files."""
    if repair_out is not None and store_path is None:
        raise click.UsageError("--repair needs --store: the repair spills there before it writes")
    # the store is only read here; a repair that spills opens it for writing (creating
    # it) once everything is checked and OUT is staged
    creating = repair_out is not None and store_path is not None and not Path(store_path).exists()
    store = None if creating else _open_store(store_path)
    w_before = _load_window(before, "check")
    w_after = _load_window(after, "check")
    forget_reads()  # the process reads no other window: the after window's text goes

    def known(item_id: str) -> bool:
        return store is not None and store.has_id(item_id)

    defined = set(w_before.by_id()) | set(w_after.by_id())
    check_references(w_before.items, defined, known, before)
    check_references(w_after.items, defined, known, after)
    for cid in claimed:
        if cid not in defined and not known(cid):
            raise InputError(
                f"--claimed names {cid!r}, which neither window defines",
                file=after,
                fix="claim only ids of the windows",
            )
    background = tuple(dict.fromkeys((*w_before.background, *w_after.background)))
    check_background(background, f"{before} + {after}")
    result = check_rewrite(
        w_before,
        w_after,
        store=store,
        background=background,
        mode=mode,
        claimed_preserved=claimed or None,
        line=None,
    )
    close_store(store)  # only read; a spill opens it for writing
    result = _with_lines(result, after)
    # the repair is written before anything is printed: a failure there (exit 2) leaves
    # no output that promises another exit code
    note = None
    if repair_out is not None and store_path is not None:
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
        for text in _text_lines(after, [f.to_json() for f in result.findings]):
            obj.line(text)
    obj.progress(f"{after}: verdict {result.verdict}, {len(result.findings)} finding(s)")
    if note is not None:
        obj.note(note)
    code = exit_code_for([TraceReport(after, (result,), result.findings)])
    return code


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
    breaks = [m.start() for m in re.finditer("\n", text)]
    return {needle: bisect.bisect_left(breaks, pos) + 1 for needle, pos in first.items()}


def _with_lines(result: RewriteResult, path: str) -> RewriteResult:
    """Findings of a window check point at the line of their first item in the file."""
    try:
        text = Path(path).read_text("utf-8")
    except (OSError, ValueError):  # gone or changed since it was read: lines stay 1
        return result
    needles = [
        json.dumps(f.items[0], ensure_ascii=False) if f.items else "" for f in result.findings
    ]
    lines = _first_lines(text, {n for n in needles if n})
    fixed = [
        dataclasses.replace(f, line=lines.get(needle, 1))
        for f, needle in zip(result.findings, needles, strict=True)
    ]
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
    store_path: str,
    background: Sequence[str],
    after_items: Sequence[Item],
) -> str:
    """Spill what the repair spills, then write OUT; return the note to show.

    OUT is staged (written beside its place, synced) before the store is
    touched, so a missing folder or a full disk fails before any spill is
    committed; it is put in place once the spill is committed.
    """
    repair = result.repair
    items = after_items if repair is None else repair.window
    payload = window_to_json(items, background)
    with stage(out, json.dumps(payload, ensure_ascii=False, indent=2) + "\n") as staged:
        if repair is not None and repair.spill:
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


def _load_window(path: str, command: str) -> Window:
    data = read_input(path)
    head = data[:SNIFF_BYTES]  # all a message about a file of another kind reads
    try:
        text = decode_input(data, path)
        del data  # not held beside its text while the window is read
        return parse_window_text(text, path)
    except InputError as exc:
        raise wrong_kind(exc, path, head, command, "window") from None



@cli.command(epilog=_EPILOG)
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    help="SQLite store to read (never written by an audit).",
)
@_mode_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (small batches run in this process; output as with --jobs 1).",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    help="Write an HTML report (index.html, one page per trace) and report.json here.",
)
@click.option(
    "--repair",
    "repair_dir",
    type=click.Path(file_okay=False),
    help="Write each refused rewrite's repaired window (and what it spills) here.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="Report a bad file (a JSON error object, or a line on stderr) and go on; exit 2.",
)
@click.option(
    "--summary",
    is_flag=True,
    help="End with a summary on stdout: a JSON object (--format json) or a line.",
)
@_ray_option
@_budget_options
@_format_option
@click.pass_obj
def audit(
    obj: _Out,
    traces: tuple[str, ...],
    store_path: str | None,
    mode: str,
    jobs: int,
    report_dir: str | None,
    repair_dir: str | None,
    keep_going: bool,
    summary: bool,
    ray_address: str | None,
    fmt: str,
) -> int:
    """Audit traces (JSONL), every event in order.

    With --keep-going a bad file is reported (JSON: {"trace", "error", "exit": 2})
    and the others are audited; the exit code is then 2. On a terminal a closing
    summary goes to stderr; --summary prints it on stdout as well.
    """
    given = _open_store(store_path)  # opened here too, so a bad store fails before any work
    if given is not None:
        given.close()
    work: list[Job] = []
    unread: dict[int, dict[str, Any]] = {}
    for i, path in enumerate(traces):
        try:
            data = read_input(path)
        except InputError as exc:
            if not keep_going:
                raise
            unread[i] = {"error": error_json(exc)}
            data = b""
        work.append((path, data, store_path, mode, report_dir is not None, repair_dir is not None))
    todo = [w for i, w in enumerate(work) if i not in unread]
    if ray_address is not None:
        from verifier.distributed import command_session, ray_work

        # until the command ends: Ray's own messages go to stderr, not among the results
        click.get_current_context().with_resource(command_session(ray_address, obj.stderr))
        ran = ray_work(todo, ray_address, lambda d, t: _progress(obj, d, t))
    else:
        ran = run_jobs(todo, jobs, lambda d, t: _progress(obj, d, t))
    done = iter(ran)
    # every trace is validated where it is audited; nothing is printed until all are done,
    # so bad input in any of them (the first, in input order) leaves no output at all
    outcomes = [unread[i] if i in unread else next(done) for i in range(len(work))]
    for res in outcomes:  # a trace the checker crashed on (--ray): the others were audited
        if "internal" in res:
            raise InternalError(res["internal"])
    if not keep_going:
        for res in outcomes:
            if "error" in res:
                raise error_from_json(res["error"])
    entries = [
        res["result"] if "result" in res else {"trace": t, "error": res["error"], "exit": 2}
        for t, res in zip(traces, outcomes, strict=True)
    ]
    # the report and the repairs are written before anything is printed: a failure there
    # (exit 2) leaves no output that promises another exit code
    index = None
    if report_dir is not None:
        from verifier.report import write_report

        index = write_report(report_dir, entries, [res.get("page") for res in outcomes])
    written = write_repairs(repair_dir, traces, outcomes) if repair_dir is not None else []
    for res in entries:
        if "error" in res:
            if fmt == "json":
                obj.line(json.dumps(res, ensure_ascii=False))
            else:
                obj.note(f"ctxproof: {res['error']['text']}")
            continue
        if fmt == "json":
            obj.line(json.dumps(res, ensure_ascii=False))
        else:
            for text in _text_lines(res["trace"], res["findings"]):
                obj.line(text)
        verdicts = [r["verdict"] for r in res["rewrites"]]
        obj.progress(
            f"{res['trace']}: {len(verdicts)} rewrite(s) "
            f"[{', '.join(verdicts) or 'none'}], {len(res['findings'])} finding(s)"
        )
    code = EXIT_INPUT if any("error" in r for r in entries) else _exit_from_json(entries)
    totals = summarize(entries, code)
    if summary:
        if fmt == "json":
            obj.line(json.dumps(totals, ensure_ascii=False))
        else:
            obj.line(summary_line(totals))
    obj.progress(summary_line(totals))
    if written:
        obj.progress(f"repairs: {len(written)} window(s) written to {repair_dir}")
    if index is not None:
        obj.progress(f"report: {index}")
    return code


def _exit_from_json(results: Sequence[dict[str, Any]]) -> int:
    codes = [r["exit"] for r in results]
    if EXIT_FINDINGS in codes:
        return EXIT_FINDINGS
    if EXIT_UNDECIDED in codes:
        return EXIT_UNDECIDED
    return EXIT_OK


def _format_json_finding(trace: str, f: dict[str, Any], related: Sequence[str] = ()) -> str:
    cex = f.get("counterexample")
    finding = Finding(
        f["code"],
        f["pass"],
        tuple(f["items"]),
        f["message"],
        f["line"],
        tuple(sorted(cex.items())) if cex else None,
    )
    return _format_finding(trace, finding, related)


def _progress(obj: _Out, done: int, total: int, what: str = "traces") -> None:
    """A progress bar on stderr, only when stderr is a terminal."""
    if total <= 1 or not obj.stderr.isatty():
        return
    width = 30
    filled = width * done // total
    obj.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what}")
    if done == total:
        obj.stderr.write("\n")
    obj.stderr.flush()


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _bundled_scenarios() -> Path:
    here = Path(__file__).resolve().parent.parent / "models" / "scenarios"
    if here.is_dir():
        return here
    return Path.cwd() / "models" / "scenarios"


def _load_for_graph(
    trace_path: str, store_path: str | None, command: str = "audit"
) -> tuple[Trace, Store | None]:
    given = _open_store(store_path)
    try:
        return read_trace(trace_path, read_input(trace_path), given, command)
    except BaseException:
        close_store(given)
        raise


@cli.command(name="why")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.argument("item")
@click.option(
    "--pass",
    "pass_no",
    type=click.IntRange(min=0),
    help="Answer as of this pass (default: the end of the trace).",
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@_budget_options
@_format_option
@click.pass_obj
def why_cmd(
    obj: _Out, trace: str, item: str, pass_no: int | None, store_path: str | None, fmt: str
) -> int:
    """How do you know ITEM? The chain to primitives, or where it broke.

    Exit 0 when a chain to a retained primitive exists, 1 when it does not.
    """
    from verifier.graph import JustificationGraph, why
    from verifier.report import render_why

    loaded, store = _load_for_graph(trace, store_path, "why")
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
        raise InputError(
            f"item {item!r} does not appear in the trace"
            + (f" by pass {pass_no}" if pass_no is not None else ""),
            file=trace,
            fix="name an id the trace defines",
        ) from None
    if fmt == "json":
        obj.line(json.dumps({"trace": trace, **answer.to_json(graph)}, ensure_ascii=False))
    else:
        for text in render_why(graph, answer):
            obj.line(text)
    return EXIT_OK if answer.chain is not None else EXIT_FINDINGS


@cli.command(name="window")
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
@_format_option
@click.pass_obj
def window_cmd(
    obj: _Out, trace: str, pass_no: int, out: str | None, store_path: str | None, fmt: str
) -> int:
    """Write the window of TRACE as of the end of pass N, as a window file.

    That is the window rewrite N+1 starts from: give it to `check` as BEFORE and
    that rewrite's window as AFTER. Stubs for items the trace itself spills stand
    for items no store holds yet, and a window file keeps no record of items
    dropped earlier that its items still cite: both are named on stderr.
    """
    from verifier.audit import Auditor

    loaded, store = _load_for_graph(trace, store_path, "window")
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


@cli.command(name="ref")
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("item")
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@_format_option
@click.pass_obj
def ref_cmd(obj: _Out, file: str, item: str, store_path: str | None, fmt: str) -> int:
    """Print the ref of ITEM: sha256 of its canonical JSON, what its stub's "ref" must be.

    FILE is a window file or a trace; in a trace, the latest version of ITEM
    that an event writes (append, spill or rewrite). A stub stands for its item:
    when the file holds only a stub of ITEM, its ref is the stub's. Canonical
    JSON: keys sorted, no whitespace, UTF-8 as is (see docs/formats.md).
    """
    data = read_input(file)
    found: Item | None = None
    line: int | None = None
    if sniff_kind(data) == "window":
        window = _load_window(file, "ref")
        found = window.by_id().get(item)
    else:
        loaded, store = read_trace(file, data, _open_store(store_path), "ref")
        close_store(store)
        for ev in loaded.events:
            items = (
                ev.items
                if not isinstance(ev, Rewrite)
                else (ev.window if ev.window is not None else ev.put)
            )
            for it in items:
                if it.id == item and (it.kind != "stub" or found is None or found.kind == "stub"):
                    found, line = it, ev.line
    if found is None:
        raise InputError(
            f"no item {item!r} in the file", file=file, fix="name an id the file defines"
        )
    ref = found.stub_ref if found.kind == "stub" and found.stub_ref else found.ref
    if fmt == "json":
        stub = {"id": item, "kind": "stub", "ref": ref}
        payload = {"file": file, "item": item, "line": line, "ref": ref, "stub": stub}
        obj.line(json.dumps(payload, ensure_ascii=False))
    else:
        obj.line(ref)
    return EXIT_OK


@cli.command(name="graph")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="FILE.graphml, FILE.json (node-link) or FILE.dot",
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False), help="SQLite store.")
@_budget_options
@_format_option
@click.pass_obj
def graph_cmd(obj: _Out, trace: str, out: str, store_path: str | None, fmt: str) -> int:
    """Export the justification graph of a trace."""
    from verifier.graph import JustificationGraph, export

    if Path(out).suffix.lower() not in (".graphml", ".json", ".dot"):
        raise click.UsageError("--out must end in .graphml, .json or .dot")
    loaded, store = _load_for_graph(trace, store_path, "graph")
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


@cli.command(epilog=_EPILOG)
@click.argument("policy_arg", metavar="POLICY")
@click.option(
    "--sessions",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="How many sessions the simulated agent plays.",
)
@click.option(
    "--passes",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Rewrites per session, at most.",
)
@click.option(
    "--seed",
    "seed_value",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Same seed, same sessions, same output.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="ctxproof-fuzz",
    show_default=True,
    help="Where counterexamples, the scorecard and the plot go.",
)
@_mode_option
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes (the same output as --jobs 1).",
)
@_ray_option
@_budget_options
@_format_option
@click.pass_obj
def fuzz(
    obj: _Out,
    policy_arg: str,
    sessions: int,
    passes: int,
    seed_value: int,
    out_dir: str,
    mode: str,
    jobs: int,
    ray_address: str | None,
    fmt: str,
) -> int:
    """Fuzz a rewrite POLICY with a simulated agent.

    POLICY is path/to/file.py:function, package.module:function, or a spec
    (path/to/spec.toml). For each rule found, the shrunk session is written to
    OUT/cex-CODE.jsonl (ctxproof audit replays it); OUT/scorecard.json and
    OUT/pressure.png summarize the run. Exit 0: no finding; 1: findings;
    2: bad POLICY or usage. See docs/fuzz.md.
    """
    from verifier.fuzz import fuzz as run_fuzz
    from verifier.fuzz import scorecard_text, write_outputs
    from verifier.policies import load_policy

    policy = load_policy(policy_arg)
    make_folder(out_dir, "fuzz output folder")  # a place that refuses it fails now, not later

    def progress(done: int, total: int) -> None:
        _progress(obj, done, total, "chunks of sessions")

    runner = None
    if ray_address is not None:
        from verifier.distributed import command_session, ray_runner

        click.get_current_context().with_resource(command_session(ray_address, obj.stderr))
        runner = ray_runner(ray_address)
    report = run_fuzz(
        policy,
        sessions=sessions,
        passes=passes,
        seed_value=seed_value,
        out_dir=out_dir,
        mode=mode,
        jobs=jobs,
        policy_arg=policy_arg,
        progress=progress,
        runner=runner,
    )
    card = write_outputs(report, out_dir)
    if fmt == "json":
        obj.line(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        for text in scorecard_text(report, card["by_pressure"]):
            obj.line(text)
        out = Path(out_dir)
        obj.line(f"scorecard: {out / 'scorecard.json'}, plot: {out / 'pressure.png'}")
    return report.exit_code


@cli.command(name="import")
@click.argument("history_format", metavar="FORMAT", type=click.Choice(IMPORT_FORMATS))
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
@_format_option
@click.pass_obj
def import_cmd(
    obj: _Out,
    history_format: str,
    files: tuple[str, ...],
    out: str | None,
    annotations: str | None,
    sample: str | None,
    fmt: str,
) -> int:
    """Import a real agent history (FILE... in order) as a trace.

    Without -o the trace goes to stdout; with -o it is written atomically and a
    summary line (text or JSON) goes to stdout. See docs/importers.md.
    """
    from verifier.importers import import_history

    text = import_history(
        history_format,
        [Path(f) for f in files],
        Path(annotations) if annotations else None,
        sample=sample,
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


_PROVE_EPILOG = """\b
Text output: SPEC: proved (N items, K passes, ...), or for each refuted
property SPEC: counterexample CODE at PATH followed by the finding its trace
audits with (TRACE:LINE: pass N: CODE name [ID,...]: message), or
SPEC: undecided (reason).
JSON output (--format json): one object with spec, result, items, passes,
induction, code, path, reason, seconds, stats.
\b
Exit codes: 0 proved; 1 counterexample; 2 bad spec or usage; 3 undecided
(timeout or unknown); 4 internal error.
"""


@cli.command(name="prove", epilog=_PROVE_EPILOG)
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--items",
    type=click.IntRange(1, prove_api.MAX_ITEMS),
    default=prove_api.DEFAULT_ITEMS,
    show_default=True,
    help="Items: appended in all (BMC), or in the state a pass starts from (--induction).",
)
@click.option(
    "--passes",
    type=click.IntRange(1, prove_api.MAX_PASSES),
    default=prove_api.DEFAULT_PASSES,
    show_default=True,
    help="Passes of bounded model checking from the empty window.",
)
@click.option(
    "--appends",
    type=click.IntRange(1, prove_api.MAX_APPENDS),
    default=prove_api.DEFAULT_APPENDS,
    show_default=True,
    help="Items appended at most before each pass (BMC).",
)
@click.option(
    "--induction",
    is_flag=True,
    help="Prove one pass from any state of up to --items items: covers any number of passes.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=prove_api.DEFAULT_OUT,
    show_default=True,
    help="Where counterexample traces (cex-CODE.jsonl) go.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Wall-clock limit in seconds for the whole proof (exit 3 when reached).",
)
@_format_option
@click.pass_obj
def prove_cmd(
    obj: _Out,
    spec: str,
    items: int,
    passes: int,
    appends: int,
    induction: bool,
    out_dir: str,
    timeout: float | None,
    fmt: str,
) -> int:
    """Prove a spec never causes CF001, CF004, WR001, WR002, WR004, WR008, TP001, TP002.

    SPEC is a ctxproof-policy/1 file. Without --induction: bounded model
    checking of --passes passes from the empty window, --items items appended
    in all, at most --appends before each pass. See docs/prove.md.
    """
    from verifier.policies import load_spec

    loaded = load_spec(spec)
    result = prove_api.prove(
        loaded,
        items=items,
        passes=passes,
        appends=appends,
        induction=induction,
        timeout=timeout,
        out_dir=out_dir,
    )
    if fmt == "json":
        obj.line(json.dumps(result.to_json(spec), ensure_ascii=False))
    elif result.result == "proved":
        obj.line(f"{spec}: proved ({_bounds(result.items, passes, appends, induction)};"
                 f" {len(result.stats['properties'])} properties; {result.seconds:.2f} s)")
    elif result.result == "counterexample":
        for cex in result.counterexamples:
            obj.line(f"{spec}: counterexample {cex.code} at {cex.path}")
            obj.line(_format_finding(cex.path, cex.finding))
        if result.reason:
            obj.line(f"{spec}: undecided for the rest ({result.reason})")
    else:
        obj.line(f"{spec}: undecided ({result.reason})")
    if result.result == "proved":
        return EXIT_OK
    return EXIT_FINDINGS if result.result == "counterexample" else EXIT_UNDECIDED


def _bounds(items: int, passes: int, appends: int, induction: bool) -> str:
    if induction:
        return (
            f"by induction: one pass from any state of up to {items} items,"
            " so any number of passes"
        )
    return f"{items} items, {passes} passes, up to {appends} appended before each"


@cli.command()
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default="ctxproof-report",
    show_default=True,
    help="Where to write the report.",
)
@_format_option
@click.pass_obj
def demo(obj: _Out, report_dir: str, fmt: str) -> int:
    """Audit the bundled scenarios and write a report."""
    folder = _bundled_scenarios()
    traces = sorted(_shown_path(p) for p in folder.glob("*.jsonl"))
    if not traces:
        raise InputError(
            "no bundled scenarios found", file=str(folder), fix="run from the ctxproof repository"
        )
    from verifier.report import write_report

    outcomes = [audit_job((t, read_input(t), None, "support", True, False)) for t in traces]
    for out in outcomes:
        if "error" in out:  # a bundled scenario is never bad input: this is a broken checkout
            raise error_from_json(out["error"])
    results = [out["result"] for out in outcomes]
    # written before any output, as for audit --report
    index = write_report(report_dir, results, [out.get("page") for out in outcomes])
    for res in results:
        if fmt == "json":
            obj.line(json.dumps(res, ensure_ascii=False))
            continue
        verdicts = ", ".join(f"pass {r['pass']}: {r['verdict']}" for r in res["rewrites"])
        obj.line(f"== {res['trace']}  ({verdicts or 'no rewrite'})")
        for text in _text_lines(Path(res["trace"]).name, res["findings"]):
            obj.line("  " + text)
        if not res["findings"]:
            obj.line("  no findings")
    if fmt == "json":
        obj.progress(f"report written: {index}")
    else:
        obj.line(f"report written: {index}")
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the CLI in-process and return its exit code."""
    out = _Out(stdout or sys.stdout, stderr or sys.stderr)
    saved = {k: os.environ.get(k) for k in _SOLVER_ENV.values()}
    try:
        return _main(argv, out)
    finally:
        for key, value in saved.items():  # --rlimit/--timeout hold for one command only
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _main(argv: Sequence[str] | None, out: _Out) -> int:
    try:
        with contextlib.redirect_stdout(out.stdout), contextlib.redirect_stderr(out.stderr):
            rv = cli.main(
                args=list(argv) if argv is not None else None,
                prog_name="ctxproof",
                standalone_mode=False,
                obj=out,
            )
    except click.exceptions.NoArgsIsHelpError as exc:
        out.note(exc.format_message() if hasattr(exc, "format_message") else str(exc))
        return EXIT_INPUT
    except click.UsageError as exc:
        out.note(f"ctxproof: {exc.format_message()}")
        if exc.ctx is not None:
            out.note(f"try '{exc.ctx.command_path} --help'")
        return EXIT_INPUT
    except click.exceptions.Abort:
        out.note("ctxproof: aborted")
        return EXIT_INPUT
    except click.ClickException as exc:
        out.note(f"ctxproof: {exc.format_message()}")
        return EXIT_INPUT
    except InputError as exc:
        out.note(f"ctxproof: {exc.render()}")
        return EXIT_INPUT
    except StoreError as exc:
        out.note(f"ctxproof: store error: {exc}")
        return EXIT_INPUT
    except OutputError as exc:
        out.note(f"ctxproof: {exc}")
        return EXIT_INPUT
    except CtxproofError as exc:
        out.note(f"ctxproof: internal error: {exc}")
        return EXIT_INTERNAL
    except Exception as exc:
        out.note(f"ctxproof: internal error: {type(exc).__name__}: {exc}")
        if os.environ.get("CTXPROOF_DEBUG"):
            traceback.print_exc(file=out.stderr)
        return EXIT_INTERNAL
    if isinstance(rv, int):
        return rv
    return EXIT_OK


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
