"""Importers on sessions as people have them: going on after compactions, read as each tool
writes them, wrong files named, cut results reported as lost evidence, extractors, coverage."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from verifier.audit import audit_trace
from verifier.cli import main
from verifier.errors import InputError
from verifier.importers import coverage, detect_format, import_history, import_session
from verifier.importers.common import kept_text
from verifier.importers.sources import Source
from verifier.io import parse_trace_text
from verifier.report import render_trace_page, view_trace
from verifier.window import Append, Item, Rewrite, Trace

ROOT = Path(__file__).resolve().parents[2]
H = ROOT / "tests" / "fixtures" / "histories"
CC_ON = H / "claude-code" / "session_goes_on.jsonl"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def imported(fmt: str, *files: str | Path, **kw: Any) -> Trace:
    text = import_history(fmt, [Path(f) if isinstance(f, Path) else f for f in files], **kw)
    return parse_trace_text(text, f"<{fmt}>")


def windows(trace: Trace) -> list[tuple[str, list[Item]]]:
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


def findings(trace: Trace) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.code, f.items) for f in audit_trace(trace).findings]


def jsonl(records: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def cc(uuid: str | None, parent: str | None, role: str, content: Any, **kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"type": role, "message": {"role": role, "content": content}, **kw}
    if uuid is not None:
        rec["uuid"] = uuid
        rec["parentUuid"] = parent
    return rec


# --- sessions that go on after compactions, every format ------------------------------------


def test_claude_code_goes_on_after_two_compactions() -> None:
    trace = imported("claude-code", CC_ON)
    seen = windows(trace)
    assert [p for p, _ in seen] == [
        "append",
        "claude-code:compact_boundary",
        "append",
        "claude-code:compact_boundary",
        "append",
    ]
    assert [it.id for it in seen[1][1]] == ["s-0001"]
    # the second compaction rewrites the window the first left plus what came after it
    assert [it.id for it in seen[2][1]][:2] == ["s-0001", "toolu_01Pr0xyTest2"]
    assert [it.id for it in seen[3][1]] == ["s-0002", "u-0003"]  # preservedSegment kept
    assert [it.id for it in seen[4][1]][-1] == "a-0009"
    first = {it.id: it for it in seen[0][1]}
    # parallel calls: both calls, both results, paired
    assert first["toolu_01GitLog:result"].call == "toolu_01GitLog"
    assert first["toolu_01Pr0xyTest:result"].modality == "failed"
    # the declined edit is the user's decision, not a failed command
    declined = first["toolu_01EditSchema:result"]
    assert (declined.kind, declined.source, declined.modality) == (
        "observation",
        "user",
        "unverified",
    )
    assert declined.call == "toolu_01EditSchema"
    found = findings(trace)
    assert ("WR008", ("toolu_01Pr0xyTest:result",)) in found
    assert ("WR008", ("toolu_01Pr0xyTest2:result",)) in found
    assert not any(
        code == "WR008" and items[0].startswith("toolu_01EditSchema") for code, items in found
    )


def test_claude_code_split_files_read_as_one_session(tmp_path: Path) -> None:
    lines = CC_ON.read_text().splitlines(keepends=True)
    parts = []
    for k, cut in enumerate([(0, 7), (7, 15), (15, len(lines))]):
        path = tmp_path / f"part{k}.jsonl"
        path.write_text("".join(lines[cut[0] : cut[1]]))
        parts.append(path)
    assert import_history("claude-code", parts) == import_history("claude-code", [CC_ON])


@pytest.mark.parametrize(
    ("meta", "where"),
    [
        ("garbage", "compactMetadata must be an object"),
        ({"preservedMessages": {"uuids": "u2"}}, "preservedMessages.uuids must be a list"),
        ({"preservedMessages": ["u2"]}, "preservedMessages must be an object"),
        ({"preservedSegment": {"headUuid": 7, "tailUuid": "u2"}}, "headUuid must be a uuid"),
    ],
)
def test_claude_code_compaction_metadata_read_otherwise_is_bad_input(
    tmp_path: Path, meta: Any, where: str
) -> None:
    """Metadata that names what a compaction kept in a shape Claude Code never writes would
    be read as keeping nothing: false drops, so bad input at its line."""
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": "b1",
                "parentUuid": None, "logicalParentUuid": "u2", "compactMetadata": meta}  # fmt: skip
    recs = [cc("u1", None, "user", "start"), cc("u2", "u1", "user", "keep me"), boundary,
            cc("cs", "b1", "user", "summary", isCompactSummary=True)]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(recs))
    code, out, err = run("import", "claude-code", str(path))
    assert code == 2 and out == "" and f"{path}:3: " in err and where in err


def test_claude_code_summary_parent_with_kept_messages() -> None:
    """The message after a summary names the summary as parent while kept messages follow it
    in the window: the session goes on (no item twice, no branch)."""
    recs = [
        cc("u1", None, "user", "start"),
        cc("a1", "u1", "assistant", [{"type": "text", "text": "step one"}]),
        cc("u2", "a1", "user", "keep me"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "logicalParentUuid": "u2",
            "compactMetadata": {"trigger": "auto", "preservedMessages": {"uuids": ["u2"]}},
        },
        cc("cs", "b1", "user", "summary one", isCompactSummary=True),
        cc("a2", "cs", "assistant", [{"type": "text", "text": "going on"}]),
        cc("u3", "a2", "user", "more"),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b2",
            "parentUuid": None,
            "logicalParentUuid": "u3",
        },
        cc("cs2", "b2", "user", "summary two", isCompactSummary=True),
        cc("a3", "cs2", "assistant", [{"type": "text", "text": "still going"}]),
    ]
    seen = windows(imported("claude-code", jsonl(recs)))
    assert [p for p, _ in seen].count("claude-code:compact_boundary") == 2
    assert [it.id for it in seen[2][1]] == ["cs", "u2", "a2", "u3"]
    assert [it.id for it in seen[-1][1]] == ["cs2", "a3"]


def _boundary(logical: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "b1",
        "parentUuid": None,
        "logicalParentUuid": logical,
    }


def test_claude_code_compaction_naming_a_record_never_written() -> None:
    """Claude Code may write a logicalParentUuid that names no record of the session: the
    window before is the chain the model saw up to the boundary (read as empty, it made
    up a rewrite that dropped everything, and findings with it)."""
    recs = [
        cc("u1", None, "user", "start"),
        cc("a1", "u1", "assistant", [{"type": "text", "text": "step one"}]),
        _boundary("never-written"),
        cc("cs", "b1", "user", "summary", isCompactSummary=True),
        cc("a2", "cs", "assistant", [{"type": "text", "text": "going on"}]),
    ]
    unknown = imported("claude-code", jsonl(recs))
    recs[2] = _boundary("a1")
    assert import_history("claude-code", [jsonl(recs)]) == import_history(
        "claude-code", [jsonl([*recs[:2], _boundary("never-written"), *recs[3:]])]
    )
    seen = windows(unknown)
    assert [p for p, _ in seen] == ["append", "claude-code:compact_boundary", "append"]
    assert [it.id for it in seen[1][1]] == ["cs"]
    assert findings(unknown) == []


def test_claude_code_file_starting_at_its_compaction_imports() -> None:
    """A file that starts at a compaction (a session resumed from one) has no window before
    it whatever its logicalParentUuid names."""
    recs = [
        _boundary("in-an-earlier-file"),
        cc("cs", "b1", "user", "summary", isCompactSummary=True),
        cc("a2", "cs", "assistant", [{"type": "text", "text": "going on"}]),
    ]
    seen = windows(imported("claude-code", jsonl(recs)))
    assert [it.id for it in seen[-1][1]] == ["cs", "a2"]


def _kept(head: str, tail: str) -> dict[str, Any]:
    return {
        **_boundary("a3"),
        "uuid": "b2",
        "compactMetadata": {
            "preservedSegment": {"headUuid": head, "anchorUuid": "cs2", "tailUuid": tail}
        },
    }


@pytest.mark.parametrize(
    ("head", "tail", "kept"),
    [
        ("cs", "a3", ["cs", "a3"]),  # along parentUuid as written: a3 names the summary
        ("a1", "a3", ["a1", "a3"]),  # no such chain (the summary's parent is the boundary)
        ("a3", "a3", ["a3"]),
    ],
)
def test_claude_code_segment_across_an_earlier_compaction(
    head: str, tail: str, kept: list[str]
) -> None:
    """A second compaction's preservedSegment may start at the first one's summary or
    before it; a message that followed the summary was chained to the window's last
    message, and the segment, walked that way, was lost (an empty window but the summary)."""
    recs = [
        cc("u1", None, "user", "start"),
        cc("a1", "u1", "assistant", [{"type": "text", "text": "step one"}]),
        {**_boundary("a1"), "compactMetadata": {"preservedMessages": {"uuids": ["a1"]}}},
        cc("cs", "b1", "user", "summary one", isCompactSummary=True),
        cc("a3", "cs", "assistant", [{"type": "text", "text": "going on"}]),
        _kept(head, tail),
        cc("cs2", "b2", "user", "summary two", isCompactSummary=True),
    ]
    seen = windows(imported("claude-code", jsonl(recs)))
    assert [it.id for it in seen[1][1]] == ["cs", "a1"]
    assert [it.id for it in seen[-1][1]] == ["cs2", *kept]


def test_claude_code_without_parent_or_uuid_is_the_file_order() -> None:
    recs = [
        cc("m1", None, "user", "one"),
        cc("m2", None, "assistant", [{"type": "text", "text": "two"}]),
        {"type": "user", "message": {"role": "user", "content": "three"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "ok"}],
            },
        },
        cc("m6", None, "assistant", [{"type": "text", "text": "done"}]),
    ]
    trace = imported("claude-code", jsonl(recs))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    ids = [it.id for it in windows(trace)[-1][1]]
    assert ids == ["m1", "m2", "msg-2", "toolu_x", "toolu_x:result", "m6"]
    assert findings(trace) == []


def _parallel_turn(order: list[int], after_parent: str) -> list[dict[str, Any]]:
    """One user prompt, three parallel calls (a record each, each the parent of the next),
    their results (each a child of its own call's record) in the given order, then a reply
    whose parent is ``after_parent``, then the user again."""
    recs = [cc("u1", None, "user", "go")]
    parent = "u1"
    for k in (1, 2, 3):
        call = {"type": "tool_use", "id": f"t{k}", "name": "Bash", "input": {"command": f"c{k}"}}
        recs.append(cc(f"a{k}", parent, "assistant", [call]))
        parent = f"a{k}"
    for k in order:
        failed = {"is_error": True} if k == 2 else {}
        out = "Exit code 1\nboom" if k == 2 else f"out {k}"
        block = {"type": "tool_result", "tool_use_id": f"t{k}", "content": out, **failed}
        recs.append(cc(f"r{k}", f"a{k}", "user", [block]))
    recs.append(cc("a4", after_parent, "assistant", [{"type": "text", "text": "done"}]))
    recs.append(cc("u2", "a4", "user", "next"))
    return recs


@pytest.mark.parametrize(
    ("order", "after_parent"),
    [([1, 2, 3], "r3"), ([3, 2, 1], "r1"), ([3, 2, 1], "r3"), ([2, 1, 3], "r2")],
)
def test_claude_code_parallel_calls_are_one_append(order: list[int], after_parent: str) -> None:
    """Each result of parallel calls hangs off its own call's record, not off the chain's
    end: the model saw every call and result in one request, so no rewrite is made up, and
    what follows the reply chains through all of them."""
    trace = imported("claude-code", jsonl(_parallel_turn(order, after_parent)))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    ids = [it.id for it in windows(trace)[-1][1]]
    results = [f"t{k}:result" for k in order]
    assert ids == ["u1", "t1", "t2", "t3", *results, "a4", "u2"]
    assert findings(trace) == []


@pytest.mark.parametrize("order", [[1, 2, 3], [3, 2, 1], [2, 1, 3]])
def test_claude_code_parallel_results_may_carry_what_the_user_typed(order: list[int]) -> None:
    """What the user types while the tools run, Claude Code writes into the record of a
    result, beside it: that record is one of the turn's results still, and what follows
    it chains through all of them (no rewrite made up, no pairing finding)."""
    recs = _parallel_turn(order, f"r{order[-1]}")
    typed = next(r for r in recs if r["uuid"] == f"r{order[0]}")
    typed["message"]["content"].append({"type": "text", "text": "and make sure it is tested"})
    trace = imported("claude-code", jsonl(recs))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    last = windows(trace)[-1][1]
    results = [f"t{k}:result" for k in order]
    assert [it.id for it in last if it.id.endswith(":result")] == results
    said = next(it for it in last if it.id == f"r{order[0]}")
    assert (said.kind, said.source, said.content) == (
        "observation",
        "user",
        "and make sure it is tested",
    )
    assert [it.id for it in last][-2:] == ["a4", "u2"]
    assert findings(trace) == []


def test_claude_code_a_branch_left_is_no_part_of_the_conversation() -> None:
    """The conversation is the chain that ends at the last message: text that a later
    message branched away from (here a result hanging off its call's record, after the
    chain went on with text) is none of its items, and no rewrite is made up; the turn's
    other calls, hanging off the chain, stay."""
    recs = _parallel_turn([1], "r1")[:5]  # u1, a1..a3, r1
    recs.insert(4, cc("x1", "a3", "assistant", [{"type": "text", "text": "thinking"}]))
    trace = imported("claude-code", jsonl(recs))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    assert [it.id for it in windows(trace)[-1][1]] == ["u1", "t1", "t2", "t3", "t1:result"]


def test_claude_code_a_rewound_failure_is_no_finding() -> None:
    """A rewind (the user restores the conversation to before a prompt) leaves the old
    branch in the file: its failed command is no item, so no WR008 for it; the prompt
    the user sent instead follows the message it hangs off."""
    failed: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": "Exit 1"}
    failed["is_error"] = True
    recs = [
        cc("u1", None, "user", "deploy to staging"),
        cc("a1", "u1", "assistant", [{"type": "text", "text": "Which method?"}]),
        cc("b1", "a1", "user", "use the script"),
        cc("b2", "b1", "assistant", [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "./d.sh"}}]),
        cc("b3", "b2", "user", [failed]),
        cc("c1", "a1", "user", "use the Makefile"),
        cc("c2", "c1", "assistant", [{"type": "text", "text": "Deployed."}]),
    ]  # fmt: skip
    trace = imported("claude-code", jsonl(recs))
    assert [type(ev).__name__ for ev in trace.events] == ["Append"]
    assert [it.id for it in windows(trace)[-1][1]] == ["u1", "a1", "c1", "c2"]
    assert findings(trace) == []
    # the same session, cut before the rewind, holds the failure: the branch is the chain
    cut = imported("claude-code", jsonl(recs[:5]))
    assert "t1:result" in [it.id for it in windows(cut)[-1][1]]


def test_claude_code_microcompaction_clears_the_results_it_names() -> None:
    """A ``microcompact_boundary`` record clears the results of the calls it names: a
    rewrite to placeholders (a failed one cleared is WR008), which later windows keep."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm test"}}
    failed = {"type": "tool_result", "tool_use_id": "t1", "content": "Exit code 1"}
    micro = {"type": "system", "subtype": "microcompact_boundary", "uuid": "m1",
             "parentUuid": "a2", "microcompactMetadata": {"compactedToolIds": ["t1"]}}
    recs = [
        cc("u1", None, "user", "npm test fails"),
        cc("a1", "u1", "assistant", [call]),
        cc("r1", "a1", "user", [{**failed, "is_error": True}]),
        cc("a2", "r1", "assistant", [{"type": "text", "text": "The cart test fails."}]),
        micro,
        cc("u2", "m1", "user", "go on"),
    ]  # fmt: skip
    trace = imported("claude-code", jsonl(recs))
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "claude-code:microcompact_boundary", "append"]
    cleared = {it.id: it for it in seen[1][1]}["t1:cleared"]
    assert (cleared.kind, cleared.call) == ("prose", "t1")
    assert [it.id for it in seen[2][1]] == ["u1", "t1", "t1:cleared", "a2", "u2"]
    assert findings(trace) == [("WR008", ("t1:result",))]
    # a microcompaction naming no result the window shows changes nothing
    micro["microcompactMetadata"] = {"compactedToolIds": ["t9"]}
    assert [type(ev).__name__ for ev in imported("claude-code", jsonl(recs)).events] == [
        "Append"
    ]


