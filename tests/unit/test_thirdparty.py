"""Third-party compaction as policies (docs/frameworks.md).

Each framework policy runs on fixed windows and its findings are pinned; a
window goes through each framework's messages and back unchanged; a missing
extra is exit 2 naming the pip command. Tests that run a framework are
skipped, with the reason shown, when its extra is not installed (``make
test-frameworks`` and CI install them); the missing-extra and report tests
run everywhere, and so do the checks of the committed page: its links lead to
the committed counterexamples, and each defect it says fuzzing shows replays
through ``ctxproof audit`` with its rule.
"""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from verifier import MemoryStore, check_rewrite, item_from_json, load_policy, run_policy, stub_for
from verifier.cli import main
from verifier.errors import InputError
from verifier.fuzz import Plan, run_session, session_plans
from verifier.policies import window_tokens
from verifier.policies.thirdparty import ADAPTERS, Adapter
from verifier.policies.thirdparty._common import assemble, slots_of
from verifier.policies.thirdparty.report import (
    BASELINES,
    Trial,
    plot,
    render,
    run,
    shared_findings,
    split,
    unpinned,
)
from verifier.policies.thirdparty.report import main as report_main

Obj = dict[str, Any]
PKG = "verifier.policies.thirdparty"
BACKGROUND = ("db.postgres -> !db.mysql",)

EXTRAS = {
    "langchain": ("policies-langchain", ("langchain_core", "langchain")),
    "autogen": ("policies-autogen", ("autogen_core",)),
    "pydantic_ai": ("policies-pydantic-ai", ("pydantic_ai", "pydantic_ai_harness")),
}


def framework(module: str) -> None:
    """Skip the test, saying why, unless the extra of ``module`` is installed."""
    extra, modules = EXTRAS[module]
    for name in modules:
        pytest.importorskip(
            name,
            reason=f"the extra {extra} is not installed (make test-frameworks installs it)",
        )


def obs(iid: str, call: str, source: str, atom: str, ok: bool) -> Obj:
    return {
        "id": iid,
        "kind": "observation",
        "call": call,
        "source": source,
        "shows": atom if ok else f"!{atom}",
        "modality": "verified" if ok else "failed",
        "exit_code": 0 if ok else 1,
        "content": f"$ {source}\n{'ok' if ok else 'error: exit status 1'}",
        "tokens": 10,
    }


def session_window() -> list[Obj]:
    """A window as the simulated agent leaves it: 91 tokens, four tool runs (the first one
    failed), a decision with its rationale, a failed and a load-bearing claim, two user turns."""
    return [
        {
            "id": "u1",
            "kind": "observation",
            "source": "user",
            "shows": "user.asks_0",
            "modality": "verified",
            "content": "fix the build",
            "tokens": 4,
        },
        {"id": "why1", "kind": "prose", "text": "postgres has the row locks we need", "tokens": 6},
        {
            "id": "d1",
            "kind": "commitment",
            "type": "decision",
            "formula": "db.postgres",
            "rationale": ["why1"],
            "tokens": 6,
        },
        {"id": "call1", "kind": "prose", "text": "run: make test", "tokens": 4},
        obs("r1", "call1", "make test", "tests.pass", False),
        {
            "id": "k0",
            "kind": "claim",
            "formula": "!tests.pass",
            "witnesses": ["r1"],
            "modality": "failed",
            "tokens": 5,
        },
        {"id": "call2", "kind": "prose", "text": "run: make migrate", "tokens": 4},
        obs("r2", "call2", "make migrate", "db.migrated", True),
        {
            "id": "k1",
            "kind": "claim",
            "formula": "db.migrated",
            "witnesses": ["r2"],
            "modality": "verified",
            "load_bearing": True,
            "tokens": 5,
        },
        {"id": "call3", "kind": "prose", "text": "run: npm run build", "tokens": 4},
        obs("r3", "call3", "npm run build", "build.ok", True),
        {
            "id": "u2",
            "kind": "observation",
            "source": "user",
            "shows": "user.asks_1",
            "modality": "verified",
            "content": "now check the service",
            "tokens": 4,
        },
        {
            "id": "call4",
            "kind": "prose",
            "text": "run: curl -fsS localhost:8080/health",
            "tokens": 4,
        },
        obs("r4", "call4", "curl -fsS localhost:8080/health", "svc.healthy", True),
        {"id": "p1", "kind": "prose", "text": "notes on the plan", "tokens": 5},
    ]


