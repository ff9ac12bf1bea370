"""Importers: real histories become traces that load, audit, and keep every id, digest and pair."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.audit import audit_trace
from verifier.cli import main
from verifier.errors import InputError
from verifier.importers import FORMATS, import_history, snapshots_of
from verifier.importers.common import command_of, exit_code_in, is_placeholder
from verifier.importers.coverage import NO_COMMITMENTS
from verifier.importers.detect import detect_format
from verifier.importers.sources import Source
from verifier.io import parse_trace_text
from verifier.window import Append, Item, Rewrite, Trace

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "histories"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def imported(fmt: str, *files: str | Path, **kw: Any) -> Trace:
    """Import, then load the trace as ctxproof audit would."""
    text = import_history(fmt, [Path(f) if isinstance(f, Path) else f for f in files], **kw)
    return parse_trace_text(text, f"<{fmt}>")


def windows(trace: Trace) -> list[tuple[str, list[Item]]]:
    """The window after every event: ("append" | policy, items)."""
    out: list[tuple[str, list[Item]]] = []
    current: list[Item] = []
    for ev in trace.events:
        if isinstance(ev, Append):
            current = [*current, *ev.items]
            out.append(("append", current))
        elif isinstance(ev, Rewrite):
            current = list(ev.apply(tuple(current)))
            out.append((ev.policy or "", current))
    return out


def codes(trace: Trace) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.code, f.items) for f in audit_trace(trace).findings]


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the shared conventions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "code"),
    [
        ("Exit code: 3\nboom", 3),
        ("Exit code 1", 1),
        ("output\n<returncode>127</returncode>\n", 127),
        ("the exit code: 4 is mentioned mid-line", None),
        ("Exit code 0\nlater Exit code 5", 0),
        ("all good", None),
    ],
)
def test_exit_code_conventions(content: str, code: int | None) -> None:
    assert exit_code_in(content) == code


@pytest.mark.parametrize(
    "text",
    [
        "[cleared]",
        "(Tool result removed)",
        "[tool result cleared]",
        "[Trimmed: 4,312 characters]",
        "Skipped 7 messages.",
        "Old environment output: (120 lines omitted)",
        "  [cleared]\n",
        # the OpenAI Agents SDK's ToolOutputTrimmer: a header, then a preview
        "[Trimmed: search output \u2014 1560 chars \u2192 200 char preview]\nResult 1: ...",
        "[Trimmed]\n{\"rows\": [1, 2, ...",
    ],
)
def test_placeholders_are_recognised(text: str) -> None:
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text", ["cleared", "[cleared] but more", "Skipped messages.", "", "[Trimmed] rows"]
)
def test_ordinary_text_is_no_placeholder(text: str) -> None:
    assert not is_placeholder(text)


def test_formats_listed() -> None:
    assert FORMATS == ("claude-code", "openai", "anthropic", "langchain", "inspect")


# --- openai -------------------------------------------------------------------------------


def test_chat_snapshots_clear_a_failed_result() -> None:
    trace = imported("openai", FIXTURES / "openai" / "chat_snapshots.json")
    kinds = [type(ev).__name__ for ev in trace.events]
    assert kinds == ["Append", "Rewrite", "Append"]
    first = {it.id: it for it in trace.events[0].items}  # type: ignore[union-attr]
    result = first["call_Zr3pQ1:result"]
    assert (result.kind, result.modality, result.exit_code) == ("observation", "failed", 1)
    assert result.call == "call_Zr3pQ1" and result.source == "bash: pytest -q tests/test_db.py"
    assert result.digest == sha(result.content or "")
    assert first["call_Zr3pQ2:result"].source == 'read_file: {"path":"migrations/0001_init.sql"}'
    assert first["msg-0"].source == "system" and first["msg-1"].source == "user"
    window = windows(trace)[1][1]
    cleared = next(it for it in window if it.id == "call_Zr3pQ1:cleared")
    assert (cleared.kind, cleared.call) == ("prose", "call_Zr3pQ1")
    assert "call_Zr3pQ1:result" not in {it.id for it in window}
    # kept messages are in the rewrite exactly as appended
    for it in window:
        if it.id in first:
            assert it.raw == first[it.id].raw
    assert ("WR008", ("call_Zr3pQ1:result",)) in codes(trace)
    assert not any(code == "WR007" for code, _ in codes(trace))


@pytest.mark.parametrize(
    ("kept", "sent"),
    [
        # a chat message as the SDK dumped it, sent again with only its role and content
        (
            {"role": "assistant", "content": "ok", "refusal": None, "annotations": []},
            {"role": "assistant", "content": "ok"},
        ),
        ({"role": "user", "content": "go", "name": "ana"}, {"role": "user", "content": "go"}),
        # a Responses item whose status changed, or was left out
        (
            {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}",
             "status": "in_progress"},
            {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"},
        ),
    ],
)  # fmt: skip
def test_a_message_is_told_by_role_content_and_calls(
    kept: dict[str, Any], sent: dict[str, Any]
) -> None:
    """Across snapshots a message is the same when its role, content, tool calls and
    tool_call_id are: fields beside those (null or not) do not make it another one."""
    first = [{"role": "user", "content": "start"}, kept]
    second = [{"role": "user", "content": "start"}, sent, {"role": "user", "content": "more"}]
    trace = imported("openai", json.dumps([first, second]))
    assert [type(ev).__name__ for ev in trace.events] == ["Append", "Append"]
    assert len([it.id for it in windows(trace)[-1][1]]) == 3
    edited = {**sent, "content": "changed"} if "content" in sent else {**sent, "name": "rm"}
    again = imported("openai", json.dumps([first, [first[0], edited]]))
    assert any(isinstance(ev, Rewrite) for ev in again.events)


def test_responses_mcp_and_apply_patch_items_give_calls_and_results() -> None:
    """A remote MCP call (``mcp_call``, call and result in one item, failed with an
    ``error``) and an ``apply_patch_call`` with its output (failed by ``status``) are
    tool calls and results like any other: a failed one is evidence to keep."""
    items = [
        {"role": "user", "content": "query db, then patch it"},
        {"id": "mcp_1", "type": "mcp_call", "name": "run_query", "server_label": "db",
         "arguments": '{"sql": "select 1"}', "output": None, "status": "failed",
         "error": {"type": "http_error", "code": 502, "message": "bad gateway"}},
        {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_ap", "status": "completed",
         "operation": {"type": "update_file", "path": "db.py", "diff": "@@ -x +y"}},
        {"type": "apply_patch_call_output", "call_id": "call_ap", "status": "failed",
         "output": "hunk does not apply"},
    ]  # fmt: skip
    (window,) = [w for _, w in windows(imported("openai", json.dumps(items)))]
    got = {it.id: it for it in window}
    assert (got["mcp_1:result"].modality, got["mcp_1:result"].content) == ("failed", "bad gateway")
    assert got["mcp_1:result"].source == 'run_query: {"sql":"select 1"}'
    assert (got["call_ap:result"].modality, got["call_ap:result"].call) == ("failed", "call_ap")
    assert got["call_ap"].kind == "prose"
    dropped = imported("openai", json.dumps([items, [items[0]]]))
    assert {items for code, items in codes(dropped) if code == "WR008"} == {
        ("mcp_1:result",),
        ("call_ap:result",),
    }


def test_responses_request_instructions_are_a_system_message() -> None:
    """A Responses request's ``instructions`` are a system (or developer) message inserted
    before its input: a system observation first, as an Anthropic request's ``system``."""
    body = {"model": "m", "instructions": "Be terse.", "input": "hi"}
    (window,) = [w for _, w in windows(imported("openai", json.dumps(body)))]
    assert [(it.id, it.source, it.content) for it in window] == [
        ("msg-0", "system", "Be terse."),
        ("msg-1", "user", "hi"),
    ]
    listed = {**body, "instructions": [{"role": "developer", "content": "No jokes."}]}
    (window,) = [w for _, w in windows(imported("openai", json.dumps(listed)))]
    assert [it.source for it in window] == ["developer", "user"]


def test_the_agents_sdk_output_of_a_tool_that_raised_is_failed() -> None:
    """The Agents SDK tells the model a tool raised with a text of its own (no flag in
    either format): that result is failed, and a compaction that drops it is WR008."""
    said = "An error occurred while running the tool. Please try again. Error: no such file"
    call = {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": said}
    ask = {"role": "user", "content": "Read it."}
    trace = imported("openai", json.dumps([[ask, call, output], [ask]]))
    first = {it.id: it for it in windows(trace)[0][1]}
    assert first["c1:result"].modality == "failed"
    assert ("WR008", ("c1:result",)) in codes(trace)
    chat_call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chat = [
        ask,
        {"role": "assistant", "content": None, "tool_calls": [chat_call]},
        {"role": "tool", "tool_call_id": "c1", "content": said},
    ]
    window = windows(imported("openai", json.dumps(chat)))[0][1]
    assert {it.id: it for it in window}["c1:result"].modality == "failed"
    fine = {**output, "output": "An error occurred in the report: none"}
    window = windows(imported("openai", json.dumps([ask, call, fine])))[0][1]
    assert {it.id: it for it in window}["c1:result"].modality == "verified"


def test_an_array_of_request_bodies_is_one_snapshot_each() -> None:
    """Request bodies recorded one per call, in a JSON array, read as the array of their
    message lists: each one a snapshot (the system prompt first, as a single body's)."""
    tool = {"role": "tool", "tool_call_id": "c1", "content": "Exit code: 1"}
    call = {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
    ask: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    first = [{"role": "user", "content": "Run it."}, ask, tool]
    second = [{"role": "user", "content": "Run it."}, {"role": "assistant", "content": "Failed."}]
    chat = [{"model": "m", "messages": first}, {"model": "m", "messages": second}]
    assert windows(imported("openai", json.dumps(chat))) == windows(
        imported("openai", json.dumps([first, second]))
    )
    assert ("WR008", ("c1:result",)) in codes(imported("openai", json.dumps(chat)))
    responses = [{"model": "m", "instructions": "Be terse.", "input": "hi"}] * 2
    opening = next(w for _, w in windows(imported("openai", json.dumps(responses))))
    assert opening[0].source == "system"
    said = [{"role": "user", "content": "Run it."}, {"role": "assistant", "content": "Done."}]
    bodies = [{"model": "m", "system": "Be terse.", "messages": said[:1]}]
    bodies.append({"model": "m", "system": "Be terse.", "messages": said})
    lists = [[{"role": "system", "content": "Be terse."}, *b["messages"]] for b in bodies]
    assert windows(imported("anthropic", json.dumps(bodies))) == windows(
        imported("anthropic", json.dumps(lists))
    )


def test_responses_compaction_item_is_a_boundary() -> None:
    trace = imported("openai", FIXTURES / "openai" / "responses_compaction.json")
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "openai:compaction", "append"]
    before = {it.id: it for it in seen[0][1]}
    shell = before["call_sh1:result"]
    assert (shell.exit_code, shell.modality, shell.source) == (2, "failed", "shell: make build")
    assert [it.id for it in seen[1][1]] == ["cmp_01"]
    assert seen[1][1][0].kind == "prose"
    assert [it.id for it in seen[2][1]] == ["cmp_01", "msg-8", "msg_a2"]
    assert ("WR008", ("call_sh1:result",)) in codes(trace)


def test_responses_compact_output_keeps_its_user_messages() -> None:
    """The compact endpoint's output is the user messages, then one compaction item: one
    rewrite whose window holds both (with what follows a kept message), not two."""
    first = [
        {"role": "user", "content": "Why does CI fail on main?"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "Exit code: 1"},
    ]
    compacted = [first[0], {"type": "compaction", "id": "cmp_01", "encrypted_content": "g"}]
    later = [*compacted, {"role": "user", "content": "Fix it."}]
    ci = {"id": "ci", "kind": "commitment", "type": "obligation"}
    notes = [{"after": "msg-0", "items": [ci]}]
    trace = imported("openai", json.dumps(first), json.dumps(later), annotations=notes)
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "openai:compaction", "append"]
    assert [it.id for it in seen[1][1]] == ["msg-0", "ci", "cmp_01"]
    assert codes(trace) == [("WR008", ("c1:result",))]
    # the same history grown in one list: the user message was seen before the item
    whole = imported("openai", json.dumps([*first, *later[1:]]))
    assert [p for p, _ in windows(whole)] == ["append", "openai:compaction", "append"]


