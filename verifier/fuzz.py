"""Fuzzing a rewrite policy with a simulated agent (docs/fuzz.md).

A *session* is what an agent does over many turns: it opens with a system
prompt and the user's task, records decisions with their reasons, rejects
options, states invariants and open obligations, takes user instructions
(some of which constrain its later choices), calls tools and reads their
results (passing and failing runs, with sources and exit codes; several
calls in one turn whose results arrive in any order, some after other
items), fixes a failing command and runs it again, derives claims from what
it observed, digests its claims, and writes prose. Whenever the window's
tokens exceed the budget, the policy under test rewrites the window, and the
rewrite is audited like any trace.

The agent reacts to what it can still see (an item in the window, or behind
a stub: it can retrieve that): it runs again a command whose failure it can
no longer see, adopts again an option whose rejection it can no longer see,
and cites the claims it sees. Everything it asserts is true in a hidden world,
so every finding is the policy's doing.

Sessions are drawn by hypothesis as *plans* (abstract turns, resolved against
what the agent sees when they run), so hypothesis can shrink a whole session:
for each rule found, the smallest session that still shows it is written as a
trace that ``ctxproof audit`` replays. The same seed gives the same output.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import sys
import time
import types
import zlib
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from verifier.audit import Auditor
from verifier.errors import (
    InternalError,
    bad_argument,
    want_bool,
    want_callable,
    want_choice,
    want_int,
    want_path,
    want_text,
    wrong_type,
)
from verifier.findings import RULES, WITNESS_MODES, Finding
from verifier.fsutil import make_folder, write_set
from verifier.io import item_from_json, parse_trace_text, ref_of
from verifier.parser import parse_formula
from verifier.policies import (
    Policy,
    PolicyResult,
    ids_checked_by_caller,
    item_tokens,
    load_policy,
    policy_argument,
    run_policy,
)
from verifier.policies.isolated import DEFAULT_TIMEOUT, PolicyProcess, runs_apart
from verifier.pressure import PlotProcess, plot_pressure, summarize_pressure
from verifier.solver import Session
from verifier.window import Item

__all__ = [
    "ACTIONS",
    "FuzzReport",
    "Plan",
    "SessionResult",
    "Step",
    "Turn",
    "explore_sessions",
    "fuzz",
    "keep_everything",
    "run_session",
    "session_plans",
    "session_shapes",
]

Obj = dict[str, Any]

Runnable = Policy | PolicyProcess
"""A policy as the agent calls it: in this process, or in a process of its own."""

ACTIONS: tuple[str, ...] = (
    "prose",
    "tool",
    "instruct",
    "decide",
    "reject",
    "invariant",
    "obligation",
    "claim",
    "digest",
    "use",
    "rerun",
    "readopt",
    "parallel",
    "fix",
)
"""What one step of a turn does (hypothesis shrinks towards the first)."""

TOOL = "bash"
"""The name of the tool the agent runs its commands with: a result's ``source`` is
``bash: COMMAND``, as the importers write it (docs/importers.md)."""

TOOLS: tuple[tuple[str, str], ...] = (
    ("make test", "tests.pass"),
    ("pip install -r requirements.txt", "deps.installed"),
    ("make migrate", "db.migrated"),
    ("npm run build", "build.ok"),
    ("curl -fsS localhost:8080/health", "svc.healthy"),
    ("git push origin main", "push.accepted"),
)
"""The tools the agent runs: the command and the fact its output shows."""

OPTIONS: tuple[tuple[str, str], ...] = (
    ("db.postgres", "db.mysql"),
    ("queue.kafka", "queue.rabbitmq"),
    ("auth.oidc", "auth.saml"),
    ("deploy.blue_green", "deploy.in_place"),
)
"""Mutually exclusive choices the agent decides between (the background says so)."""

BACKGROUND: tuple[str, ...] = (
    *(f"{a} -> !{b}" for a, b in OPTIONS),
    # a user instruction that constrains a choice: "use a" (the agent decides accordingly)
    *(f"user.requires.{x} -> {x}" for pair in OPTIONS for x in pair),
)

SYSTEM_PROMPT = (
    "You are a coding agent. Run commands with the bash tool, state your decisions and"
    " the evidence for them, and follow the user's instructions."
)
TASK = "Get the service deployed: install, migrate, build, tests passing, then push."

TURNS_PER_PASS = 8
"""A session plays at most this many turns per pass it may make."""

MAX_PRESSURE = 3.0
"""A session ends when an append would take the window past this many budgets."""


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the agent does in a turn; ``a`` and ``b`` pick among what it sees."""

    action: str
    a: int = 0
    b: int = 0
    flag: bool = False
    size: int = 8


@dataclass(frozen=True, slots=True)
class Turn:
    """One append: its steps, and (``fill`` > 0) a bulky output that brings the window to
    ``fill`` hundredths of the budget."""

    steps: tuple[Step, ...]
    fill: int = 0