def _glued_lines(records: list[dict[str, Any]], glue: set[int]) -> str:
    """Session text whose record k (for k in ``glue``) is written on the line of the
    record before it, with no newline between them."""
    text = ""
    for k, rec in enumerate(records):
        text += ("" if k in glue else "\n" if k else "") + json.dumps(rec, ensure_ascii=False)
    return text + "\n"


def test_claude_code_reads_records_written_on_one_line() -> None:
    """Claude Code's writer has been seen to leave out the newline between two records
    (``...}{"type":...``): such a line is read as its records, as if each had a line
    of its own, including those read again later from where they stand (a branch back
    to messages the chain had left) and records without a uuid."""
    recs = [
        cc("u1", None, "user", "start é"),
        cc("a1", "u1", "assistant", [{"type": "text", "text": "plan ✓"}]),
        cc("u2", "a1", "user", "go on"),
        cc("u3", "u1", "user", "no, another way"),  # a branch: a1 and u2 leave the chain
        cc("u4", "u2", "user", "back to the plan"),  # and come back: read again
        cc(None, None, "user", "no uuid, one"),
        cc(None, None, "user", "no uuid, two"),
        {"type": "summary", "summary": "A title", "leafUuid": "u4"},
    ]
    plain = import_history("claude-code", [jsonl(recs)])
    # a byte-order mark before the first record is no part of it
    assert import_history("claude-code", [("\ufeff" + jsonl(recs)).encode()]) == plain
    for glue in ({2}, {1, 2}, {6}, {7}, {1, 2, 3, 4, 5, 6, 7}):
        glued = _glued_lines(recs, glue)
        assert glued.count("\n") == len(recs) - len(glue)
        assert import_history("claude-code", [glued]) == plain, glue
        # a byte-order mark before the first line moves every place by its bytes
        if 1 in glue:
            assert import_history("claude-code", [("\ufeff" + glued).encode()]) == plain


