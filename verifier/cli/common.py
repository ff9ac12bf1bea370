"""What the commands share: their output, its formats, their common options and exit codes.

Imported by every command and by the package's ``__init__``, so it imports no solver,
no graph library and no plotting: each command's module imports what it needs.
"""

from __future__ import annotations

import errno
import io
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

import click

from verifier.errors import OutputError, shown_name, suggestion
from verifier.findings import Finding, cause_item

__all__ = [
    "EPILOG",
    "EXIT_FINDINGS",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_UNDECIDED",
    "FUZZ_EPILOG",
    "SOLVER_ENV",
    "Choice",
    "Out",
    "audit_speed_hint",
    "budget_options",
    "format_finding",
    "format_json_finding",
    "format_option",
    "fuzz_speed_hint",
    "mode_option",
    "ray_option",
    "show_progress",
    "text_lines",
]

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_UNDECIDED, EXIT_INTERNAL = 0, 1, 2, 3, 4

_EXIT_CODES = """\b
Exit codes: 0 all rewrites accepted and no finding; 1 at least one finding;
2 bad input or usage; 3 undecided (solver unknown or budget) and no finding;
4 internal error.
"""

EPILOG = (
    """\b
Text output: one finding a line,
  TRACE:LINE: pass N: CODE name [ID,...]: message
JSON output (--format json): one object per trace per line.
"""
    + _EXIT_CODES
)

FUZZ_EPILOG = (
    """\b
Text output: the scorecard; each rule found with its first finding in its
shrunk trace, a line TRACE:LINE: pass N: CODE name [ID,...]: message
JSON output (--format json): one object.
"""
    + _EXIT_CODES
)


class MissingStream(io.TextIOBase):
    """A standard stream the process was started without (its descriptor closed: Python
    gives None). Standard output refuses every write, as a closed device does (an output
    that cannot be written: exit 2); standard error takes the messages and drops them."""

    def __init__(self, *, refuse: bool) -> None:
        super().__init__()
        self.refuse = refuse

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.refuse:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return len(text)


class Out:
    """Where results go: stdout for results, stderr for progress and summaries (a
    stream the process has not got stands in as :class:`MissingStream`)."""

    def __init__(self, stdout: IO[str] | None, stderr: IO[str] | None) -> None:
        self.stdout = stdout if stdout is not None else cast(IO[str], MissingStream(refuse=True))
        self.stderr = stderr if stderr is not None else cast(IO[str], MissingStream(refuse=False))

    def line(self, text: str) -> None:
        """A result line; standard output that takes no more (a full disk, a closed
        device) is an output that cannot be written (exit 2), not an internal error."""
        try:
            self.stdout.write(text + "\n")
        except OSError as exc:
            raise stdout_error(exc) from None

    def note(self, text: str) -> None:
        """An error or usage message: always shown."""
        self.stderr.write(text + "\n")

    def progress(self, text: str) -> None:
        """A summary or progress line: shown only when stderr is a terminal."""
        if self.stderr.isatty():
            self.stderr.write(text + "\n")


def stdout_error(exc: OSError) -> OutputError:
    """The error of a write to standard output that failed."""
    return OutputError(f"standard output: cannot write: {exc.strerror or exc}")


def format_finding(name: str, f: Finding, related: Sequence[str] = ()) -> str:
    line = f.line if f.line is not None else 1
    ids = ",".join(shown_name(i) for i in f.items)
    text = f"{shown_name(name)}:{line}: pass {f.pass_}: {f.code} {f.name} [{ids}]: {f.message}"
    if f.counterexample:
        shown = ", ".join(f"{k}={'true' if v else 'false'}" for k, v in f.counterexample)
        text += f" (counterexample: {shown})"
    if related:
        text += f" [related: {', '.join(related)}]"
    return text


def text_lines(name: str, findings: Sequence[dict[str, Any]]) -> list[str]:
    """One line per finding. A primary finding's line lists the findings related to it by
    code, with the item each is on when that is not the line's first item
    (``[related: CF004 on d102]``); each of those follows on a line of its own that names
    its primary (``[related to: CF002]``), as the JSON output keeps it (``related_to``)."""

    def key(f: dict[str, Any]) -> tuple[Any, ...]:
        return (f["pass"], f["line"], cause_item(f["code"], f["items"]))

    primaries = {
        (key(f), f["code"]): i for i, f in enumerate(findings) if f.get("related_to") is None
    }
    related: dict[int, list[int]] = {}
    shown: list[int] = []
    for i, f in enumerate(findings):
        p = primaries.get((key(f), f.get("related_to"))) if f.get("related_to") else None
        if p is None:
            shown.append(i)
        else:
            related.setdefault(p, []).append(i)
    out: list[str] = []
    for i in shown:
        first = (findings[i]["items"] or [None])[0]
        codes = []
        for r in related.get(i, ()):
            on = findings[r]["items"][0] if findings[r]["items"] else None
            codes.append(
                findings[r]["code"]
                if on is None or on == first
                else f"{findings[r]['code']} on {on}"
            )
        out.append(format_json_finding(name, findings[i], sorted(codes)))
        out.extend(
            format_json_finding(name, findings[r]) + f" [related to: {findings[i]['code']}]"
            for r in related.get(i, ())
        )
    return out