def test_codex_compacted_record_keeps_replacement_history() -> None:
    trace = imported("openai", FIXTURES / "openai" / "codex_rollout.jsonl")
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "codex:compacted", "append"]
    after = seen[1][1]
    assert [it.kind for it in after] == ["observation", "observation", "prose"]
    assert after[0].raw == seen[0][1][0].raw
    assert "produced a summary" in (after[2].text or "")
    found = codes(trace)
    assert ("WR008", ("call_cx1:result",)) in found
    assert any(code == "CP003" and items[0] == "call_cx2:result" for code, items in found)


def _rollout(*payloads: tuple[str, dict[str, Any]]) -> str:
    return "".join(
        json.dumps({"timestamp": f"2026-01-01T00:00:{k:02d}Z", "type": kind, "payload": payload})
        + "\n"
        for k, (kind, payload) in enumerate(payloads)
    )


def _codex_msg(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


_FAILED_MAKE = [
    ("response_item", _codex_msg("user", "fix the build")),
    ("response_item", {"type": "function_call", "name": "exec_command",
                       "arguments": '{"cmd": "make"}', "call_id": "call_1"}),
    ("response_item", {"type": "function_call_output", "call_id": "call_1",
                       "output": "Process exited with code 2\nOutput:\nError 2\n"}),
]  # fmt: skip


@pytest.mark.parametrize("compaction_first", [False, True])
def test_codex_replacement_history_is_the_whole_window(compaction_first: bool) -> None:
    """A compacted record's replacement history is what the model then saw, every message
    of it: the messages it holds that no record gave before (the re-injected context, the
    user's words cut short) are the compaction's output, prose, not later arrivals."""
    history = [_codex_msg("developer", "<permissions>sandbox</permissions>"),
               _codex_msg("user", "fix the build (cut)")]  # fmt: skip
    if compaction_first:
        history.insert(0, {"type": "compaction", "encrypted_content": "gAAAA"})
    text = _rollout(
        *_FAILED_MAKE,
        ("compacted", {"message": "", "replacement_history": history}),
        ("response_item", _codex_msg("user", "continue")),
    )
    trace = imported("openai", text)
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "codex:compacted", "append"]
    window = seen[1][1]
    assert [it.kind for it in window] == ["prose"] * len(history)
    assert window[-1].text == "fix the build (cut)"
    assert [it.content for it in seen[2][1][len(history) :]] == ["continue"]
    assert ("WR008", ("call_1:result",)) in codes(trace)


def test_codex_compaction_keeps_what_it_puts_back_as_it_was() -> None:
    """A later compaction that puts back a message an earlier one dropped (the context
    Codex injects again) restores it as appended, its time with it; one that keeps an
    earlier compaction's summary keeps it prose. Neither is an observation made up."""
    context = _codex_msg("user", "<environment_context>/repo</environment_context>")
    summary = _codex_msg("user", "Summary: make fails with Error 2.")
    text = _rollout(
        ("response_item", context),
        *_FAILED_MAKE,
        ("compacted", {"message": "Summary: make fails with Error 2.", "replacement_history": [
            _FAILED_MAKE[0][1], summary]}),
        ("response_item", _codex_msg("user", "continue")),
        ("compacted", {"message": "", "replacement_history": [
            context, _FAILED_MAKE[0][1], _codex_msg("user", "continue"), summary]}),
    )  # fmt: skip
    trace = imported("openai", text)
    seen = windows(trace)
    assert [p for p, _ in seen][-1] == "codex:compacted"
    first = {it.id: it for it in seen[0][1]}
    last = {it.id: it for it in seen[-1][1]}
    assert last["msg-0"].raw == first["msg-0"].raw  # put back as appended
    assert [it.kind for it in seen[-1][1]][-1] == "prose"
    assert not any(code == "WR007" for code, _ in codes(trace))


def test_codex_compaction_with_its_summary_alone_keeps_the_users_messages() -> None:
    """A compacted record without a replacement history is Codex's own compaction, which
    rebuilds the history as the user's messages so far, then the summary."""
    text = _rollout(
        *_FAILED_MAKE,
        ("compacted", {"message": "Summary: make fails with Error 2."}),
        ("response_item", _codex_msg("user", "continue")),
    )
    notes = [{"after": "msg-0", "items": [{"id": "ok", "kind": "commitment", "type": "invariant"}]}]
    trace = imported("openai", text, annotations=notes)
    seen = windows(trace)
    assert [(it.id, it.kind) for it in seen[1][1]] == [
        ("msg-0", "observation"),
        ("ok", "commitment"),
        ("msg-3", "prose"),
    ]
    assert codes(trace) == [("WR008", ("call_1:result",))]


def test_codex_compaction_item_in_a_rollout_is_a_boundary() -> None:
    """A Responses compaction item recorded as a response item is the boundary it is in a
    Responses list: the model sees the rollout from it on."""
    text = _rollout(
        *_FAILED_MAKE,
        ("response_item", {"type": "compaction", "encrypted_content": "gAAAA"}),
        ("response_item", _codex_msg("user", "continue")),
    )
    trace = imported("openai", text)
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "openai:compaction", "append"]
    assert [(it.kind, it.text) for it in seen[1][1]] == [("prose", "(compacted history)")]
    assert [it.content for it in seen[2][1][1:]] == ["continue"]
    assert ("WR008", ("call_1:result",)) in codes(trace)


def test_a_codex_rollout_of_one_record_is_read_as_a_rollout(tmp_path: Path) -> None:
    """A rollout of one line is no JSONL by its lines: its record is still read as a Codex
    record, as it is after the session's meta line (which gives no item)."""
    lines = (FIXTURES / "openai" / "codex_rollout.jsonl").read_text("utf-8").splitlines()
    meta = lines[0]

    def outcome(fmt: str, path: Path) -> str:
        try:
            return import_history(fmt, [path])
        except InputError as exc:  # a record that gives no item: refused alike
            return exc.render().replace(path.name, "FILE")

    imports = 0
    for k, line in enumerate(lines[1:]):
        alone, after_meta = tmp_path / f"alone{k}.jsonl", tmp_path / f"meta{k}.jsonl"
        alone.write_text(f"\n{line}\n", "utf-8")
        after_meta.write_text(f"{meta}\n{line}\n", "utf-8")
        expected = outcome("openai", after_meta)
        imports += expected.startswith("{")
        for fmt in ("openai", "auto"):
            assert outcome(fmt, alone) == expected, (k, fmt)
    assert imports == 8  # the records that give items, the compaction among them


def test_snapshot_that_extends_is_an_append_only() -> None:
    first = [{"role": "user", "content": "a"}]
    second = [*first, {"role": "assistant", "content": "b"}]
    trace = imported("openai", json.dumps(first), json.dumps(second))
    assert [type(ev).__name__ for ev in trace.events] == ["Append", "Append"]
    assert [it.id for it in trace.events[1].items] == ["msg-1"]  # type: ignore[union-attr]


def test_equal_messages_are_counted_in_order() -> None:
    msgs = [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}] * 2
    trace = imported("openai", json.dumps(msgs), json.dumps(msgs[2:]))
    assert [it.id for it in windows(trace)[0][1]] == ["msg-0", "msg-1", "msg-2", "msg-3"]
    # the later snapshot holds one of each: the first such item, by rank among equals
    assert [it.id for it in windows(trace)[1][1]] == ["msg-0", "msg-1"]


def test_result_without_call_in_history_has_no_call() -> None:
    msgs = [{"role": "tool", "tool_call_id": "call_gone", "name": "grep", "content": "x"}]
    item = imported("openai", json.dumps(msgs)).events[0].items[0]  # type: ignore[union-attr]
    assert (item.id, item.call, item.source) == ("call_gone:result", None, "grep")