def test_claude_code_a_line_of_bad_json_is_refused_still(tmp_path: Path) -> None:
    good = json.dumps(cc("u1", None, "user", "hi"))
    for line in (good + "{", good + '{"type": "user", "x": NaN}', good + "[1]", good + " x"):
        path = tmp_path / "s.jsonl"
        path.write_text(line + "\n")
        code, out, err = run("import", "claude-code", str(path))
        assert (code, out) == (2, ""), line
        assert f"{path}:1:" in err and "Traceback" not in err


def test_claude_code_two_sessions_are_refused_naming_both(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(jsonl([cc("u1", None, "user", "hi", sessionId="sess-A")]))
    b.write_text(jsonl([cc("v1", None, "user", "hello", sessionId="sess-B")]))
    code, out, err = run("import", "claude-code", str(a), str(b))
    assert code == 2 and out == ""
    assert "sess-A" in err and "sess-B" in err and str(b) in err and err.count("\n") == 1


def test_claude_code_a_record_of_another_session_is_refused_even_as_a_replay(
    tmp_path: Path,
) -> None:
    """A record whose uuid was read before is a replay, skipped; one of another sessionId is
    that other session, whatever its uuid."""
    first = [cc("u1", None, "user", "hi", sessionId="sess-A"),
             cc("u2", "u1", "assistant", "hello", sessionId="sess-A")]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl([*first, first[1]]))
    assert run("import", "claude-code", str(path))[0] == 0
    path.write_text(jsonl([*first, {**first[1], "sessionId": "sess-B"}]))
    code, out, err = run("import", "claude-code", str(path))
    assert code == 2 and out == "" and "sess-A" in err and "sess-B" in err and f"{path}:3:" in err


