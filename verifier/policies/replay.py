"""A policy called again on the window it failed on, in this process, to see why.

``ctxproof fuzz POLICY --replay FILE`` (docs/fuzz.md, "Replaying a policy
error"): FILE is a counterexample ``fuzz`` wrote for a PL finding. Its trace
ends where the policy failed, so its last window is the policy's input; the
budget is the header's, the pass the rewrite that would have come next, the
ages those of that point, the store what the trace spilled until then. The
policy is loaded here and called as a debugger would call it: an exception
comes back with its full traceback, a call past the time limit is interrupted
where it is (its traceback says where it was looping), and the output is
checked as ``fuzz`` checks it (valid items, the same output twice).
:func:`replay_apart` (what the command runs) makes those calls in a forked copy of
this process: the same loaded policy and the same traceback, and a policy that
ends its process, or loops where no alarm reaches it (in C code), ends only that
copy: PL001 saying how it ended, or PL003 once the copy ran past its time.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.alarm import time_limit
from verifier.errors import InputError, InternalError
from verifier.io import parse_trace_text, read_input
from verifier.policies import (
    AgeTracker,
    Given,
    Outcome,
    StoreView,
    nondeterministic,
    outcome_of,
)
from verifier.policies.isolated import ended_how
from verifier.policies.loading import Policy, one_line
from verifier.window import Append, Item, Rewrite, Spill

__all__ = ["PolicyReplay", "PolicyTimeout", "replay_apart", "replay_policy", "window_at_end"]


class PolicyTimeout(Exception):
    """Raised inside a replayed policy that ran past its time limit."""


@dataclass(frozen=True, slots=True)
class PolicyReplay:
    """What calling the policy again on a counterexample's last window showed."""

    trace: str
    pass_: int
    line: int
    """The trace's last line: the finding's line, as ``fuzz`` reported it."""
    given: int
    """Items in the window the policy was given."""
    budget: int
    code: str | None
    """PL001, PL002 or PL003; None when the policy returned a valid window, twice alike."""
    message: str
    traceback: str | None = None
    returned: int | None = None
    """Items in the window it returned (when it returned one)."""
    items: tuple[str, ...] = ()
    """The items the finding names (PL002: those that differ between the two calls)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "pass": self.pass_,
            "line": self.line,
            "given": self.given,
            "budget": self.budget,
            "code": self.code,
            "message": self.message,
            "traceback": self.traceback,
            "returned": self.returned,
            "items": list(self.items),
        }


def window_at_end(
    path: str,
) -> tuple[tuple[Item, ...], int, int, dict[str, int], dict[str, dict[str, Any]], int]:
    """The last window of a trace file, its budget, the pass that would come next, the
    ages of its ids, the store its spills filled (ref -> item) and the trace's last line."""
    trace = parse_trace_text(read_input(path), path)
    budget = trace.header.budget
    if budget is None:
        raise InputError(
            "the trace has no budget, so it is no counterexample of ctxproof fuzz",
            file=path,
            line=1,
            fix="give a cex-PL00N.jsonl that fuzz wrote",
        )
    window: tuple[Item, ...] = ()
    ages = AgeTracker()
    store: dict[str, dict[str, Any]] = {}
    last = trace.header.line
    for event in trace.events:
        last = event.line
        if isinstance(event, Spill):
            store.update((it.ref, json.loads(it.raw)) for it in event.items)
        elif isinstance(event, Append):
            window = window + event.items
            ages.appended(it.id for it in event.items)
        elif isinstance(event, Rewrite):
            window = event.apply(window)
            ages.rewritten()
    return window, budget, ages.rewrites + 1, ages.ages(), store, last


