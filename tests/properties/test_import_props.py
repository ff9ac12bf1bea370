"""Importing a whole history equals importing its snapshots one by one; no compaction, no rewrite.

Generated sessions in three shapes (Claude Code records, Responses items with
compaction items, Chat Completions messages): the trace of the whole history
and the trace of its snapshots (its prefixes, or its records split over several
files) hold the same windows and the same appended items, and a session that
no compaction touched imports without a rewrite and audits clean.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verifier.audit import audit_trace
from verifier.importers import import_history
from verifier.io import parse_trace_text
from verifier.window import Append, Rewrite, Trace

_TEXT = st.text(alphabet="abcdef .", min_size=1, max_size=8).filter(lambda t: t.strip() != "")
_OUTPUT = st.sampled_from(["ok", "Exit code: 0\nfine", "Exit code: 1\nFAILED t", "done"])


def _shape(trace: Trace) -> list[tuple[str, Any]]:
    """Events with consecutive appends merged: ("append", raws) and ("rewrite", policy, raws)."""
    out: list[tuple[str, Any]] = []
    for ev in trace.events:
        if isinstance(ev, Append):
            raws = [it.raw for it in ev.items]
            if out and out[-1][0] == "append":
                out[-1] = ("append", out[-1][1] + raws)
            else:
                out.append(("append", raws))
        elif isinstance(ev, Rewrite):
            window = ev.apply(())  # imports write whole windows
            out.append(("rewrite", (ev.policy, [it.raw for it in window])))
    return out


def _load(text: str) -> Trace:
    return parse_trace_text(text, "<import>")


@st.composite
def cc_sessions(draw: st.DrawFn, compactions: bool) -> list[dict[str, Any]]:
    """Claude Code records: a parentUuid chain (some records without one, or without a
    uuid), tool calls with results, and (when asked) compactions the session goes on after."""
    recs: list[dict[str, Any]] = []
    last: str | None = None
    n = 0

    def add(kind: str, content: Any, **kw: Any) -> None:
        nonlocal last, n
        n += 1
        uuid = f"r{n}"
        rec: dict[str, Any] = {"type": kind, "message": {"role": kind, "content": content}}
        style = draw(st.sampled_from(["chain", "chain", "no-parent", "no-uuid"]))
        if style != "no-uuid":
            rec["uuid"] = uuid
            if style == "chain":
                rec["parentUuid"] = last
            last = uuid
        rec.update(kw)
        recs.append(rec)

    for turn in range(draw(st.integers(1, 6))):
        add("user", draw(_TEXT))
        calls = [f"toolu_{turn}_{k}" for k in range(draw(st.integers(0, 2)))]
        blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(_TEXT)}]
        blocks += [
            {"type": "tool_use", "id": c, "name": "Bash", "input": {"command": f"run {c}"}}
            for c in calls
        ]
        add("assistant", blocks)
        for c in calls:
            body = draw(_OUTPUT)
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": c, "content": body}
            if "FAILED" in body:
                result["is_error"] = True
            add("user", [result])
        if compactions and draw(st.booleans()) and last is not None:
            n += 1
            boundary = f"b{n}"
            recs.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": boundary,
                    "parentUuid": None,
                    "logicalParentUuid": last,
                }
            )
            n += 1
            recs.append(
                {
                    "type": "user",
                    "uuid": f"s{n}",
                    "parentUuid": boundary,
                    "isCompactSummary": True,
                    "message": {"role": "user", "content": f"summary {n}"},
                }
            )
            last = f"s{n}"
    return recs


def _jsonl(recs: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in recs) + "\n"


@settings(max_examples=60, deadline=None)
@given(cc_sessions(compactions=True), st.data())
def test_claude_code_whole_equals_split(recs: list[dict[str, Any]], data: st.DataObject) -> None:
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(recs) - 1)), max_size=3))))
    bounds = [0, *cuts, len(recs)]
    parts = [_jsonl(recs[a:b]).encode() for a, b in itertools.pairwise(bounds) if b > a]
    whole = import_history("claude-code", [_jsonl(recs).encode()])
    assert import_history("claude-code", parts) == whole
    summaries = sum(1 for r in recs if r.get("isCompactSummary"))
    rewrites = [ev for ev in _load(whole).events if isinstance(ev, Rewrite)]
    assert len(rewrites) == summaries


@settings(max_examples=60, deadline=None)
@given(cc_sessions(compactions=True), st.data())
def test_claude_code_a_branch_left_changes_nothing(
    recs: list[dict[str, Any]], data: st.DataObject
) -> None:
    """A branch the session left (a rewind: a prompt off an earlier message, a failed
    command under it) is no part of the conversation, wherever it stands in the file."""
    named = [i for i, r in enumerate(recs) if "uuid" in r and "message" in r]
    # before a record that names its parent (one that names none follows the branch)
    spots = [
        i
        for i in range(1, len(recs))
        if isinstance(recs[i].get("parentUuid") or recs[i].get("logicalParentUuid"), str)
        and named
        and named[0] < i
    ]
    assume(spots)
    at = data.draw(st.sampled_from(spots))
    parent = data.draw(st.sampled_from([recs[i]["uuid"] for i in named if i < at]))
    call = {"type": "tool_use", "id": "toolu_left", "name": "Bash", "input": {"command": "x"}}
    failed = {"type": "tool_result", "tool_use_id": "toolu_left", "content": "Exit code 1"}
    branch = [
        {"type": "user", "uuid": "x1", "parentUuid": parent,
         "message": {"role": "user", "content": "another way"}},
        {"type": "assistant", "uuid": "x2", "parentUuid": "x1",
         "message": {"role": "assistant", "content": [call]}},
        {"type": "user", "uuid": "x3", "parentUuid": "x2",
         "message": {"role": "user", "content": [{**failed, "is_error": True}]}},
    ]  # fmt: skip
    left = [*recs[:at], *branch[: data.draw(st.integers(1, 3))], *recs[at:]]
    whole = import_history("claude-code", [_jsonl(recs).encode()])
    assert import_history("claude-code", [_jsonl(left).encode()]) == whole


@settings(max_examples=60, deadline=None)
@given(cc_sessions(compactions=False))
def test_claude_code_without_compaction_has_no_rewrite_and_audits_clean(
    recs: list[dict[str, Any]],
) -> None:
    trace = _load(import_history("claude-code", [_jsonl(recs).encode()]))
    assert not any(isinstance(ev, Rewrite) for ev in trace.events)
    report = audit_trace(trace)
    assert report.findings == () or list(report.findings) == []
    assert report.exit_code == 0


@st.composite
def responses_histories(draw: st.DrawFn, compactions: bool) -> list[dict[str, Any]]:
    """Responses items: messages, function calls and outputs, compaction items."""
    items: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 5))):
        text = draw(_TEXT)
        items.append(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"{turn} {text}"}],
            }
        )
        calls = [f"call_{turn}_{k}" for k in range(draw(st.integers(0, 2)))]
        for c in calls:
            items.append(
                {
                    "type": "function_call",
                    "call_id": c,
                    "name": "shell",
                    "arguments": json.dumps({"command": f"run {c}"}),
                }
            )
        for c in calls:
            items.append({"type": "function_call_output", "call_id": c, "output": draw(_OUTPUT)})
        if compactions and draw(st.booleans()):
            items.append({"type": "compaction", "id": f"cmp_{turn}", "encrypted_content": "x"})
    return items


@settings(max_examples=60, deadline=None)
@given(responses_histories(compactions=True))
def test_responses_whole_equals_prefixes(items: list[dict[str, Any]]) -> None:
    whole = _load(import_history("openai", [json.dumps(items)]))
    prefixes = [json.dumps(items[: k + 1]) for k in range(len(items))]
    fed = _load(import_history("openai", prefixes))
    assert _shape(fed) == _shape(whole)
    compactions = sum(1 for it in items if it["type"] == "compaction")
    assert sum(isinstance(ev, Rewrite) for ev in whole.events) == compactions


@settings(max_examples=60, deadline=None)
@given(responses_histories(compactions=False))
def test_responses_without_compaction_audits_clean(items: list[dict[str, Any]]) -> None:
    prefixes = [json.dumps(items[: k + 1]) for k in range(len(items))]
    trace = _load(import_history("openai", prefixes))
    assert not any(isinstance(ev, Rewrite) for ev in trace.events)
    assert audit_trace(trace).exit_code == 0


@st.composite
def chat_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": draw(_TEXT)}]
    for turn in range(draw(st.integers(1, 4))):
        msgs.append({"role": "user", "content": draw(_TEXT)})
        calls = [f"call_{turn}_{k}" for k in range(draw(st.integers(0, 2)))]
        msgs.append(
            {
                "role": "assistant",
                "content": draw(st.one_of(st.none(), _TEXT)),
                "tool_calls": [
                    {
                        "id": c,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": c})},
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            msgs.append({"role": "tool", "tool_call_id": c, "content": draw(_OUTPUT)})
    return msgs


@settings(max_examples=60, deadline=None)
@given(chat_histories())
def test_chat_whole_equals_prefixes_and_audits_clean(msgs: list[dict[str, Any]]) -> None:
    whole = _load(import_history("openai", [json.dumps(msgs)]))
    prefixes = [json.dumps(msgs[: k + 1]) for k in range(len(msgs))]
    fed = _load(import_history("openai", prefixes))
    assert _shape(fed) == _shape(whole)
    assert not any(isinstance(ev, Rewrite) for ev in fed.events)
    assert audit_trace(fed).exit_code == 0