def test_claude_code_sidechain_only_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    path.write_text(jsonl([cc("u1", None, "user", "sub task", isSidechain=True)]))
    code, _, err = run("import", "claude-code", str(path), "-o", str(tmp_path / "t.jsonl"))
    assert code == 2 and "sidechain" in err and not (tmp_path / "t.jsonl").exists()


def test_claude_code_declined_needs_the_error_flag() -> None:
    text = "The user doesn't want to proceed with this tool use."
    recs = [
        cc(
            "a1", None, "assistant", [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {}}]
        ),
        cc("r1", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": text}]),
        cc(
            "a2", "r1", "assistant", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]
        ),
        cc(
            "r2",
            "a2",
            "user",
            [{"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True}],
        ),
    ]
    items = {it.id: it for it in windows(imported("claude-code", jsonl(recs)))[-1][1]}
    assert items["t1:result"].source == "Edit: {}"  # no error flag: an ordinary result
    assert items["t2:result"].modality == "failed"  # an error that is no refusal stays failed


def test_responses_two_compactions_go_on() -> None:
    trace = imported("openai", H / "openai" / "responses_two_compactions.json")
    seen = windows(trace)
    assert [p for p, _ in seen] == [
        "append",
        "openai:compaction",
        "append",
        "openai:compaction",
        "append",
    ]
    assert [it.id for it in seen[3][1]] == ["cmp_r02"]
    assert ("WR008", ("call_b1:result",)) in findings(trace)


def test_codex_two_compactions_cmd_and_cut_output() -> None:
    trace = imported("openai", H / "openai" / "codex_two_compactions.jsonl")
    seen = windows(trace)
    assert [p for p, _ in seen].count("codex:compacted") == 2
    first = {it.id: it for it in seen[0][1]}
    run1 = first["call_x1:result"]
    # COMMAND is the command argument, else the arguments as canonical JSON (cmd too)
    assert run1.source == 'exec_command: {"cmd":"pytest -q tests/test_proxy.py","workdir":"/work"}'
    assert (run1.exit_code, run1.modality) == (1, "failed")
    cut = {it.id: it for it in seen[1][1]}["call_x1:truncated"]
    assert cut.kind == "prose" and cut.call == "call_x1"
    found = findings(trace)
    assert ("WR008", ("call_x1:result",)) in found
    assert not any(code == "WR007" for code, _ in found)


def test_anthropic_two_compaction_blocks_go_on() -> None:
    trace = imported("anthropic", H / "anthropic" / "two_compactions.json")
    seen = windows(trace)
    assert [p for p, _ in seen].count("anthropic:compaction") == 2
    assert [it.kind for it in seen[-1][1]] == ["prose", "prose", "observation"]
    first = {it.id: it for it in seen[0][1]}
    assert first["toolu_n2:result"].call == "toolu_n2"  # two results in one message
    assert ("WR008", ("toolu_n1:result",)) in findings(trace)


def test_langchain_two_summaries_and_a_cleared_error() -> None:
    trace = imported("langchain", H / "langchain" / "two_summaries.json")
    seen = windows(trace)
    assert [p for p, _ in seen if p != "append"] == [
        "langchain:summarization",
        "langchain:summarization",
        "langchain:context_editing",
    ]
    cleared = {it.id: it for it in seen[-1][1]}["call_c3:cleared"]
    assert cleared.text == "[cleared] (error)"
    assert ("WR008", ("call_c3:result",)) in findings(trace)


def _inspect_sample() -> dict[str, Any]:
    """An inspect sample whose agent goes on after a summary and then an edit compaction."""

    def msg(mid: str, role: str, content: str, **kw: Any) -> dict[str, Any]:
        return {
            "id": mid,
            "content": content,
            "source": "input",
            "metadata": None,
            "role": role,
            **kw,
        }

    def call(cid: str, cmd: str) -> dict[str, Any]:
        return {"id": cid, "function": "bash", "arguments": {"cmd": cmd}, "type": "function"}

    def model(inp: list[dict[str, Any]], out: dict[str, Any]) -> dict[str, Any]:
        return {
            "event": "model",
            "role": None,
            "input": inp,
            "output": {"choices": [{"message": out}]},
        }

    sys_ = msg("S", "system", "Use bash.")
    u = msg("U", "user", "Fix the build.")
    a1 = msg("A1", "assistant", "", tool_calls=[call("c1", "make")])
    t1 = msg("T1", "tool", "Exit code: 2\nmake: *** Error 2", tool_call_id="c1", function="bash")
    a2 = msg("A2", "assistant", "It fails.")
    summ = msg("SUM", "user", "Summary: make fails with Error 2.", metadata={"summary": True})
    a3 = msg("A3", "assistant", "", tool_calls=[call("c2", "make -k")])
    t2 = msg(
        "T2",
        "tool",
        "Exit code: 2\nmake: *** Error 2 (keep going)",
        tool_call_id="c2",
        function="bash",
    )
    t2e = msg("T2e", "tool", "(Tool result removed)", tool_call_id="c2", function="bash")
    a4 = msg("A4", "assistant", "Trying the clean target.")
    events = [
        model([sys_, u], a1),
        model([sys_, u, a1, t1], a2),
        {"event": "compaction", "type": "summary"},
        model([sys_, summ], a3),
        model([sys_, summ, a3, t2], msg("A3b", "assistant", "Still failing.")),
        {"event": "compaction", "type": "edit"},
        model([sys_, summ, a3, t2e, msg("A3b", "assistant", "Still failing.")], a4),
    ]
    return {"id": "s1", "epoch": 1, "events": events, "messages": []}


def test_inspect_goes_on_after_two_compactions() -> None:
    trace = imported("inspect", json.dumps({"samples": [_inspect_sample()]}))
    seen = windows(trace)
    assert [p for p, _ in seen if p != "append"] == [
        "inspect:compaction:summary",
        "inspect:compaction:edit",
    ]
    last = {it.id: it for it in seen[-1][1]}
    assert "c2:cleared" in last and "c2:result" not in last
    every = {it.id: it for _, w in seen for it in w}
    assert every["c1:result"].source == 'bash: {"cmd":"make"}'
    found = findings(trace)
    assert ("WR008", ("c1:result",)) in found and ("WR008", ("c2:result",)) in found


def test_inspect_leaves_out_the_summary_compactions_own_call_to_the_model() -> None:
    """``CompactionSummary`` calls the model on the conversation and a prompt of its own
    just before its compaction event; that call is no part of the agent's window, and the
    trace is the one the log gives without it."""
    sample = _inspect_sample()
    events = sample["events"]
    at = next(i for i, e in enumerate(events) if e["event"] == "compaction")
    agent_input = events[at - 1]["input"] + [events[at - 1]["output"]["choices"][0]["message"]]
    prompt = {"id": "P", "role": "user", "content": "Summarize the conversation so far."}
    reply = {"id": "R", "role": "assistant", "content": "make fails with Error 2."}
    summarizer = {
        "event": "model",
        "role": None,
        "input": [*agent_input, prompt],
        "output": {"choices": [{"message": reply}]},
    }
    with_call = {**sample, "events": [*events[:at], summarizer, *events[at:]]}
    trace = imported("inspect", json.dumps({"samples": [with_call]}))
    plain = imported("inspect", json.dumps({"samples": [sample]}))
    assert windows(trace) == windows(plain)
    every = {it.id for _, w in windows(trace) for it in w}
    assert not every & {"P", "R"}
    # an agent's call that asked with the user's own message is the agent's, whatever the
    # summary quotes of its answer
    sample["messages"] = [prompt]
    kept = imported("inspect", json.dumps({"samples": [with_call | {"messages": [prompt]}]}))
    assert "R" in {it.id for _, w in windows(kept) for it in w}


def test_inspect_reads_a_message_list() -> None:
    msgs = [
        {"id": "u", "role": "user", "content": "phone 555", "source": "input"},
        {
            "id": "a",
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c", "function": "get_customer_by_phone", "arguments": {"phone": "555"}}
            ],
        },
        {
            "id": "t",
            "role": "tool",
            "content": "C-1",
            "tool_call_id": "c",
            "function": "get_customer_by_phone",
        },
    ]
    trace = imported("inspect", json.dumps(msgs))
    items = {it.id: it for it in windows(trace)[-1][1]}
    assert items["c:result"].source == 'get_customer_by_phone: {"phone":"555"}'
    # fed to openai, the same list is named for what it is
    with pytest.raises(InputError, match=r"inspect_ai ChatMessages.*inspect"):
        import_history("openai", [json.dumps(msgs)])


