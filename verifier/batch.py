"""Many traces: a job, the worker function that audits one, errors as JSON and back, and
the run over many jobs (``ctxproof audit --jobs``; docs/api.md, "Many traces").

Work crosses processes as bytes and JSON, never z3 objects: a :data:`Job` holds a
trace's name and bytes, and :func:`audit_job` returns its JSON report (or the
JSON of the error that stopped it). :func:`run_jobs` runs it in this process or
in a pool of worker processes; :mod:`verifier.distributed` runs the same
function on Ray. The command line prints what comes back.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verifier.audit import TraceReport, audit_trace
from verifier.errors import InputError, StoreError
from verifier.io import parse_trace_text, sniff_kind, window_to_json
from verifier.store import SqliteStore, Store
from verifier.window import Trace

__all__ = [
    "PARALLEL_MIN_BYTES",
    "Job",
    "Progress",
    "audit_job",
    "close_store",
    "error_from_json",
    "error_json",
    "read_trace",
    "run_jobs",
    "summarize",
    "summary_line",
    "write_repairs",
    "wrong_kind",
]

Progress = Callable[[int, int], None]
"""Called with (jobs done, total) as results come back."""

Job = tuple[str, bytes, str | None, str, bool, bool]
"""One trace to audit: (name, its bytes, --store, witness mode, render its report page,
compute its repairs). Work crosses processes as bytes and JSON, never z3 objects."""


def audit_job(job: Job) -> dict[str, Any]:
    """Audit one trace: ``{"result": ...}`` (with ``"page"`` and ``"repairs"`` when asked),
    or ``{"error": ...}`` for bad input or a bad store (returned, so order is kept)."""
    try:
        return _audit(job)
    except (InputError, StoreError) as exc:
        return {"error": error_json(exc)}


def _audit(job: Job) -> dict[str, Any]:
    name, data, store_path, mode, want_page, want_repairs = job
    given = SqliteStore(store_path, readonly=True) if store_path else None
    try:
        trace, store = read_trace(name, data, given)
        try:
            out: dict[str, Any] = {}
            if want_page:
                from verifier.report import render_trace_page, view_trace

                report, view = view_trace(trace, store=store, mode=mode, repair=True)
                out["page"] = render_trace_page(view)
            else:
                report = audit_trace(trace, store=store, mode=mode, repair=want_repairs)
            out["result"] = report.to_json(repairs=want_repairs)
            if want_repairs:
                out["repairs"] = _repairs_of(report, trace.header.background)
            return out
        finally:
            close_store(store)
    finally:
        close_store(given)


def _repairs_of(report: TraceReport, background: Sequence[str]) -> list[dict[str, Any]]:
    """Each refused rewrite's repaired window (a window file) and what it spills."""
    out = []
    for r in report.rewrites:
        if r.repair is None or r.verdict != "refuse":
            continue
        out.append(
            {
                "pass": r.pass_,
                "window": window_to_json(r.repair.window, background),
                "spill": [it.as_json() for it in r.repair.spill],
            }
        )
    return out


def error_json(exc: InputError | StoreError) -> dict[str, Any]:
    """A bad file as the JSON output reports it (and as it crosses a process boundary)."""
    if isinstance(exc, InputError):
        return {
            "kind": "input",
            "message": exc.message,
            "file": exc.file,
            "line": exc.line,
            "item": exc.item,
            "fix": exc.fix,
            "text": exc.render(),
        }
    return {"kind": "store", "message": str(exc), "text": f"store error: {exc}"}


def error_from_json(err: dict[str, Any]) -> InputError | StoreError:
    """The error :func:`error_json` describes, to raise where the results are printed."""
    if err["kind"] == "input":
        return InputError(
            err["message"], file=err["file"], line=err["line"], item=err["item"], fix=err["fix"]
        )
    return StoreError(err["message"])


def close_store(store: Store | None) -> None:
    """Close a store a command opened (its file may sit on a mount that must be released)."""
    if store is not None:
        store.close()


PARALLEL_MIN_BYTES = 256 * 1024
"""Below this much input, --jobs audits in this process: starting workers and sending
them the traces would cost more than the audit (small traces take milliseconds)."""