@dataclass(frozen=True, slots=True)
class Plan:
    """A whole session in the abstract: the budget, the hidden world, the turns."""

    budget: int
    world: tuple[bool, ...]
    turns: tuple[Turn, ...]
    fill_pieces: int = 1
    """How many tool outputs a fill comes in (1: one bulky output)."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # hypothesis formats the example a shrink settles on (never shown: the run is
        # quiet); a whole plan took it longer than playing a session
        printer.text(f"<plan: {len(self.turns)} turns>")


def session_plans(
    passes: int = 10,
    pressure: tuple[float, float] = (1.05, 3.0),
    max_budget: int = 1500,
    *,
    min_budget: int = 24,
    always_fill: bool = False,
    fill_pieces: int = 1,
) -> st.SearchStrategy[Plan]:
    """Sessions for :func:`run_session`: up to about ``passes`` rewrites each.

    ``pressure`` bounds the fill that some turns bring (tokens over budget
    when the policy runs): from just over 1 (the window barely overflows) to
    3 (a turn that dumps two budgets' worth of output); with ``always_fill``
    every turn brings one, so rewrites run at that pressure, and with
    ``fill_pieces`` > 1 it comes as that many tool outputs (many items).
    """
    lo, hi = (max(101, round(p * 100)) for p in pressure)
    # one draw a step (hypothesis draws are the cost of a session's plan, and a plan is
    # drawn again for every candidate while shrinking): the action in the low digits
    step = st.integers(0, len(ACTIONS) * 8 * 8 * 2 * 37 - 1).map(_decode_step)
    fill = st.integers(0, 2 * (hi - lo + 1)).map(
        lambda k: lo + k % (hi - lo + 1) if always_fill or k > hi - lo else 0
    )
    turn = st.tuples(st.lists(step, min_size=1, max_size=4), fill).map(
        lambda t: Turn(tuple(t[0]), t[1])
    )
    facts = len(TOOLS) + len(OPTIONS)
    world = st.integers(0, 2**facts - 1).map(
        lambda w: tuple(bool(w >> i & 1) for i in range(facts))
    )
    return st.builds(
        Plan,
        st.integers(min_budget, max(min_budget, max_budget)),
        world,
        st.lists(turn, min_size=1, max_size=max(2, passes * 4)).map(tuple),
        st.just(fill_pieces),
    )


def _decode_step(code: int) -> Step:
    code, action = divmod(code, len(ACTIONS))
    code, a = divmod(code, 8)
    code, b = divmod(code, 8)
    code, flag = divmod(code, 2)
    return Step(ACTIONS[action], a, b, bool(flag), 4 + code % 37)


# -- one session -------------------------------------------------------------------------------


@dataclass
class SessionResult:
    """What one session showed: its trace, its rewrites and what the audit found."""

    trace: list[Obj]
    findings: list[Finding]
    rewrites: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    pressures: list[tuple[float, int]] = field(default_factory=list)
    """(pressure, findings at that pass) for every rewrite."""
    shapes: dict[str, int] = field(default_factory=dict)
    """What the session's turns looked like (:func:`session_shapes`)."""
    shrink: dict[str, Any] | None = None
    """For a shrunk counterexample: the sessions played to shrink it (``plays``), whether
    the limit on them was reached (``bounded``) and the ``seconds`` it took."""
    over_budget: int = 0
    """Rewrites that left the window over its budget."""
    undecided: int = 0
    """Checks the solver left undecided (unknown, or its budget spent): rewrites whose
    verdict is ``undecided`` and questions at appends; never counted as accepted."""

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def text(self) -> str:
        return "\n".join(json.dumps(ev, ensure_ascii=False) for ev in self.trace) + "\n"

    def to_json(self) -> Obj:
        return {
            "trace": self.trace,
            "findings": [f.to_json() for f in self.findings],
            "rewrites": self.rewrites,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "pressures": self.pressures,
            "shapes": self.shapes,
            **({"shrink": self.shrink} if self.shrink is not None else {}),
            "over_budget": self.over_budget,
            "undecided": self.undecided,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SessionResult:
        return cls(
            list(obj["trace"]),
            [Finding.from_json(f) for f in obj["findings"]],
            obj["rewrites"],
            obj["tokens_before"],
            obj["tokens_after"],
            [(p, n) for p, n in obj["pressures"]],
            dict(obj.get("shapes", {})),
            dict(obj["shrink"]) if obj.get("shrink") is not None else None,
            obj.get("over_budget", 0),
            obj.get("undecided", 0),
        )


class _Agent:
    """The simulated agent: turns a plan into appends, and lets the policy rewrite."""

    def __init__(
        self,
        plan: Plan,
        policy: Runnable,
        passes: int,
        mode: str,
        require_fit: bool = False,
        session: Session | None = None,
    ) -> None:
        self.plan = plan
        self.require_fit = require_fit
        self.policy = policy
        self.passes = passes
        self.world = plan.world
        self.budget = plan.budget
        self.window: list[Obj] = []
        self.items: list[Item] = []  # the same window, validated
        self.canonical: list[Obj | None] = []
        """Each item's canonical object, as a rewrite event writes it (None: not made yet)."""
        self._visible: tuple[list[Obj], int, list[Obj]] | None = None
        """What the agent sees, with the window and the store's size it was made of (a new
        window is a new list; the store only grows)."""
        self.total = 0  # its tokens
        self.stored: dict[str, Obj] = {}  # ref -> item
        self.counter = 0
        self.rejections: list[tuple[str, str]] = []  # (id, rejected option atom)
        self.failures: list[tuple[str, str]] = []  # (observation id, source)
        self.first_seen: dict[str, int] = {}
        self.fixed: set[int] = set()  # tools whose failure the agent fixed: they pass now
        self.stale: set[str] = set()  # failed runs a fix made stale: no witness from then on
        self.deferred: list[Obj] = []  # results of this step that arrive after the next one
        self.consumed = 0
        """The plan's turns played so far, counted as they come round (the session so far
        depends on the plan's budget, world and fill pieces, and on these turns alone)."""
        header: Obj = {
            "event": "header",
            "format": "ctxproof-trace/1",
            "background": list(BACKGROUND),
            "budget": plan.budget,
        }
        self.trace: list[Obj] = [header]
        self.auditor = Auditor(BACKGROUND, name="session", mode=mode, session=session)
        self.result = SessionResult(self.trace, self.auditor.findings)
        self.answers: _Plays | None = None
        """The policy's results on inputs it was called on before (:class:`_Plays`), given
        again instead of calling it; None: every rewrite calls it."""

    # -- what the agent sees --------------------------------------------------------------
    def visible(self) -> list[Obj]:
        """The window as the agent reads it: items, and what stubs stand for."""
        made = self._visible
        if made is not None and made[0] is self.window and made[1] == len(self.stored):
            return made[2]
        out: list[Obj] = []
        for it in self.window:
            real: Obj | None = it
            seen: set[str] = set()
            # a stub stands for the item its chain of stubs ends at; one whose ref names
            # another stored item (or a chain that comes round) stands for nothing
            while real is not None and real.get("kind") == "stub":
                ref = str(real.get("ref"))
                found = None if ref in seen else self.stored.get(ref)
                seen.add(ref)
                real = found if found is not None and found.get("id") == it.get("id") else None
            if real is not None:
                out.append(real)
        self._visible = (self.window, len(self.stored), out)
        return out

    def tokens(self) -> int:
        return self.total

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def fact(self, index: int) -> bool:
        return self.world[index % len(self.world)] or index in self.fixed

    # -- the turns -------------------------------------------------------------------------
    def run(self, stop_on: str | None = None) -> SessionResult:
        findings = self.result.findings
        for _ in self.turns():
            if stop_on is not None and any(f.code == stop_on for f in findings):
                break  # what is sought is found: the rest of the session cannot matter
        auditor = self.auditor
        self.result.undecided = len(auditor.undecided) + sum(
            r.verdict == "undecided" for r in auditor.rewrites
        )
        return self.result

    def turns(self) -> Iterator[None]:
        """Play the session, pausing after each turn that was appended (and rewritten, when
        the window overflowed): where a play that seeks one rule stops once it is found.
        Nothing after a pause takes back what came before it (the trace and the findings
        only grow), so a session paused there can be resumed to seek another rule."""
        turns = self.plan.turns
        # every session opens as real ones do: the system prompt and the user's task
        if not self.step_window(self.opening()):
            return
        # the plan's turns come round again (each time on a different window) until the
        # session has its passes: a short plan makes a long session, and shrinking a
        # session is deleting turns from a short list
        for k in range(TURNS_PER_PASS * self.passes):
            turn = turns[k % len(turns)]
            if self.result.rewrites >= self.passes:
                break
            items = self.turn(turn)
            self.consumed = k + 1
            if not items:
                continue
            if (self.tokens() + sum(item_tokens(i) for i in items)) > MAX_PRESSURE * self.budget:
                break  # the window cannot take this turn
            if not self.step_window(items):
                break
            yield

    def opening(self) -> list[Obj]:
        """The system prompt and the user's opening task."""
        system = self.item("sys", "observation", 12, source="system", content=SYSTEM_PROMPT)
        task = self.item(
            "u",
            "observation",
            10,
            source="user",
            shows="user.task",
            modality="verified",
            content=TASK,
        )
        return [system, task]

    def turn(self, turn: Turn) -> list[Obj]:
        new: list[Obj] = []
        waiting: list[Obj] = []  # results deferred by the step before: they arrive now
        for step in turn.steps:
            new.extend(self.step(step, new))
            new.extend(waiting)
            waiting, self.deferred = self.deferred, []
        new.extend(waiting)
        if turn.fill and new:
            target = turn.fill * self.budget // 100
            have = self.tokens() + sum(item_tokens(i) for i in new)
            pieces = max(1, self.plan.fill_pieces)
            for k in range(pieces):
                share = (target - have) // (pieces - k)
                if share >= 4:
                    new.extend(self.tool_run(turn.fill + k, share, new))
                    have += share + 6  # the output and its call
        return new

    def step(self, step: Step, new: list[Obj]) -> list[Obj]:
        seen = self.visible() + new
        action = step.action
        if action == "prose":
            return [self.item("p", "prose", step.size, text="notes on the plan")]
        if action == "tool":
            return self.tool_run(step.a, step.size, new)
        if action == "instruct":
            return [self.instruct(step)]
        if action == "parallel":
            return self.parallel(step)
        if action == "fix":
            return self.fix(step, seen, new)
        if action == "decide":
            return self.decide(step, seen)
        if action == "reject":
            return self.reject(step, seen)
        if action == "invariant":
            observed = [o for o in seen if _ok(o) and o.get("call")]
            if not observed:
                return []
            o = observed[step.a % len(observed)]
            return [
                self.item(
                    "inv",
                    "commitment",
                    step.size,
                    type="invariant",
                    formula=o["shows"],
                    witnesses=[o["id"]],
                    modality="verified",
                )
            ]
        if action == "obligation":
            return [
                self.item(
                    "todo",
                    "commitment",
                    step.size,
                    type="obligation",
                    formula=f"todo.task_{step.a % 4}",
                    rationale=[u["id"] for u in seen if u.get("source") == "user"][-1:],
                )
            ]
        if action == "claim":
            return self.claim(step, seen)
        if action == "digest":
            return self.digest(step, seen)
        if action == "use":
            return self.use(step, seen)
        if action == "rerun":
            return self.rerun(step, seen, new)
        return self.readopt(step, seen)

    def item(self, prefix: str, kind: str, tokens: int, *, iid: str = "", **fields: Any) -> Obj:
        obj: Obj = {"id": iid or self.fresh(prefix), "kind": kind, **fields, "tokens": tokens}
        if "score" not in obj:
            obj["score"] = (self.counter * 37) % 101
        return {k: v for k, v in obj.items() if v not in (None, [])}

    def instruct(self, step: Step) -> Obj:
        """A user instruction: a task, or (``flag``) a constraint on one of the choices."""
        k = step.a % len(OPTIONS)
        if step.flag:
            chosen, other = self.option(k)  # the user asks for what is true in the world
            return self.item(
                "u",
                "observation",
                step.size,
                source="user",
                shows=f"user.requires.{chosen}",
                modality="verified",
                content=f"use {chosen}, not {other}",
            )
        return self.item(
            "u",
            "observation",
            step.size,
            source="user",
            shows=f"user.asks_{k % 4}",
            modality="verified",
            content=f"please take care of task {k % 4}",
        )

    def call(self, index: int) -> Obj:
        """A tool call: a prose item whose text is the call as the importers write it."""
        return self.item("call", "prose", 6, text=f"{TOOL}: {TOOLS[index][0]}")

    def outcome(self, call: Obj, index: int, size: int) -> Obj:
        """The result of a call (``CALLID:result``, as the importers name it)."""
        command, atom = TOOLS[index]
        passed = self.fact(index)
        code = 0 if passed else 1
        output = "ok" if passed else "error: exit status 1"
        result = self.item(
            "r",
            "observation",
            size,
            iid=f"{call['id']}:result",
            call=call["id"],
            source=f"{TOOL}: {command}",
            shows=atom if passed else f"!{atom}",
            modality="verified" if passed else "failed",
            exit_code=code,
            content=f"$ {command}\n{output}\nExit code {code}",
        )
        if not passed:
            self.failures.append((result["id"], str(result["source"])))
        return result

    def tool_run(
        self, which: int, size: int, new: list[Obj], source: str | None = None
    ) -> list[Obj]:
        index = which % len(TOOLS)
        if source is not None:
            index = next(i for i, (c, _) in enumerate(TOOLS) if f"{TOOL}: {c}" == source)
        call = self.call(index)
        return [call, self.outcome(call, index, size)]

    def parallel(self, step: Step) -> list[Obj]:
        """One assistant turn issues 2 to 4 calls at once; their results arrive in an order
        of their own, and (``flag``) the first of them only after the turn's next step."""
        count = 2 + step.a % 3
        indices = [(step.b + j) % len(TOOLS) for j in range(count)]
        calls = [self.call(i) for i in indices]
        order = list(range(count))
        shift = step.b % count
        order = order[shift:] + order[:shift]
        if step.size % 2:
            order.reverse()
        results = [self.outcome(calls[j], indices[j], step.size) for j in order]
        if step.flag:
            self.deferred.append(results.pop(0))
        return [*calls, *results]

    def fix(self, step: Step, seen: list[Obj], new: list[Obj]) -> list[Obj]:
        """Fix a command whose failure the agent sees as the last run of it, and run it again
        (it passes now). Only when nothing it sees asserts the fact the run shows: a claim
        drawn from the failure would be stale, and the agent does not contradict itself."""
        last: dict[str, Obj] = {}
        for o in seen:
            if o["kind"] == "observation" and o.get("call") and "source" in o:
                last[str(o["source"])] = o
        asserted = {a for o in seen if o["kind"] in ("claim", "commitment") for a in _atoms_in(o)}
        broken = [
            o
            for o in last.values()
            if o.get("modality") == "failed"
            and str(o.get("shows", "")).lstrip("!") not in asserted
            and o["id"] not in {d["id"] for d in self.deferred}
        ]
        if not broken:
            return []
        target = broken[step.a % len(broken)]
        source = str(target["source"])
        index = next(i for i, (c, _) in enumerate(TOOLS) if f"{TOOL}: {c}" == source)
        self.fixed.add(index)
        self.stale.update(oid for oid, src in self.failures if src == source)
        command = TOOLS[index][0]
        patch = self.item("call", "prose", 6, text=f"edit: fix what makes {command} fail")
        applied = self.item(
            "r",
            "observation",
            step.size,
            iid=f"{patch['id']}:result",
            call=patch["id"],
            source=f"edit: fix what makes {command} fail",
            modality="verified",
            exit_code=0,
            content="patched 1 file\nExit code 0",
        )
        return [patch, applied, *self.tool_run(index, step.size, new)]

    def decide(self, step: Step, seen: list[Obj]) -> list[Obj]:
        k = step.a % len(OPTIONS)
        if _decided(seen, k):
            return []  # it sees a decision on this choice already
        chosen, _ = self.option(k)
        asked = _constraints(seen, k)
        reasons = [o["id"] for o in seen if o["kind"] in ("prose", "observation", "claim")]
        if asked:
            rationale = asked[-1:]  # the user's instruction is the reason
        else:
            rationale = reasons[-1 - (step.b % 2) :] if reasons else []
        return [
            self.item(
                "d",
                "commitment",
                step.size,
                type="decision",
                formula=chosen,
                rationale=rationale,
                text=f"we use {chosen}",
            )
        ]

    def option(self, k: int) -> tuple[str, str]:
        a, b = OPTIONS[k]
        return (a, b) if self.fact(len(TOOLS) + k) else (b, a)

    def reject(self, step: Step, seen: list[Obj]) -> list[Obj]:
        k = step.a % len(OPTIONS)
        if _decided(seen, k):
            return []
        _, rejected = self.option(k)
        failed = [o["id"] for o in seen if o.get("modality") == "failed" and o["kind"] != "claim"]
        rej = self.item(
            "rej",
            "commitment",
            step.size,
            type="rejection",
            formula=f"!{rejected}",
            rationale=failed[-1:],
            text=f"{rejected} is ruled out",
        )
        self.rejections.append((rej["id"], rejected))
        return [rej]

    def claim(self, step: Step, seen: list[Obj]) -> list[Obj]:
        observed = [
            o
            for o in seen
            if o["kind"] == "observation" and "shows" in o and o["id"] not in self.stale
        ]
        if not observed:
            return []
        first = observed[step.a % len(observed)]
        witnesses = [first]
        if step.b % 3 == 0 and len(observed) > 1:
            second = observed[step.b % len(observed)]
            if second["id"] != first["id"]:
                witnesses.append(second)
        failed = any(w.get("modality") == "failed" for w in witnesses)
        formula = " & ".join(f"({w['shows']})" for w in witnesses)
        modality = "failed" if failed else ("verified" if step.b % 4 else "unverified")
        return [
            self.item(
                "k",
                "claim",
                step.size,
                formula=formula,
                witnesses=[w["id"] for w in witnesses],
                modality=modality,
                load_bearing=step.flag or None,
                text="what the output shows",
            )
        ]

    def digest(self, step: Step, seen: list[Obj]) -> list[Obj]:
        claims = [c for c in seen if c["kind"] == "claim" and "formula" in c]
        if len(claims) < 2:
            return []
        start = step.a % len(claims)
        covered = (claims[start:] + claims[:start])[: 2 + step.b % 2]
        witnesses = list(dict.fromkeys(w for c in covered for w in c.get("witnesses", ())))
        visible = {o["id"] for o in seen if o["kind"] == "observation"}
        modalities = {c.get("modality", "unverified") for c in covered}
        # a checked digest only when every witness of what it merges is in sight
        if witnesses and set(witnesses) <= visible and modalities in ({"verified"}, {"failed"}):
            (modality,) = modalities
        else:
            modality = "unverified"
            witnesses = []
        return [
            self.item(
                "dg",
                "claim",
                step.size,
                formula=" & ".join(f"({c['formula']})" for c in covered),
                covers=[c["id"] for c in covered],
                derived_from=[c["id"] for c in covered],
                witnesses=witnesses,
                modality=modality,
                load_bearing=step.flag or None,
                text="digest of earlier findings",
            )
        ]

    def use(self, step: Step, seen: list[Obj]) -> list[Obj]:
        claims = [c for c in seen if c["kind"] == "claim" and "formula" in c]
        if not claims:
            return []
        cited = claims[step.a % len(claims)]
        return [
            self.item(
                "k",
                "claim",
                step.size,
                formula=cited["formula"],
                derived_from=[cited["id"]],
                text="building on an earlier finding",
            )
        ]

    def rerun(self, step: Step, seen: list[Obj], new: list[Obj]) -> list[Obj]:
        """Run again a command whose failure the agent can no longer see."""
        seen_ids = {o["id"] for o in seen}
        cited = {w for o in seen for w in o.get("witnesses", ())}
        waiting = {d["id"] for d in self.deferred}
        forgotten = [
            src
            for oid, src in self.failures
            if oid not in seen_ids and oid not in cited and oid not in waiting
        ]
        forgotten = [s for s in forgotten if not any(o.get("source") == s for o in seen)]
        if not forgotten:
            return []
        return self.tool_run(0, step.size, new, source=forgotten[step.a % len(forgotten)])

    def readopt(self, step: Step, seen: list[Obj]) -> list[Obj]:
        """Adopt again an option whose rejection the agent can no longer see."""
        seen_ids = {o["id"] for o in seen}
        in_sight = {a for o in seen if o["kind"] == "commitment" for a in _atoms_in(o)}
        forgotten = [
            opt
            for rid, opt in self.rejections
            if rid not in seen_ids
            # nothing in sight decides between the two options either, nor constrains them
            and not any(
                opt in pair
                and (pair[0] in in_sight or pair[1] in in_sight or _constraints(seen, k))
                for k, pair in enumerate(OPTIONS)
            )
        ]
        if not forgotten:
            return []
        option = forgotten[step.a % len(forgotten)]
        return [
            self.item(
                "d",
                "commitment",
                step.size,
                type="decision",
                formula=option,
                text=f"we use {option}",
            )
        ]

    # -- events ----------------------------------------------------------------------------
    def line(self) -> int:
        return len(self.trace) + 1

    def step_window(self, items: list[Obj]) -> bool:
        """Append ``items`` and, when the window is then over its budget, rewrite it; False
        when the session ends there (the policy failed: PL). The policy's two calls are
        asked for before the append is audited, so a policy in a process of its own runs
        while the audit does (what it is given does not depend on the audit)."""
        line = self.line()
        checked = self.enter(items)
        call = self.ask_policy() if self.tokens() > self.budget else None
        self.auditor.append(checked, line)
        self.trace.append({"event": "append", "items": items})
        return call is None or self.rewrite(call)

    def enter(self, items: list[Obj]) -> list[Item]:
        """Put ``items`` in the window (its audit aside); the items, read."""
        for it in items:
            self.first_seen.setdefault(it["id"], self.result.rewrites)
        checked = [item_from_json(it) for it in items]
        self.window = self.window + items
        self.items = self.items + checked
        self.canonical = self.canonical + [None] * len(checked)
        self.total += sum(it.estimated_tokens() for it in checked)
        return checked

    def ask_policy(self) -> Callable[[], PolicyResult]:
        """Ask for the policy's rewrite of the window as it stands: the result, when the
        returned function is called."""
        ages = {i: self.result.rewrites - at for i, at in self.first_seen.items()}
        return self.rewritten(self.result.rewrites + 1, ages)

    def rewrite(self, call: Callable[[], PolicyResult]) -> bool:
        """Take the policy's rewrite of the window (``call``: :meth:`ask_policy` on this
        window) and audit it; False when it failed (PL)."""
        pass_no = self.result.rewrites + 1
        before = self.tokens()
        pressure = _ratio(before, self.budget)
        res = call()
        last = len(self.trace)  # the line of the window the policy was given
        finding = (
            res.finding(last)
            if not res.ok
            else self.dangling(res.window, pass_no, res.claimed_preserved)
        )
        if finding is not None:
            # no rewrite is written: the finding is at the trace's last line, as --replay says
            self.result.findings.append(
                Finding(finding.code, pass_no, finding.items, finding.message, last)
            )
            return False
        if res.spilled:
            spilled = [it.as_json() for it in res.spilled]
            self.auditor.spill(list(res.spilled), self.line())
            self.trace.append({"event": "spill", "items": spilled})
            for obj in spilled:
                self.stored[ref_of(obj)] = obj
        # an item the rewrite kept is the same object: its object is made once
        made = {id(it): obj for it, obj in zip(self.items, self.canonical, strict=True)}
        after = [made.get(id(it)) or it.as_json() for it in res.window]
        event: Obj = {"event": "rewrite", "policy": self.policy.name, "window": after}
        if pressure < _PRESSURE_SHOWN:  # a policy's 10**400 tokens: no number a trace holds
            event["pressure"] = round(pressure, 4)
        if res.claimed_preserved is not None:
            event["claimed_preserved"] = list(res.claimed_preserved)
        count = len(self.auditor.findings)
        self.auditor.rewrite(
            res.window,
            policy=self.policy.name,
            claimed_preserved=res.claimed_preserved,
            line=self.line(),
        )
        self.trace.append(event)
        self.window = after
        self.items = list(res.window)
        self.canonical = list(after)
        self.total = sum(it.estimated_tokens() for it in self.items)
        self.result.rewrites = pass_no
        self.result.tokens_before += before
        self.result.tokens_after += self.tokens()
        self.result.pressures.append((pressure, len(self.auditor.findings) - count))
        self.measure_fit(pass_no)
        return True

    def dangling(
        self, window: Sequence[Item], pass_no: int, claimed: Sequence[str] | None = None
    ) -> Finding | None:
        """PL001 when an item of the policy's window cites, or its ``claimed_preserved``
        names, an id no event of the session defines and the store does not hold (a trace
        holding it would be bad input); an id dropped at an earlier pass is defined, and
        the rules judge it (CF006 for a claim, CF004 for a citation)."""
        own = {it.id for it in window}
        seen, store = self.auditor.history.last_seen, self.auditor.store
        for cid in claimed or ():
            if cid in own or cid in seen or store.has_id(cid):
                continue
            return Finding(
                "PL001",
                pass_no,
                (cid,),
                f"policy {self.policy.name!r}: 'claimed_preserved' names {cid!r}, which no"
                " event defines and the store does not hold",
                self.line(),
            )
        given = {id(it) for it in self.items}
        for it in window:
            if id(it) in given:
                continue  # an item of the window as it was: its citations were checked then
            for rel, ref in it.citations:
                if ref in own or ref in seen or store.has_id(ref):
                    continue
                return Finding(
                    "PL001",
                    pass_no,
                    (it.id, ref),
                    f"policy {self.policy.name!r}: item {it.id!r} cites {rel} {ref!r}, which"
                    " no event defines and the store does not hold",
                    self.line(),
                )
        return None

    def rewritten(self, pass_no: int, ages: dict[str, int]) -> Callable[[], PolicyResult]:
        """The policy's rewrite of the window (its two calls), when the function returned is
        called; from :attr:`answers` when it was called on this very input before and gave
        one result twice, without error (a policy seen to vary, or to fail, is called
        again: PL002 and PL001 stay its own).
        """
        answers = self.answers
        if answers is None:
            return send_twice(
                self.policy, self.items, self.budget, pass_no=pass_no, ages=ages, store=self.stored
            )
        # the whole input: the window's items, the budget, the pass, the ages, the store
        # (whose refs name their content)
        key = (
            tuple(it.raw for it in self.items),
            self.budget,
            pass_no,
            tuple(ages.items()),
            tuple(self.stored),
        )
        known = answers.get(key)
        if known is not None:
            return lambda: known
        pending = send_twice(
            self.policy, self.items, self.budget, pass_no=pass_no, ages=ages, store=self.stored
        )
        size = len(self.items)

        def result() -> PolicyResult:
            res = pending()
            answers.put(key, size, res)
            return res

        return result

    def measure_fit(self, pass_no: int) -> None:
        """Count a rewrite that left the window over its budget; with ``require_fit`` each
        one is PL004 over-budget (the policy did not fail: the session goes on, and the
        trace of the play that seeks PL004 ends with the rewrite that shows it)."""
        if self.tokens() <= self.budget:
            return
        self.result.over_budget += 1
        if not self.require_fit:
            return
        line = len(self.trace)  # the rewrite event, the last line
        self.result.findings.append(
            Finding(
                "PL004",
                pass_no,
                (),
                f"policy {self.policy.name!r} left the window at {self.tokens()} tokens,"
                f" over its budget of {self.budget}",
                line,
            )
        )


_PRESSURE_SHOWN = 1e12


def _ratio(a: int, b: int) -> float:
    """a / b as a float: the float's largest value where the quotient is larger (a policy
    may return any int as an item's tokens), infinity for a budget of 0."""
    if b <= 0:
        return math.inf if a > 0 else 0.0
    try:
        return a / b
    except OverflowError:
        return sys.float_info.max


def send_twice(
    policy: Runnable,
    items: Sequence[Item],
    budget: int,
    *,
    pass_no: int,
    ages: Mapping[str, int],
    store: Mapping[str, Obj],
) -> Callable[[], PolicyResult]:
    """One rewrite's two calls of the policy (PL002 compares them), wherever it runs: the
    result when the function returned is called. A policy in a process of its own is sent
    the window now and runs meanwhile; one in this process runs when the result is asked
    for."""
    if isinstance(policy, PolicyProcess):
        return policy.send(items, budget, pass_no=pass_no, ages=ages, store=store)
    return lambda: run_policy(
        policy,
        items,
        budget,
        pass_no=pass_no,
        ages=ages,
        store=store,
        known=ids_checked_by_caller,  # the ids are checked against the session: dangling()
        check_determinism=True,
    )


def _decided(seen: Iterable[Obj], k: int) -> bool:
    """Does the agent see a commitment on the k-th choice (a decision, or a rejection)?"""
    pair = set(OPTIONS[k])
    return any(o["kind"] == "commitment" and _atoms_in(o) & pair for o in seen)


def _constraints(seen: Iterable[Obj], k: int) -> list[str]:
    """The user instructions the agent sees that constrain the k-th choice."""
    asked = {f"user.requires.{x}" for x in OPTIONS[k]}
    return [o["id"] for o in seen if o.get("source") == "user" and o.get("shows") in asked]


def _atoms_in(o: Obj) -> set[str]:
    text = str(o.get("formula", o["id"]))
    return {t for t in text.replace("!", " ").replace("(", " ").replace(")", " ").split()}


def _ok(o: Obj) -> bool:
    return o["kind"] == "observation" and o.get("modality") == "verified" and "shows" in o


def solver_session() -> Session:
    """A solver session for the simulated agent's background, to share between the sessions
    of a run: its answers do not depend on what it was asked before, and what it learnt
    once (the background's model, the consistency of a set of formulas, its z3 contexts)
    is not learnt again for every session."""
    return Session([parse_formula(b) for b in BACKGROUND])


def run_session(
    policy: Runnable,
    plan: Plan,
    *,
    passes: int = 10,
    mode: str = "support",
    stop_on: str | None = None,
    require_fit: bool = False,
    session: Session | None = None,
) -> SessionResult:
    """Play one session of the simulated agent against a policy, auditing as it goes.

    ``policy`` runs in this process, or in its own with a :class:`PolicyProcess`.
    ``session`` (:func:`solver_session`) is the solver the audit asks, shared by the
    sessions of a run (by default the session makes its own: the findings are the same).

    With ``stop_on`` (a rule code) the session ends at the turn that shows it. With
    ``require_fit`` each rewrite that leaves the window over its budget is PL004 (without,
    it is only counted in ``over_budget``).
    """
    result = _Agent(plan, policy, passes, mode, require_fit, session).run(stop_on)
    return _finished(result)


def _finished(result: SessionResult) -> SessionResult:
    """A session's result as :func:`run_session` returns it: its shapes, and the findings
    of each rewrite."""
    result.shapes = session_shapes(result.trace)
    # findings made at an append count towards the rewrite before them
    if result.pressures:
        per_pass: dict[int, int] = {}
        for f in result.findings:
            per_pass[f.pass_] = per_pass.get(f.pass_, 0) + 1
        result.pressures = [
            (p, per_pass.get(i + 1, 0)) for i, (p, _) in enumerate(result.pressures)
        ]
    return result


SHAPE_KEYS: tuple[str, ...] = (
    "turns",
    "call_groups",
    "calls",
    "parallel_groups",
    "max_calls_per_group",
    "results",
    "results_out_of_order",
    "results_apart",
    "items_between",
    "max_items_between",
    "system_prompts",
    "user_constraints",
    "retries_after_fix",
)
"""The counters :func:`session_shapes` keeps (the ``max_`` ones merge by maximum)."""


def session_shapes(trace: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """What the turns of a trace look like, counted over its appends (docs/fuzz.md).

    A *call group* is a run of tool calls one after another in an append (one
    assistant turn issuing them; a group of two or more is parallel). A result
    is *out of order* when a result of a later call of its append arrived
    before it, and *apart* when other items (its sibling calls included) stand
    between its call and it; ``items_between`` sums those items. A *retry
    after a fix* is a run of a command whose last run failed, after an edit.

    >>> trace = [{"event": "append", "items": [
    ...     {"id": "c1", "kind": "prose"}, {"id": "c2", "kind": "prose"},
    ...     {"id": "c2:result", "kind": "observation", "call": "c2", "source": "bash: ls"},
    ...     {"id": "c1:result", "kind": "observation", "call": "c1", "source": "bash: pwd"}]}]
    >>> shapes = session_shapes(trace)
    >>> shapes["parallel_groups"], shapes["results_out_of_order"], shapes["items_between"]
    (1, 1, 2)
    """
    out = dict.fromkeys(SHAPE_KEYS, 0)
    last_run: dict[str, Obj] = {}
    edited = False
    for ev in trace:
        if ev.get("event") != "append":
            continue
        items = list(ev.get("items", ()))
        out["turns"] += 1
        called = {str(it["call"]) for it in items if isinstance(it.get("call"), str)}
        at = {str(it["id"]): i for i, it in enumerate(items)}
        run = 0
        for it in [*items, {}]:
            if it.get("id") in called:
                run += 1
                continue
            if run:
                out["call_groups"] += 1
                out["calls"] += run
                out["parallel_groups"] += run > 1
                out["max_calls_per_group"] = max(out["max_calls_per_group"], run)
            run = 0
        latest_call = -1
        for i, it in enumerate(items):
            call = it.get("call")
            if not isinstance(call, str) or call not in at:
                continue
            out["results"] += 1
            between = i - at[call] - 1
            out["items_between"] += between
            out["results_apart"] += between > 0
            out["max_items_between"] = max(out["max_items_between"], between)
            out["results_out_of_order"] += at[call] < latest_call
            latest_call = max(latest_call, at[call])
        for it in items:
            source = it.get("source")
            if it.get("kind") != "observation":
                continue
            if source == "system":
                out["system_prompts"] += 1
            elif source == "user" and str(it.get("shows", "")).startswith("user.requires."):
                out["user_constraints"] += 1
            elif isinstance(source, str) and source.startswith("edit: "):
                edited = True
            elif isinstance(source, str) and it.get("call"):
                before = last_run.get(source)
                if edited and before is not None and before.get("modality") == "failed":
                    out["retries_after_fix"] += 1
                    edited = False
                last_run[source] = it
    return out


def merge_shapes(into: dict[str, int], more: Mapping[str, int]) -> None:
    """Add the counters of ``more`` to ``into`` (maxima by maximum)."""
    for key, n in more.items():
        if key.startswith("max_"):
            into[key] = max(into.get(key, 0), n)
        else:
            into[key] = into.get(key, 0) + n


def keep_everything(window: list[Obj], budget: int) -> list[Obj]:
    """The baseline policy: it changes nothing. Safe, and useless (nothing is saved)."""
    return window


# -- many sessions -----------------------------------------------------------------------------

Runner = Callable[
    [
        Callable[[tuple[Any, ...]], Any],
        Sequence[tuple[Any, ...]],
        Callable[[int, int], None] | None,
    ],
    list[Any],
]
"""Runs fuzz tasks elsewhere and returns their results in order (see :func:`fuzz`)."""

CHUNK = 25
"""Sessions per chunk: chunk j is drawn with a seed of its own, so chunks can run anywhere."""

SHRINK_CALLS = 300
"""Sessions played while shrinking one counterexample, at most."""

REPLAYABLE = frozenset({"PL001", "PL002", "PL003"})
"""The PL rules whose counterexample ends just before the call that failed: its last window
is the policy's input, and ``fuzz --replay`` calls the policy on it again (a PL004
counterexample ends with the rewrite that left the window over its budget)."""

SHRINK_FAULTS = 3
"""Candidates that may time out or end the policy's process while shrinking, at most."""


@dataclass(frozen=True, slots=True)
class Counterexample:
    """The shrunk session of one rule: where it is written, and its first finding."""

    code: str
    path: str
    pass_: int
    items: tuple[str, ...]
    message: str = ""
    line: int | None = None
    """The finding's line in the shrunk trace (what ``audit`` reports it at)."""

    def to_json(self) -> Obj:
        out: Obj = {
            "code": self.code,
            "path": self.path,
            "pass": self.pass_,
            "items": list(self.items),
            "message": self.message,
        }
        if self.line is not None:
            out["line"] = self.line
        return out

    def finding_line(self) -> str:
        """The finding as every command writes one: ``TRACE:LINE: pass N: CODE name
        [ID,...]: message``."""
        at = f"{self.path}:{self.line}" if self.line is not None else self.path
        return (
            f"{at}: pass {self.pass_}: {self.code} {RULES.get(self.code, '?')}"
            f" [{','.join(self.items)}]: {self.message}"
        )


@dataclass
class FuzzReport:
    """What fuzzing a policy found: the JSON output of ``ctxproof fuzz``."""

    policy: str
    seed: int
    sessions: int = 0
    rewrites: int = 0
    findings_by_rule: dict[str, int] = field(default_factory=dict)
    counterexamples: list[Counterexample] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0
    pressures: list[tuple[float, int]] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """Rule code -> the trace text of its counterexample."""
    unshrunk: dict[str, str] = field(default_factory=dict)
    """Rule code -> why it has no counterexample."""
    shapes: dict[str, int] = field(default_factory=dict)
    """The sessions' shapes, summed (:func:`session_shapes`); in ``scorecard.json``."""
    shrinking: Obj = field(default_factory=dict)
    """What shrinking took: seconds and sessions played, in all and by rule, and the limit
    on sessions per rule; in ``scorecard.json``."""
    over_budget: int = 0
    """Rewrites that left the window over its budget (each a PL004 with require_fit)."""
    undecided: int = 0
    """Checks the solver left undecided in the sessions explored (:attr:`SessionResult.
    undecided`): with no finding, the run is undecided (exit 3), never safe."""
    mode: str = "support"
    """The witness mode the sessions were audited in: ``ctxproof audit`` replays the
    counterexamples in it."""

    @property
    def saves_nothing(self) -> bool:
        """The rewrites kept as many tokens as they were given, or more (identity, or a
        policy that grows the window): safe, perhaps, and useless."""
        return self.rewrites > 0 and self.tokens_after >= self.tokens_before

    @property
    def exit_code(self) -> int:
        """1 with a finding; else 3 when a check was left undecided; else 0."""
        if self.findings_by_rule:
            return 1
        return 3 if self.undecided else 0

    def to_json(self) -> Obj:
        return {
            "policy": self.policy,
            "sessions": self.sessions,
            "rewrites": self.rewrites,
            "seed": self.seed,
            "findings_by_rule": dict(sorted(self.findings_by_rule.items())),
            "counterexamples": [c.to_json() for c in self.counterexamples],
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "over_budget": self.over_budget,
            "undecided": self.undecided,
            "seconds": round(self.seconds, 3),
        }


def chunk_seed(seed_value: int, chunk: int) -> int:
    return (seed_value * 1_000_003 + chunk * 7_919) % (2**32)


@contextmanager
def _own_draws_only() -> Iterator[None]:
    """Draw sessions from the seed alone.

    Hypothesis mixes into its draws constants it collects from the source of
    the local modules loaded (the policy under test, an editable install of
    this package): the same seed would then give other sessions after an edit,
    in a worker that loaded fewer modules, or from another install. For the
    fuzzer's runs that pool is empty.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a hypothesis without local constants
        yield
        return
    get, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    empty = Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE = type(cache)(1024)
    try:
        yield
    finally:
        providers._get_local_constants = get
        providers.CONSTANTS_CACHE = cache


def _settings(examples: int) -> settings:
    """One set of settings for exploring and shrinking: the draws must be the same."""
    return settings(
        max_examples=max(1, examples),
        database=None,
        deadline=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )


@dataclass
class _Chunk:
    index: int
    sessions: int = 0
    rewrites: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    """code -> index (within the chunk) of the first session that showed it."""
    shown: dict[str, Obj] = field(default_factory=dict)
    """code -> that session as explored (:meth:`SessionResult.to_json`): the counterexample
    when playing it again does not show the code."""
    pressures: list[tuple[float, int]] = field(default_factory=list)
    shapes: dict[str, int] = field(default_factory=dict)
    over_budget: int = 0
    undecided: int = 0

    def to_json(self) -> Obj:
        return {
            "index": self.index,
            "sessions": self.sessions,
            "rewrites": self.rewrites,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "counts": self.counts,
            "first": self.first,
            "shown": self.shown,
            "pressures": self.pressures,
            "shapes": self.shapes,
            "over_budget": self.over_budget,
            "undecided": self.undecided,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> _Chunk:
        return cls(
            obj["index"],
            obj["sessions"],
            obj["rewrites"],
            obj["tokens_before"],
            obj["tokens_after"],
            dict(obj["counts"]),
            dict(obj["first"]),
            dict(obj.get("shown", {})),
            [(p, n) for p, n in obj["pressures"]],
            dict(obj.get("shapes", {})),
            obj.get("over_budget", 0),
            obj.get("undecided", 0),
        )


def explore_chunk(
    policy: Runnable,
    index: int,
    size: int,
    seed_value: int,
    passes: int,
    mode: str,
    plans: st.SearchStrategy[Plan] | None = None,
    require_fit: bool = False,
) -> _Chunk:
    """Run one chunk of sessions; record what each found (no shrinking)."""
    out = _Chunk(index)
    strategy = plans if plans is not None else session_plans(passes)
    shared = solver_session()

    @_settings(size)
    @seed(chunk_seed(seed_value, index))
    @given(strategy)
    def explore(plan: Plan) -> None:
        res = run_session(
            policy, plan, passes=passes, mode=mode, require_fit=require_fit, session=shared
        )
        for code in sorted(res.codes()):
            if code not in out.first:
                out.first[code] = out.sessions
                out.shown[code] = res.to_json()
        for f in res.findings:
            out.counts[f.code] = out.counts.get(f.code, 0) + 1
        out.sessions += 1
        out.rewrites += res.rewrites
        out.tokens_before += res.tokens_before
        out.tokens_after += res.tokens_after
        out.pressures.extend(res.pressures)
        merge_shapes(out.shapes, res.shapes)
        out.over_budget += res.over_budget
        out.undecided += res.undecided

    with _own_draws_only():
        explore()
    return out


def explore_sessions(
    policy: Runnable,
    visit: Callable[[SessionResult], None],
    *,
    sessions: int = 100,
    passes: int = 10,
    seed_value: int = 0,
    mode: str = "support",
) -> None:
    """Play the sessions :func:`fuzz` explores with these arguments, in its order, and give
    each one, audited, to ``visit`` (to look at more than the counts fuzz keeps)."""
    shared = solver_session()
    for j in range(max(1, math.ceil(sessions / CHUNK))):
        size = min(CHUNK, sessions - j * CHUNK)
        if size <= 0:
            break

        @_settings(size)
        @seed(chunk_seed(seed_value, j))
        @given(session_plans(passes))
        def play(plan: Plan) -> None:
            visit(run_session(policy, plan, passes=passes, mode=mode, session=shared))

        with _own_draws_only():
            play()


class _Found(Exception):
    """A candidate showed the code (hypothesis keeps every failing example's exception,
    and the frames of its traceback, until the search ends: it names the plan only)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__("found")
        self.plan = plan


class _Spent(BaseException):
    """The candidates may end the policy's process no more: the search stops here (a
    BaseException, which hypothesis does not take for a failure of the candidate)."""


def _pack(result: SessionResult) -> bytes:
    """A session that showed the code, as the shrinking keeps it until the search ends:
    compressed, so that the candidates' windows (a policy may return thousands of items)
    do not pile up in memory."""
    return zlib.compress(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpack(packed: bytes) -> SessionResult:
    result: SessionResult = pickle.loads(zlib.decompress(packed))
    return result


def shrink_code(
    policy: Runnable,
    code: str,
    chunk: int,
    at: int,
    size: int,
    seed_value: int,
    passes: int,
    mode: str,
    shrink_calls: int = 0,
    require_fit: bool = False,
    plays: _Plays | None = None,
) -> SessionResult:
    """The smallest session hypothesis finds that still shows ``code``; a session with no
    finding when the session that first showed it does not show it again.

    It replays the chunk's generation (same seed, same draws) up to the session
    that first showed the code, and shrinks from there. Shrinking plays at most
    ``SHRINK_CALLS`` sessions (a count, not a clock: the same seed gives the
    same counterexample); after that every new candidate counts as not
    showing the code, so hypothesis settles on the smallest one it has. A policy
    in a process of its own stops the shrinking sooner: once ``SHRINK_FAULTS``
    candidates ran past the time limit or ended the process (each costs the
    limit, or a new process), the search ends at the next candidate it would
    play, with the last one that showed the code.
    """
    started = time.perf_counter()
    calls = [0]
    played = [0]
    limit = shrink_calls or SHRINK_CALLS
    failing: dict[Plan, bytes] = {}  # the sessions that showed the code, packed
    last: list[Plan | None] = [None]
    strategy = session_plans(passes)
    if not SHORTCUTS or code.startswith("PL"):
        # a PL rule is the policy's failure to give one result: every candidate calls it
        plays = None
    elif plays is None or not plays.fits(policy, passes, mode, require_fit):
        plays = _Plays(policy, passes, mode, require_fit)
        plays.expect(code, (chunk, at))
    fresh_at_start = plays.fresh if plays is not None else 0
    shared = solver_session() if SHORTCUTS and plays is None else None
    faults_at_start = policy.faults if isinstance(policy, PolicyProcess) else 0
    search = (chunk, at, size, seed_value, limit)
    if plays is not None:
        same = plays.same_search(code, search)
        if same is not None:
            # every candidate of an earlier search from this session showed this rule
            # exactly when it showed that search's: this search would try the same ones
            # and settle where that one did
            settled_plan, count, bounded = same
            shown = None if settled_plan is None else plays.shows(settled_plan, code, (chunk, at))
            plays.done(code, (chunk, at))
            reused = {
                "plays": count,
                "played": plays.fresh - fresh_at_start,
                "bounded": bounded,
                "seconds": round(time.perf_counter() - started, 3),
            }
            if shown is None:
                return SessionResult([], [], shrink=reused)
            shown.shrink = reused
            return shown
    tried: list[tuple[Plan, bool]] = []  # the candidates played, and whether they showed it

    def affordable() -> bool:
        if not isinstance(policy, PolicyProcess):
            return True
        return policy.faults - faults_at_start <= SHRINK_FAULTS

    def play(plan: Plan) -> None:
        played[0] += 1
        if plays is not None:
            shown = plays.shows(plan, code, (chunk, at))
            if shown is not None:
                failing[plan] = _pack(shown)
            tried.append((plan, shown is not None))
            return
        res = run_session(
            policy,
            plan,
            passes=passes,
            mode=mode,
            stop_on=code,
            require_fit=require_fit,
            session=shared,
        )
        if code in res.codes():
            failing[plan] = _pack(res)

    @_settings(size)
    @seed(chunk_seed(seed_value, chunk))
    @given(strategy)
    def hunt(plan: Plan) -> None:
        calls[0] += 1
        if calls[0] <= at:
            return  # sessions before the first that showed it: known not to
        first = calls[0] == at + 1  # the session that showed it: always played again
        if plan not in failing:
            if not (first or affordable()):
                raise _Spent
            if first or calls[0] <= at + 1 + limit:
                play(plan)
        if plan in failing:
            last[0] = plan
            raise _Found(plan)

    def took() -> dict[str, Any]:
        return {
            "plays": played[0],
            "played": played[0] if plays is None else plays.fresh - fresh_at_start,
            "bounded": calls[0] > at + 1 + limit or not affordable(),
            "seconds": round(time.perf_counter() - started, 3),
        }

    try:
        with _own_draws_only():
            hunt()
        settled = None
    except _Found as found:
        settled = found.plan
    except _Spent:
        settled = last[0]
    finally:
        if plays is not None:
            plays.done(code, (chunk, at))
    if plays is not None and affordable() and (
        not isinstance(policy, PolicyProcess) or policy.faults == faults_at_start
    ):
        plays.searched(search, tried, settled, bool(took()["bounded"]))
    if settled is None:
        # the session that showed it did not show it again: the policy's output depends on
        # more than its input (the clock, the environment); there is nothing to shrink
        return SessionResult([], [], shrink=took())
    result = _unpack(failing[settled])
    result.shrink = took()
    return result


SHORTCUTS = True
"""Shrinking takes shortcuts (docs/fuzz.md, "Shrinking"): the sessions of a run share one
solver session; a candidate session played before while shrinking a rule first shown by
the same session is answered from that play where it went far enough, and so is one that
begins with the turns that play needed (:class:`_Prefix`); a rule whose every candidate
would answer as in an earlier search from the same session settles where that one did
(:class:`_Search`); and the policy is not called again on an input it was called on
before, where it gave one result twice without error and did not grow the window. The
counterexamples are those playing every candidate afresh gives (False plays them afresh:
the tests compare the two)."""

ANSWER_ITEMS = 30_000
"""The policy's results kept to answer again (:data:`SHORTCUTS`), at most: the latest,
up to this many items in their inputs and outputs together."""


class _Played:
    """One candidate session played until the rule it sought was found at a pause, or to its
    end: what :func:`run_session` returns for it seeking that rule, or another one it
    showed by then."""

    __slots__ = ("end", "ended", "first", "marks", "needs", "result")

    def __init__(self, agent: _Agent, code: str) -> None:
        self.result = agent.result
        self.marks: list[tuple[int, int, int, int, int, int, int]] = []
        """At each pause: the lengths of the trace, the findings and the pressures, the
        rewrites, the tokens before and after them, the rewrites over budget."""
        self.needs: list[int] = []
        """At each pause: the plan's turns played by then (:attr:`_Agent.consumed`)."""
        self.end = 0
        """The plan's turns played in all (the last pause's, for a play that stopped)."""
        self.first: dict[str, int] = {}
        """rule code -> the first pause at which it was among the findings (-1: after the
        last one, in a session that ended)."""
        self.ended = False
        r, seen = agent.result, 0
        for _ in agent.turns():
            for f in r.findings[seen:]:
                self.first.setdefault(f.code, len(self.marks))
            seen = len(r.findings)
            self.marks.append(
                (
                    len(r.trace),
                    len(r.findings),
                    len(r.pressures),
                    r.rewrites,
                    r.tokens_before,
                    r.tokens_after,
                    r.over_budget,
                )
            )
            self.needs.append(agent.consumed)
            self.end = agent.consumed
            if code in self.first:
                return  # what is sought is found: the rest of the session cannot matter
        self.ended = True
        self.end = agent.consumed
        for f in r.findings[seen:]:
            self.first.setdefault(f.code, -1)

    def shows(self, code: str) -> bool | None:
        """Whether a play seeking the code shows it; None when this one stopped short."""
        if code in self.first:
            return True
        return False if self.ended else None

    def seeking(self, code: str) -> SessionResult:
        """What :func:`run_session` returns for this plan seeking ``code``, which it shows:
        the session up to the first pause with the code, or whole when the code came after
        the last pause."""
        r = self.result
        at = self.first[code]
        if at < 0:
            out = SessionResult(
                list(r.trace),
                list(r.findings),
                r.rewrites,
                r.tokens_before,
                r.tokens_after,
                list(r.pressures),
                over_budget=r.over_budget,
            )
        else:
            n_trace, n_found, n_pressures, rewrites, before, after, over = self.marks[at]
            out = SessionResult(
                r.trace[:n_trace],
                r.findings[:n_found],
                rewrites,
                before,
                after,
                r.pressures[:n_pressures],
                over_budget=over,
            )
        return _finished(out)


def _turns_played(turns: tuple[Turn, ...], n: int) -> tuple[Turn, ...]:
    """The first ``n`` turns a session plays from a plan with these turns (they come round
    again: :meth:`_Agent.turns`)."""
    if n <= len(turns):
        return turns[:n]
    return tuple(turns[k % len(turns)] for k in range(n))


class _Prefix:
    """One play, as it answers for a candidate that plays the same turns first (with the
    same budget, world and fill pieces): a session up to a pause depends on nothing else,
    so the candidate shows what this play showed by then, at the same turn."""

    __slots__ = ("end", "ended", "first", "needs", "packed", "turns")

    def __init__(self, turns: tuple[Turn, ...], played: _Played, packed: bytes | None) -> None:
        self.turns = turns
        self.first = played.first
        self.needs = played.needs
        self.end = played.end
        self.ended = played.ended
        self.packed = packed
        """The play, packed, when it showed a rule still to be shrunk (None: not kept)."""

    def shows(self, turns: tuple[Turn, ...], code: str) -> bool | None:
        """Whether a play of a plan with ``turns`` seeking ``code`` shows it; None when
        this play cannot tell."""
        at = self.first.get(code)
        if at is not None:
            n = self.needs[at] if at >= 0 else self.end
        elif self.ended:
            n = self.end
        else:
            return None  # it stopped before it could show the code
        if _turns_played(turns, n) != _turns_played(self.turns, n):
            return None
        return at is not None

    def answers(self, turns: tuple[Turn, ...], code: str) -> SessionResult | Literal[False] | None:
        """What a play of a plan with ``turns`` seeking ``code`` returns: the session that
        shows it, or False when it does not; None when this play cannot tell."""
        shown = self.shows(turns, code)
        if shown is None or (shown and self.packed is None):
            return None
        if not shown:
            return False
        played: _Played = pickle.loads(zlib.decompress(self.packed))  # type: ignore[arg-type]
        return played.seeking(code)


@dataclass(frozen=True, slots=True)
class _Search:
    """One rule's search, as it answers for another rule first shown by the same session."""

    search: tuple[int, int, int, int, int]
    tried: list[tuple[Plan, bool]]
    settled: Plan | None
    bounded: bool


class _Plays:
    """The candidate sessions of the shrinks of one run (:data:`SHORTCUTS`), and the
    policy's answers.

    Rules first shown by one session are shrunk from it one after the other, and their
    searches try the same candidates for as long as the candidates show both or neither.
    Of each play only which rules it showed, and when, is kept; a play that showed a rule
    still to be shrunk (``pending``) is kept whole, compressed, as the shrinking keeps the
    candidates that showed its rule. A candidate asked for again is answered from there
    when that play went far enough, and played afresh otherwise.
    """

    def __init__(self, policy: Runnable, passes: int, mode: str, require_fit: bool) -> None:
        self.policy = policy
        self.passes = passes
        self.mode = mode
        self.require_fit = require_fit
        self.session = solver_session()
        self.answers: dict[Hashable, tuple[PolicyResult, int]] = {}
        """input -> the policy's result, and the items of both"""
        self.answer_items = 0
        self.known: dict[Plan, tuple[dict[str, int], bool]] = {}
        """plan -> the rules its play showed (at which pause), and whether it ended."""
        self.kept: dict[tuple[int, int], dict[Plan, bytes]] = {}
        """By the session the rules came from: plan -> its play, packed, when it showed a
        rule still to be shrunk from there."""
        self.pending: dict[tuple[int, int], set[str]] = {}
        """The rules still to be shrunk, by the session that first showed them."""
        self.prefixes: dict[tuple[int, int], dict[Hashable, list[_Prefix]]] = {}
        """By the session the rules came from, and by the plans' budget, world and fill
        pieces: what each play showed, with the turns it played (its play, packed, when
        it showed a rule still to be shrunk from there)."""
        self.fresh = 0
        """Sessions played rather than answered from an earlier play."""
        self.searches: dict[tuple[int, int], list[_Search]] = {}
        """By the session the rules came from: the searches that shrank them."""

    def fits(self, policy: Runnable, passes: int, mode: str, require_fit: bool) -> bool:
        return (policy, passes, mode, require_fit) == (
            self.policy,
            self.passes,
            self.mode,
            self.require_fit,
        )

    def expect(self, code: str, start: tuple[int, int]) -> None:
        """A rule to be shrunk from the session ``start`` (chunk, index) that first showed it."""
        self.pending.setdefault(start, set()).add(code)

    def done(self, code: str, start: tuple[int, int]) -> None:
        """The rule is shrunk: plays are no longer kept for it."""
        left = self.pending.get(start, set())
        left.discard(code)
        if not left:
            self.pending.pop(start, None)
            self.kept.pop(start, None)
            self.prefixes.pop(start, None)
            self.searches.pop(start, None)

    def shows(self, plan: Plan, code: str, start: tuple[int, int]) -> SessionResult | None:
        """``run_session(policy, plan, stop_on=code, ...)`` when it shows the code, else None."""
        known = self.known.get(plan)
        if known is not None:
            first, ended = known
            if code not in first and ended:
                return None
            packed = self.kept.get(start, {}).get(plan)
            if code in first and packed is not None:
                played: _Played = pickle.loads(zlib.decompress(packed))
                return played.seeking(code)
        header = (plan.budget, plan.world, plan.fill_pieces)
        earlier = self.prefixes.setdefault(start, {}).setdefault(header, [])
        for prefix in earlier:
            answer = prefix.answers(plan.turns, code)
            if answer is not None:
                return answer or None
        self.fresh += 1
        agent = _Agent(plan, self.policy, self.passes, self.mode, self.require_fit, self.session)
        agent.answers = self
        played = _Played(agent, code)
        self.known[plan] = (played.first, played.ended)
        wanted = self.pending.get(start, set())
        packed = None
        if wanted & played.first.keys():
            packed = zlib.compress(pickle.dumps(played, pickle.HIGHEST_PROTOCOL), 1)
            if (wanted - {code}) & played.first.keys():
                self.kept.setdefault(start, {})[plan] = packed
        earlier.append(_Prefix(plan.turns, played, packed))
        return played.seeking(code) if played.shows(code) else None

    def peek(self, plan: Plan, code: str, start: tuple[int, int]) -> bool | None:
        """Whether a play of ``plan`` seeking ``code`` shows it, from the plays so far
        alone; None when none of them tells."""
        known = self.known.get(plan)
        if known is not None:
            first, ended = known
            if code in first:
                return True
            if ended:
                return False
        header = (plan.budget, plan.world, plan.fill_pieces)
        for prefix in self.prefixes.get(start, {}).get(header, ()):
            shown = prefix.shows(plan.turns, code)
            if shown is not None:
                return shown
        return None

    def searched(
        self,
        search: tuple[int, int, int, int, int],
        tried: list[tuple[Plan, bool]],
        settled: Plan | None,
        bounded: bool,
    ) -> None:
        """A search for one rule ended (``search``: its chunk, the session that first
        showed the rule, the chunk's size, the seed and the limit on plays), having played
        ``tried`` in this order, settling on ``settled``."""
        start = (search[0], search[1])
        if start in self.pending:  # another rule from there is still to be shrunk
            self.searches.setdefault(start, []).append(_Search(search, tried, settled, bounded))

    def same_search(
        self, code: str, search: tuple[int, int, int, int, int]
    ) -> tuple[Plan | None, int, bool] | None:
        """Where the search for ``code`` settles, when an earlier search of the same
        session tried candidates each of which shows ``code`` exactly when it showed that
        search's rule: hypothesis, given the same answers, tries the same candidates in the
        same order. Its settled plan, the sessions it played and whether it was bounded;
        None when no earlier search is known to match."""
        start = (search[0], search[1])
        for earlier in self.searches.get(start, ()):
            if earlier.search == search and all(
                self.peek(plan, code, start) is shown for plan, shown in earlier.tried
            ):
                return earlier.settled, len(earlier.tried), earlier.bounded
        return None

    # -- the policy's answers, as the agent asks them (_Agent.rewritten) -------------------
    def get(self, key: Hashable) -> PolicyResult | None:
        known = self.answers.get(key)
        return None if known is None else known[0]

    def put(self, key: Hashable, given: int, res: PolicyResult) -> None:
        """Keep the policy's result on an input of ``given`` items: one it gave twice
        without error, that does not grow the window (the latest, within
        :data:`ANSWER_ITEMS`)."""
        if not res.ok or len(res.window) > given:
            return
        weight = given + len(res.window)
        self.answers[key] = (res, weight)
        self.answer_items += weight
        while self.answer_items > ANSWER_ITEMS:
            self.answer_items -= self.answers.pop(next(iter(self.answers)))[1]  # the oldest


def _first_finding(result: SessionResult, code: str) -> Finding:
    return next(f for f in result.findings if f.code == code)


def fuzz(
    policy: Policy | str | PolicyProcess | Callable[..., Any],
    *,
    sessions: int = 100,
    passes: int = 10,
    seed_value: int = 0,
    out_dir: str | Path = "ctxproof-fuzz",
    mode: str = "support",
    jobs: int = 1,
    policy_arg: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    shrink_calls: int = SHRINK_CALLS,
    runner: Runner | None = None,
    card: bool = True,
    policy_timeout: float | None = DEFAULT_TIMEOUT,
    require_fit: bool = False,
) -> FuzzReport:
    """Fuzz a policy: explore sessions, shrink one counterexample per rule found.

    ``policy`` is loaded, a callable, or named as ``ctxproof fuzz`` takes it. A Python
    policy runs in a process of its own (:class:`PolicyProcess`, loaded there
    by its name; a callable with no name is forked), where each call may take
    ``policy_timeout`` seconds (PL003 past it); ``policy_timeout=None`` runs it
    in this process, unguarded. A spec is data and runs in this process. A
    :class:`PolicyProcess` (launched, say, before this call: ``ctxproof fuzz``
    does) is used as it is, with its own limit, and left to its caller to close.

    The output set goes to ``out_dir`` (:func:`write_outputs`): the shrunk
    sessions, and with ``card`` the scorecard and the plot.

    With ``jobs`` > 1 (and ``policy_arg``, how to load the policy in a worker)
    chunks of sessions run in worker processes; the result is the same. A
    ``runner`` (with ``policy_arg``) runs the chunks elsewhere instead, such as
    on a Ray cluster (:func:`verifier.distributed.ray_fuzz_chunks`): it gets
    the task function, the tasks (the policy left out: a worker loads it from
    ``policy_arg``) and the progress callback, and returns the results in order.

    A rewrite that leaves the window over its budget is counted (``over_budget``);
    with ``require_fit`` each one is a PL004 over-budget finding, whose
    counterexample ends with that rewrite (the policy's process measures nothing: the
    harness counts the tokens of the window the policy returned).

    Raises:
        TypeError: an argument of the wrong type.
        InputError: an argument with bad content (``sessions`` < 1, an unknown ``mode``,
            a ``policy_timeout`` that is not positive), or a policy that cannot be
            loaded (in its process too).
    """
    if not isinstance(policy, Policy | str | PolicyProcess):
        policy = policy_argument(policy, func="fuzz")  # a callable; a name loads in its process
    _check_arguments(
        sessions, passes, seed_value, out_dir, mode, jobs, policy_arg, progress, shrink_calls
    )
    want_callable(runner, func="fuzz", arg="runner", what="a runner function")
    want_bool(require_fit, func="fuzz", arg="require_fit")
    want_bool(card, func="fuzz", arg="card")
    _check_timeout(policy_timeout)
    started = time.perf_counter()
    if isinstance(policy, str):
        policy_arg = policy_arg or policy
    elif policy_arg is None:
        policy_arg = policy.source
    with _plot_apart(card) as plotter:
        with _runnable(policy, policy_timeout) as local:
            # the policy loads: a place that refuses the output fails now, not after the sessions
            make_folder(out_dir, "fuzz output folder")
            elsewhere = policy_arg is not None and (runner is not None or jobs > 1)
            if elsewhere and isinstance(local, PolicyProcess):
                local.close()  # it proved the policy loads; the workers run their own

            def run(
                fn: Callable[[tuple[Any, ...]], Any],
                tasks: Sequence[tuple[Any, ...]],
                shown: Callable[[int, int], None] | None,
            ) -> list[Any]:
                if policy_arg is None:
                    return _map(fn, tasks, 1, shown)
                if runner is not None:
                    return runner(fn, [_portable(t) for t in tasks], shown)
                return _map(fn, tasks, jobs, shown)

            report = FuzzReport(local.name, seed_value, mode=mode)
            n_chunks = max(1, math.ceil(sessions / CHUNK))
            sizes = [min(CHUNK, sessions - j * CHUNK) for j in range(n_chunks)]
            tasks = [(j, sizes[j]) for j in range(n_chunks) if sizes[j] > 0]
            chunks = run(
                _explore_task,
                [
                    (
                        policy_arg,
                        local,
                        j,
                        size,
                        seed_value,
                        passes,
                        mode,
                        require_fit,
                        policy_timeout,
                    )
                    for j, size in tasks
                ],
                progress,
            )
            first: dict[str, tuple[int, int]] = {}
            explored: dict[str, Obj] = {}  # code -> the session that first showed it
            for ch in chunks:
                report.sessions += ch.sessions
                report.rewrites += ch.rewrites
                report.tokens_before += ch.tokens_before
                report.tokens_after += ch.tokens_after
                report.pressures.extend(ch.pressures)
                merge_shapes(report.shapes, ch.shapes)
                report.over_budget += ch.over_budget
                report.undecided += ch.undecided
                for code, n in ch.counts.items():
                    report.findings_by_rule[code] = report.findings_by_rule.get(code, 0) + n
                for code, at in ch.first.items():
                    if code not in first:
                        first[code] = (ch.index, at)
                        explored[code] = ch.shown[code]
            codes = sorted(first)
            shrink_started = time.perf_counter()
            # rules first shown by one session are shrunk from it along the same candidates:
            # in this process, they share their plays
            plays = _Plays(local, passes, mode, require_fit) if SHORTCUTS and codes else None
            if plays is not None:
                for code in codes:
                    plays.expect(code, first[code])
            shrunk = run(
                _shrink_task,
                [
                    (
                        policy_arg,
                        local,
                        code,
                        first[code][0],
                        first[code][1],
                        sizes[first[code][0]],
                        seed_value,
                        passes,
                        mode,
                        shrink_calls,
                        require_fit,
                        policy_timeout,
                        plays,
                    )
                    for code in codes
                ],
                None,
            )
            by_rule = {
                c: dict(result.shrink or {}) for c, result in zip(codes, shrunk, strict=True)
            }
            report.shrinking = {
                "seconds": round(time.perf_counter() - shrink_started, 3),
                "plays": sum(int(s.get("plays", 0)) for s in by_rule.values()),
                "limit_per_rule": shrink_calls,
                "by_rule": by_rule,
            }
        out = Path(out_dir)
        for code, result in zip(codes, shrunk, strict=True):
            if code not in result.codes():
                # played again, the session did not show it: the policy's output depends on
                # more than its input. The session as explored holds what the policy
                # returned then, and shows it: it is the counterexample, unshrunk
                report.unshrunk[code] = (
                    "the session that showed it did not show it again when played again (the"
                    " policy's output depends on more than its input): this is that session"
                    " as explored, unshrunk"
                )
                result = SessionResult.from_json(explored[code])
            path = out / f"cex-{code}.jsonl"
            text = result.text()
            finding = _first_finding(result, code)
            _check_replay(path, text, code, mode)
            report.texts[code] = text
            report.counterexamples.append(
                Counterexample(
                    code, str(path), finding.pass_, finding.items, finding.message, finding.line
                )
            )
        report.seconds = time.perf_counter() - started
        write_outputs(report, out, card=card, plotter=plotter)
        return report


@contextmanager
def _runnable(policy: Policy | str | PolicyProcess, timeout: float | None) -> Iterator[Runnable]:
    """The policy as a run calls it: a spec (data) and, without a time limit (or on a
    system that is not POSIX), any policy in this process; a Python policy otherwise in
    a process of its own, started (and so loaded) before the first session. A
    :class:`PolicyProcess` given is that process (its caller closes it)."""
    if isinstance(policy, PolicyProcess):
        policy.start()
        yield policy
        return
    apart = timeout is not None and os.name == "posix"  # pipes handed to a child: POSIX
    if isinstance(policy, str) and not runs_apart(policy, timeout):
        policy = load_policy(policy)
    if isinstance(policy, Policy) and (
        not apart or policy.spec is not None or (policy.source is None and not hasattr(os, "fork"))
    ):
        yield policy
        return
    with PolicyProcess(policy, timeout if timeout is not None else DEFAULT_TIMEOUT) as proc:
        proc.start()
        yield proc


@contextmanager
def _plot_apart(card: bool) -> Iterator[PlotProcess | None]:
    """A process that loads matplotlib while the run goes on, for its plot: the first run
    with a card in a process that has not loaded matplotlib (a run of ``ctxproof fuzz``).
    Later runs load it here once and draw here (None)."""
    if not card or "matplotlib.pyplot" in sys.modules or _PLOTTED_APART:
        yield None
        return
    _PLOTTED_APART.append(True)
    with PlotProcess() as plotter:
        yield plotter


_PLOTTED_APART: list[bool] = []
"""Not empty once a run of this process drew its plot in a :class:`PlotProcess`."""


def _portable(task: tuple[Any, ...]) -> tuple[Any, ...]:
    """A task as it travels to another process: the policy left out (it is loaded there
    from ``policy_arg``, the first element), and the plays a shrink shares in this one."""
    return (task[0], None, *(None if isinstance(x, _Plays) else x for x in task[2:]))


def _explore_task(args: tuple[Any, ...]) -> _Chunk:
    policy_arg, policy, j, size, seed_value, passes, mode, require_fit, timeout = args
    pol = _policy_in_worker(policy_arg, policy, timeout)
    return explore_chunk(pol, j, size, seed_value, passes, mode, require_fit=require_fit)


def _shrink_task(args: tuple[Any, ...]) -> SessionResult:
    (policy_arg, policy, code, chunk, at, size, seed_value, passes, mode, calls, fit, timeout) = (
        args[:12]
    )
    plays = args[12] if len(args) > 12 else None
    pol = _policy_in_worker(policy_arg, policy, timeout)
    return shrink_code(pol, code, chunk, at, size, seed_value, passes, mode, calls, fit, plays)


TASKS: dict[str, Callable[[tuple[Any, ...]], Any]] = {
    "explore": _explore_task,
    "shrink": _shrink_task,
}
"""The tasks a runner is given, by name (what a worker elsewhere is told to run)."""


def task_name(fn: Callable[[tuple[Any, ...]], Any]) -> str:
    """The name of a task function a runner was given."""
    return next(name for name, task in TASKS.items() if task is fn)


def run_task_json(name: str, args: Sequence[Any]) -> Obj:
    """Worker side of a runner: run the named task (its policy loaded from ``policy_arg``,
    the first argument) and return its result as JSON."""
    result = TASKS[name](_portable(tuple(args)))
    out: Obj = result.to_json()
    return out


def task_result_from_json(name: str, obj: Mapping[str, Any]) -> _Chunk | SessionResult:
    """The result :func:`run_task_json` returned, rebuilt."""
    if name == "explore":
        return _Chunk.from_json(obj)
    return SessionResult.from_json(obj)


_WORKER_POLICIES: dict[tuple[str, float | None], Runnable] = {}
"""The policy each worker process runs, by (name, time limit): loaded, or its own process
started, once per worker and reused by every task the worker is given."""


def _policy_in_worker(
    policy_arg: str | None, policy: Runnable | None, timeout: float | None
) -> Runnable:
    if policy is not None:
        return policy
    assert policy_arg is not None
    key = (policy_arg, timeout)
    known = _WORKER_POLICIES.get(key)
    if known is None:
        if timeout is None or not runs_apart(policy_arg, timeout):
            known = load_policy(policy_arg)
        else:
            known = PolicyProcess(policy_arg, timeout)
            known.start()
        _WORKER_POLICIES[key] = known
    return known


def _map(
    fn: Callable[[tuple[Any, ...]], Any],
    tasks: Sequence[tuple[Any, ...]],
    jobs: int,
    progress: Callable[[int, int], None] | None,
) -> list[Any]:
    """Run tasks in order, in this process or in worker processes (policies are loaded
    there again from their argument: a policy object need not pickle)."""
    if jobs <= 1 or len(tasks) <= 1:
        out = []
        for i, t in enumerate(tasks):
            out.append(fn(t))
            if progress is not None:
                progress(i + 1, len(tasks))
        return out
    from concurrent.futures import ProcessPoolExecutor

    portable = [_portable(t) for t in tasks]
    results = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, res in enumerate(pool.map(fn, portable)):
            results.append(res)
            if progress is not None:
                progress(i + 1, len(tasks))
    return results


def _check_replay(path: Path, text: str, code: str, mode: str) -> None:
    """A counterexample must replay with its finding (PL findings excepted: the policy is
    not part of a trace)."""
    if code.startswith("PL"):
        return
    from verifier.audit import audit_trace

    replay = audit_trace(parse_trace_text(text.encode("utf-8"), str(path)), mode=mode)
    if code not in {f.code for f in replay.findings}:
        raise InternalError(f"{path}: the shrunk session does not replay with {code}")


def write_outputs(
    report: FuzzReport,
    out_dir: str | Path,
    *,
    card: bool = True,
    plotter: PlotProcess | None = None,
) -> Obj:
    """Write the output set of a run and return its scorecard: ``cex-CODE.jsonl`` for each
    rule found and, with ``card``, ``scorecard.json`` and ``pressure.png`` (drawn by
    ``plotter`` when given: the same bytes).

    The files are written as one set (:func:`~verifier.fsutil.write_set`): a full disk
    leaves the folder as the last run left it. Counterexamples of rules an earlier run
    found and this one did not are removed.
    """
    scorecard = {
        **report.to_json(),
        "by_pressure": summarize_pressure(report.pressures),
        "shapes": describe_shapes(report.shapes),
        "shrinking": report.shrinking,
    }
    files: dict[str, str | bytes] = {
        f"cex-{code}.jsonl": text for code, text in sorted(report.texts.items())
    }
    if card:
        files["scorecard.json"] = json.dumps(scorecard, indent=2, ensure_ascii=False) + "\n"
        title = f"{report.policy}: findings vs pressure"
        draw = plot_pressure if plotter is None else plotter.draw
        files["pressure.png"] = draw(report.pressures, title)
    write_set(out_dir, files, stale={"": _is_counterexample}, what="fuzz output folder")
    return scorecard


def _is_counterexample(name: str) -> bool:
    return name.startswith("cex-") and name.endswith(".jsonl") and name[4:-6] in RULES


def describe_shapes(shapes: Mapping[str, int]) -> Obj:
    """The sessions' shapes as the scorecard shows them: the counters, and the means."""
    counts = {key: int(shapes.get(key, 0)) for key in SHAPE_KEYS}
    groups, results = counts["call_groups"], counts["results"]
    return {
        **counts,
        "calls_per_group": round(counts["calls"] / groups, 3) if groups else None,
        "share_out_of_order": round(counts["results_out_of_order"] / results, 3)
        if results
        else None,
        "items_between_per_result": round(counts["items_between"] / results, 3)
        if results
        else None,
    }


def shapes_text(shapes: Mapping[str, int]) -> str:
    """One line: calls per turn, results out of order, items between a call and its result."""
    d = describe_shapes(shapes)
    if not d["call_groups"]:
        return "no tool calls"
    return (
        f"{d['calls_per_group']:.2f} calls per turn that calls tools (at most"
        f" {d['max_calls_per_group']}; {d['parallel_groups']} parallel turns),"
        f" {d['results_out_of_order']} of {d['results']} results out of order,"
        f" {d['items_between_per_result']:.2f} items between a call and its result (at most"
        f" {d['max_items_between']}), {d['retries_after_fix']} retries after a fix"
    )


def scorecard_text(report: FuzzReport, by_pressure: Sequence[Mapping[str, Any]]) -> list[str]:
    """The scorecard as text lines: each rule found with its count, its shrunk session and
    the message of its first finding (for a PL finding: the exception's type and text)."""
    saved = report.tokens_before - report.tokens_after
    kept = _ratio(report.tokens_after, report.tokens_before) if report.tokens_before else 1.0
    lines = [
        f"policy {report.policy}: {report.sessions} session(s), {report.rewrites} rewrite(s),"
        f" seed {report.seed}, {report.seconds:.1f} s",
        f"  tokens {report.tokens_before} -> {report.tokens_after}"
        f" ({saved} saved, {kept:.0%} kept)",
    ]
    if report.saves_nothing:
        lines.append(
            "  warning: the policy saves nothing (its rewrites keep every token, or add some):"
            " safe perhaps, and useless"
        )
    if report.over_budget:
        lines.append(
            f"  over budget: {report.over_budget} of {report.rewrites} rewrite(s) left the"
            " window over its budget"
            + ("" if "PL004" in report.findings_by_rule else " (--require-fit makes each PL004)")
        )
    if report.undecided:
        lines.append(
            f"  undecided: {report.undecided} check(s) the solver left undecided (unknown, or"
            " its budget spent), none taken as accepted; raise --rlimit or --timeout"
        )
    if not report.findings_by_rule:
        lines.append("  no findings" + (", and not all decided" if report.undecided else ""))
    for code, n in sorted(report.findings_by_rule.items()):
        cex = next((c for c in report.counterexamples if c.code == code), None)
        where = ""
        if cex is not None:
            items = f", {','.join(cex.items)}" if cex.items else ""
            how = "unshrunk" if code in report.unshrunk else "shrunk"
            where = f"  {how}: {cex.path} (pass {cex.pass_}{items})"
        lines.append(f"  {code} {RULES.get(code, '?')}: {n}{where}")
        if code in report.unshrunk:
            lines.append(f"    not shrunk: {report.unshrunk[code]}")
        if cex is not None:
            lines.append(cex.finding_line())  # as audit reports it: TRACE:LINE: ...
        if cex is not None and code in REPLAYABLE:
            lines.append(f"    replay: ctxproof fuzz {report.policy} --replay {cex.path}")
        elif cex is not None and report.mode != "support":
            # audit's default mode is support: say how the trace shows its finding again
            lines.append(f"    audit: ctxproof audit {cex.path} --witness-mode {report.mode}")
    bands = [
        f"{r['pressure_from']}-{r['pressure_to']}: {r['findings_per_rewrite']}"
        for r in by_pressure
        if r["rewrites"]
    ]
    if bands:
        lines.append("  findings per rewrite by pressure: " + ", ".join(bands))
    if report.shapes:
        lines.append("  sessions: " + shapes_text(report.shapes))
    return lines


class _Module(types.ModuleType):
    """This module, callable as :func:`fuzz`. Python binds a submodule to its package, so
    ``verifier.fuzz`` is this module whichever way it was imported, and ``verifier.__all__``
    promises the function there: called, the module is the function."""

    def __call__(self, *args: Any, **kwargs: Any) -> FuzzReport:
        return fuzz(*args, **kwargs)


sys.modules[__name__].__class__ = _Module


def _check_timeout(value: object) -> None:
    """``policy_timeout``: None (the policy in this process) or seconds > 0."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type("fuzz", "policy_timeout", value, "a number of seconds > 0, or None")
    if not value > 0:
        raise bad_argument(
            "fuzz",
            f"policy_timeout must be a positive number of seconds, not {value!r}",
            fix="give policy_timeout=S with S > 0, or None to run the policy in this process",
        )


def _check_arguments(
    sessions: object,
    passes: object,
    seed_value: object,
    out_dir: object,
    mode: object,
    jobs: object,
    policy_arg: object,
    progress: object,
    shrink_calls: object,
) -> None:
    """The arguments of :func:`fuzz` besides the policy, checked at the door."""
    want_int(sessions, func="fuzz", arg="sessions", minimum=1)
    want_int(passes, func="fuzz", arg="passes", minimum=1)
    want_int(seed_value, func="fuzz", arg="seed_value", minimum=0)
    want_path(out_dir, func="fuzz", arg="out_dir")
    want_choice(mode, WITNESS_MODES, func="fuzz", arg="mode")
    want_int(jobs, func="fuzz", arg="jobs", minimum=1)
    want_text(policy_arg, func="fuzz", arg="policy_arg", optional=True)
    want_callable(progress, func="fuzz", arg="progress", what="a function (done, total)")
    want_int(shrink_calls, func="fuzz", arg="shrink_calls", minimum=1)
