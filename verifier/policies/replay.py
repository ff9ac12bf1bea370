"""A policy called again on the window it failed on, in this process, to see why.

``ctxproof fuzz POLICY --replay FILE`` (docs/fuzz.md, "Replaying a policy
error"): FILE is a counterexample ``fuzz`` wrote for a PL finding. Its trace
ends where the policy failed, so its last window is the policy's input; the
budget is the header's, the pass the rewrite that would have come next, the
ages those of that point, the store what the trace spilled until then. The
policy is loaded here and called as a debugger would call it: an exception
comes back with its full traceback, a call past the time limit is interrupted
where it is (its traceback says where it was looping), and the output is
checked as ``fuzz`` checks it (valid items, the same output twice). A policy
that ends its process ends this command too: a replay runs the policy as a
debugger does, in the same process.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifier.alarm import time_limit
from verifier.errors import InputError
from verifier.io import parse_trace_text, read_input
from verifier.policies import AgeTracker, Given, Outcome, StoreView, outcome_of
from verifier.policies.loading import Policy, one_line
from verifier.window import Append, Item, Rewrite, Spill

__all__ = ["PolicyReplay", "PolicyTimeout", "replay_policy", "window_at_end"]


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
) -> PolicyReplay:
    """Call ``policy`` on the last window of the trace at ``path`` and say what it did.

    ``announce`` is told (items, budget, pass) before the policy is called: a
    policy that ends the process leaves that much said.

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
        except (Exception, SystemExit) as exc:
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
        return replayed(
            "PL002",
            f"policy {policy.name!r} gave two different outputs for the same input",
            returned=len(first.window),
        )
    return replayed(
        None,
        f"policy {policy.name!r} returned {len(first.window)} item(s) without error,"
        " twice alike",
        returned=len(first.window),
    )


def _traceback(exc: BaseException) -> str:
    """The full traceback of the policy's frames (this module's own left out: the call
    into the policy, and the alarm that stopped it)."""
    here = str(Path(__file__).resolve())
    shown = traceback.TracebackException.from_exception(exc)
    frames = [f for f in shown.stack if str(Path(f.filename).resolve()) != here]
    shown.stack = traceback.StackSummary.from_list(frames)
    return "".join(shown.format())