def test_null_legacy_fields_of_a_model_dump_are_absent() -> None:
    msgs = [
        {"role": "user", "content": "why does CI fail?"},
        {
            "role": "assistant",
            "content": None,
            "function_call": None,
            "audio": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"command": "pytest"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Exit code: 1"},
        {"role": "assistant", "content": "it fails", "function_call": None, "tool_calls": None},
    ]
    items = imported("openai", json.dumps(msgs)).events[0].items  # type: ignore[union-attr]
    assert [it.id for it in items if it.call] == ["c1:result"]
    legacy = [{"role": "assistant", "content": "x", "function_call": {"name": "f"}}]
    with pytest.raises(InputError, match="legacy function messages"):
        imported("openai", json.dumps(legacy))


def test_long_ids_are_hashed_consistently() -> None:
    long_id = "call_" + "x" * 300
    msgs = [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": long_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": long_id, "content": "done"},
    ]
    items = imported("openai", json.dumps(msgs)).events[0].items  # type: ignore[union-attr]
    assert all(len(it.id) <= 256 for it in items)
    assert items[1].call == items[0].id and items[0].id.startswith("id-")


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "where", "what"),
    [
        (
            '[{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]',
            "message 1",
            "tool_call_id",
        ),
        ('[{"role": "wizard", "content": "x"}]', "message 0", "unknown role"),
        ('[{"role": "user", "content": "x"}, 3]', "message 1", "JSON object"),
        (
            '[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}]',
            "message 0",
            "tool_calls[0]",
        ),
        (
            '[{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": '
            '{"name": "f"}}]}, {"role": "assistant", "tool_calls": [{"id": "c", "type": '
            '"function", "function": {"name": "g"}}]}]',
            "message 1",
            "already in the window",
        ),
    ],
)
def test_bad_openai_input_names_the_message(
    tmp_path: Path, payload: str, where: str, what: str
) -> None:
    path = tmp_path / "h.json"
    path.write_text(payload)
    code, out, err = run("import", "openai", str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert str(path) in err and where in err and what in err


def test_malformed_json_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "x"')
    code, _, err = run("import", "openai", str(path))
    assert code == 2 and "malformed JSON" in err and str(path) in err


# --- the command --------------------------------------------------------------------------


def test_import_to_stdout_is_the_trace(tmp_path: Path) -> None:
    fixture = FIXTURES / "openai" / "chat_snapshots.json"
    code, out, err = run("import", "openai", str(fixture))
    assert code == 0
    assert out == import_history("openai", [fixture])
    # what the trace leaves unchecked is said on stderr, as -o says it on stdout
    target = tmp_path / "t.jsonl"
    code, summary_o, _ = run("import", "openai", str(fixture), "-o", str(target))
    assert code == 0 and err == summary_o.replace(str(target), "<stdout>", 1)
    assert "0 commitment(s) and claim(s)" in err and NO_COMMITMENTS in err
    code, out, err = run("import", "openai", str(fixture), "--format", "json")
    summary = json.loads(err)
    assert code == 0 and summary["out"] is None and summary["format"] == "openai"
    assert summary["commitments_and_claims"] == 0 and summary["note"] == NO_COMMITMENTS


def test_import_out_is_written_whole(tmp_path: Path) -> None:
    fixture = FIXTURES / "openai" / "chat_snapshots.json"
    target = tmp_path / "trace.jsonl"
    code, out, _ = run("import", "openai", str(fixture), "-o", str(target), "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "out": str(target),
        "format": "openai",
        "appends": 2,
        "rewrites": 1,
        "items": 10,  # every distinct item: the summary only the rewrite holds included
        "messages": 8,
        "kinds": {"commitment": 0, "claim": 0, "observation": 5, "prose": 5, "stub": 0},
        "commitments_and_claims": 0,
        "note": "nothing here is checked as a commitment: annotate or extract",
    }
    assert target.read_text() == import_history("openai", [fixture])
    assert list(tmp_path.iterdir()) == [target]
    code, _, _ = run("audit", str(target))
    assert code == 1


def test_failed_import_leaves_no_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "tool"}]')
    target = tmp_path / "trace.jsonl"
    code, _, _ = run("import", "openai", str(bad), "-o", str(target))
    assert code == 2 and not target.exists()


def test_unknown_format_is_usage_error() -> None:
    code, _, err = run("import", "gemini", "x.json")
    assert code == 2 and "gemini" in err


# --- round trip, as a property ------------------------------------------------------------

_TEXT = st.text(alphabet="abcdefgh .\n", min_size=1, max_size=12).filter(lambda t: t.strip() != "")


@st.composite
def chat_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Chat Completions history: user turns, assistant text and tool calls with results."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": draw(_TEXT)}]
    for turn in range(draw(st.integers(1, 5))):
        msgs.append({"role": "user", "content": draw(_TEXT)})
        calls = [f"call_{turn}_{k}" for k in range(draw(st.integers(0, 3)))]
        text = draw(st.one_of(st.none(), _TEXT))
        msgs.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": c,
                        "type": "function",
                        "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"run {c}"}),
                        },
                    }
                    for c in calls
                ],
            }
        )
        for c in calls:
            code = draw(st.sampled_from([None, 0, 1, 2]))
            body = draw(_TEXT)
            content = body if code is None else f"Exit code: {code}\n{body}"
            msgs.append({"role": "tool", "tool_call_id": c, "content": content})
    return msgs


@st.composite
def edited(draw: st.DrawFn, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A later snapshot: some tool results cleared, some whole turns dropped, one added."""
    out = []
    for m in msgs:
        if m["role"] == "tool" and draw(st.booleans()):
            out.append(
                {**m, "content": draw(st.sampled_from(["[cleared]", "[tool result cleared]"]))}
            )
        else:
            out.append(m)
    out.append({"role": "user", "content": "next"})
    return out


def expected_ids(msgs: list[dict[str, Any]], names: dict[tuple[str, int], str]) -> list[str]:
    """The item ids a snapshot must give, computed independently of the importer."""
    ids: list[str] = []
    rank: dict[str, int] = {}
    for m in msgs:
        key = json.dumps(m, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if m["role"] == "tool":  # a result is the same message as long as its call id is
            key = f"tool:{m['tool_call_id']}"
        j = rank.get(key, 0)
        rank[key] = j + 1
        name = names.setdefault((key, j), f"msg-{len(names)}")
        if m["role"] == "tool":
            cleared = is_placeholder(m["content"])
            ids.append(f"{m['tool_call_id']}:{'cleared' if cleared else 'result'}")
            continue
        if m.get("content"):
            ids.append(name)
        ids.extend(c["id"] for c in m.get("tool_calls", []))
    return ids


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_round_trip_keeps_ids_digests_and_pairs(data: st.DataObject) -> None:
    first = data.draw(chat_histories())
    second = data.draw(edited(first))
    trace = imported("openai", json.dumps(first), json.dumps(second))
    seen = windows(trace)
    names: dict[tuple[str, int], str] = {}
    assert [it.id for it in seen[0][1]] == expected_ids(first, names)
    assert [it.id for it in seen[-1][1]] == expected_ids(second, names)
    calls = {
        c["id"]: json.loads(c["function"]["arguments"])["command"]
        for m in first
        for c in m.get("tool_calls", [])
    }
    results = {m["tool_call_id"]: m["content"] for m in first if m["role"] == "tool"}
    for _, window in seen:
        for it in window:
            if it.id.endswith(":result"):
                cid = it.id[: -len(":result")]
                assert it.call == cid and it.digest == sha(results[cid])
                assert it.source == f"bash: {calls[cid]}"
                code = exit_code_in(results[cid])
                assert it.modality == ("failed" if code not in (None, 0) else "verified")
            if it.id.endswith(":cleared"):
                assert it.kind == "prose" and it.call == it.id[: -len(":cleared")]
            if it.kind == "observation" and it.source in ("user", "system"):
                assert it.digest == sha(it.content or "")
    report = audit_trace(trace)
    assert not any(f.code == "WR007" for f in report.findings)
    failed_cleared = {
        m["tool_call_id"] for m in second if m["role"] == "tool" and is_placeholder(m["content"])
    } & {cid for cid, body in results.items() if exit_code_in(body) not in (None, 0)}
    wr008 = {f.items[0] for f in report.findings if f.code == "WR008"}
    assert wr008 == {f"{cid}:result" for cid in failed_cleared}


def test_snapshots_api_reads_each_file_in_order() -> None:
    snaps = snapshots_of("openai", [FIXTURES / "openai" / "chat_snapshots.json"])
    assert [len(s.messages) for s in snaps] == [7, 8]


def test_bad_input_is_an_input_error() -> None:
    with pytest.raises(InputError):
        import_history("openai", ['{"nothing": 1}'])


_ONE_OF_EACH = {
    "openai": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
    "anthropic": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}],
    "langchain": [
        {"type": "human", "data": {"content": "hello"}},
        {"type": "ai", "data": {"content": "hi"}},
    ],
}


@pytest.mark.parametrize("fmt", sorted(_ONE_OF_EACH))
@pytest.mark.parametrize("empty", ["[]", '{"messages": []}'])
def test_a_file_of_no_message_among_several_is_refused(
    fmt: str, empty: str, tmp_path: Path
) -> None:
    """Each FILE must hold a message of the format, not only the first: an empty snapshot
    file read as a window of nothing made up a rewrite that dropped everything."""
    first, second = tmp_path / "one.json", tmp_path / "two.json"
    first.write_text(json.dumps(_ONE_OF_EACH[fmt]))
    second.write_text(empty)
    with pytest.raises(InputError, match="no message of the") as err:
        import_history(fmt, [first, second])
    assert err.value.file is not None and err.value.file.endswith("two.json")
    # an empty list is named as one, not as values that are no messages
    said = "an empty JSON array" if empty == "[]" else "whose 'messages' is an empty list"
    assert said in err.value.render() and "no messages" not in err.value.render()
    both = imported(fmt, first, first)
    assert [type(ev).__name__ for ev in both.events] == ["Append"]


_ANTHROPIC_CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}],
}
_OPENAI_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    ],
}


@pytest.mark.parametrize(
    ("fmt", "foreign", "what"),
    [
        ("openai", {"type": "human", "data": {"content": "x"}}, "a LangChain message"),
        ("openai", _ANTHROPIC_CALL, "an Anthropic Messages API message"),
        ("anthropic", _OPENAI_CALL, "a chat-completions message"),
        (
            "anthropic",
            {"role": "user", "content": [{"type": "input_text", "text": "x"}]},
            "a chat-completions message",
        ),
    ],
)
def test_a_message_of_another_format_inside_a_history_is_refused(
    fmt: str, foreign: dict[str, Any], what: str
) -> None:
    """Its reader finds no text, call or result of its own in it: skipped, it would leave
    the import quietly short of that message (its call, its text)."""
    own = {"openai": {"role": "developer", "content": "start"}, "anthropic": _ANTHROPIC_CALL}
    msgs = [own[fmt], foreign]  # one message of each: the file is of neither by its shape
    with pytest.raises(InputError, match=f"message 1: this message is {what}"):
        import_history(fmt, [json.dumps(msgs)])


@pytest.mark.parametrize(
    "refusal",
    [
        "The user doesn't want to proceed with this tool use. The tool use was rejected.",
        # any wording that says so: the past tense, a curly apostrophe
        "The user did not want to proceed with this tool use.",
        "The user doesn\u2019t want to proceed with this tool use.",
        "The user didn't want to take this action.",
    ],
)
def test_anthropic_declined_call_is_the_users_word(refusal: str) -> None:
    """A result whose text says the user declined the call (is_error) is what the user
    said, as in a Claude Code session: no failed command, no WR008 when it leaves."""
    call = {"type": "tool_use", "id": "toolu_d", "name": "Bash", "input": {"command": "rm -r x"}}
    msgs = [
        {"role": "user", "content": "clean up"},
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_d",
                    "is_error": True,
                    "content": refusal,
                },
            ],
        },
    ]
    first = imported("anthropic", json.dumps(msgs)).events[0]
    assert isinstance(first, Append)
    result = {it.id: it for it in first.items}["toolu_d:result"]
    assert (result.kind, result.source, result.modality) == ("observation", "user", "unverified")
    msgs[2]["content"][0]["content"] = "Exit code 1\nrm: x: No such file"  # type: ignore[index]
    first = imported("anthropic", json.dumps(msgs)).events[0]
    assert isinstance(first, Append)
    assert {it.id: it for it in first.items}["toolu_d:result"].modality == "failed"


# --- claude-code --------------------------------------------------------------------------

CC = FIXTURES / "claude-code"


def test_claude_code_compact_boundary() -> None:
    trace = imported("claude-code", CC / "session_compact.jsonl")
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "claude-code:compact_boundary", "append"]
    before = {it.id: it for it in seen[0][1]}
    # ids are the records' uuids; titles, hooks and sidechains give no item
    assert "39ea49bc-8cc9-4ec3-b598-4d75428d7c5e" in before
    assert "dfcf5df8-10d0-4b02-a2a0-3775a96225d3" not in before
    assert "1cb795e0-0e78-4c35-b232-c8e554323156" not in before
    assert before["39ea49bc-8cc9-4ec3-b598-4d75428d7c5e"].source == "user"
    bash = before["toolu_01T1SrbUgaSJkHWJd5outNgr:result"]
    assert (bash.exit_code, bash.modality) == (1, "failed")
    assert bash.source is not None and bash.source.startswith("Bash: cp ")
    harness = before["toolu_01LsK8An4morbFYkB3fejkoX:result"]
    assert harness.modality == "failed" and harness.exit_code is None
    # commitments are never guessed: the TodoWrite call is a prose item, nothing more
    assert [it.id for it in seen[0][1] if it.kind in ("commitment", "claim")] == []
    assert before["toolu_01QWrhCr2A8aeAXZg7orTPPs"].kind == "prose"
    summary = seen[1][1]
    assert [(it.id, it.kind) for it in summary] == [
        ("c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f", "prose")
    ]
    found = codes(trace)
    assert ("WR008", ("toolu_01T1SrbUgaSJkHWJd5outNgr:result",)) in found
    assert not any(c == "CF001" for c, _ in found)
    assert any(c == "CP003" and i[0] == "toolu_01Rz9Bm4Nt1Xd5Pe6Of7Rg8H:result" for c, i in found)


def _docs_todo_extractor() -> Any:
    """The TodoWrite extractor docs/importers.md shows (the block after ``todos.py``)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "importers.md").read_text("utf-8")
    block = text.split("(`todos.py`)", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {}
    exec(compile(block, "todos.py", "exec"), scope)  # the docs' own example
    return scope["extract"]


def test_the_docs_todo_extractor_makes_open_todos_obligations() -> None:
    extract = _docs_todo_extractor()
    parsed = imported("claude-code", CC / "session_compact.jsonl", extract=extract)
    todos = [it for it in windows(parsed)[0][1] if it.kind == "commitment"]
    assert [(t.id, t.type) for t in todos] == [
        ("toolu_01QWrhCr2A8aeAXZg7orTPPs:todo:0", "obligation"),
        ("toolu_01QWrhCr2A8aeAXZg7orTPPs:todo:1", "obligation"),
    ]
    assert ("CF001", ("toolu_01QWrhCr2A8aeAXZg7orTPPs:todo:0",)) in codes(parsed)


def test_claude_code_preserved_segment_and_rewind() -> None:
    trace = imported("claude-code", CC / "session_preserved.jsonl")
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "claude-code:compact_boundary", "append"]
    assert [it.id for it in seen[1][1]] == ["cs1", "u2", "a3"]
    # the user edited their last message (u3b, a branch from a4): the conversation is the
    # chain, and the message it left (u3) is none of its items, no rewrite made up
    assert [it.id for it in seen[2][1]] == ["cs1", "u2", "a3", "a4", "u3b"]
    kept = {it.id: it.raw for it in seen[0][1]}
    assert all(kept[it.id] == it.raw for it in seen[1][1] if it.id in kept)


