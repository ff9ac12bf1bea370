"""Ray: ``audit`` and ``fuzz`` on a cluster, with the results of ``--jobs 1`` (docs/distributed.md).

Work crosses processes as text and JSON: trace bytes go to the workers, JSON
reports come back; no z3 object ever leaves the process that made it. A
worker process is long-lived (Ray reuses it from task to task), so z3 and the
checker are loaded once per worker, and every trace is audited in a z3
context of its own, exactly as ``--jobs`` does: z3's answers (the
counterexamples shown) depend on what a context held before, so a context
shared by the traces a worker happens to get would make the output depend on
how the work was spread.

Traces go out in chunks, each chunk a Ray task. A worker that dies (killed,
out of memory) has its chunk run again by Ray (``RETRIES`` times); a chunk
that keeps failing is split so that only the trace that kills its worker is
reported, as an internal error. A trace that crashes the checker is an
internal error for that trace; the rest complete.

Ray is imported only here, and only when asked for (the ``ray`` extra:
``pip install 'ctxproof[ray]'``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import math
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from verifier import batch
from verifier.audit import TraceReport
from verifier.batch import Job
from verifier.errors import CtxproofError, InputError, InternalError, StoreError

__all__ = [
    "DEFAULT_ADDRESS",
    "INSTALL",
    "TraceError",
    "audit_dataset",
    "command_session",
    "connect",
    "fuzz_distributed",
    "import_ray",
    "ray_audit",
    "ray_fuzz_chunks",
    "ray_work",
    "result_rows",
    "starts_local_cluster",
]

INSTALL = "pip install 'ctxproof[ray]'"
"""What installs Ray with the versions ctxproof is tested with."""

DEFAULT_ADDRESS = "default"
"""``--ray`` with no address: ``RAY_ADDRESS`` if set, else a cluster already running on
this machine (``ray start --head``), else a new local one."""

OBJECT_STORE_BYTES = 200 * 1024 * 1024
"""Object store of a local cluster ctxproof starts: traces and reports are small."""

RETRIES = 3
"""How many times Ray runs a task again whose worker died."""

TRACES_PER_CHUNK = 8
"""Traces per task at most (fewer when there are few: every worker gets work)."""

SOLVER_ENV = ("CTXPROOF_RLIMIT", "CTXPROOF_TIMEOUT", "CTXPROOF_CROSS_CHECK")
"""The solver budget, set for every worker as it is in this process (unset: empty)."""

Work = tuple[str, bytes, str | None, str]
"""One trace to audit: its name, its bytes, the ``--store`` path, the witness mode."""

Outcome = dict[str, Any] | InputError | StoreError | InternalError
"""What auditing one trace gave: its JSON report, or the error that stopped it."""

Progress = Callable[[int, int], None]


def import_ray() -> Any:
    """The ``ray`` module; without it, bad usage (exit 2) naming the install command."""
    try:
        import ray
    except ImportError:
        raise InputError("needs Ray, which is not installed", file="--ray", fix=INSTALL) from None
    return ray


def connect(address: str | None = None) -> Any:
    """Join a Ray cluster (or start a local one) unless this process is connected already.

    ``address``: ``None`` or :data:`DEFAULT_ADDRESS` for ``RAY_ADDRESS``, else
    a cluster running on this machine, else a new local one (object store
    :data:`OBJECT_STORE_BYTES`, no dashboard); any other value is given to
    ``ray.init`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``). The connection
    stays open for later calls, as Ray Data's does; ``ray.shutdown()`` closes
    it, and so does the end of the process. Returns the ``ray`` module.
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    target = address
    if target is None or target == DEFAULT_ADDRESS:
        target = os.environ.get("RAY_ADDRESS") or None
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if target is not None:
        _check_reachable(target)
    try:
        if target is not None:
            ray.init(address=target, **quiet)
        elif _running_here():
            ray.init(address="auto", **quiet)
        else:
            ray.init(
                address="local",
                include_dashboard=False,
                object_store_memory=OBJECT_STORE_BYTES,
                **quiet,
            )
    except Exception as exc:
        shown = target or "a new local cluster"
        raise InputError(
            f"cannot connect to Ray ({shown}): {_one_line(exc)}",
            file="--ray",
            fix="start a cluster with 'ray start --head', or give its address to --ray"
            " (or RAY_ADDRESS); a cluster with token authentication (Ray's default for"
            " local ones) also needs RAY_AUTH_MODE=token",
        ) from None
    return ray


PROBE_SECONDS = 5.0
"""How long the head of a cluster given by address has to accept a connection."""


def starts_local_cluster(address: str | None) -> bool:
    """Would :func:`connect` start a new local cluster for ``address`` (no address, no
    ``RAY_ADDRESS``, no cluster running here, not connected)? What a command's speed hint
    asks: starting one costs seconds before any work (docs/distributed.md)."""
    if address not in (None, DEFAULT_ADDRESS) or os.environ.get("RAY_ADDRESS"):
        return False
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return False
    return not _running_here()


@contextmanager
def command_session(address: str | None, messages: IO[str]) -> Iterator[Any]:
    """Ray for one command, from its connection to the end of its output.

    Ray prints what its workers report (a worker that died, a task retried) from a
    thread of its own, to whatever ``sys.stdout`` is then; here that is
    ``messages`` (the command's stderr), so nothing mixes with the results. A
    connection made here is closed at the end, which stops that thread before the
    process's stdout is given back; one this process had already is left open.
    """
    ray = import_ray()
    connected_before = ray.is_initialized()
    with contextlib.redirect_stdout(messages):
        connect(address)
        try:
            yield ray
        finally:
            if not connected_before:
                ray.shutdown()


def _check_reachable(address: str) -> None:
    """Bad usage (exit 2) when ``[ray://]HOST:PORT`` accepts no connection: Ray itself
    would wait minutes for it, retrying. Other forms (``auto``, ``local``) go to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
            return
    except (OSError, ValueError) as exc:
        reason = _one_line(exc)
    raise InputError(
        f"cannot reach the Ray cluster at {address} ({reason})",
        file="--ray",
        fix="check the address (the head node's HOST:PORT, or ray://HOST:PORT for Ray"
        " Client), or start a cluster there with 'ray start --head'",
    )


def _running_here() -> bool:
    """Does a cluster that ``ray start`` left on this machine answer? (Its address file
    outlives a cluster that was killed; Ray would wait for that one forever.)"""
    try:
        from ray._common.utils import get_ray_address_file

        path = get_ray_address_file(None)
    except Exception:  # another Ray lays its files out otherwise
        path = os.path.join(tempfile.gettempdir(), "ray", "ray_current_cluster")
    try:
        host, _, port = Path(path).read_text("utf-8").strip().rpartition(":")
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _worker_env() -> dict[str, str]:
    return {key: os.environ.get(key, "") for key in SOLVER_ENV}


def _options() -> dict[str, Any]:
    """Task options: the solver budget of this process, and retries for dead workers."""
    return {
        "runtime_env": {"env_vars": _worker_env()},
        "max_retries": RETRIES,
        "retry_exceptions": False,
    }


def _driver() -> tuple[str, list[str]]:
    """Where this process runs, for workers to read relative paths (stores, policy files)
    and import what it imports, as a forked ``--jobs`` worker would."""
    return os.getcwd(), [p for p in sys.path if p]


@contextmanager
def _as_driver(driver: tuple[str, Sequence[str]]) -> Iterator[None]:
    cwd, paths = driver
    before = os.getcwd()
    with contextlib.suppress(OSError):  # another machine: paths are the cluster's to provide
        os.chdir(cwd)
    for p in paths:
        if p not in sys.path:
            sys.path.append(p)
    try:
        yield
    finally:
        os.chdir(before)


# -- audit -------------------------------------------------------------------------------------


def _audit_chunk(work_name: str, jobs: Sequence[Job], driver: tuple[str, list[str]]) -> str:
    """Worker: audit each trace of a chunk; one JSON outcome per trace, as one JSON text.

    ``work_name`` (``module:function``) is imported here, once the driver's
    ``sys.path`` is in place.
    """
    with _as_driver(driver):
        module, _, function = work_name.partition(":")
        work = getattr(importlib.import_module(module), function)
        return json.dumps([_job_json(work, job) for job in jobs])


def _job_json(work: Callable[[Job], dict[str, Any]], job: Job) -> dict[str, Any]:
    """What the worker function returns for a job, or ``{"internal": ...}`` when the checker
    crashed on it."""
    try:
        return work(job)
    except CtxproofError as exc:
        return {"internal": str(exc)}
    except Exception as exc:
        return {"internal": f"{type(exc).__name__}: {exc}"}


def ray_work(
    jobs: Sequence[Job],
    address: str | None = None,
    progress: Progress | None = None,
    *,
    work: Callable[[Job], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Audit jobs on Ray: per job, in input order, what the worker function
    :func:`verifier.batch.audit_job` returns for it in this process (``{"result": ...}``,
    with the report page and the repairs when asked, or ``{"error": ...}`` for bad input
    or a bad store), or ``{"internal": "TRACE: what happened"}`` when the checker crashed
    on it or its worker kept dying.

    ``work`` is the worker function (default: ``audit_job``, the one ``--jobs`` runs), a
    module-level function that workers import by name; ``progress`` is called with
    (traces done, total) as chunks come back.
    """
    ray = connect(address)
    if work is None:
        work = batch.audit_job
    if not jobs:
        return []
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = max(1, min(TRACES_PER_CHUNK, math.ceil(len(jobs) / (4 * cpus))))
    pending = [list(range(i, min(i + size, len(jobs)))) for i in range(0, len(jobs), size)]
    remote = ray.remote(_audit_chunk).options(**_options())
    work_name = f"{work.__module__}:{work.__qualname__}"
    driver = _driver()
    outcomes: dict[int, dict[str, Any]] = {}
    running: dict[Any, list[int]] = {}
    limit = 2 * cpus + 2  # chunks in flight: the rest of the traces wait in this process
    done = 0
    while pending or running:
        while pending and len(running) < limit:
            chunk = pending.pop(0)
            ref = remote.remote(work_name, [jobs[i] for i in chunk], driver)
            running[ref] = chunk
        ready, _ = ray.wait(list(running), num_returns=1)
        chunk = running.pop(ready[0])
        try:
            results = json.loads(ray.get(ready[0]))
        except ray.exceptions.RayError as exc:
            if len(chunk) > 1:
                # run its traces one by one: only the one that fails is lost
                pending[:0] = [[i] for i in chunk]
                continue
            if isinstance(exc, ray.exceptions.RayTaskError):  # raised, not died: no retry
                cause = getattr(exc, "cause", None)
                shown = _one_line(cause if isinstance(cause, BaseException) else exc)
                failed = f"its Ray task failed ({shown})"
            else:
                failed = f"the worker auditing it failed {RETRIES + 1} times ({_one_line(exc)})"
            outcomes[chunk[0]] = {"internal": f"{jobs[chunk[0]][0]}: {failed}"}
        else:
            for i, obj in zip(chunk, results, strict=True):
                if "internal" in obj:
                    obj = {"internal": f"{jobs[i][0]}: {obj['internal']}"}
                outcomes[i] = obj
        done += len(chunk)
        if progress is not None:
            progress(done, len(jobs))
    return [outcomes[i] for i in range(len(jobs))]


def ray_audit(
    work: Sequence[Work],
    address: str | None = None,
    progress: Progress | None = None,
) -> list[Outcome]:
    """Audit traces on Ray: per trace, in input order, its JSON report (what ``ctxproof
    audit --format json`` prints for it), the ``InputError``/``StoreError`` that stops
    it, or an ``InternalError`` naming the trace when the checker crashed on it."""
    out: list[Outcome] = []
    for res in ray_work([(*w, False, False) for w in work], address, progress):
        if "result" in res:
            report: dict[str, Any] = res["result"]
            out.append(report)
        elif "error" in res:
            out.append(batch.error_from_json(res["error"]))
        else:
            out.append(InternalError(res["internal"]))
    return out


@dataclass(frozen=True, slots=True)
class TraceError:
    """A trace that could not be audited, in :func:`audit_dataset`'s results.

    ``kind``: ``input`` (bad input, what ``ctxproof audit`` exits 2 for),
    ``store`` (the store cannot be read; exit 2) or ``internal`` (the checker
    crashed on it; exit 4). ``error`` is the exception, to raise or to render.
    """

    trace: str
    kind: str
    message: str
    error: CtxproofError

    @property
    def exit_code(self) -> int:
        return 4 if self.kind == "internal" else 2


def audit_dataset(
    paths_or_texts: Iterable[str | os.PathLike[str] | bytes | tuple[str, str | bytes]],
    *,
    store: str | os.PathLike[str] | None = None,
    mode: str = "support",
    address: str | None = None,
    progress: Progress | None = None,
) -> list[TraceReport | TraceError]:
    """Audit many traces on Ray; the results in input order.

    Each input is a path (``Path``, or a ``str`` with no line break), the text
    of a trace (``bytes``, or a ``str`` with a line break; named ``<trace K>``
    by its position), or a ``(name, text)`` pair. ``store`` is a SQLite store
    read by every audit (``--store``); ``address`` as for :func:`connect`.

    Each result is the :class:`~verifier.audit.TraceReport` that
    :func:`~verifier.audit.audit_trace` returns for the trace (rebuilt from
    the worker's JSON; equal to the local one, ``final_window`` left empty),
    or a :class:`TraceError` for a trace that could not be audited: the rest
    are audited all the same.

    Raises :class:`~verifier.errors.InputError` when a path cannot be read,
    the store does not exist, or Ray is missing or cannot be reached.
    """
    from verifier.io import read_input

    store_path = None if store is None else str(store)
    if store_path is not None and not Path(store_path).exists():
        raise InputError("store does not exist", file=store_path, fix="check the path")
    work: list[Work] = []
    for k, given in enumerate(paths_or_texts):
        if isinstance(given, tuple):
            name, text = given
            data = text.encode("utf-8") if isinstance(text, str) else text
        elif isinstance(given, bytes):
            name, data = f"<trace {k}>", given
        elif isinstance(given, str) and "\n" in given:
            name, data = f"<trace {k}>", given.encode("utf-8")
        else:
            name = os.fspath(given)
            data = read_input(name)
        work.append((name, data, store_path, mode))
    results: list[TraceReport | TraceError] = []
    for (name, *_), res in zip(work, ray_audit(work, address, progress), strict=True):
        if isinstance(res, dict):
            results.append(TraceReport.from_json(res))
        else:
            kind = (
                "input"
                if isinstance(res, InputError)
                else "store"
                if isinstance(res, StoreError)
                else "internal"
            )
            message = res.render() if isinstance(res, InputError) else str(res)
            results.append(TraceError(name, kind, message, res))
    return results


RESULT_COLUMNS = ("trace", "pass", "policy", "verdict", "rule", "items")
"""The columns of :func:`result_rows`."""


def result_rows(
    results: Iterable[TraceReport | TraceError | Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """One table from audit results, in the order of the trace's events: a row per finding
    (with the pass, policy and verdict of its rewrite; a finding at an append has no
    policy or verdict), a row per rewrite without findings (``rule`` None), and one
    row for a trace with neither (``pass`` None). A :class:`TraceError` is one row
    with verdict ``bad-input`` or ``internal-error``. Join it with a pipeline's own
    metadata on ``trace``.
    """
    rows: list[dict[str, Any]] = []
    for res in results:
        if isinstance(res, TraceError):
            verdict = "internal-error" if res.kind == "internal" else "bad-input"
            rows.append(_row(res.trace, None, None, verdict, None, ()))
            continue
        report = res if isinstance(res, TraceReport) else TraceReport.from_json(res)
        events: list[tuple[int, dict[str, Any]]] = []
        rewrite_at = {(r.pass_, r.line) for r in report.rewrites}
        for r in report.rewrites:
            line = r.line or 0
            for f in r.findings:
                events.append(
                    (line, _row(report.trace, r.pass_, r.policy, r.verdict, f.code, f.items))
                )
            if not r.findings:
                events.append((line, _row(report.trace, r.pass_, r.policy, r.verdict, None, ())))
        for f in report.findings:
            if (f.pass_, f.line) not in rewrite_at:
                events.append(
                    (f.line or 0, _row(report.trace, f.pass_, None, None, f.code, f.items))
                )
        events.sort(key=lambda e: e[0])
        rows.extend(row for _, row in events)
        if not events:
            rows.append(_row(report.trace, None, None, None, None, ()))
    return rows


def _row(
    trace: str,
    pass_: int | None,
    policy: str | None,
    verdict: str | None,
    rule: str | None,
    items: Sequence[str],
) -> dict[str, Any]:
    return dict(
        zip(RESULT_COLUMNS, (trace, pass_, policy, verdict, rule, list(items)), strict=True)
    )


# -- fuzz --------------------------------------------------------------------------------------


def _fuzz_task(name: str, args_text: str, driver: tuple[str, list[str]]) -> str:
    """Worker: one explore or shrink task of the fuzzer, given and answered as JSON text."""
    from verifier.fuzz import run_task_json

    with _as_driver(driver):
        try:
            return json.dumps({"result": run_task_json(name, json.loads(args_text))})
        except InputError as exc:
            return json.dumps({"error": "input", "message": exc.render()})
        except CtxproofError as exc:
            return json.dumps({"error": "internal", "message": str(exc)})
        except Exception as exc:
            return json.dumps({"error": "internal", "message": f"{type(exc).__name__}: {exc}"})


def ray_fuzz_chunks(
    fn: Callable[[tuple[Any, ...]], Any],
    tasks: Sequence[tuple[Any, ...]],
    progress: Progress | None = None,
    *,
    address: str | None = None,
) -> list[Any]:
    """A runner for :func:`verifier.fuzz.fuzz`: its tasks (chunks of sessions, shrinks) as
    Ray tasks, results in order, as ``fuzz``'s own process pool returns them.

    Each task's policy is loaded in the worker from its ``policy_arg``; a
    policy that fails to load there is bad input, a worker that dies
    ``RETRIES`` + 1 times an internal error.
    """
    from verifier.fuzz import task_name, task_result_from_json

    ray = connect(address)
    name = task_name(fn)
    remote = ray.remote(_fuzz_task).options(**_options())
    driver = _driver()
    refs = [remote.remote(name, json.dumps(list(t)), driver) for t in tasks]
    index = {ref: i for i, ref in enumerate(refs)}
    texts: dict[int, str] = {}
    waiting = list(refs)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1)
        try:
            texts[index[ready[0]]] = ray.get(ready[0])
        except ray.exceptions.RayError as exc:
            raise InternalError(
                f"a fuzz worker failed {RETRIES + 1} times ({_one_line(exc)})"
            ) from None
        if progress is not None:
            progress(len(texts), len(tasks))
    results = []
    for i in range(len(tasks)):
        obj = json.loads(texts[i])
        if obj.get("error") == "input":
            raise InputError(
                f"in a Ray worker: {obj['message']}", fix="make the policy loadable there"
            )
        if "error" in obj:
            raise InternalError(f"in a Ray worker: {obj['message']}")
        results.append(task_result_from_json(name, obj["result"]))
    return results


def ray_runner(address: str | None = None) -> Callable[..., list[Any]]:
    """A fuzz runner on the Ray cluster at ``address`` (connected now, so a missing Ray or
    an unreachable cluster is reported before any work)."""
    connect(address)

    def runner(
        fn: Callable[[tuple[Any, ...]], Any],
        tasks: Sequence[tuple[Any, ...]],
        progress: Progress | None,
    ) -> list[Any]:
        return ray_fuzz_chunks(fn, tasks, progress, address=address)

    return runner


def fuzz_distributed(
    policy_arg: str,
    sessions: int = 100,
    *,
    passes: int = 10,
    seed_value: int = 0,
    out_dir: str | Path = "ctxproof-fuzz",
    mode: str = "support",
    address: str | None = None,
    progress: Progress | None = None,
    shrink_calls: int | None = None,
    policy_timeout: float | None = 10.0,
    require_fit: bool = False,
) -> Any:
    """:func:`verifier.fuzz.fuzz` on Ray: the same :class:`~verifier.fuzz.FuzzReport` (but
    for ``seconds``) and the same files in ``out_dir``.

    ``policy_arg`` names the policy as ``ctxproof fuzz`` takes it (a file
    path, ``module:function`` or a spec); every worker loads it from there
    (a Python policy in a process of its own, ``policy_timeout`` seconds a
    call), so it must be reachable from every node (the same path, or an
    installed module).
    """
    from verifier.fuzz import SHRINK_CALLS, fuzz

    return fuzz(
        policy_arg,
        sessions=sessions,
        passes=passes,
        seed_value=seed_value,
        out_dir=out_dir,
        mode=mode,
        policy_arg=policy_arg,
        progress=progress,
        shrink_calls=SHRINK_CALLS if shrink_calls is None else shrink_calls,
        runner=ray_runner(address),
        policy_timeout=policy_timeout,
        require_fit=require_fit,
    )