def every_kind() -> list[Obj]:
    """One item of every role a framework message can play, sizes left to the default."""
    spilled = {"id": "old", "kind": "claim", "formula": "svc.healthy"}
    return [
        {"id": "sys", "kind": "observation", "source": "system", "content": "you are an agent"},
        {"id": "u1", "kind": "observation", "source": "user", "content": "fix the build"},
        {"id": "inv", "kind": "commitment", "type": "invariant", "formula": "build.ok"},
        {"id": "c1", "kind": "prose", "text": "Bash: make test"},
        {
            "id": "c1:result",
            "kind": "observation",
            "call": "c1",
            "source": "Bash: make test",
            "content": "Exit code 2\nmake: *** [test] Error 2",
            "exit_code": 2,
            "modality": "failed",
        },
        {"id": "c2", "kind": "prose", "text": "Bash: ls"},
        {"id": "c2:cleared", "kind": "prose", "text": "[cleared]", "call": "c2"},
        {"id": "c3", "kind": "prose", "text": "Bash: make lint"},
        {"id": "c3:cleared", "kind": "prose", "text": "[cleared] (error)", "call": "c3"},
        {"id": "k1", "kind": "claim", "formula": "!tests.pass", "witnesses": ["c1:result"]},
        {"id": "summary@1", "kind": "prose", "text": "Here is a summary of the conversation"},
        {"id": "skipped@1", "kind": "prose", "text": "Skipped 4 messages."},
        {**stub_for(spilled), "tokens": 8},
        {"id": "p1", "kind": "prose", "text": "done"},
    ]


def findings(before: list[Obj], after: list[Obj]) -> set[tuple[str, tuple[str, ...]]]:
    result = check_rewrite(
        [item_from_json(o) for o in before],
        [item_from_json(o) for o in after],
        store=MemoryStore(),
        background=BACKGROUND,
    )
    return {(f.code, f.items) for f in result.findings}


def rewrite(name: str, window: list[Obj], budget: int) -> list[Obj]:
    res = run_policy(load_policy(f"{PKG}.{name}"), window, budget, check_determinism=True)
    assert res.ok, res.message
    return [it.as_json() for it in res.window]


# -- each policy on a fixed window, its findings pinned ------------------------------------------

LOST = {("CF001", ("d1",)), ("CF001", ("k0",)), ("WR008", ("r1",))}
"""What a policy that drops the oldest messages loses of session_window()."""

PINNED: list[tuple[str, int, list[str], set[tuple[str, tuple[str, ...]]]]] = [
    # the cut falls between call2 and its result: the result is kept alone
    (
        "langchain:trim_messages_policy",
        53,
        ["r2", "k1", "call3", "r3", "u2", "call4", "r4", "p1"],
        LOST | {("TP001", ("r2", "call2"))},
    ),
    # the documented settings start on a user message: no orphan, and less kept
    (
        "langchain:trim_messages_human_policy",
        53,
        ["u2", "call4", "r4", "p1"],
        LOST | {("CF001", ("k1",))},
    ),
    # the oldest of four results is blanked: the failure and its exit code are gone
    (
        "langchain:clear_tool_uses_policy",
        60,
        [
            "u1",
            "why1",
            "d1",
            "call1",
            "call1:cleared",
            "k0",
            "call2",
            "r2",
            "k1",
            "call3",
            "r3",
            "u2",
            "call4",
            "r4",
            "p1",
        ],
        {("WR001", ("k0", "r1")), ("WR008", ("r1",))},
    ),
    (
        "langchain:summarization_policy",
        60,
        ["summary@1", "u2", "call4", "r4", "p1"],
        LOST | {("CF001", ("k1",))},
    ),
    # the same budget as trim_messages: the buffer drops the result left first
    (
        "autogen:buffered_policy",
        53,
        ["k1", "call3", "r3", "u2", "call4", "r4", "p1"],
        LOST | {("WR001", ("k1", "r2"))},
    ),
    (
        "autogen:head_and_tail_policy",
        60,
        ["u1", "why1", "skipped@1", "k1", "call3", "r3", "u2", "call4", "r4", "p1"],
        LOST | {("WR001", ("k1", "r2"))},
    ),
    # the middle pops reach r1 and leave its call
    (
        "autogen:token_limited_policy",
        47,
        ["u1", "why1", "d1", "call1", "u2", "call4", "r4", "p1"],
        {
            ("CF001", ("k0",)),
            ("CF001", ("k1",)),
            ("TP002", ("call1", "r1")),
            ("WR008", ("r1",)),
        },
    ),
    (
        "pydantic_ai:clear_tool_results_policy",
        60,
        [
            "u1",
            "why1",
            "d1",
            "call1",
            "call1:cleared",
            "k0",
            "call2",
            "r2",
            "k1",
            "call3",
            "r3",
            "u2",
            "call4",
            "r4",
            "p1",
        ],
        {("WR001", ("k0", "r1")), ("WR008", ("r1",))},
    ),
    (
        "pydantic_ai:sliding_window_policy",
        60,
        ["u1", "call3", "r3", "u2", "call4", "r4", "p1"],
        LOST | {("CF001", ("k1",))},
    ),
]


@pytest.mark.parametrize(("name", "budget", "kept", "expected"), PINNED, ids=[p[0] for p in PINNED])
def test_each_policy_on_a_fixed_window(
    name: str, budget: int, kept: list[str], expected: set[tuple[str, tuple[str, ...]]]
) -> None:
    framework(name.partition(":")[0])
    before = session_window()
    after = rewrite(name, before, budget)
    assert [it["id"] for it in after] == kept
    assert findings(before, after) == expected
    by_id = {it["id"]: it for it in before}
    for it in after:  # a kept item comes back exactly as it was given
        if it["id"] in by_id:
            assert it == by_id[it["id"]]