def test_a_todowrite_call_is_prose_and_completed_todos_no_obligation() -> None:
    record = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": None,
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_t",
                    "name": "TodoWrite",
                    "input": {
                        "todos": [
                            {"content": "done", "status": "completed", "id": "1"},
                            {"content": "open", "status": "in_progress", "id": "2"},
                        ]
                    },
                }
            ],
        },
    }
    items = imported("claude-code", json.dumps(record)).events[0].items  # type: ignore[union-attr]
    assert [(it.id, it.kind) for it in items] == [("toolu_t", "prose")]
    extract = _docs_todo_extractor()
    items = imported("claude-code", json.dumps(record), extract=extract).events[0].items  # type: ignore[union-attr]
    arguments = record["message"]["content"][0]["input"]  # type: ignore[index]
    assert [(it.id, it.kind, it.text) for it in items] == [
        ("toolu_t", "prose", "TodoWrite: " + command_of(arguments)),
        ("toolu_t:todo:2", "commitment", "open"),
    ]


_CC_LINE = {
    "type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
    "message": {"role": "user", "content": "first"},
}  # fmt: skip
_CODEX_LINE = {
    "timestamp": "t", "type": "response_item",
    "payload": {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "yo"}]},
}  # fmt: skip


@pytest.mark.parametrize(
    ("first", "stray", "reading", "words"),
    [
        (_CC_LINE, {"role": "user", "content": "hi"}, "Claude Code record", "a chat message"),
        (_CC_LINE, {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "x"}]}, "Claude Code record", "a Responses API item"),
        (_CC_LINE, {"type": "human", "data": {"content": "x", "type": "human"}},
         "Claude Code record", "a LangChain message"),
        (_CC_LINE, _CODEX_LINE, "Codex rollout record", "a Claude Code record"),
        (_CODEX_LINE, {"role": "user", "content": "hi"}, "Codex rollout record",
         "a chat message"),
    ],
)  # fmt: skip
def test_a_line_of_another_format_is_refused_not_skipped(
    tmp_path: Path, first: Any, stray: Any, reading: str, words: str
) -> None:
    """A file holds one history of one format: a message of another format in it would
    be left out of the trace without a word, so the import names its line instead."""
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(stray) + "\n")
    code, out, err = run("import", "auto", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert reading in err and words in err and str(path) in err


def test_records_that_are_no_messages_stay_quiet_in_a_claude_code_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "summary", "summary": "a title", "leafUuid": "u1"},
        _CC_LINE,
        {"type": "x-future-record", "data": {"progress": 3}},
        {"timestamp": "t", "note": "no type, no role"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, _, err = run("import", "claude-code", str(path))
    assert code == 0, err
    assert [it.id for it in imported("claude-code", path).events[0].items] == ["u1"]  # type: ignore[union-attr]


def test_claude_code_bad_record_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "message": {"role": "user", "content": "hi"},
    }
    bad = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash"}]},
    }
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    code, _, err = run("import", "claude-code", str(path))
    assert code == 2 and str(path) in err and "line 2" in err and "tool_use" in err


# --- anthropic ----------------------------------------------------------------------------

AN = FIXTURES / "anthropic"


def test_anthropic_compaction_block() -> None:
    trace = imported("anthropic", AN / "before.json", AN / "after_compaction.json")
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "anthropic:compaction", "append"]
    first = {it.id: it for it in seen[0][1]}
    assert first["msg-0"].source == "system"
    failed = first["toolu_01A9xK:result"]
    assert (failed.exit_code, failed.modality, failed.source) == (
        2,
        "failed",
        "bash: make release-check",
    )
    # the rule is literal: a `command` argument is the COMMAND, whatever the tool
    assert first["toolu_01B7yL:result"].source == "str_replace_based_edit_tool: view"
    # the system prompt is no message block: the compaction leaves it where it was
    assert [(it.id, it.kind) for it in seen[1][1]] == [
        ("msg-0", "observation"),
        ("msg-6:compaction", "prose"),
    ]
    assert seen[1][1][0].raw == first["msg-0"].raw
    assert "changelog lacks" in (seen[1][1][1].text or "")
    # the message cut at its compaction block is one message: its text is msg-6, and the
    # user's next message msg-7 (K counts messages)
    assert [it.id for it in seen[2][1]] == ["msg-0", "msg-6:compaction", "msg-6", "msg-7"]
    assert ("WR008", ("toolu_01A9xK:result",)) in codes(trace)


def test_anthropic_a_message_with_a_compaction_block_is_counted_once(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    code, out, err = run(
        "import", "anthropic", str(AN / "before.json"), str(AN / "after_compaction.json"),
        "-o", str(trace),
    )  # fmt: skip
    assert code == 0 and "from 8 message(s)" in out + err


def test_anthropic_one_list_with_compaction_is_two_windows() -> None:
    trace = imported("anthropic", AN / "after_compaction.json")
    assert [p for p, _ in windows(trace)] == ["append", "anthropic:compaction", "append"]


def test_anthropic_a_compaction_that_failed_changes_nothing() -> None:
    """A compaction block without content is one that failed, which the API reads as
    nothing: the model still sees the whole history, so no rewrite and no WR008."""
    call = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "pytest"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "Exit code: 1"}
    history = [
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{**result, "is_error": True}]},
        {"role": "assistant", "content": [
            {"type": "compaction", "content": None}, {"type": "text", "text": "Go on."}]},
    ]  # fmt: skip
    trace = imported("anthropic", json.dumps(history))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    assert codes(trace) == []
    history[3]["content"][0]["content"] = "Summary: pytest failed."  # type: ignore[index]
    assert ("WR008", ("t1:result",)) in codes(imported("anthropic", json.dumps(history)))