# --- truncation and placeholders ------------------------------------------------------------


def test_truncation_is_lost_evidence_and_any_other_change_is_wr007() -> None:
    trace = imported("openai", H / "openai" / "chat_truncated.json")
    seen = windows(trace)
    second = {it.id: it for it in seen[1][1]}
    cut = second["call_T1:truncated"]
    assert cut.kind == "prose" and cut.call == "call_T1" and "truncated]" in (cut.text or "")
    assert "call_T1:result" not in second
    report = audit_trace(trace)
    found = [(f.code, f.items) for f in report.findings]
    assert ("WR008", ("call_T1:result",)) in found
    wr007 = [f for f in report.findings if f.code == "WR007"]
    assert [f.items for f in wr007] == [("call_L1:result",)]
    assert "changed" in wr007[0].message and "Found 2 errors." in wr007[0].message


@pytest.mark.parametrize(
    ("old", "new", "cut"),
    [
        ("abcdef\nFAILED x", "abcdef\n...", True),
        ("abcdef\nFAILED x", "abcdef", True),
        ("head\nmiddle\ntail", "head\n[... 7 characters truncated]\ntail", True),
        ("head\nmiddle\ntail", "[truncated]\ntail", True),
        # less a bare marker nothing is left: a strict prefix, so a cut
        ("hello world", "[truncated]", True),
        ("hello world", "[... 11 characters truncated]", True),
        ("hello world", "...", True),
        # Codex cuts the middle of a long output so
        ("head\nmiddle part\ntail", "head\n\u20268 tokens truncated\u2026\ntail", True),
        ("...", "...", False),
        ("abcdef", "abcxyz", False),
        ("abc", "abc", False),
        ("abc", "abc and more", False),
        ("abc", "   ", False),
        # markers one after the other are one cut
        ("line\n" * 9, "line\nline\n... [truncated]", True),
        ("line\n" * 9, "line\n...[output truncated]", True),
        ("line\n" * 9, "line\n[truncated]...", True),
        ("head\nmiddle\ntail", "head\n... (truncated) ...\ntail", True),
        ("line\n" * 9, "line\nlone... [truncated]", False),
    ],
)
def test_kept_text(old: str, new: str, cut: bool) -> None:
    assert (kept_text(old, new) is not None) is cut


def test_report_shows_the_lost_text(tmp_path: Path) -> None:
    trace = imported("openai", H / "openai" / "chat_truncated.json")
    _, view = view_trace(trace)
    page = render_trace_page(view)
    assert "FAILED tests/test_proxy.py::test_proxy_auth" in page  # the cut part, on the page
    assert ">cut<" in page and ">changed<" in page
    assert "-All checks passed!" in page and "+Found 2 errors." in page
    assert "Nothing here is checked as a commitment" in page


def test_report_coverage_says_nothing_when_there_are_commitments() -> None:
    text = (
        '{"event":"header","format":"ctxproof-trace/1"}\n'
        '{"event":"append","items":[{"id":"c","kind":"commitment","type":"decision"}]}\n'
    )
    _, view = view_trace(parse_trace_text(text))
    page = render_trace_page(view)
    assert "1 commitment(s) and claim(s)" in page and "Nothing here is checked" not in page


# --- format: auto, wrong format, wrong container, empty -------------------------------------


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (H / "claude-code" / "session_goes_on.jsonl", "claude-code"),
        (H / "openai" / "chat_snapshots.json", "openai"),
        (H / "openai" / "responses_two_compactions.json", "openai"),
        (H / "openai" / "codex_two_compactions.jsonl", "openai"),
        (H / "anthropic" / "two_compactions.json", "anthropic"),
        (H / "anthropic" / "before.json", "anthropic"),
        (H / "langchain" / "two_summaries.json", "langchain"),
        (H / "inspect" / "repo_fix.json", "inspect"),
    ],
)
def test_auto_picks_the_format(path: Path, fmt: str) -> None:
    src = Source(str(path), path.read_bytes())
    assert detect_format([src]) == fmt