def parallel_window(parallel: bool = True) -> list[Obj]:
    """A user task, two calls and their results, a note: the calls issued in one turn (both
    before the results) or one at a time; ten tokens each."""
    c1 = {"id": "c1", "kind": "prose", "text": "bash: make test", "tokens": 10}
    c2 = {"id": "c2", "kind": "prose", "text": "bash: make migrate", "tokens": 10}
    r1 = {**obs("c1:result", "c1", "bash: make test", "tests.pass", True)}
    r2 = {**obs("c2:result", "c2", "bash: make migrate", "db.migrated", True)}
    user = {"id": "u1", "kind": "observation", "source": "user", "content": "go", "tokens": 10}
    note = {"id": "p1", "kind": "prose", "text": "both ran", "tokens": 10}
    middle = [c1, c2, r1, r2] if parallel else [c1, r1, c2, r2]
    return [user, *middle, note]


def test_langchain_38352_summarization_orphans_a_result_of_parallel_calls() -> None:
    """The upstream reproduction, on LangChain's own objects: [Human, AI(call c1), AI(call
    c2), Tool c1, Tool c2, AI] with keep=("messages", 3) keeps Tool c1 without its call."""
    framework("langchain")
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    def call(cid: str) -> Any:
        return AIMessage("", id=f"ai-{cid}", tool_calls=[
            {"name": "bash", "args": {}, "id": cid, "type": "tool_call"}])  # fmt: skip

    messages: list[Any] = [
        HumanMessage("go", id="h"), call("c1"), call("c2"),
        ToolMessage("t1", tool_call_id="c1", id="t1"),
        ToolMessage("t2", tool_call_id="c2", id="t2"), AIMessage("done", id="a"),
    ]  # fmt: skip
    middleware: Any = SummarizationMiddleware(
        model=FakeListChatModel(responses=["(unused)"]),
        trigger=("messages", 4),
        keep=("messages", 3),
        summarizer=lambda folded: "summary",
    )
    update = middleware.before_model({"messages": messages}, None)
    kept = [m.id for m in update["messages"][2:]]  # after RemoveMessage(all) and the summary
    assert kept == ["ai-c2", "t1", "t2", "a"]  # t1 is kept, its call ai-c1 is not


@pytest.mark.parametrize(("parallel", "orphaned"), [(True, True), (False, False)])
def test_summarization_policy_orphans_only_with_parallel_calls(
    parallel: bool, orphaned: bool
) -> None:
    framework("langchain")
    before = parallel_window(parallel)
    after = rewrite("langchain:summarization_policy", before, 59)
    found = findings(before, after)
    assert (("TP001", ("c1:result", "c1")) in found) is orphaned, (after, found)
    assert not orphaned or [it["id"] for it in after][1:] == ["c2", "c1:result", "c2:result", "p1"]


def test_parallel_calls_are_one_autogen_message_and_one_pydantic_response() -> None:
    framework("autogen")
    framework("pydantic_ai")
    from verifier.policies.thirdparty import autogen, pydantic_ai

    slots = slots_of(parallel_window())
    sent: list[Any] = autogen.to_messages(slots)
    assert [type(m).__name__ for m in sent] == [
        "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage", "AssistantMessage",
    ]  # fmt: skip
    assert [c.id for c in sent[1].content] == ["c1", "c2"]
    assert [r.call_id for r in sent[2].content] == ["c1", "c2"]
    parts: list[Any] = pydantic_ai.to_messages(slots)
    assert len(parts) == 4 and len(parts[1].parts) == 4 and len(parts[2].parts) == 2


def test_autogen_keeps_a_turn_of_parallel_calls_whole() -> None:
    """The buffer counts whole messages: it never keeps one result of a turn without the
    other, nor a result without the message of its calls."""
    framework("autogen")
    before = parallel_window()
    for budget in range(20, 60, 5):
        after = rewrite("autogen:buffered_policy", before, budget)
        codes = {code for code, _ in findings(before, after)}
        assert not codes & {"TP001", "TP002"}, (budget, after)


def test_every_policy_is_pinned() -> None:
    assert sorted(p[0] for p in PINNED) == sorted(a.name.removeprefix(PKG + ".") for a in ADAPTERS)


def test_token_limited_middle_pop_orphans_a_result() -> None:
    framework("autogen")
    window: list[Obj] = [
        {"id": "u1", "kind": "observation", "source": "user", "content": "go", "tokens": 10},
        {"id": "p1", "kind": "prose", "text": "a", "tokens": 10},
        {"id": "p2", "kind": "prose", "text": "b", "tokens": 10},
        {"id": "call1", "kind": "prose", "text": "run: make test", "tokens": 10},
        {**obs("r1", "call1", "make test", "tests.pass", True)},
        {"id": "p3", "kind": "prose", "text": "c", "tokens": 10},
        {"id": "p4", "kind": "prose", "text": "d", "tokens": 10},
    ]
    after = rewrite("autogen:token_limited_policy", window, 60)
    assert [it["id"] for it in after] == ["u1", "p1", "p2", "r1", "p3", "p4"]
    assert findings(window, after) == {("TP001", ("r1", "call1"))}