def undecided_lines(name: str, result: dict[str, Any]) -> list[str]:
    """Why a trace (its JSON result) is undecided, one reason a line: ``TRACE:LINE: pass N:
    undecided: REASON`` for a rewrite, ``TRACE: undecided: REASON`` for the appends. The
    text output gives them on stderr (stdout holds findings only), so exit 3 says why."""
    out = [
        f"{shown_name(name)}:{r['line']}: pass {r['pass']}: undecided: {reason}"
        for r in result.get("rewrites", ())
        for reason in r.get("undecided", ())
    ]
    out.extend(f"{shown_name(name)}: undecided: {reason}" for reason in result.get("undecided", ()))
    return out


def format_json_finding(trace: str, f: dict[str, Any], related: Sequence[str] = ()) -> str:
    cex = f.get("counterexample")
    finding = Finding(
        f["code"],
        f["pass"],
        tuple(f["items"]),
        f["message"],
        f["line"],
        tuple(sorted(cex.items())) if cex else None,
    )
    return format_finding(trace, finding, related)


def show_progress(obj: Out, done: int, total: int, what: str = "traces") -> None:
    """A progress bar on stderr, only when stderr is a terminal."""
    if total <= 1 or not obj.stderr.isatty():
        return
    width = 30
    filled = width * done // total
    obj.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {what}")
    if done == total:
        obj.stderr.write("\n")
    obj.stderr.flush()


class Choice(click.Choice):  # type: ignore[type-arg]
    """click's Choice, whose refusal names the choice a typo most likely meant."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            hint = suggestion(value, [str(c) for c in self.choices])
            if not hint:
                raise
            self.fail(f"{exc.message} {hint[0].upper()}{hint[1:]}", param, ctx)


def format_option(f: Any) -> Any:
    return click.option(
        "--format",
        "fmt",
        type=Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="Output format.",
    )(f)


SOLVER_ENV = {
    "rlimit": "CTXPROOF_RLIMIT",
    "timeout": "CTXPROOF_TIMEOUT",
    "cross_check": "CTXPROOF_CROSS_CHECK",
}


def _set_budget(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Solver options go to the environment, so worker processes get them too."""
    if value is not None and param.name in SOLVER_ENV:
        os.environ[SOLVER_ENV[param.name]] = str(value)
    return value


class FiniteSeconds(click.FloatRange):
    """Seconds > 0, a finite number (a limit of ``inf`` or ``nan`` is no limit: leave it out)."""

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number of seconds; give S > 0, or leave it out")
        return rv


def budget_options(f: Any) -> Any:
    f = click.option(
        "--cross-check",
        "cross_check",
        type=Choice(["cvc5"]),
        callback=_set_budget,
        expose_value=False,
        help="Ask every solver query of a second solver too (extra 'cvc5'); a disagreement"
        " is an internal error naming the query.",
    )(f)
    f = click.option(
        "--timeout",
        type=FiniteSeconds(),
        callback=_set_budget,
        expose_value=False,
        help="Seconds per solver query (default: none; env CTXPROOF_TIMEOUT).",
    )(f)
    return click.option(
        "--rlimit",
        type=click.IntRange(min=1),
        callback=_set_budget,
        expose_value=False,
        help="Solver resource limit per query (default 1000000, a few seconds of a hard"
        " query; env CTXPROOF_RLIMIT); a query past it is undecided.",
    )(f)