def test_auto_imports_like_the_named_format() -> None:
    path = H / "langchain" / "two_summaries.json"
    assert import_history("auto", [path]) == import_history("langchain", [path])


@pytest.mark.parametrize(
    ("fmt", "path", "words"),
    [
        ("openai", CC_ON, "Claude Code session"),
        ("claude-code", H / "openai" / "chat_snapshots.json", "chat-completions messages"),
        ("claude-code", H / "openai" / "responses_two_compactions.json", "Responses"),
        ("anthropic", H / "openai" / "codex_two_compactions.jsonl", "Codex rollout"),
        ("langchain", H / "anthropic" / "two_compactions.json", "Anthropic"),
        ("inspect", H / "langchain" / "two_summaries.json", "LangChain"),
    ],
)
def test_wrong_format_is_named(tmp_path: Path, fmt: str, path: Path, words: str) -> None:
    target = tmp_path / "t.jsonl"
    code, out, err = run("import", fmt, str(path), "-o", str(target))
    assert code == 2 and out == "" and not target.exists()
    assert words in err and str(path) in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_plain_messages_are_named_where_the_format_does_not_read_them(tmp_path: Path) -> None:
    """Plain role/content messages are read by openai, anthropic and inspect; langchain and
    claude-code name what the file is, not the first message they cannot read."""
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    for fmt in ("openai", "anthropic", "inspect"):
        assert run("import", fmt, str(plain))[0] == 0
    code, _, err = run("import", "langchain", str(plain))
    assert code == 2 and "chat messages (role and content)" in err and "`openai`" in err
    lines = tmp_path / "plain.jsonl"
    lines.write_text(
        jsonl([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    )
    code, _, err = run("import", "claude-code", str(lines))
    assert code == 2 and "chat messages (role and content)" in err


def test_jsonl_json_mixups_are_named(tmp_path: Path) -> None:
    loglines = tmp_path / "export.json"
    records = [json.loads(line) for line in CC_ON.read_text().splitlines()]
    loglines.write_text(json.dumps({"loglines": records}, indent=1))
    code, _, err = run("import", "claude-code", str(loglines))
    assert code == 2 and "loglines" in err and "jq" in err
    array = tmp_path / "records.json"
    array.write_text(json.dumps(records))
    code, _, err = run("import", "claude-code", str(array))
    assert code == 2 and "JSON array of Claude Code records" in err
    lines = tmp_path / "messages.jsonl"
    msgs = json.loads((H / "anthropic" / "two_compactions.json").read_text())
    lines.write_text(jsonl(msgs))
    code, _, err = run("import", "anthropic", str(lines))
    assert code == 2 and "JSONL" in err and "JSON array" in err


def test_no_item_is_exit_2_never_an_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "titles.jsonl"
    path.write_text(jsonl([{"type": "summary", "summary": "t", "leafUuid": "x"}] * 2))
    target = tmp_path / "t.jsonl"
    code, out, err = run("import", "claude-code", str(path), "-o", str(target))
    assert code == 2 and out == "" and not target.exists() and "no message" in err
    empty = tmp_path / "e.json"
    empty.write_text('[{"role": "assistant", "content": ""}]')
    code, _, err = run("import", "openai", str(empty))
    assert code == 2 and "gives an item" in err


def test_auto_gives_a_plain_file_the_format_the_others_show(tmp_path: Path) -> None:
    """A request of plain text messages, which openai and anthropic both read, is of the
    format the conversation's later requests show: auto imports it as that format."""
    plain = [{"role": "user", "content": "hi"}]
    later = {
        "system": "Be brief.",
        "messages": [
            *plain,
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t",
                                              "signature": "s"}, {"type": "text", "text": "yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "bye"}]},
        ],
    }  # fmt: skip
    first, second = tmp_path / "req0.json", tmp_path / "req1.json"
    first.write_text(json.dumps(plain))
    second.write_text(json.dumps(later))
    for files in ([first, second], [second, first]):
        expected = import_history("anthropic", files)
        assert import_history("auto", files) == expected
    other = tmp_path / "lc.json"
    other.write_text(json.dumps([{"type": "human", "data": {"content": "hi"}}]))
    with pytest.raises(InputError, match="of one format"):
        import_history("auto", [first, other])  # langchain reads no plain messages


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
    ],
)
def test_auto_tells_anthropic_by_the_blocks_only_it_writes(
    block: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "req.json"
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}, block]}]
    path.write_text(json.dumps({"model": "m", "messages": messages}))
    assert detect_format([Source.file(path.name, path, path.stat().st_size)]) == "anthropic"


def test_a_cache_breakpoint_in_a_chat_completions_part_is_openai_still(tmp_path: Path) -> None:
    """Gateways take Anthropic's cache_control in chat-completions parts: no sign of format."""
    path = tmp_path / "chat.json"
    part = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    path.write_text(json.dumps([{"role": "user", "content": [part]}]))
    assert import_history("openai", [path]).count('"source":"user"') == 1
    assert import_history("auto", [path]) == import_history("openai", [path])


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "langchain", "inspect", "auto"])
def test_a_type_that_is_no_string_is_bad_input_or_ignored(fmt: str, tmp_path: Path) -> None:
    """A mutated file may hold any value where a type goes: never an internal error."""
    path = tmp_path / "m.json"
    path.write_text('[{"role": "user", "content": "x"}, {"type": [], "content": "y"},'
                    ' {"lc": 1, "id": [[]], "kwargs": {}}]')  # fmt: skip
    code, _, err = run("import", fmt, str(path))
    assert code in (0, 2) and "internal error" not in err, err