def test_token_limited_middle_pop_orphans_a_call() -> None:
    framework("autogen")
    window: list[Obj] = [
        {"id": "u1", "kind": "observation", "source": "user", "content": "go", "tokens": 10},
        {"id": "p1", "kind": "prose", "text": "a", "tokens": 10},
        {"id": "p2", "kind": "prose", "text": "b", "tokens": 10},
        {"id": "call1", "kind": "prose", "text": "run: make test", "tokens": 10},
        {**obs("r1", "call1", "make test", "tests.pass", True)},
        {"id": "p3", "kind": "prose", "text": "c", "tokens": 10},
        {"id": "p4", "kind": "prose", "text": "d", "tokens": 10},
        {"id": "p5", "kind": "prose", "text": "e", "tokens": 10},
    ]
    # eight messages: the pop at len // 2 takes the result and leaves its call
    after = rewrite("autogen:token_limited_policy", window, 70)
    assert [it["id"] for it in after] == ["u1", "p1", "p2", "call1", "p3", "p4", "p5"]
    assert findings(window, after) == {("TP002", ("call1", "r1"))}


def test_cleared_results_are_placeholders_that_keep_the_pairing() -> None:
    framework("langchain")
    after = rewrite("langchain:clear_tool_uses_policy", session_window(), 60)
    placeholder = next(it for it in after if it["id"] == "call1:cleared")
    # r1 failed: ClearToolUsesEdit's copy keeps status="error", and the placeholder says so
    assert placeholder == {
        "id": "call1:cleared",
        "kind": "prose",
        "text": "[cleared] (error)",
        "call": "call1",
        "tokens": 5,
    }
    assert "r1" not in {it["id"] for it in after}


def test_a_cleared_passing_result_says_no_error() -> None:
    framework("langchain")
    window = session_window()
    window[4] = obs("r1", "call1", "make test", "tests.pass", True)
    after = rewrite("langchain:clear_tool_uses_policy", window, 60)
    placeholder = next(it for it in after if it["id"] == "call1:cleared")
    assert placeholder["text"] == "[cleared]"


def test_pydantic_ai_harness_keeps_the_failed_outcome_of_a_cleared_result() -> None:
    framework("pydantic_ai")
    after = rewrite("pydantic_ai:clear_tool_results_policy", session_window(), 60)
    placeholder = next(it for it in after if it["id"] == "call1:cleared")
    assert placeholder["text"] == "[tool result cleared] (error)"
    assert placeholder["call"] == "call1"


def test_a_cleared_result_stays_cleared_on_the_next_pass() -> None:
    framework("pydantic_ai")
    first = rewrite("pydantic_ai:clear_tool_results_policy", session_window(), 60)
    second = rewrite("pydantic_ai:clear_tool_results_policy", first, 60)
    assert second == first  # no result left to clear beyond the three kept