def __getattr__(name: str) -> Any:
    """``ProcessPoolExecutor``, imported on first use: an audit run in this process never
    imports multiprocessing."""
    if name == "ProcessPoolExecutor":
        from concurrent.futures import ProcessPoolExecutor

        globals()[name] = ProcessPoolExecutor
        return ProcessPoolExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_jobs(
    work: Sequence[Job], jobs: int = 1, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Audit every job, in input order: in this process for one job or a small batch,
    else in ``jobs`` worker processes started once, each sent its traces in chunks.
    ``progress`` is called with (jobs done, total) as they come back."""
    total = sum(len(w[1]) for w in work)
    outcomes: list[dict[str, Any]] = []
    if jobs > 1 and len(work) > 1 and total >= PARALLEL_MIN_BYTES:
        workers = min(jobs, len(work))
        # a few chunks per worker: big enough to amortise sending, small enough to balance
        chunk = max(1, -(-len(work) // (workers * 4)))
        pool_type = globals().get("ProcessPoolExecutor") or __getattr__("ProcessPoolExecutor")
        with pool_type(max_workers=workers) as pool:
            for i, res in enumerate(pool.map(audit_job, work, chunksize=chunk)):
                outcomes.append(res)
                if progress is not None:
                    progress(i + 1, len(work))
    else:
        for i, w in enumerate(work):
            outcomes.append(audit_job(w))
            if progress is not None:
                progress(i + 1, len(work))
    return outcomes


def _header_store_name(data: bytes) -> str | None:
    """The ``store`` a trace's header names, read before the trace is validated."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        raw = data[start:end]
        start = end + 1
        if raw.strip():
            try:
                head = json.loads(raw.decode("utf-8-sig"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                return None  # the full parse reports it (too deep, malformed, not UTF-8)
            store = head.get("store") if isinstance(head, dict) else None
            return store if isinstance(store, str) else None
    return None


_KIND_SHOWN = {
    "window": "a window file (ctxproof-window/1)",
    "trace": "a trace (ctxproof-trace/1)",
    "store": "a SQLite store",
    "policy-spec": "a policy spec (ctxproof-policy/1)",
}


def wrong_kind(exc: InputError, path: str, data: bytes, command: str, wants: str) -> InputError:
    """A clearer error for a file of another kind than the command reads; else exc."""
    kind = sniff_kind(data)
    reads = "window files" if wants == "window" else "traces"
    if kind is None:
        other = _other_kind(path, data)
        if other is None:
            return exc
        what, hint = other
        return InputError(f"this is {what}; `{command}` reads {reads}", file=path, fix=hint)
    if kind == wants:
        return exc
    if kind == "window":
        hint = "did you mean `check`? (`ctxproof check BEFORE AFTER` checks one rewrite)"
    elif kind == "trace":
        hint = (
            "did you mean `audit`? (or `ctxproof window TRACE --pass N` for the window of"
            " one of its passes)"
        )
    elif kind == "store":
        hint = "did you mean `--store FILE`?"
    else:
        hint = "did you mean `ctxproof fuzz` or `ctxproof prove`? (they run and prove specs)"
    return InputError(
        f"this is {_KIND_SHOWN[kind]}; `{command}` reads {reads}", file=path, fix=hint
    )


def _other_kind(path: str, data: bytes) -> tuple[str, str] | None:
    """A Python policy, or an agent's history in a FORMAT ``import`` reads: what it is,
    and the command that takes it (None: neither)."""
    if path.endswith(".py"):
        return (
            "a Python file",
            f"a policy is played against the simulated agent: `ctxproof fuzz {path}:FUNCTION`",
        )
    from verifier.importers.detect import describe
    from verifier.importers.sources import Source

    try:
        shape = describe(Source(path, data))
    except (RecursionError, ValueError):  # nested too deep: its own error says so
        return None
    if shape.format is None or not shape.sure:
        return None
    return (
        f"an agent's history, {shape.what}",
        f"turn it into a trace with `ctxproof import {shape.format} {path} -o TRACE.jsonl`,"
        " then audit that",
    )


def read_trace(
    name: str, data: bytes, given: Store | None, command: str = "audit"
) -> tuple[Trace, Store | None]:
    """Validate a trace against the store it will be audited with (--store, else its header's)."""
    try:
        return _load_trace(name, data, given)
    except InputError as exc:
        raise wrong_kind(exc, name, data, command, "trace") from None


def _load_trace(name: str, data: bytes, given: Store | None) -> tuple[Trace, Store | None]:
    store = given
    header_store = _header_store_name(data)
    if store is None and header_store is not None:
        path = Path(name).parent / header_store
        try:
            present = path.exists()
        except (OSError, ValueError):  # a NUL byte, a name too long
            present = False
        shown = header_store if len(header_store) <= 200 else header_store[:200] + "..."
        if not present:
            raise InputError(
                f"header names store {shown!r}, which does not exist",
                file=name,
                line=1,
                fix="fix the path or drop 'store'",
            )
        try:
            store = SqliteStore(path, readonly=True)
        except StoreError as exc:  # the trace's header is where the fix goes
            raise InputError(f"header names store {shown!r}: {exc}", file=name, line=1) from None
    known = store.has_id if store is not None else None
    try:
        return parse_trace_text(data, name, known_ids=known), store
    except BaseException:
        if store is not given:
            close_store(store)
        raise


def _policy_tally(policies: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    return policies.setdefault(
        name, {"rewrites": 0, "verdicts": Counter(), "findings": Counter()}
    )


def summarize(entries: Sequence[dict[str, Any]], code: int) -> dict[str, Any]:
    """The closing summary of an audit: traces, rewrites, verdicts, findings by rule and by
    policy (``{"summary": {...}}``, the last JSON object of ``audit --summary``)."""
    verdicts: Counter[str] = Counter()
    by_rule: Counter[str] = Counter()
    policies: dict[str, dict[str, Any]] = {}
    rewrites = 0
    for res in entries:
        if "error" in res:
            continue
        where = {}
        for r in res["rewrites"]:
            rewrites += 1
            verdicts[r["verdict"]] += 1
            name = r["policy"] or "(no policy)"
            where[(r["pass"], r["line"])] = name
            tally = _policy_tally(policies, name)
            tally["rewrites"] += 1
            tally["verdicts"][r["verdict"]] += 1
        for f in res["findings"]:
            by_rule[f["code"]] += 1
            name = where.get((f["pass"], f["line"]), "(at appends)")
            _policy_tally(policies, name)["findings"][f["code"]] += 1
    return {
        "summary": {
            "traces": len(entries),
            "bad_files": sum(1 for r in entries if "error" in r),
            "rewrites": rewrites,
            "verdicts": dict(sorted(verdicts.items())),
            "findings": sum(by_rule.values()),
            "findings_by_rule": dict(sorted(by_rule.items())),
            "policies": {
                name: {
                    "rewrites": p["rewrites"],
                    "verdicts": dict(sorted(p["verdicts"].items())),
                    "findings_by_rule": dict(sorted(p["findings"].items())),
                }
                for name, p in sorted(policies.items())
            },
            "exit": code,
        }
    }


def summary_line(totals: dict[str, Any]) -> str:
    """The summary as one line of text."""
    s = totals["summary"]
    bad = f", {s['bad_files']} bad file(s)" if s["bad_files"] else ""
    verdicts = ", ".join(f"{v} {n}" for v, n in s["verdicts"].items())
    rules = ", ".join(f"{c} {n}" for c, n in s["findings_by_rule"].items())
    return (
        f"summary: {s['traces']} trace(s){bad}; {s['rewrites']} rewrite(s)"
        f"{f' ({verdicts})' if verdicts else ''}; {s['findings']} finding(s)"
        f"{f' ({rules})' if rules else ''}; exit {s['exit']}"
    )


def write_repairs(
    folder: str, traces: Sequence[str], outcomes: Sequence[dict[str, Any]]
) -> list[Path]:
    """Write each refused rewrite's repaired window as DIR/STEM.pass-N.json, and the items
    its repair spills as DIR/STEM.pass-N.spill.jsonl (a spill event to put before the
    rewrite in the trace). All files are staged before any is put in place."""
    from verifier.fsutil import atomic_write_all, make_folder  # only where files are written

    out = make_folder(folder, "repair folder")
    stems = [Path(t).stem for t in traces]
    twice = {s for s in stems if stems.count(s) > 1}
    files: list[tuple[str | Path, str | bytes]] = []
    for i, (stem, res) in enumerate(zip(stems, outcomes, strict=True)):
        name = f"{i + 1:04d}-{stem}" if stem in twice else stem
        for rep in res.get("repairs", ()):
            base = out / f"{name}.pass-{rep['pass']}"
            window = json.dumps(rep["window"], ensure_ascii=False, indent=2) + "\n"
            files.append((f"{base}.json", window))
            if rep["spill"]:
                event = {"event": "spill", "items": rep["spill"]}
                files.append((f"{base}.spill.jsonl", json.dumps(event, ensure_ascii=False) + "\n"))
    return [p for p in atomic_write_all(files) if p.suffix == ".json"]