def _time_limit(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    """Interrupt the block with :class:`PolicyTimeout` after ``seconds`` (main thread and
    a system with SIGALRM only; elsewhere the block runs unbounded)."""
    return time_limit(
        seconds,
        lambda: PolicyTimeout(f"the call ran past the limit of {seconds:g} s (--policy-timeout)"),
    )


def replay_policy(
    policy: Policy,
    path: str,
    *,
    timeout: float | None = None,
    announce: Callable[[int, int, int], None] | None = None,
    contained: bool = False,
) -> PolicyReplay:
    """Call ``policy`` on the last window of the trace at ``path`` and say what it did.

    ``announce`` is told (items, budget, pass) before the policy is called: a
    policy that ends the process leaves that much said. ``contained``: in a process
    of the replay's own, where even a KeyboardInterrupt the policy raises is only its
    error (as ``fuzz`` reads it).

    Raises :class:`~verifier.errors.InputError` when the trace is bad input or
    has no budget.
    """
    before, budget, pass_no, ages, store, line = window_at_end(path)
    given = Given.of(before)
    if announce is not None:
        announce(len(before), budget, pass_no)

    def replayed(code: str | None, message: str, **more: Any) -> PolicyReplay:
        return PolicyReplay(path, pass_no, line, len(before), budget, code, message, **more)

    kwargs: dict[str, Any] = {}
    if policy.takes_pass_no:
        kwargs["pass_no"] = pass_no
    if policy.takes_ages:
        kwargs["ages"] = dict(ages)
    if policy.takes_store:
        kwargs["store"] = StoreView(store)

    caught: tuple[type[BaseException], ...] = (
        (Exception, SystemExit, KeyboardInterrupt) if contained else (Exception, SystemExit)
    )

    def call(again: str = "") -> PolicyReplay | Outcome:
        window = given.fresh()
        try:
            # the policy's prints go to stderr: stdout is this command's output
            with contextlib.redirect_stdout(sys.stderr), _time_limit(timeout):
                returned = policy.function(window, budget, **dict(kwargs))
        except PolicyTimeout as exc:
            return replayed(
                "PL003",
                f"policy {policy.name!r} did not return within the limit of {timeout:g} s"
                f" (--policy-timeout){again}",
                traceback=_traceback(exc),
            )
        except caught as exc:
            return replayed(
                "PL001",
                f"policy {policy.name!r} raised {one_line(exc)}{again}",
                traceback=_traceback(exc),
            )
        return outcome_of(policy, given, (True, returned))

    first = call()
    if isinstance(first, PolicyReplay):
        return first
    if first.code is not None:
        return replayed(first.code, first.message or "")
    second = call(" when called again")
    if isinstance(second, PolicyReplay):
        if second.code == "PL001":  # fine once, not twice: as fuzz says it
            return replayed(
                "PL002",
                f"policy {policy.name!r} gave two different outputs for the same input:"
                f" first {len(first.window)} item(s), then an error ({second.message})",
                traceback=second.traceback,
                returned=len(first.window),
            )
        return second
    if second.key() != first.key():
        differs = nondeterministic(policy, first, second)
        return replayed(
            "PL002", differs.message or "", returned=len(first.window), items=differs.items
        )
    return replayed(
        None,
        f"policy {policy.name!r} returned {len(first.window)} item(s) without error,"
        " twice alike",
        returned=len(first.window),
    )


def replay_apart(
    policy: Policy,
    path: str,
    *,
    timeout: float | None = None,
    announce: Callable[[int, int, int], None] | None = None,
) -> PolicyReplay:
    """:func:`replay_policy` in a forked copy of this process (POSIX; elsewhere, here).

    The trace is read here first (bad input is exit 2 before anything runs). The
    copy sends back what the calls showed; a copy that ends without an answer is
    PL001 naming how it ended, and one still running ``2 * timeout + 1`` seconds
    after it started (its own alarm did not reach the policy) is killed: PL003.
    """
    before, budget, pass_no, _, _, line = window_at_end(path)
    if announce is not None:
        announce(len(before), budget, pass_no)
    if not hasattr(os, "fork"):
        return replay_policy(policy, path, timeout=timeout)

    def ended(code: str, message: str) -> PolicyReplay:
        return PolicyReplay(path, pass_no, line, len(before), budget, code, message)

    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing written before the fork is written twice
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: answer through the pipe, then leave without cleanup
        os.close(read_end)
        try:
            try:
                answer: PolicyReplay | str = replay_policy(
                    policy, path, timeout=timeout, contained=True
                )
            except Exception as exc:  # the harness's own failure, never the policy's
                answer = f"{type(exc).__name__}: {exc}"
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(pickle.dumps(answer))
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = None if timeout is None else time.monotonic() + 2 * timeout + 1
    chunks: list[bytes] = []
    timed_out = False
    try:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if timed_out:
        return ended(
            "PL003",
            f"policy {policy.name!r} did not return within the limit of {timeout:g} s"
            " (--policy-timeout), nor when its time ran out: it was stopped",
        )
    if chunks:
        got: PolicyReplay | str = pickle.loads(b"".join(chunks))
        if isinstance(got, str):
            raise InternalError(f"the replay failed: {got}")
        return got
    return ended(
        "PL001", f"policy {policy.name!r} ended its process: {ended_how(_returncode(status))}"
    )


def _returncode(status: int) -> int | None:
    """A wait status as subprocess words it: the exit code, or minus the signal."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return None


def _traceback(exc: BaseException) -> str:
    """The full traceback of the policy's frames (this module's own left out: the call
    into the policy, and the alarm that stopped it)."""
    here = str(Path(__file__).resolve())
    shown = traceback.TracebackException.from_exception(exc)
    frames = [f for f in shown.stack if str(Path(f.filename).resolve()) != here]
    shown.stack = traceback.StackSummary.from_list(frames)
    return "".join(shown.format())