@pytest.mark.parametrize("name", ["session_compact.jsonl", "session_goes_on.jsonl"])
def test_claude_code_files_of_one_session_follow_its_chain(tmp_path: Path, name: str) -> None:
    """A session split into files given in another order (a shell glob's) is the same
    session: the files are read in the order the parentUuid chain runs through them."""
    lines = (CC / name).read_text("utf-8").splitlines(keepends=True)
    cuts = [0, len(lines) // 3, 2 * len(lines) // 3, len(lines)]
    parts = []
    for k in range(3):
        part = tmp_path / f"part{k}.jsonl"
        part.write_text("".join(lines[cuts[k] : cuts[k + 1]]), "utf-8")
        parts.append(part)
    whole = import_history("claude-code", [CC / name])
    assert import_history("claude-code", parts) == whole
    assert import_history("claude-code", parts[::-1]) == whole
    assert import_history("claude-code", [parts[1], parts[2], parts[0]]) == whole


def test_anthropic_extractor_gets_the_message_as_the_file_holds_it() -> None:
    given: list[Any] = []

    def extract(message: Any, context: Any) -> list[Any]:
        given.append(message)
        return []

    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "id": "m1"},
    ]
    imported("anthropic", json.dumps(history), extract=extract)
    assert given == history


def _commit_on(wanted: str) -> Any:
    """An extractor that gives commitment c-N after every message whose content or
    tool_call_id is wanted (N: the items so far)."""

    def extract(message: Any, context: Any) -> list[Any]:
        if wanted not in (message.get("content"), message.get("tool_call_id")):
            return []
        n = len(context["items"])
        return [{"id": f"c-{n}", "kind": "commitment", "type": "decision", "formula": "x"}]

    return extract


def test_extracted_items_follow_the_item_they_follow_not_the_message() -> None:
    """As annotations do: they go where the item they follow goes (a result's extracted
    items leave with the result when a placeholder replaces it), and those of a message that
    gives no item follow the item before it."""
    call = {"id": "call_1", "type": "function",
            "function": {"name": "shell", "arguments": '{"command": "pytest"}'}}  # fmt: skip
    ask = {"role": "assistant", "content": None, "tool_calls": [call]}
    first: list[dict[str, Any]] = [{"role": "user", "content": "fix it"}, ask,
             {"role": "tool", "tool_call_id": "call_1", "content": "FAILED\nExit code: 1"},
             {"role": "assistant", "content": "ok"}]  # fmt: skip
    cleared = [*first[:2], {**first[2], "content": "[cleared]"}, first[3]]
    trace = imported("openai", json.dumps([first, cleared]), extract=_commit_on("call_1"))
    (_, appended), (_, after) = windows(trace)
    assert [it.id for it in appended][2:4] == ["call_1:result", "c-3"]
    assert [it.id for it in after] == ["msg-0", "call_1", "call_1:cleared", "msg-3"]
    notes = [{"after": "call_1:result", "items": [
        {"id": "c-3", "kind": "commitment", "type": "decision", "formula": "x"}]}]  # fmt: skip
    annotated = imported("openai", json.dumps([first, cleared]), annotations=notes)
    assert codes(annotated) == codes(trace) and ("CF001", ("c-3",)) in codes(trace)

    empty = {"role": "assistant", "content": ""}  # no item: c-1 follows msg-0
    history = [{"role": "user", "content": "go"}, empty, {"role": "assistant", "content": "x"}]
    for later, held in (
        ([history[0], history[2]], ["msg-0", "c-1", "msg-2"]),
        ([empty, history[2]], ["msg-2"]),
    ):
        trace = imported("openai", json.dumps([history, later]), extract=_commit_on(""))
        assert [it.id for it in windows(trace)[-1][1]] == held


@pytest.mark.parametrize(
    ("block", "modality", "exit_code"),
    [
        ({"type": "bash_code_execution_result", "stdout": "37170\n", "stderr": "",
          "return_code": 0, "content": []}, "verified", 0),
        ({"type": "bash_code_execution_result", "stdout": "", "stderr": "no such file",
          "return_code": 2, "content": []}, "failed", 2),
        ({"type": "bash_code_execution_tool_result_error", "error_code": "unavailable"},
         "failed", None),
        ({"type": "web_fetch_result", "url": "https://example.org",
          "content": {"type": "document", "source": {"type": "text", "data": "x"}}},
         "verified", None),
    ],
)  # fmt: skip
def test_anthropic_server_tool_results_are_results(
    block: dict[str, Any], modality: str, exit_code: int | None
) -> None:
    """Every server tool's result block (``*_tool_result`` with a ``tool_use_id``) is the
    result of its call: what the model saw, failed on an error or a non-zero return code."""
    kind = "web_fetch" if block["type"] == "web_fetch_result" else "bash_code_execution"
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": kind,
             "input": {"command": "run"}},
            {"type": f"{kind}_tool_result", "tool_use_id": "srvtoolu_1", "content": block},
            {"type": "text", "text": "done"},
        ]},
    ]  # fmt: skip
    trace = imported("anthropic", json.dumps(messages))
    (window,) = [w for _, w in windows(trace)]
    result = {it.id: it for it in window}["srvtoolu_1:result"]
    assert (result.call, result.source) == ("srvtoolu_1", f"{kind}: run")
    assert (result.modality, result.exit_code) == (modality, exit_code)
    assert json.loads(result.content or "") == block


def test_anthropic_a_message_sent_again_in_another_form_is_the_same() -> None:
    """A client moves the cache breakpoint to the newest message at every request and may
    write a text as a string or as one text block: the message is the same, so the next
    request extends the one before (appends only), with the same ids."""
    ephemeral = {"type": "ephemeral"}
    first = {
        "system": [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [{"type": "text", "text": "more",
                                          "cache_control": ephemeral}]},
        ],
    }  # fmt: skip
    second = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "more"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok",
                                               "cache_control": ephemeral}]},
        ],
    }  # fmt: skip
    trace = imported("anthropic", json.dumps(first), json.dumps(second))
    assert [type(ev).__name__ for ev in trace.events] == ["Append", "Append"]
    assert [it.id for it in windows(trace)[1][1]] == ["msg-0", "msg-1", "msg-2", "msg-3", "msg-4"]
    assert not codes(trace)
    edited = json.loads(json.dumps(second))
    edited["messages"][0]["content"] = "hullo"  # an edit is still one
    found = codes(imported("anthropic", json.dumps(first), json.dumps(edited)))
    assert [code for code, _ in found] == ["WR007"]


def test_anthropic_a_message_kept_as_the_api_returned_it() -> None:
    """A history may keep the assistant's message as the API returned it (``id``, ``type:
    "message"``, ``model``, ``stop_reason``, ``usage``): an Anthropic message with its own
    id, not a Responses item; a later request that sends it again with other usage
    figures (or none) extends the one before."""
    call = {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"command": "ls"}}
    returned = {
        "id": "msg_01A",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "text", "text": "listing"}, call],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    result = {"type": "tool_result", "tool_use_id": "toolu_9", "content": "a.txt"}
    first = [{"role": "user", "content": "run"}, returned]
    second = [*first, {"role": "user", "content": [result]}]
    second[1] = {**returned, "usage": {"input_tokens": 12, "output_tokens": 5}}
    for fmt in ("anthropic", "auto"):
        trace = imported(fmt, json.dumps(first), json.dumps(second))
        assert [type(ev).__name__ for ev in trace.events] == ["Append", "Append"]
        ids = [it.id for it in windows(trace)[-1][1]]
        assert ids == ["msg-0", "msg_01A", "toolu_9", "toolu_9:result"]
    text = [{"type": "output_text", "text": "hi"}]
    plain = {"type": "message", "role": "assistant", "content": text}
    assert detect_format([Source("r.json", json.dumps([plain]).encode())]) == "openai"


def test_anthropic_bad_block_names_the_message(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {"role": "user", "content": [{"type": "tool_result", "content": "x"}]},
            ]
        )
    )
    code, _, err = run("import", "anthropic", str(path))
    assert code == 2 and "message 1" in err and "tool_use_id" in err


# --- langchain ----------------------------------------------------------------------------


def test_langchain_summary_and_context_editing() -> None:
    trace = imported("langchain", FIXTURES / "langchain" / "snapshots.json")
    seen = windows(trace)
    assert [p for p, _ in seen] == [
        "append",
        "langchain:summarization",
        "append",
        "langchain:context_editing",
        "append",
    ]
    first = {it.id: it for it in seen[0][1]}
    crash = first["call_inv1:result"]
    assert (crash.modality, crash.exit_code) == ("failed", 1)
    assert seen[1][1][1].id == "sum-1" and seen[1][1][1].kind == "prose"
    edited = {it.id: it for it in seen[3][1]}
    assert "call_rf1:result" not in edited
    assert edited["call_rf1:cleared"].call == "call_rf1"
    found = codes(trace)
    assert ("WR008", ("call_inv1:result",)) in found
    assert not any(code == "WR007" for code, _ in found)


def _lc(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": {"additional_kwargs": {}, "response_metadata": {}, **data}}


@pytest.mark.parametrize("own_id", [None, "ai-1"])
def test_langchain_metadata_filled_in_later_is_the_same_message(own_id: str | None) -> None:
    """A message is told by its role, content, tool calls and tool_call_id: usage and
    response metadata a later dump fills in make no rewrite."""
    first = [_lc("human", content="hi", id="h1"), _lc("ai", content="hello", id=own_id)]
    later = [
        first[0],
        _lc("ai", content="hello", id=own_id, usage_metadata={"input_tokens": 3},
            response_metadata={"model_name": "m", "stop_reason": "end_turn"}),
        _lc("human", content="bye", id="h2"),
    ]  # fmt: skip
    trace = imported("langchain", json.dumps(first), json.dumps(later))
    assert [type(ev).__name__ for ev in trace.events] == ["Append", "Append"]
    edited = [first[0], _lc("ai", content="hello!", id=own_id)]
    again = imported("langchain", json.dumps(first), json.dumps(edited))
    assert any(isinstance(ev, Rewrite) for ev in again.events)


_LC_RESULT = _lc("tool", content="Error: exit 2", tool_call_id="call_1", status="error", id="t")


@pytest.mark.parametrize(
    "ai",
    [
        # langchain-core 0.1: the calls only in additional_kwargs, in the OpenAI form
        _lc("ai", content="", id="a", additional_kwargs={"tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": '{"command": "make"}'}}]}),
        # a call whose arguments did not parse: an invalid tool call, answered all the same
        _lc("ai", content="", id="a", tool_calls=[], invalid_tool_calls=[
            {"type": "invalid_tool_call", "id": "call_1", "name": "bash",
             "args": '{"command": "make', "error": "bad JSON"}]),
        # both: the parsed calls count, the raw ones beside them are the same calls
        _lc("ai", content="", id="a", tool_calls=[
            {"name": "bash", "args": {"command": "make"}, "id": "call_1", "type": "tool_call"}],
            additional_kwargs={"tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": "bash", "arguments": "{}"}}]}),
    ],
)  # fmt: skip
def test_langchain_every_form_of_a_call_is_a_call(ai: dict[str, Any]) -> None:
    """A result pairs with its call however the message holds it: ``tool_calls``, the
    ``invalid_tool_calls`` of arguments that did not parse, or (langchain-core 0.1)
    ``additional_kwargs.tool_calls`` only."""
    messages = [_lc("human", content="run make", id="u"), ai, _LC_RESULT]
    (window,) = [w for _, w in windows(imported("langchain", json.dumps(messages)))]
    assert [it.id for it in window] == ["u", "call_1", "call_1:result"]
    result = window[2]
    assert (result.call, result.modality) == ("call_1", "failed")
    assert (result.source or "").startswith("bash: ")