def test_auto_refuses_what_it_cannot_tell(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    code, _, err = run("import", "auto", str(path))
    assert code == 2 and "cannot tell the format" in err
    mixed = [H / "openai" / "chat_snapshots.json", H / "langchain" / "two_summaries.json"]
    code, _, err = run("import", "auto", *map(str, mixed))
    assert code == 2 and "one format" in err


# --- extractors and coverage ----------------------------------------------------------------

EXTRACTOR = """
def extract(message, context):
    text = message.get("content") if isinstance(message, dict) else None
    if isinstance(text, str) and "Do not touch the DB schema" in text:
        first = context["ids"][0]
        return [{"id": first + ":schema", "kind": "commitment", "type": "invariant",
                 "formula": "db.schema.untouched", "rationale": [first]}]
    return []
"""


def test_extractor_commitment_dropped_by_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "rules.py"
    path.write_text(EXTRACTOR)
    target = tmp_path / "t.jsonl"
    code, out, err = run(
        "import", "claude-code", str(CC_ON), "--extract", f"{path}:extract", "-o", str(target)
    )
    assert code == 0, err
    assert "1 commitment(s) and claim(s)" in out and "nothing here" not in out
    trace = parse_trace_text(target.read_text())
    ids = [it.id for it in windows(trace)[0][1]]
    assert ids[ids.index("u-0001") + 1] == "u-0001:schema"
    assert ("CF001", ("u-0001:schema",)) in findings(trace)


def test_extractor_context_and_annotations_together(tmp_path: Path) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []

    def extract(message: Any, context: Any) -> list[dict[str, Any]]:
        calls.append((message, dict(context)))
        with pytest.raises(TypeError):
            context["format"] = "x"
        return []

    notes = tmp_path / "n.jsonl"
    claim = {"id": "k", "kind": "claim", "formula": "tests.red"}
    notes.write_text(json.dumps({"after": "u-0001", "items": [claim]}) + "\n")
    text = import_history("claude-code", [CC_ON], notes, extract=extract)
    assert '"id":"k"' in text
    message, context = calls[0]
    assert message == {
        "role": "user",
        "content": json.loads(CC_ON.read_text().splitlines()[1])["message"]["content"],
    }
    assert context["format"] == "claude-code" and context["ids"] == ("u-0001",)
    # every item so far, as the trace holds them: the annotation that follows u-0001 too
    assert context["record"]["uuid"] == "u-0001" and [i["id"] for i in context["items"]] == [
        "u-0001",
        "k",
    ]
    first: list[str] = []  # the trace's items in order of first appearance
    for _, window in windows(parse_trace_text(text, "<claude-code>")):
        first += [it.id for it in window if it.id not in first]
    for _, later in calls:
        held = [i["id"] for i in later["items"]]
        assert held == first[: len(held)] and set(later["ids"]) <= set(held)
    assert len(calls) == len({c[1]["record"]["uuid"] for c in calls})  # once per message


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("raise ValueError('model offline')", "raised ValueError: model offline"),
        ("import sys; sys.exit(0)", "raised SystemExit: 0"),
        ("raise SystemExit('gave up')", "raised SystemExit: gave up"),
        ("return {'id': 'x'}", "not a list"),
        ("return [{'id': 'o', 'kind': 'observation'}]", "commitments and claims"),
        ("return [{'id': 'u-0001', 'kind': 'claim'}]", "already used"),
        (
            "return [{'id': 'c' + str(len(context['items'])), 'kind': 'claim',"
            " 'witnesses': ['nope']}]",
            "nope",
        ),
        ("return [{'id': 'c', 'kind': 'commitment'}]", "type"),
    ],
)
def test_bad_extractor_is_exit_2_naming_the_message(tmp_path: Path, body: str, words: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(f"def extract(message, context):\n    {body}\n")
    code, out, err = run("import", "claude-code", str(CC_ON), "--extract", f"{path}:extract")
    assert code == 2 and out == "" and words in err
    assert str(CC_ON) in err and "line " in err and "Traceback" not in err


def test_what_an_extractor_prints_goes_to_stderr_not_into_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "loud.py"
    path.write_text('print("LOADED")\ndef extract(message, context):\n    print("CALLED")\n')
    code, out, err = run("import", "claude-code", str(CC_ON), "--extract", f"{path}:extract")
    assert code == 0, err
    parse_trace_text(out, "<stdout>")  # the trace alone
    printed = capsys.readouterr()
    assert "LOADED" not in out + printed.out and "CALLED" not in out + printed.out
    assert "LOADED" in err + printed.err and "CALLED" in err + printed.err


@pytest.mark.parametrize(
    ("arg", "words"),
    [
        ("nowhere.py:extract", "does not exist"),
        ("json:nothing", "no 'nothing'"),
        ("json", "names no function"),
    ],
)
def test_extractor_that_cannot_load(arg: str, words: str) -> None:
    code, _, err = run("import", "claude-code", str(CC_ON), "--extract", arg)
    assert code == 2 and words in err


def test_coverage_counts_kinds_and_says_when_nothing_is_checked() -> None:
    imp = import_session("claude-code", [CC_ON])
    cov = imp.coverage
    assert cov.commitments_and_claims == 0 and cov.note is not None
    assert cov.messages == 20 and cov.kinds["observation"] == 9
    assert cov == coverage(imp.trace, messages=20)
    # a TodoWrite list is no commitment by itself: the sentence says so
    todos = import_session("claude-code", [H / "claude-code" / "session_compact.jsonl"]).coverage
    assert todos.commitments_and_claims == 0 and todos.note is not None
    annotated = import_session(
        "claude-code",
        [H / "claude-code" / "session_compact.jsonl"],
        extract=lambda message, context: [
            {"id": f"{i}:k", "kind": "claim", "formula": "x", "modality": "unverified"}
            for i in context["ids"][:1]
            if context["format"] == "claude-code" and message.get("role") == "user"
        ],
    ).coverage
    assert annotated.commitments_and_claims > 0 and annotated.note is None


def test_import_summary_line(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl"
    code, out, _ = run("import", "auto", str(CC_ON), "-o", str(target))
    assert code == 0
    assert out == (
        f"{target}: 3 append(s), 2 rewrite(s), 20 item(s) from 20 message(s): 0 commitment(s)"
        " and claim(s), 9 observation(s), 11 prose; nothing here is checked as a commitment:"
        " annotate or extract\n"
    )


@pytest.mark.parametrize(
    ("fmt", "name", "kw"),
    [
        ("openai", "openai/chat_snapshots.json", {}),
        ("openai", "openai/codex_two_compactions.jsonl", {}),
        ("anthropic", "anthropic/two_compactions.json", {}),
        ("langchain", "langchain/two_summaries.json", {}),
        ("inspect", "inspect/repo_fix.json", {"sample": "fix-1"}),
        ("claude-code", "claude-code/session_goes_on.jsonl", {}),
    ],
)
def test_every_format_gives_the_extractor_its_message_object(
    fmt: str, name: str, kw: dict[str, Any]
) -> None:
    given: list[tuple[Any, Any]] = []

    def extract(message: Any, context: Any) -> None:
        given.append((message, context["record"]))

    import_history(fmt, [H / name], extract=extract, **kw)
    assert given and all(isinstance(m, dict) and isinstance(r, dict) for m, r in given)


def test_the_documented_rule_based_extractor_runs(tmp_path: Path) -> None:
    import re

    page = (ROOT / "docs" / "importers.md").read_text("utf-8")
    code = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "NOT_TOUCH" in b)
    path = tmp_path / "rules.py"
    path.write_text(code)
    imp = import_session("claude-code", [CC_ON], extract=f"{path}:extract")
    assert imp.coverage.commitments_and_claims == 1
    assert ("CF001", ("u-0001:keep:0",)) in findings(parse_trace_text(imp.trace))


def test_an_append_too_long_for_one_line_goes_on_as_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A history whose messages would make one append line longer than a trace line may
    be is written as several appends, the same items in the same order, each line one
    the trace reader takes; the audit is the same."""
    import verifier.importers.writer as writer
    import verifier.io as vio

    path = H / "claude-code" / "session_goes_on.jsonl"
    whole = import_history("claude-code", [path])
    longest = max(len(line) for line in whole.splitlines())
    limit = longest // 3
    monkeypatch.setattr(writer, "MAX_LINE_BYTES", limit)
    split = import_history("claude-code", [path])
    assert max(len(line) for line in split.splitlines()) <= limit
    # the whole-history import (an extractor needs it) splits its appends alike
    assert import_history("claude-code", [path], extract=lambda m, c: []) == split
    one = parse_trace_text(whole, "t")
    monkeypatch.setattr(vio, "MAX_LINE_BYTES", limit)
    many = parse_trace_text(split, "t")
    assert len(many.events) > len(one.events)

    def items(trace: Trace) -> list[list[str]]:
        # each rewrite's window, and the ids appended between rewrites, in order
        out: list[list[str]] = [[]]
        for ev in trace.events:
            if isinstance(ev, Append):
                out[-1] += [it.id for it in ev.items]
            elif isinstance(ev, Rewrite):
                out.append([it.id for it in ev.window or ()])
                out.append([])
        return out

    assert items(many) == items(one)
    report_one, report_many = audit_trace(one), audit_trace(many)
    assert [f.code for f in report_many.findings] == [f.code for f in report_one.findings]


@pytest.mark.parametrize("fmt", ["claude-code", "auto"])
def test_json_nested_past_the_parsers_stack_is_bad_input(tmp_path: Path, fmt: str) -> None:
    """A record nested thousands deep is refused as too deep (exit 2), never an internal
    error from telling the format (the bad-input fuzzer's long tier found it)."""
    deep = "[" * 3000 + "]" * 3000
    record = (
        '{"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user",'
        f' "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": {deep}}}]}}}}'
    )
    path = tmp_path / "deep.jsonl"
    path.write_text(record + "\n", "utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["import", fmt, str(path)], stdout=out, stderr=err)
    assert code == 2 and out.getvalue() == ""
    assert "internal error" not in err.getvalue() and str(path) in err.getvalue()


def test_call_arguments_nested_past_the_parsers_stack_stay_text(tmp_path: Path) -> None:
    deep = "[" * 3000 + "]" * 3000
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "{" + deep},
    ]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(messages), "utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["import", "openai", str(path)], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert deep in out.getvalue()  # the arguments kept as the text they were


def _eval_archive(compression: int) -> bytearray:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "x" * 400}]}
        z.writestr("samples/1_epoch_1.json", json.dumps(sample))
    return bytearray(buf.getvalue())