def _check_ray_address(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A trace or a policy given after --ray was meant as input, not as the cluster."""
    if isinstance(value, str) and (
        value.endswith((".jsonl", ".py", ".toml")) or ".py:" in value or _exists(value)
    ):
        from verifier.distributed import INSTALL  # only on the way to this error

        missing = f"; and Ray is not installed: {INSTALL}" if _ray_missing() else ""
        raise click.BadParameter(
            f"{value!r} is an input, taken as the Ray address; put --ray after the inputs"
            f" or write --ray=ADDRESS{missing}",
            ctx=ctx,
            param=param,
        )
    return value


def _ray_missing() -> bool:
    """Is Ray not installed? Told without importing it (that takes seconds)."""
    import importlib.util

    if "ray" in sys.modules:
        return sys.modules["ray"] is None
    try:
        return importlib.util.find_spec("ray") is None
    except (ImportError, ValueError):
        return True


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except (OSError, ValueError):  # a NUL byte, a name too long
        return False


# Where --ray and --jobs start to pay, measured with whole commands on this project's 2-core
# machine (benchmarks/crossover.py; the numbers are in docs/distributed.md): below these, a
# plain run is likely faster, and the command says so (a hint on stderr, on a terminal).
RAY_START_SECONDS = 12
"""What starting a local Ray cluster costs a command before any work (11.8 s and 13.9 s)."""
AUDIT_RAY_MIN_BYTES = 13 * 1024 * 1024
"""``audit --ray`` with a new local cluster against ``--jobs 1``: 11.75 s + 0.29 ms/KiB
against 0.98 s + 1.07 ms/KiB, even at about 13.5 MiB of traces."""
AUDIT_JOBS_MIN_BYTES = 3 * 1024 * 1024 // 2
"""``audit --jobs 2`` against ``--jobs 1`` (from 256 KiB, below which --jobs runs in this
process anyway): 1.62 s + 0.66 ms/KiB, even at about 1.5 MiB."""
FUZZ_RAY_MIN_SESSIONS = 800
"""``fuzz --ray`` with a new local cluster, a fast policy: 13.9 s + 15.1 ms/session
against 1.2 s + 31.1 ms/session, even at about 790 sessions."""
FUZZ_JOBS_MIN_SESSIONS = 250
"""``fuzz --jobs 2``, a fast policy: 5.1 s + 16.9 ms/session, even at about 280 sessions
(up to 25 sessions, one chunk, runs in this process anyway)."""


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB"


def audit_speed_hint(total: int, traces: int, jobs: int, new_cluster: bool | None) -> str | None:
    """The hint for ``audit --ray`` (``new_cluster``: whether the command starts a local
    cluster; None without --ray) or ``--jobs`` on a batch likely faster without them."""
    cores = os.cpu_count() or 1
    if new_cluster and total < AUDIT_RAY_MIN_BYTES:
        return (
            f"--ray starts a local Ray cluster, about {RAY_START_SECONDS} s here before any"
            f" work; {traces} trace(s), {_mib(total)}, are likely audited faster without it"
            f" (it pays from about {_mib(AUDIT_RAY_MIN_BYTES)}; docs/distributed.md)"
        )
    if new_cluster is None and jobs > 1:
        if jobs > cores:
            return _cores_hint(jobs, cores)
        if PARALLEL_MIN_BYTES <= total < AUDIT_JOBS_MIN_BYTES:
            return (
                f"--jobs {jobs} starts {jobs} worker processes; {_mib(total)} of traces are"
                f" likely audited faster with --jobs 1 (workers pay from about"
                f" {_mib(AUDIT_JOBS_MIN_BYTES)}; docs/distributed.md)"
            )
    return None


def fuzz_speed_hint(sessions: int, jobs: int, new_cluster: bool | None) -> str | None:
    """The hint for ``fuzz --ray`` or ``--jobs`` on few sessions (as :func:`audit_speed_hint`)."""
    cores = os.cpu_count() or 1
    if new_cluster and sessions < FUZZ_RAY_MIN_SESSIONS:
        return (
            f"--ray starts a local Ray cluster, about {RAY_START_SECONDS} s here before any"
            f" work; {sessions} session(s) are likely faster without it (it pays from about"
            f" {FUZZ_RAY_MIN_SESSIONS} sessions of a fast policy; docs/distributed.md)"
        )
    if new_cluster is None and jobs > 1:
        if jobs > cores:
            return _cores_hint(jobs, cores)
        if FUZZ_CHUNK < sessions < FUZZ_JOBS_MIN_SESSIONS:
            return (
                f"--jobs {jobs} starts {jobs} worker processes; {sessions} session(s) are likely"
                f" faster with --jobs 1 (workers pay from about {FUZZ_JOBS_MIN_SESSIONS}"
                " sessions of a fast policy; docs/distributed.md)"
            )
    return None


def _cores_hint(jobs: int, cores: int) -> str:
    return (
        f"--jobs {jobs} is more than this machine's {cores} core(s): workers beyond them only"
        f" wait their turn (use --jobs {cores})"
    )


PARALLEL_MIN_BYTES = 256 * 1024
"""As ``verifier.batch.PARALLEL_MIN_BYTES`` (below it --jobs runs in this process): this
module imports nothing heavy, so the value is repeated here and a test holds them equal."""
FUZZ_CHUNK = 25
"""As ``verifier.fuzz.CHUNK`` (one chunk runs in this process), held equal by a test."""


def ray_option(f: Any) -> Any:
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


def mode_option(f: Any) -> Any:
    return click.option(
        "--witness-mode",
        "mode",
        type=Choice(["support", "count"]),
        default="support",
        show_default=True,
        help="support: surviving witnesses must still support; count: none may leave.",
    )(f)
