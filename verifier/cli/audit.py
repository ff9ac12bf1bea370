"""``ctxproof audit TRACE...`` and ``ctxproof demo``: traces audited, every event in order.

Each trace is a job of :mod:`verifier.batch` (docs/api.md, "Many traces"), run
here or in worker processes (``--jobs``), or on Ray (``--ray``:
:func:`verifier.distributed.ray_work`); what comes back is printed in input
order once every trace is done.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from verifier.batch import (
    Job,
    audit_job,
    error_from_json,
    error_json,
    run_jobs,
    summarize,
    summary_line,
    write_repairs,
)
from verifier.cli.common import (
    EPILOG,
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_UNDECIDED,
    Out,
    audit_speed_hint,
    budget_options,
    format_option,
    mode_option,
    ray_option,
    show_progress,
    text_lines,
    undecided_lines,
)
from verifier.cli.inputs import open_store
from verifier.errors import InputError, InternalError
from verifier.io import read_input

__all__ = ["audit", "demo"]


@click.command(epilog=EPILOG)
@click.argument("traces", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--store",
    "store_path",
    type=click.Path(dir_okay=False),
    help="SQLite store to read (never written by an audit).",
)
@mode_option
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
@ray_option
@budget_options
@format_option
@click.pass_obj
def audit(
    obj: Out,
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
    given = open_store(store_path)  # opened here too, so a bad store fails before any work
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
    if obj.stderr.isatty() and (ray_address is not None or jobs > 1):
        hint = audit_speed_hint(
            sum(len(w[1]) for w in todo), len(todo), jobs, _new_cluster(ray_address)
        )
        if hint is not None:
            obj.progress(f"ctxproof: hint: {hint}")
    if ray_address is not None:
        from verifier.distributed import command_session, ray_work

        # until the command ends: Ray's own messages go to stderr, not among the results
        click.get_current_context().with_resource(command_session(ray_address, obj.stderr))
        ran = ray_work(todo, ray_address, lambda d, t: show_progress(obj, d, t))
    else:
        ran = run_jobs(todo, jobs, lambda d, t: show_progress(obj, d, t))
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
            for text in text_lines(res["trace"], res["findings"]):
                obj.line(text)
            for text in undecided_lines(res["trace"], res):
                obj.note(text)
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


@click.command()
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default="ctxproof-report",
    show_default=True,
    help="Where to write the report.",
)
@format_option
@click.pass_obj
def demo(obj: Out, report_dir: str, fmt: str) -> int:
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
        for text in text_lines(Path(res["trace"]).name, res["findings"]):
            obj.line("  " + text)
        if not res["findings"]:
            obj.line("  no findings")
    if fmt == "json":
        obj.progress(f"report written: {index}")
    else:
        obj.line(f"report written: {index}")
    return EXIT_OK


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _bundled_scenarios() -> Path:
    here = Path(__file__).resolve().parents[2] / "models" / "scenarios"  # verifier/cli/ -> root
    if here.is_dir():
        return here
    return Path.cwd() / "models" / "scenarios"


def _new_cluster(ray_address: str | None) -> bool | None:
    """Whether --ray starts a local cluster for this command (None: no --ray)."""
    if ray_address is None:
        return None
    from verifier.distributed import starts_local_cluster

    return starts_local_cluster(ray_address)