def test_an_archive_zipfile_cannot_read_is_bad_input(tmp_path: Path) -> None:
    """A version zipfile does not read, and a member whose compressed bytes are damaged:
    exit 2 naming the file, never an internal error."""
    import zipfile

    newer = _eval_archive(zipfile.ZIP_STORED)
    for sig in (b"PK\x01\x02", b"PK\x03\x04"):  # "version needed to extract": 6.4
        newer[newer.find(sig) + (6 if sig == b"PK\x01\x02" else 4)] = 64
    damaged = _eval_archive(zipfile.ZIP_DEFLATED)
    start = damaged.find(b"PK\x03\x04") + 60
    damaged[start : start + 20] = bytes(b ^ 0xFF for b in damaged[start : start + 20])
    for name, data, said in (
        ("newer.eval", newer, "not a readable .eval archive"),
        ("damaged.eval", damaged, "cannot be unpacked"),
    ):
        path = tmp_path / name
        path.write_bytes(bytes(data))
        out, err = io.StringIO(), io.StringIO()
        code = main(["import", "inspect", str(path)], stdout=out, stderr=err)
        assert code == 2 and out.getvalue() == "", err.getvalue()
        assert said in err.getvalue() and str(path) in err.getvalue()


def _lc(kind: str, content: str, mid: str | None = None, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": {"type": kind, "content": content, "id": mid, **data}}


def test_langchain_messages_given_ids_by_the_summarization_stay_the_same_items() -> None:
    # SummarizationMiddleware gives every id-less message a fresh uuid before it summarizes:
    # the messages it keeps are those the list before held, not new ones
    ask = _lc("human", "Deploy to staging only.")
    ok = _lc("ai", "Staging it is.")
    more = _lc("human", "And keep the old build.")
    before = [ask, ok, more]
    summary = _lc(
        "human",
        "Here is a summary of the conversation to date:\n\nThe user asked for staging.",
        "u-sum",
        additional_kwargs={"lc_source": "summarization"},
    )
    after = [summary, {**ok, "data": {**ok["data"], "id": "u-2"}}]
    after.append({**more, "data": {**more["data"], "id": "u-3"}})
    after.append(_lc("ai", "Done.", "u-4"))
    trace = imported("langchain", json.dumps([before, after]))
    seen = windows(trace)
    assert [p for p, _ in seen] == ["append", "langchain:summarization", "append"]
    assert [it.id for it in seen[1][1]] == ["u-sum", "msg-1", "msg-2"]
    assert [it.id for it in seen[2][1]] == ["u-sum", "msg-1", "msg-2", "u-4"]
    # a later list that shows them by their new ids holds the same items still
    later = [*after, _lc("human", "Thanks.", "u-5")]
    again = windows(imported("langchain", json.dumps([before, after, later])))
    assert [it.id for it in again[-1][1]] == ["u-sum", "msg-1", "msg-2", "u-4", "u-5"]
    assert findings(trace) == []


def test_a_bad_item_in_ctxproof_metadata_names_its_message(tmp_path: Path) -> None:
    note = {"ctxproof": [{"id": "cM", "kind": "zz"}]}
    recs = [cc("u1", None, "user", "hi"), cc("u2", "u1", "user", "more", metadata=note)]
    path = tmp_path / "s.jsonl"
    path.write_text(jsonl(recs))
    code, out, err = run("import", "claude-code", str(path))
    assert code == 2 and out == ""
    assert "line 2" in err and "'ctxproof' metadata: item 'cM': unknown kind 'zz'" in err