def test_langchain_chat_roles_and_langmem_summaries() -> None:
    """A ChatMessage (or its chunk) of LangChain's role names is read like the typed
    message; langmem's summary, a system message opening with "Summary of the conversation
    so far:", is a summary: the snapshot that shows it first is a summarization."""
    first = [
        _lc("chat", role="human", content="hello", id="u1"),
        _lc("ChatMessageChunk", role="ai", content="hi", id="a1"),
        _lc("human", content="and then?", id="u2"),
    ]
    summary = "Summary of the conversation so far: the user greeted."
    second = [_lc("system", content=summary, id="s1"), first[2]]
    seen = windows(imported("langchain", json.dumps([first, second])))
    assert [p for p, _ in seen] == ["append", "langchain:summarization"]
    assert [(it.kind, it.source) for it in seen[0][1]] == [
        ("observation", "user"), ("prose", None), ("observation", "user")]  # fmt: skip
    assert [(it.id, it.kind) for it in seen[1][1]] == [("s1", "prose"), ("u2", "observation")]
    bad = [_lc("chat", role="function", content="x")]
    with pytest.raises(InputError, match="unknown role 'function'"):
        imported("langchain", json.dumps(bad))


def test_langchain_a_summary_within_one_list_is_a_compaction() -> None:
    """One list that holds a summary after other messages (a whole session written out) is
    the list before the summary, then a summarization: the model sees the list from the
    summary on, after the system prompt. A list that opens with its summary is that
    summarization of what came before the history (as a file that starts at a compaction
    in the other formats), and a summary met before is none again."""
    call = {"name": "bash", "args": {"command": "make"}, "id": "call_1", "type": "tool_call"}
    summary = _lc("human", content="Here is a summary of the conversation to date: built.",
                  id="s", additional_kwargs={"lc_source": "summarization"})  # fmt: skip
    messages = [
        _lc("system", content="Be careful.", id="p"),
        _lc("human", content="run make", id="u"),
        _lc("ai", content="", id="a", tool_calls=[call]),
        _LC_RESULT,
        summary,
        _lc("human", content="go on", id="u2"),
    ]
    trace = imported("langchain", json.dumps(messages))
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "langchain:summarization", "append"]
    assert [it.id for it in seen[1][1]] == ["p", "s"]
    assert [it.id for it in seen[2][1]] == ["p", "s", "u2"]
    assert ("WR008", ("call_1:result",)) in codes(trace)
    # the same session written out again, longer: the summary is not a compaction again
    longer = [*messages, _lc("ai", content="done", id="a2")]
    again = windows(imported("langchain", json.dumps([messages, longer])))
    assert [p for p, _ in again] == ["append", "langchain:summarization", "append", "append"]
    opening = windows(imported("langchain", json.dumps(messages[4:])))
    assert [p for p, _ in opening] == ["langchain:summarization", "append"]
    assert [it.id for it in opening[0][1]] == ["s"]
    assert codes(imported("langchain", json.dumps(messages[4:]))) == []


def test_langchain_dumpd_and_flat_messages_read_as_messages_to_dict() -> None:
    """``dumpd`` output and flat ``model_dump`` messages are the same messages as
    ``messages_to_dict`` writes them: the same items, by the named format and by auto."""
    fields: list[tuple[str, str, dict[str, Any]]] = [
        ("human", "HumanMessage", {"content": "list files", "id": "u"}),
        ("ai", "AIMessage", {"content": "", "id": "a", "tool_calls": [
            {"name": "bash", "args": {"command": "ls"}, "id": "c1", "type": "tool_call"}]}),
        ("tool", "ToolMessage", {"content": "a.txt", "tool_call_id": "c1", "id": "t"}),
        ("AIMessageChunk", "AIMessageChunk", {"content": "one file", "id": "a2"}),
    ]  # fmt: skip
    as_dict = [{"type": kind, "data": data} for kind, _, data in fields]
    dumpd = [
        {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls],
         "kwargs": data}
        for _, cls, data in fields
    ]  # fmt: skip
    flat = [{"type": kind, **data} for kind, _, data in fields]

    def items(fmt: str, messages: Any) -> list[tuple[str, str, str | None]]:
        (window,) = [w for _, w in windows(imported(fmt, json.dumps(messages)))]
        return [(it.id, it.kind, it.text or it.content) for it in window]

    expected = items("langchain", as_dict)
    assert [i for i, _, _ in expected] == ["u", "c1", "c1:result", "a2"]
    for form in (dumpd, flat, {"messages": dumpd}):
        assert items("langchain", form) == items("auto", form) == expected


def test_langchain_bad_message_names_it(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"type": "human", "data": {"content": "x"}}, {"type": "ai"}]))
    code, _, err = run("import", "langchain", str(path))
    assert code == 2 and "message 1" in err and "'data'" in err


# --- inspect ------------------------------------------------------------------------------

LOG = FIXTURES / "inspect" / "repo_fix.json"


def test_inspect_edit_compaction_clears_a_failed_result() -> None:
    trace = imported("inspect", LOG, sample="fix-1")
    seen = windows(trace)
    assert [p for p, _ in seen][-2:] == ["inspect:compaction:edit", "append"]
    first = {it.id: it for _, w in seen[:3] for it in w}
    failed = first["call_qp1:result"]
    # inspect's bash tool names its argument `cmd`: that is the command
    assert (failed.modality, failed.source) == ("failed", 'bash: {"cmd":"cd /repo && pytest -q"}')
    assert "No module named 'yaml'" in (failed.content or "")
    after = {it.id: it for it in seen[3][1]}
    assert after["call_qp1:cleared"].kind == "prose"
    assert "call_qp1:result" not in after
    found = codes(trace)
    assert ("WR008", ("call_qp1:result",)) in found
    assert not any(code == "WR007" for code, _ in found)


def test_inspect_summary_compaction() -> None:
    trace = imported("inspect", LOG, sample="fix-2:1")
    seen = windows(trace)
    rewrite = next(w for p, w in seen if p == "inspect:compaction:summary")
    assert [(it.id, it.kind) for it in rewrite] == [
        ("Hm3SysAaBbCc", "observation"),
        ("Hm3UsrDdEeFf", "observation"),
        ("Hm3SumPpQqRr", "prose"),
    ]


def _inspect_compacted_log(kind: str) -> str:
    """A sample whose compaction comes, as inspect runs it, before the next model call:
    the result of the last call's tool call arrived in between."""
    sys_, usr = {"id": "S", "role": "system", "content": "Fix it."}, {
        "id": "U", "role": "user", "content": "The service fails."}
    ask = {"id": "A1", "role": "assistant", "content": "", "tool_calls": [
        {"id": "t1", "function": "bash", "arguments": {"cmd": "systemctl start web"}}]}
    failed = {"id": "T1", "role": "tool", "tool_call_id": "t1", "function": "bash",
              "content": "Job failed.", "error": {"type": "unknown", "message": "Job failed."}}
    summary = {"id": "M", "role": "user", "content": "Summary: it failed.",
               "metadata": {"summary": True}}
    done = {"id": "A2", "role": "assistant", "content": "Port 8080 is taken."}
    after = [sys_, usr, summary] if kind == "summary" else [sys_, usr, ask, failed]
    events = [
        {"event": "model", "input": [sys_, usr], "output": {"choices": [{"message": ask}]}},
        {"event": "tool", "id": "t1", "function": "bash", "result": "Job failed."},
        {"event": "compaction", "type": kind},
        {"event": "model", "input": after, "output": {"choices": [{"message": done}]}},
    ]
    messages = [sys_, usr, ask, failed, *([summary] if kind == "summary" else []), done]
    return json.dumps({"samples": [{"id": 1, "messages": messages, "events": events}]})


def test_inspect_results_before_a_compaction_are_in_the_window_it_rewrote() -> None:
    summarised = imported("inspect", _inspect_compacted_log("summary"))
    seen = windows(summarised)
    assert [p for p, _ in seen][-2:] == ["inspect:compaction:summary", "append"]
    assert "t1:result" in [it.id for it in seen[-3][1]]
    assert codes(summarised) == [("WR008", ("t1:result",))]
    edited = windows(imported("inspect", _inspect_compacted_log("edit")))
    rewrite = next(w for p, w in edited if p == "inspect:compaction:edit")
    assert [it.id for it in rewrite] == ["S", "U", "t1", "t1:result"]
    assert [it.id for it in edited[-1][1]][-1] == "A2"


def test_inspect_native_compaction_output_is_the_summary() -> None:
    """A provider's own compaction (OpenAI's compact item), which inspect shows as a user
    message holding a ``data`` block with ``compaction_metadata``, is the compaction's
    output in the window: prose, not a message without items."""
    log = json.loads(_inspect_compacted_log("summary"))
    sample = log["samples"][0]
    compact = {"id": "K", "role": "user", "source": "generate", "content": [
        {"type": "data", "data": {"compaction_metadata": {
            "type": "openai_compact", "id": "cmp_1", "encrypted_content": "gAAAA"}}}]}  # fmt: skip
    last = sample["events"][-1]
    last["input"] = [*last["input"][:2], compact]
    trace = imported("inspect", json.dumps(log))
    rewrite = next(w for p, w in windows(trace) if p == "inspect:compaction:summary")
    assert [(it.id, it.kind) for it in rewrite][-1] == ("K", "prose")


