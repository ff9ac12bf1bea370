"""Sessions of the simulated agent, parallel calls included, exported to a framework's
messages and imported back (docs/importers.md): the same trace.

A session's history is exported as the snapshots a framework would hold: the messages
of the window after every event of the session's trace. Imported back with ``ctxproof
import``, the history gives, after each of those events, the window the session had:
the same items in the same order, each tool result with its call, content, modality
and exit code. Commitments, claims and stubs are no message of any framework (they
travel in its metadata, as annotations: the adapters' round trips test them); the
window compared is the session's messages, and the fields compared are those a
message carries (``tokens``, ``score`` and an observation's ``shows`` are ctxproof's).

LangChain messages carry ids, so the ids are compared too; Chat Completions messages
have none but the call ids (the importer names the others ``msg-K``), so there the
items are compared by position.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from verifier.fuzz import Plan, Step, Turn, run_session, session_plans
from verifier.importers import import_history
from verifier.policies import Policy, load_policy
from verifier.policies.thirdparty._common import groups_of, slots_of

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
KEEP_RECENT = f"{ROOT / 'models' / 'policies' / 'keep_recent.py'}:keep_recent"
MESSAGE_KINDS = ("prose", "observation")

SESSIONS = settings(
    max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def windows(trace: Sequence[Obj]) -> list[list[Obj]]:
    """The window after each append and rewrite of a trace, its messages only."""
    out: list[list[Obj]] = []
    window: list[Obj] = []
    for ev in trace[1:]:
        if ev["event"] == "append":
            window = [*window, *ev["items"]]
        elif ev["event"] == "rewrite":
            window = list(ev["window"])
        else:
            continue
        out.append([it for it in window if it["kind"] in MESSAGE_KINDS])
    return out


def final_window(trace_text: str) -> list[Obj]:
    window: list[Obj] = []
    for line in trace_text.splitlines()[1:]:
        ev = json.loads(line)
        if ev["event"] == "append":
            window = [*window, *ev["items"]]
        elif ev["event"] == "rewrite":
            window = list(ev["window"])
    return window


def same_trace(fmt: str, snapshots: list[Any], session: list[list[Obj]], *, ids: bool) -> None:
    """Import each prefix of the snapshots: its last window is the session's at that event."""
    assert len(snapshots) == len(session)
    for k in range(1, len(snapshots) + 1):
        text = import_history(fmt, [json.dumps(snapshots[:k])])
        got = final_window(text)
        want = session[k - 1]
        calls = {it["call"] for it in want if "call" in it}
        keep = {it["id"] for it in want if it["id"] in calls or "call" in it}
        assert [_shape(it, ids, keep) for it in got] == [_shape(it, ids, keep) for it in want], k


def _shape(item: Obj, ids: bool, call_ids: set[str]) -> Obj:
    keys = ["kind", "text", "call", "source", "content", "modality", "exit_code"]
    if item["kind"] == "observation" and "call" not in item:
        keys = ["kind", "source", "content"]  # what the user or the system said
    out = {k: item[k] for k in keys if k in item}
    if ids or item["id"] in call_ids:
        out["id"] = item["id"]
    return out


def session_of(plan: Plan, policy: Policy) -> list[Obj]:
    return run_session(policy, plan, passes=4).trace


# -- Chat Completions (no extra needed) ----------------------------------------------------------


def chat_messages(window: Sequence[Obj]) -> list[Obj]:
    """A window as Chat Completions messages: one turn's calls are one assistant message."""
    out: list[Obj] = []
    for group in groups_of(slots_of(window)):
        s = group[0]
        if s.role == "call":
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.tool, "arguments": json.dumps({"command": c.command})},
                }
                for c in group
            ]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif s.role == "result":
            out += [{"role": "tool", "tool_call_id": r.call, "content": r.text} for r in group]
        elif s.role in ("user", "system"):
            out.append({"role": s.role, "content": s.text})
        else:
            out.append({"role": "assistant", "content": s.text})
    return out


@SESSIONS
@given(session_plans(passes=4))
def test_a_session_exported_as_chat_completions_imports_back_the_same(plan: Plan) -> None:
    trace = session_of(plan, load_policy(KEEP_RECENT))
    session = windows(trace)
    same_trace("openai", [chat_messages(w) for w in session], session, ids=False)


def test_parallel_calls_out_of_order_and_apart_import_back_the_same() -> None:
    """A fixed session with every shape: three calls in one turn, their results rotated
    and one after a note, a fix and its retry, a user constraint; trimmed by drop-oldest."""
    steps = (
        Step("parallel", a=1, b=1, flag=True, size=8),
        Step("prose"),
        Step("fix", size=6),
        Step("instruct", a=0, flag=True),
    )
    plan = Plan(120, (False,) * 10, (Turn(steps), Turn((Step("parallel", a=2, b=3),))))
    trace = session_of(plan, load_policy(KEEP_RECENT))
    assert sum(ev["event"] == "rewrite" for ev in trace) >= 1
    appended = [it for ev in trace if ev["event"] == "append" for it in ev["items"]]
    assert sum(1 for it in appended if "call" in it) >= 7
    session = windows(trace)
    same_trace("openai", [chat_messages(w) for w in session], session, ids=False)


# -- LangChain (the adapter's messages, messages_to_dict) ----------------------------------------


def langchain_snapshot(window: Sequence[Obj]) -> list[Obj]:
    from langchain_core.messages import messages_to_dict

    from verifier.policies.thirdparty.langchain import to_messages

    dumped: list[Obj] = messages_to_dict(to_messages(slots_of(window)))
    return dumped


@SESSIONS
@given(session_plans(passes=4))
def test_a_session_exported_as_langchain_messages_imports_back_the_same(plan: Plan) -> None:
    pytest.importorskip(
        "langchain_core",
        reason="the extra policies-langchain is not installed (make test-frameworks installs it)",
    )
    for policy in (
        load_policy(KEEP_RECENT),
        load_policy("verifier.policies.thirdparty.langchain:trim_messages_policy"),
    ):
        session = windows(session_of(plan, policy))
        same_trace("langchain", [langchain_snapshot(w) for w in session], session, ids=True)