def test_the_summary_is_sized_a_quarter_of_what_it_folded() -> None:
    framework("langchain")
    before = session_window()
    after = rewrite("langchain:summarization_policy", before, 60)
    summary = after[0]
    assert summary["id"] == "summary@1" and summary["kind"] == "prose"
    assert summary["text"].startswith("Here is a summary of the conversation to date:")
    kept = {it["id"] for it in after}
    folded = window_tokens([it for it in before if it["id"] not in kept])
    assert summary["tokens"] == -(-folded // 4)


def test_pass_no_names_the_new_items() -> None:
    framework("autogen")
    res = run_policy(
        load_policy(f"{PKG}.autogen:head_and_tail_policy"), session_window(), 60, pass_no=4
    )
    assert "skipped@4" in [it.id for it in res.window]


# -- the round trip --------------------------------------------------------------------------


def test_langchain_round_trip_carries_ids_in_langchain_fields() -> None:
    framework("langchain")
    from verifier.policies.thirdparty.langchain import from_messages, to_messages

    window = every_kind()
    slots = slots_of(window)
    sent: list[Any] = to_messages(slots)
    assert [m.id for m in sent] == [it["id"] for it in window]
    call = sent[3]
    assert [c["id"] for c in call.tool_calls] == ["c1"]
    result = sent[4]
    assert result.type == "tool" and result.tool_call_id == "c1" and result.name == "Bash"
    assert result.status == "error" and result.artifact == {"exit_code": 2}
    # a call's text that is its NAME: COMMAND is said by the call itself, as a model's is
    assert call.content == "" and call.tool_calls[0]["args"] == {"command": "make test"}
    # a placeholder: cleared already, its error flag where LangChain keeps it
    assert (sent[6].content, sent[6].status) == ("[cleared]", "success")
    assert (sent[8].content, sent[8].status) == ("[cleared]", "error")
    assert sent[8].response_metadata["context_editing"]["cleared"] is True
    assert sent[0].type == "system" and sent[1].type == "human"
    assert sent[2].additional_kwargs == {"ctxproof": [window[2]]}
    back = assemble(window, from_messages(sent, sent), 1)
    assert back == window
    assert all(a is b for a, b in zip(back, window, strict=True))


def test_autogen_round_trip_carries_call_ids() -> None:
    framework("autogen")
    from verifier.policies.thirdparty.autogen import from_messages, to_messages

    window = every_kind()
    slots = slots_of(window)
    sent: list[Any] = to_messages(slots)
    call, result = sent[3], sent[4]
    assert [c.id for c in call.content] == ["c1"]
    assert [r.call_id for r in result.content] == ["c1"]
    assert result.content[0].is_error is True and result.content[0].name == "Bash"
    placeholder = sent[8].content[0]
    assert (placeholder.content, placeholder.is_error) == ("[cleared]", True)
    assert type(sent[0]).__name__ == "SystemMessage"
    back = assemble(window, from_messages(sent, sent, slots), 1)
    assert all(a is b for a, b in zip(back, window, strict=True)) and len(back) == len(window)


def test_pydantic_ai_round_trip_carries_ids_in_parts() -> None:
    framework("pydantic_ai")
    from verifier.policies.thirdparty.pydantic_ai import from_messages, to_messages

    window = every_kind()
    slots = slots_of(window)
    sent: list[Any] = to_messages(slots)
    text, call = sent[3].parts
    assert (text.id, call.tool_call_id) == ("c1", "c1")
    (ret,) = sent[4].parts
    assert ret.tool_call_id == "c1" and ret.tool_name == "Bash" and ret.outcome == "failed"
    assert ret.metadata == {"ctxproof_id": "c1:result", "exit_code": 2}
    (placeholder,) = sent[8].parts
    assert (placeholder.content, placeholder.outcome) == ("[cleared]", "failed")
    back = assemble(window, from_messages(sent, sent), 1)
    assert all(a is b for a, b in zip(back, window, strict=True)) and len(back) == len(window)


def clear_and_spill(window: list[Obj], budget: int) -> dict[str, Any]:
    """A policy whose windows hold every role: the results of all but the last call become
    placeholders (``[cleared] (error)`` for a failed one), then the oldest items are spilled
    (stubs) until the window fits."""
    calls = [it["call"] for it in window if it["kind"] == "observation" and "call" in it]
    out: list[Obj] = []
    for it in window:
        if it["kind"] == "observation" and "call" in it and it["call"] != calls[-1]:
            text = "[cleared] (error)" if it.get("modality") == "failed" else "[cleared]"
            out.append({"id": f"{it['call']}:cleared", "kind": "prose", "text": text,
                        "call": it["call"], "tokens": 3})  # fmt: skip
        else:
            out.append(it)
    total = window_tokens(out)
    spill = []
    for i, it in enumerate(out):
        if total <= budget:
            break
        if it["kind"] != "stub" and it["id"] in {o["id"] for o in window} and it is window[i]:
            out[i] = {**stub_for(it), "tokens": 2}
            spill.append(it["id"])
            total -= window_tokens([it]) - 2
    return {"window": out, "spill": spill}


def windows_of(plan: Plan) -> list[list[Obj]]:
    """Every window a session held: after each append and each rewrite."""
    from verifier.policies.loading import as_policy

    res = run_session(as_policy(clear_and_spill), plan, passes=4)
    out: list[list[Obj]] = []
    window: list[Obj] = []
    for ev in res.trace[1:]:
        window = [*window, *ev["items"]] if ev["event"] == "append" else ev.get("window", window)
        if ev["event"] != "spill":
            out.append(window)
    return out


SESSION_WINDOWS = settings(
    max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def check_result_fields(slots: list[Any], results: list[tuple[Any, ...]]) -> None:
    """Each result slot's message carries its call id, the tool's name, the error flag and
    (where a result tuple has a fourth member: the framework has a field for it) the exit
    code of an observation."""
    expected = [
        (s.call, s.tool, s.failed, s.exit_code if s.item["kind"] == "observation" else None)
        for s in slots
        if s.role == "result"
    ]
    assert results == [e[: len(r)] for e, r in zip(expected, results, strict=True)]
    assert len(results) == len(expected)


@SESSION_WINDOWS
@given(session_plans(passes=4))
def test_langchain_round_trip_on_session_windows(plan: Plan) -> None:
    framework("langchain")
    from verifier.policies.thirdparty.langchain import from_messages, to_messages

    for window in windows_of(plan):
        slots = slots_of(window)
        sent: list[Any] = to_messages(slots)
        assert [m.id for m in sent] == [it["id"] for it in window]
        tools = [m for m in sent if m.type == "tool"]
        check_result_fields(
            slots,
            [
                (m.tool_call_id, m.name, m.status == "error", (m.artifact or {}).get("exit_code"))
                for m in tools
            ],
        )
        calls = [c for m in sent if m.type == "ai" for c in m.tool_calls]
        assert [(c["id"], c["name"]) for c in calls] == [
            (s.id, s.tool) for s in slots if s.role == "call"
        ]
        back = assemble(window, from_messages(sent, sent), 1)
        assert all(a is b for a, b in zip(back, window, strict=True))


@SESSION_WINDOWS
@given(session_plans(passes=4))
def test_autogen_round_trip_on_session_windows(plan: Plan) -> None:
    framework("autogen")
    from verifier.policies.thirdparty.autogen import from_messages, to_messages

    for window in windows_of(plan):
        slots = slots_of(window)
        sent: list[Any] = to_messages(slots)
        results = [
            r for m in sent if type(m).__name__ == "FunctionExecutionResultMessage"
            for r in m.content
        ]  # fmt: skip
        # AutoGen's result has no field for an exit code: its text says it ("Exit code N")
        check_result_fields(slots, [(r.call_id, r.name, r.is_error) for r in results])
        back = assemble(window, from_messages(sent, sent, slots), 1)
        assert all(a is b for a, b in zip(back, window, strict=True)) and len(back) == len(window)


@SESSION_WINDOWS
@given(session_plans(passes=4))
def test_pydantic_ai_round_trip_on_session_windows(plan: Plan) -> None:
    framework("pydantic_ai")
    from pydantic_ai.messages import ToolCallPart, ToolReturnPart

    from verifier.policies.thirdparty.pydantic_ai import from_messages, to_messages

    for window in windows_of(plan):
        slots = slots_of(window)
        sent: list[Any] = to_messages(slots)
        returns = [p for m in sent for p in m.parts if isinstance(p, ToolReturnPart)]
        check_result_fields(
            slots,
            [
                (p.tool_call_id, p.tool_name, p.outcome == "failed", p.metadata.get("exit_code"))
                for p in returns
            ],
        )
        calls = [p for m in sent for p in m.parts if isinstance(p, ToolCallPart)]
        assert [(c.tool_call_id, c.tool_name) for c in calls] == [
            (s.id, s.tool) for s in slots if s.role == "call"
        ]
        back = assemble(window, from_messages(sent, sent), 1)
        assert all(a is b for a, b in zip(back, window, strict=True)) and len(back) == len(window)


def test_session_windows_hold_every_role_and_parallel_calls() -> None:
    """The windows the round trips run on are worth running them on."""
    roles: set[tuple[str, bool]] = set()
    parallel = []

    @SESSION_WINDOWS
    @given(session_plans(passes=4))
    def collect(plan: Plan) -> None:
        for window in windows_of(plan):
            for slot in slots_of(window):
                roles.add((slot.role, slot.failed))
            ids = [s.role for s in slots_of(window)]
            parallel.append(any(a == b == "call" for a, b in itertools.pairwise(ids)))

    collect()
    assert {("call", False), ("result", True), ("result", False), ("user", False),
            ("system", False), ("assistant", False)} <= roles  # fmt: skip
    assert any(parallel)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=[a.name.rpartition(".")[2] for a in ADAPTERS])
def test_a_window_that_fits_comes_back_unchanged(adapter: Adapter) -> None:
    framework(adapter.name.removeprefix(PKG + ".").partition(":")[0])
    for window in (every_kind(), session_window()):
        res = run_policy(load_policy(adapter.name), window, window_tokens(window) + 1)
        assert res.ok, res.message
        assert [it.as_json() for it in res.window] == window


# -- a missing extra -------------------------------------------------------------------------


def block(
    monkeypatch: pytest.MonkeyPatch, modules: tuple[str, ...], shadow: Path | None = None
) -> None:
    """Make ``import`` of these modules fail, as when the extra is not installed: in this
    process, and with ``shadow`` (an empty folder) in the process a policy runs in too,
    which is started with this process's import path: a package of each name there, first
    on the path, raises the ImportError a missing module raises."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)
    if shadow is None:
        return
    for name in modules:
        package = shadow / name
        package.mkdir()
        (package / "__init__.py").write_text(
            f"raise ImportError({f'No module named {name!r}'!r}, name={name!r})\n", "utf-8"
        )
    monkeypatch.syspath_prepend(str(shadow))


@pytest.mark.parametrize("adapter", ADAPTERS, ids=[a.name.rpartition(".")[2] for a in ADAPTERS])
def test_a_missing_extra_is_exit_2_naming_the_pip_command(
    adapter: Adapter, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    extra, modules = EXTRAS[adapter.name.removeprefix(PKG + ".").partition(":")[0]]
    assert adapter.extra == extra
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    block(monkeypatch, modules, shadow)
    out, err = io.StringIO(), io.StringIO()
    code = main(["fuzz", adapter.name, "--out", str(tmp_path / "out")], stdout=out, stderr=err)
    assert code == 2
    assert f"pip install 'ctxproof[{extra}]'" in err.getvalue()
    module, _, function = adapter.name.partition(":")
    assert err.getvalue().startswith(f"ctxproof: {module}: '{function}' cannot run: it needs ")
    assert "Traceback" not in err.getvalue()
    assert out.getvalue() == ""


def test_a_missing_extra_through_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    block(monkeypatch, ("langchain_core", "langchain"))
    with pytest.raises(InputError) as caught:
        load_policy(f"{PKG}.langchain:summarization_policy")
    assert caught.value.fix == "pip install 'ctxproof[policies-langchain]'"
    # called directly, without load_policy: a PL001 finding that says the same
    from verifier.policies.thirdparty.langchain import summarization_policy

    res = run_policy(summarization_policy, session_window(), 50)
    assert res.code == "PL001"
    assert "pip install 'ctxproof[policies-langchain]'" in (res.message or "")


def test_importing_the_adapters_imports_no_framework() -> None:
    modules = [f"{PKG}.{name}" for name in EXTRAS] + [f"{PKG}.report"]
    frameworks = sorted(m for _, names in EXTRAS.values() for m in names)
    code = (
        f"import sys, {', '.join(modules)}; print(sorted(m for m in sys.modules"
        f" if m.split('.')[0] in {frameworks!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


# -- the report page ---------------------------------------------------------------------------


def trial(function: str, **counts: int) -> Trial:
    adapter = next(a for a in (*BASELINES, *ADAPTERS) if a.name.endswith(":" + function))
    slug = Trial(adapter).slug
    return Trial(
        adapter,
        sessions=10,
        rewrites=40,
        tokens_before=1000,
        tokens_after=250,
        findings=tuple(sorted(counts.items())),
        counterexamples=tuple(
            (code, f"docs/frameworks/{slug}/cex-{code}.jsonl") for code in sorted(counts)
        ),
    )


def test_the_page_links_counterexamples_and_says_whether_each_defect_shows() -> None:
    trials = [
        trial("trim_messages_policy", CF001=12, TP001=3),
        trial("token_limited_policy", CF001=5),
        trial("clear_tool_uses_policy", WR008=7),
    ]
    page = render(trials, sessions=10, passes=5, seed_value=3, page_dir=Path("docs"), versions=[])
    assert "10 sessions of up to 5 rewrites each, seed 3" in page
    assert (
        "[TP001 orphaned-tool-result](frameworks/langchain-trim_messages_policy/cex-TP001.jsonl): 3"
        in page
    )
    assert "| 1,000 → 250 | 750 (75%) |" in page
    rows = {line.split(" | ")[2]: line for line in page.splitlines() if line.startswith("| ")}
    assert "**yes**" in rows["`trim_messages_policy`"]
    # a defect the sessions did not show says so, and why
    middle_pop = rows["`token_limited_policy`"]
    assert "| no |" in middle_pop and "a pop must land on one half of a pair" in middle_pop
    assert "**yes**" in rows["`clear_tool_uses_policy`"]
    # a defect whose policy was not part of the run
    assert "| not run |" in rows["`clear_tool_results_policy`"]


def test_each_count_is_split_into_shared_with_drop_oldest_and_own() -> None:
    drop = trial("keep_recent", CF001=40, WR008=30, TP001=2)
    drop = replace(drop, shared=drop.findings)
    safe = trial("spill_first")
    summary = replace(trial("summarization_policy", CF001=12, WR001=3, TP001=1), shared=(
        ("CF001", 10), ("WR001", 0)))  # fmt: skip
    clear = replace(trial("clear_tool_uses_policy", WR008=7, WR001=2), shared=(("WR008", 7),))
    assert split(summary) == ({"CF001": 10}, {"CF001": 2, "TP001": 1, "WR001": 3})
    assert split(clear) == ({"WR008": 7}, {"WR001": 2})
    assert split(safe) == ({}, {})
    page = render(
        [drop, safe, summary, clear], sessions=10, passes=5, seed_value=0,
        page_dir=Path("docs"), versions=[],
    )  # fmt: skip
    row = next(line for line in page.splitlines() if "`summarization_policy` |" in line)
    shared, own = row.split(" | ")[-2:]
    assert "CF001 commitment-dropped](" in shared and "): 10" in shared and "TP001" not in shared
    assert own.startswith("[CF001 commitment-dropped](frameworks/") and "): 2<br>" in own
    assert "[TP001 orphaned-tool-result](" in own and "WR001" in own
    assert "(the reference)" in next(
        line for line in page.splitlines() if "`keep_recent` |" in line
    )
    safe_row = next(line for line in page.splitlines() if "`spill_first` |" in line)
    assert safe_row.endswith("| 0.00 | none | none |")
    assert "| 0.40 |" in row  # 16 findings over 40 rewrites
    assert "![Tokens kept against findings per rewrite" in page
    assert "frameworks/constraints.txt" in page


def test_shared_findings_replay_the_fuzzed_sessions_against_drop_oldest(tmp_path: Path) -> None:
    from verifier.fuzz import fuzz

    models = ROOT / "models" / "policies"
    drop = load_policy(f"{models / 'keep_recent.py'}:keep_recent")
    paraphraser = load_policy(f"{models / 'paraphraser.py'}:paraphraser")
    rules = fuzz(drop, sessions=8, passes=4, out_dir=tmp_path / "d").findings_by_rule
    # a policy shares every finding with itself
    same = shared_findings(drop, drop, rules, sessions=8, passes=4, seed_value=0)
    assert same == rules and same
    # the paraphraser softens failures (WR004), which no trimming does
    found = fuzz(paraphraser, sessions=8, passes=4, out_dir=tmp_path / "p").findings_by_rule
    shared = shared_findings(paraphraser, drop, rules, sessions=8, passes=4, seed_value=0)
    assert found.get("WR004", 0) > 0 and shared.get("WR004", 0) == 0
    assert all(shared[c] <= found[c] for c in shared)


def test_the_plot_is_the_same_bytes_for_the_same_numbers(tmp_path: Path) -> None:
    trials = [trial("keep_recent", CF001=40), trial("spill_first"),
              trial("trim_messages_policy", CF001=30, TP001=2)]  # fmt: skip
    plot(trials, tmp_path / "a.png")
    plot(trials, tmp_path / "b.png")
    first = (tmp_path / "a.png").read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and first == (tmp_path / "b.png").read_bytes()
    assert b"Matplotlib version" not in first  # no version stamp: the pins decide the bytes
    plot(trials[:2], tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes() != first


def test_the_page_is_not_written_from_unpinned_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pins = tmp_path / "constraints.txt"
    pins.write_text("# pins\nlangchain==0.0.1\n", "utf-8")
    drift = unpinned(pins)
    assert any(d.startswith("langchain ") and d.endswith("pinned 0.0.1") for d in drift)
    assert any("autogen-core" in d and "pinned nowhere" in d for d in drift)
    page = tmp_path / "frameworks.md"
    assert report_main(["--out", str(page), "--pins", str(pins), "--sessions", "1"]) == 2
    assert "the installed versions are not the pinned ones" in capsys.readouterr().err
    assert not page.exists()


def test_a_policy_whose_extra_is_missing_is_reported_not_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    block(monkeypatch, ("pydantic_ai", "pydantic_ai_harness"))
    adapters = [a for a in ADAPTERS if a.extra == "policies-pydantic-ai"]
    (tmp_path / "pydantic_ai-sliding_window_policy").mkdir()
    (tmp_path / "pydantic_ai-sliding_window_policy" / "cex-OLD.jsonl").write_text("{}\n")
    trials = run(tmp_path, sessions=2, passes=2, seed_value=0, adapters=adapters, progress=False)
    assert [t.error is not None for t in trials] == [True, True]
    assert not (tmp_path / "pydantic_ai-sliding_window_policy").exists()  # no stale files
    page = render(trials, sessions=2, passes=2, seed_value=0, page_dir=tmp_path, versions=[])
    assert "not run: " in page and "pip install 'ctxproof[policies-pydantic-ai]'" in page


ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "frameworks.md"


PINS = PAGE.parent / "frameworks" / "constraints.txt"


def pins() -> dict[str, str]:
    out = {}
    for line in PINS.read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def test_the_pins_name_every_framework_and_its_extras_at_one_version() -> None:
    pinned = pins()
    assert {"langchain", "langchain-core", "autogen-core", "pydantic-ai-harness",
            "pydantic-ai-slim"} <= set(pinned)  # fmt: skip
    assert all(re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", v) for v in pinned.values()), pinned
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert "-c $(FW_PINS)" in makefile and "FW_PINS := docs/frameworks/constraints.txt" in makefile


def test_the_frameworks_venv_is_at_the_pinned_versions() -> None:
    """Where the extras are installed (make test-frameworks, CI): every distribution of
    the venv is at its pin, so the page's versions are the pins."""
    for module in EXTRAS:
        framework(module)
    from importlib import metadata

    pinned = pins()
    installed = {
        re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
        for d in metadata.distributions()
    }
    installed.pop("ctxproof", None)
    for tool in ("pip", "setuptools", "wheel"):  # the venv's own installers, never pinned
        installed.pop(tool, None)
    drift = {n: (v, pinned.get(n)) for n, v in installed.items() if pinned.get(n) != v}
    assert not drift, f"installed (version, pin): {drift}; run make frameworks-pins"


def test_the_committed_page_links_only_committed_counterexamples() -> None:
    text = PAGE.read_text("utf-8")
    links = set(re.findall(r"\]\((frameworks/[^)]+\.jsonl)\)", text))
    assert links, "docs/frameworks.md links no counterexample"
    for link in sorted(links):
        assert (PAGE.parent / link).is_file(), link
    on_disk = {p.relative_to(PAGE.parent).as_posix() for p in PAGE.parent.glob("frameworks/*/*")}
    assert on_disk == links  # no stale counterexample left behind


def test_the_committed_defect_counterexamples_replay_with_their_rule() -> None:
    """Each known defect the page says fuzzing shows: its trace, audited, has that finding."""
    text = PAGE.read_text("utf-8")
    section = text[text.index("## Known defects") : text.index("## What each policy")]
    shown = re.findall(r"\[(\w+\d+)\]\((frameworks/[^)]+\.jsonl)\)", section)
    assert {code for code, _ in shown} >= {"TP001", "TP002", "WR008"}
    for code, link in shown:
        out, err = io.StringIO(), io.StringIO()
        assert main(["audit", str(PAGE.parent / link)], stdout=out, stderr=err) == 1, link
        assert f": {code} " in out.getvalue(), (link, out.getvalue())


def test_the_same_seed_gives_the_same_page(tmp_path: Path) -> None:
    framework("autogen")
    adapters = [a for a in ADAPTERS if a.name.endswith(":token_limited_policy")]
    pages = []
    for run_dir in (tmp_path / "a", tmp_path / "b"):
        trials = run(run_dir, sessions=3, passes=3, seed_value=0, adapters=adapters, progress=False)
        page = render(trials, sessions=3, passes=3, seed_value=0, page_dir=run_dir, versions=[])
        files = {p.relative_to(run_dir).as_posix(): p.read_text() for p in run_dir.rglob("*.jsonl")}
        pages.append((page, files))
    assert pages[0][1] and "WR008 negative-evidence-evicted" in pages[0][0]
    assert pages[0] == pages[1]