def test_inspect_needs_a_sample_when_there_are_several() -> None:
    code, _, err = run("import", "inspect", str(LOG))
    assert code == 2 and "fix-1:1" in err and "--sample" in err
    code, _, err = run("import", "inspect", str(LOG), "--sample", "nope")
    assert code == 2 and "nope" in err


def _eval_zip(members: dict[str, bytes], zstd: bool) -> bytes:
    """An .eval archive; with ``zstd`` its members are stored with method 93 (zstd)."""
    import struct
    import zlib

    import zstandard

    out, central = io.BytesIO(), io.BytesIO()
    for name, data in members.items():
        packed = zstandard.ZstdCompressor().compress(data) if zstd else data
        method = 93 if zstd else 0
        crc, fname = zlib.crc32(data), name.encode()
        offset = out.tell()
        out.write(
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                63,
                0,
                method,
                0,
                0,
                crc,
                len(packed),
                len(data),
                len(fname),
                0,
            )
            + fname
            + packed
        )
        central.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                63,
                63,
                0,
                method,
                0,
                0,
                crc,
                len(packed),
                len(data),
                len(fname),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + fname
        )
    start, size = out.tell(), central.tell()
    out.write(central.getvalue())
    out.write(
        struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), size, start, 0)
    )
    return out.getvalue()


def _eval_members() -> dict[str, bytes]:
    log = json.loads(LOG.read_text())
    header = {k: v for k, v in log.items() if k != "samples"}
    sample = log["samples"][0]
    return {
        "header.json": json.dumps(header).encode(),
        "samples/fix-1_epoch_1.json": json.dumps(sample).encode(),
    }


@pytest.mark.parametrize("zstd", [False, True])
def test_inspect_eval_archive(tmp_path: Path, zstd: bool) -> None:
    path = tmp_path / "log.eval"
    path.write_bytes(_eval_zip(_eval_members(), zstd))
    from_zip = import_history("inspect", [path])
    assert from_zip == import_history("inspect", [LOG], sample="fix-1")


def test_inspect_zstd_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    path = tmp_path / "log.eval"
    path.write_bytes(_eval_zip(_eval_members(), zstd=True))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    code, out, err = run("import", "inspect", str(path))
    assert code == 2 and out == ""
    assert "pip install 'ctxproof[inspect]'" in err


def test_inspect_pooled_inputs_read_like_inline_ones() -> None:
    log = json.loads(LOG.read_text())
    sample = log["samples"][0]
    pool: list[Any] = []
    for event in sample["events"]:
        if event.get("event") == "model":
            refs = []
            for m in event["input"]:
                if m not in pool:
                    pool.append(m)
                k = pool.index(m)
                refs.append([k, k + 1])
            event["input"], event["input_refs"] = [], refs
    sample["events_data"] = {"messages": pool, "calls": []}
    pooled = import_history("inspect", [json.dumps({"samples": [sample]})])
    assert pooled == import_history("inspect", [LOG], sample="fix-1")


def test_inspect_a_message_sent_again_under_a_pooled_id_is_another_message() -> None:
    """inspect pools messages by content without their ids: ``react()``'s nudge to go on,
    sent twice, reads back twice under the first one's id. The repeat is a message of
    its own (the j-th equal message), not an id given twice."""
    sys_ = {"id": "S", "role": "system", "content": "Solve it."}
    nudge = {"id": "C1", "role": "user", "content": "Please proceed to the next step."}
    one = {"id": "A1", "role": "assistant", "content": "Let me think."}
    two = {"id": "A2", "role": "assistant", "content": "Still thinking."}
    done = {"id": "A3", "role": "assistant", "content": "Done."}
    events = [
        {"event": "model", "input": [sys_], "output": {"choices": [{"message": one}]}},
        {"event": "model", "input": [sys_, one, nudge], "output": {"choices": [{"message": two}]}},
        {"event": "model", "input": [sys_, one, nudge, two, nudge],
         "output": {"choices": [{"message": done}]}},
    ]  # fmt: skip
    log = {"samples": [{"id": 1, "messages": [], "events": events}]}
    trace = imported("inspect", json.dumps(log))
    ids = [it.id for it in windows(trace)[-1][1]]
    assert ids == ["S", "A1", "C1", "A2", "msg-4", "A3"]
    assert [type(ev).__name__ for ev in trace.events] == ["Append"] * 3


def _grader_call(**where: Any) -> dict[str, Any]:
    """A model event as ``model_graded_fact`` writes it: the agent's model, no role."""
    prompt = {"role": "user", "content": "You are comparing a submitted answer to an expert..."}
    answer = {"role": "assistant", "content": "GRADE: C"}
    return {
        "event": "model",
        "model": "openai/gpt-4o-mini",
        "input": [prompt],
        "output": {"choices": [{"message": answer}]},
        **where,
    }


@pytest.mark.parametrize("form", ["spans", "steps"])
def test_inspect_leaves_out_a_scorers_model_calls(form: str) -> None:
    log = json.loads(LOG.read_text())
    sample = log["samples"][0]
    agent = import_history("inspect", [json.dumps({"samples": [sample]})])
    if form == "spans":
        # the newer logs: the scorer's span holds it, here one level down from 'scorers'
        scoring = [
            {"event": "span_begin", "id": "s1", "type": "scorers", "name": "scorers"},
            {"event": "span_begin", "id": "s2", "parent_id": "s1", "type": "scorer"},
            _grader_call(span_id="s2"),
            {"event": "score", "span_id": "s2"},
            {"event": "span_end", "id": "s2"},
            {"event": "span_end", "id": "s1"},
        ]
    else:
        # the older logs: between a scorer step's begin and its end
        scoring = [
            {"event": "step", "action": "begin", "type": "scorer", "name": "model_graded_fact"},
            _grader_call(),
            {"event": "score"},
            {"event": "step", "action": "end", "type": "scorer", "name": "model_graded_fact"},
        ]
    sample["events"] = [*sample["events"], *scoring]
    graded = import_history("inspect", [json.dumps({"samples": [sample]})])
    assert graded == agent
    assert "GRADE" not in graded
    # a call of the same model outside any scorer is the agent's, as before
    sample["events"].append(_grader_call())
    assert "GRADE: C" in import_history("inspect", [json.dumps({"samples": [sample]})])


def test_inspect_leaves_out_a_subagents_calls_and_compactions() -> None:
    """A subagent run as a tool (``as_tool``, ``handoff``) talks to the agent's own model,
    with no role, in a conversation of its own inside the tool's span; a compaction event
    of a model role, or in a tool's span, compacts another conversation than the agent's.
    None of them is a snapshot or a rewrite of the agent's window."""
    log = json.loads(LOG.read_text())
    sample = log["samples"][0]
    agent = import_history("inspect", [json.dumps({"samples": [sample]})])
    events = sample["events"]
    last = max(k for k, e in enumerate(events) if e.get("event") == "model" and not e.get("role"))
    aside = [
        {"event": "span_begin", "id": "t1", "type": "tool", "name": "researcher"},
        {"event": "span_begin", "id": "a1", "parent_id": "t1", "type": "agent"},
        {**_grader_call(span_id="a1"), "input": [
            {"role": "system", "content": "You are a researcher."},
            {"role": "user", "content": "Find the flaky test."}]},
        {"event": "compaction", "type": "trim", "span_id": "a1"},
        {"event": "span_end", "id": "a1"},
        {"event": "span_end", "id": "t1"},
        {"event": "compaction", "type": "summary", "role": "helper"},
    ]  # fmt: skip
    sample["events"] = [*events[:last], *aside, *events[last:]]
    assert import_history("inspect", [json.dumps({"samples": [sample]})]) == agent
    # the same compaction of the agent's own conversation is one, as before
    sample["events"] = [*events[:last], {"event": "compaction", "type": "trim"}, *events[last:]]
    compacted = import_history("inspect", [json.dumps({"samples": [sample]})])
    assert "inspect:compaction:trim" in compacted


def test_inspect_schema_1_tool_error_and_ids_with_a_colon() -> None:
    """Logs of schema 1 give a tool's error as ``tool_error`` (its message): failed, the
    message its content when it has no other. A sample id may hold a colon."""
    messages = [
        {"role": "user", "content": "Build it.", "source": "input"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c0", "function": "run", "arguments": {}, "type": "function"}]},
        {"role": "tool", "content": "", "tool_call_id": "c0", "function": "run",
         "tool_error": "Error parsing the arguments"},
    ]  # fmt: skip
    samples = [
        {"id": "mmlu:12", "epoch": 1, "messages": messages},
        {"id": "mmlu:13", "epoch": 1, "messages": messages[:1]},
    ]
    text = json.dumps({"version": 1, "samples": samples})
    for wanted in ("mmlu:12", "mmlu:12:1"):
        trace = imported("inspect", text, sample=wanted)
        (window,) = [w for _, w in windows(trace)]
        result = {it.id: it for it in window}["c0:result"]
        assert (result.modality, result.content) == ("failed", "Error parsing the arguments")


def test_inspect_results_after_the_last_model_call_are_appended() -> None:
    """A sample that ended after its tools ran, before the model was called again, holds
    their results in its messages only: they are appended, not lost (a failed one with
    them)."""
    user = {"id": "U", "role": "user", "content": "Fix the build", "source": "input"}
    call = {"id": "tc1", "function": "bash", "arguments": {"cmd": "make"}, "type": "function"}
    reply = {"id": "A1", "role": "assistant", "content": "", "tool_calls": [call]}
    result = {"id": "T1", "role": "tool", "content": "boom", "tool_call_id": "tc1",
              "function": "bash", "error": {"type": "unknown", "message": "boom"}}  # fmt: skip
    model = {"event": "model", "model": "m", "input": [user],
             "output": {"choices": [{"message": reply}]}}  # fmt: skip
    sample = {"id": 1, "epoch": 1, "messages": [user, reply, result], "events": [model]}
    trace = imported("inspect", json.dumps({"samples": [sample]}))
    seen = windows(trace)
    assert [it.id for it in seen[-1][1]] == ["U", "tc1", "tc1:result"]
    assert seen[-1][1][-1].modality == "failed"
    # a sample whose last message is the last call's output gives no more
    sample["messages"] = [user, reply]
    ended = windows(imported("inspect", json.dumps({"samples": [sample]})))
    assert [it.id for it in ended[-1][1]] == ["U", "tc1"]


# --- annotations --------------------------------------------------------------------------

CHAT = FIXTURES / "openai" / "chat_snapshots.json"


def test_annotations_follow_their_item(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    decision = {
        "id": "d-rename",
        "kind": "commitment",
        "type": "decision",
        "formula": "table.users",
        "rationale": ["call_Zr3pQ1:result"],
    }
    rejection = {
        "id": "r-drop",
        "kind": "commitment",
        "type": "rejection",
        "formula": "!drop.table",
    }
    notes.write_text(
        json.dumps({"after": "call_Zr3pQ1:result", "items": [decision]})
        + "\n"
        + json.dumps({"after": "msg-4", "items": [rejection]})
        + "\n"
    )
    code, out, err = run("import", "openai", str(CHAT), "--annotations", str(notes))
    assert code == 0, err
    trace = parse_trace_text(out)
    seen = windows(trace)
    ids = [it.id for it in seen[0][1]]
    assert ids[ids.index("call_Zr3pQ1:result") + 1] == "d-rename"
    assert ids[ids.index("msg-4") + 1] == "r-drop"
    # the rewrite removed the result, so its annotation went with it; msg-4 stayed
    after = [it.id for it in seen[1][1]]
    assert "d-rename" not in after and after[after.index("msg-4") + 1] == "r-drop"
    assert ("CF001", ("d-rename",)) in codes(trace)


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ({"after": "nope", "items": []}, "does not give"),
        (
            {"after": "msg-0", "items": [{"id": "c", "kind": "claim", "witnesses": ["zz"]}]},
            "cites witness 'zz'",
        ),
        ({"after": "msg-0", "items": [{"id": "msg-1", "kind": "claim"}]}, "already used"),
        ({"after": "msg-0", "items": [{"id": "c", "kind": "commitment"}]}, "no 'type'"),
        ({"after": "msg-0"}, "exactly 'after' and 'items'"),
    ],
)
def test_bad_annotations_name_the_line(tmp_path: Path, line: dict[str, Any], what: str) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"after": "msg-0", "items": []}\n' + json.dumps(line) + "\n")
    code, out, err = run("import", "openai", str(CHAT), "--annotations", str(notes))
    assert code == 2 and out == ""
    assert f"{notes}:2" in err and what in err


def test_metadata_annotations_follow_their_message() -> None:
    inv = {"id": "inv-green", "kind": "commitment", "type": "invariant", "formula": "ci.green"}
    msgs = [
        {"role": "user", "content": "keep CI green", "metadata": {"ctxproof": [inv]}},
        {"role": "assistant", "content": "ok"},
    ]
    trace = imported("openai", json.dumps(msgs), json.dumps(msgs[1:]))
    seen = windows(trace)
    assert [it.id for it in seen[0][1]] == ["msg-0", "inv-green", "msg-1"]
    assert [it.id for it in seen[1][1]] == ["msg-1"]
    assert ("CF001", ("inv-green",)) in codes(trace)


def test_claude_code_metadata_annotations_in_the_message_or_the_record() -> None:
    """The message of a Claude Code line is its ``message``: a ``ctxproof`` key in its
    metadata is read, as one in the record's own ``metadata`` is."""
    inv = {"id": "inv-green", "kind": "commitment", "type": "invariant", "formula": "ci.green"}
    claim = {"id": "c-green", "kind": "claim", "formula": "ci.green", "modality": "unverified"}
    user = {"role": "user", "content": "keep CI green", "metadata": {"ctxproof": [inv]}}
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": user},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "metadata": {"ctxproof": [claim]},
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        },
    ]
    trace = imported("claude-code", "\n".join(json.dumps(r) for r in recs) + "\n")
    items = trace.events[0].items  # type: ignore[union-attr]
    assert [it.id for it in items] == ["u1", "inv-green", "a1", "c-green"]


def test_every_fixture_imports_and_audits() -> None:
    cases: list[tuple[str, list[Path], dict[str, Any]]] = [
        ("claude-code", [CC / "session_compact.jsonl"], {}),
        ("claude-code", [CC / "session_preserved.jsonl"], {}),
        ("openai", [CHAT], {}),
        ("openai", [FIXTURES / "openai" / "responses_compaction.json"], {}),
        ("openai", [FIXTURES / "openai" / "codex_rollout.jsonl"], {}),
        ("anthropic", [AN / "before.json", AN / "after_compaction.json"], {}),
        ("langchain", [FIXTURES / "langchain" / "snapshots.json"], {}),
        ("inspect", [LOG], {"sample": "fix-1"}),
        ("inspect", [LOG], {"sample": "fix-2"}),
    ]
    for fmt, files, kw in cases:
        trace = imported(fmt, *files, **kw)
        assert any(isinstance(ev, Rewrite) for ev in trace.events), (fmt, files)
        report = audit_trace(trace)
        assert report.rewrites and all(r.verdict for r in report.rewrites)


def test_one_message_object_is_a_list_of_one() -> None:
    trace = imported("openai", '{"role": "user", "content": "hello"}')
    assert [it.id for it in trace.events[0].items] == ["msg-0"]  # type: ignore[union-attr]


def test_metadata_annotation_citing_nothing_is_bad_input() -> None:
    claim = {"id": "c1", "kind": "claim", "witnesses": ["nowhere"]}
    msgs = [{"role": "user", "content": "x", "metadata": {"ctxproof": [claim]}}]
    with pytest.raises(InputError, match="nowhere"):
        import_history("openai", [json.dumps(msgs)])


def _silent_command_session() -> bytes:
    """A Claude Code session whose one command printed nothing (an empty tool result)."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "mkdir x"}}
    recs = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "make x"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [call]}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "content": ""}]}},
    ]  # fmt: skip
    return ("\n".join(json.dumps(r) for r in recs) + "\n").encode()


def _result_of(text: str) -> dict[str, Any]:
    items = [it for line in text.splitlines() for it in json.loads(line).get("items", [])]
    return next(it for it in items if it.get("call") == "t1")


def test_annotations_and_extractors_leave_an_empty_result_an_observation() -> None:
    """Reading the history's ids for annotations (or for an extractor) records no result's
    first content: an empty output shown once stays an observation, not a placeholder."""
    session = _silent_command_session()
    plain = _result_of(import_history("claude-code", [session]))
    assert plain["id"] == "t1:result" and plain["kind"] == "observation"
    note = {"id": "c1", "kind": "commitment", "type": "obligation", "text": "make x"}
    noted = import_history("claude-code", [session], [{"after": "u1", "items": [note]}])
    assert _result_of(noted) == plain

    def extract(message: Any, context: Any) -> list[Any]:
        return []

    assert _result_of(import_history("claude-code", [session], extract=extract)) == plain


# --- long sessions: read line by line, written as they are read -------------------------


def _session_lines(turns: int, compact_every: int = 0) -> list[str]:
    """A Claude Code session: prompts, tool calls and results, compactions it goes on after."""
    lines: list[str] = []
    last: str | None = None

    def put(rec: dict[str, Any]) -> None:
        nonlocal last
        lines.append(json.dumps(rec))
        last = rec.get("uuid", last)

    for t in range(turns):
        put({"type": "user", "uuid": f"u{t}", "parentUuid": last, "sessionId": "s",
             "message": {"role": "user", "content": f"step {t}"}})
        call = {"type": "tool_use", "id": f"t{t}", "name": "Bash", "input": {"command": "make"}}
        put({"type": "assistant", "uuid": f"a{t}", "parentUuid": last, "sessionId": "s",
             "message": {"role": "assistant", "content": [call]}})
        result = {"type": "tool_result", "tool_use_id": f"t{t}", "content": f"built {t}\n" * 40}
        put({"type": "user", "uuid": f"r{t}", "parentUuid": last, "sessionId": "s",
             "message": {"role": "user", "content": [result]}})
        if compact_every and t % compact_every == compact_every - 1:
            put({"type": "system", "subtype": "compact_boundary", "uuid": f"b{t}",
                 "parentUuid": None, "logicalParentUuid": last, "sessionId": "s"})
            put({"type": "user", "uuid": f"s{t}", "parentUuid": f"b{t}", "sessionId": "s",
                 "isCompactSummary": True, "message": {"role": "user", "content": "summary"}})
    return lines  # fmt: skip


def test_a_session_is_imported_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verifier.importers.sources import Source

    session = tmp_path / "s.jsonl"
    session.write_text("\n".join(_session_lines(60, compact_every=20)) + "\n")
    expected = import_history("claude-code", [session.read_bytes()])
    assert expected.count('"event":"rewrite"') == 3

    def whole(_self: Source) -> bytes:
        raise AssertionError("the session file was read whole")

    monkeypatch.setattr(Source, "data", property(whole))
    target = tmp_path / "t.jsonl"
    code, out, err = run("import", "auto", str(session), "-o", str(target))
    assert code == 0, err
    assert target.read_text() == expected
    code, out, err = run("import", "claude-code", str(session))
    assert code == 0 and out == expected


@pytest.mark.parametrize(
    ("last", "words"),
    [
        ("{not json", "malformed JSON"),  # the reader refuses the last line
        (  # the last message gives an id already in the window: the whole import says so
            json.dumps({"type": "user", "uuid": "u0b", "parentUuid": "r59",
                        "message": {"role": "user", "content": [
                            {"type": "tool_result", "tool_use_id": "t59", "content": "x"}]}}),
            "already in the window",
        ),
    ],
)  # fmt: skip
def test_a_late_failure_writes_nothing(tmp_path: Path, last: str, words: str) -> None:
    session = tmp_path / "s.jsonl"
    lines = _session_lines(60)
    session.write_text("\n".join([*lines, last]) + "\n")
    target = tmp_path / "out" / "t.jsonl"
    target.parent.mkdir()
    code, out, err = run("import", "claude-code", str(session), "-o", str(target))
    where = len(lines) + 1  # the last line is named (as FILE:LINE, or "line N")
    assert code == 2 and words in err and (f":{where}:" in err or f"line {where}:" in err)
    assert out == "" and list(target.parent.iterdir()) == []
    code, out, err = run("import", "claude-code", str(session))
    assert code == 2 and words in err and out == ""


def test_an_error_in_the_history_is_named_before_one_in_the_annotations(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text("\n".join([*_session_lines(3), "{not json"]) + "\n")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"after": "u0"}\n')
    code, _, err = run("import", "claude-code", str(session), "--annotations", str(notes))
    assert code == 2 and f"{session}:10" in err and "malformed JSON" in err
    session.write_text("\n".join(_session_lines(3)) + "\n")
    code, _, err = run("import", "claude-code", str(session), "--annotations", str(notes))
    assert code == 2 and f"{notes}:1" in err and "exactly 'after' and 'items'" in err
